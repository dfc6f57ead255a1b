/*
 * What the NCCL implementations share (see nccl_exec.h): their state, the
 * launch of an execution in its group's order, completion by a CUDA event,
 * and supports().
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>

#include "nccl_exec.h"
#include "nccl_map.h"

tutti_status_t tutti_alg_nccl_result(const tutti_alg_nccl_state_t *s,
                                     ncclResult_t r, const char *what)
{
    if (r == ncclSuccess)
        return TUTTI_OK;
    if (r == ncclInProgress)
        return TUTTI_INPROGRESS;
    /* Sockets and remote ranks: a peer or the network failed. */
    tutti_status_t st = r == ncclRemoteError || r == ncclSystemError
                            ? TUTTI_ERR_PEER
                            : TUTTI_ERR_MODULE;
    return s->core->error(st, "%s: instance 0x%llx rank %d: %s: %s (%s)",
                          s->impl,
                          (unsigned long long)s->inst->instance_key,
                          s->inst->rank, what, ncclGetErrorString(r),
                          tutti_alg_nccl_last_error(s->group->comm));
}

tutti_status_t tutti_alg_nccl_group_end(const tutti_alg_nccl_state_t *s,
                                        ncclResult_t inside,
                                        const char *what)
{
    ncclResult_t end = ncclGroupEnd();
    if (inside != ncclSuccess)
        return tutti_alg_nccl_result(s, inside, what);
    return tutti_alg_nccl_result(s, end, "ncclGroupEnd");
}

tutti_status_t tutti_alg_nccl_cuda(const tutti_alg_nccl_state_t *s,
                                   cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return TUTTI_OK;
    return s->core->error(TUTTI_ERR_MODULE, "%s: instance 0x%llx rank %d on "
                          "GPU %d: %s: %s: %s", s->impl,
                          (unsigned long long)s->inst->instance_key,
                          s->inst->rank, s->inst->device_index, what,
                          cudaGetErrorName(e), cudaGetErrorString(e));
}

tutti_status_t tutti_alg_nccl_state_create(const tutti_alg_instance_t *inst,
                                           const tutti_core_ops_t *core,
                                           const char *impl,
                                           tutti_alg_nccl_enqueue_fn enqueue,
                                           size_t scratch_bytes,
                                           void **state_out)
{
    unsigned long long key = (unsigned long long)inst->instance_key;
    tutti_alg_nccl_state_t *s;
    tutti_status_t st;
    int saved;

    if (inst->group_state == NULL)
        return core->error(TUTTI_ERR_MODULE, "%s: instance 0x%llx: the "
                           "group has no NCCL communicator (the module's "
                           "init_group did not run)", impl, key);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory", impl);
    s->impl = impl;
    s->inst = inst;
    s->core = core;
    s->group = inst->group_state;
    s->enqueue = enqueue;
    s->esize = tutti_dtype_size(inst->dtype);
    s->to = s->from = -1;
    if (!tutti_alg_nccl_map_dtype(inst->dtype, &s->dtype)) {
        st = core->error(TUTTI_ERR_UNSUPPORTED, "%s: instance 0x%llx: data "
                         "type %d has no NCCL counterpart", impl, key,
                         (int)inst->dtype);
        goto err_free;
    }
    if (tutti_collective_reduces(inst->collective) &&
        !tutti_alg_nccl_map_op(inst->op, &s->op)) {
        st = core->error(TUTTI_ERR_UNSUPPORTED, "%s: instance 0x%llx: op %d "
                         "has no NCCL counterpart (expected sum, prod, min "
                         "or max: the core applies avg as sum)", impl, key,
                         (int)inst->op);
        goto err_free;
    }
    if ((st = tutti_alg_nccl_device_enter(core, impl, inst->device_index,
                                          &saved)) != TUTTI_OK)
        goto err_free;
    st = tutti_alg_nccl_cuda(s, cudaEventCreateWithFlags(
                                    &s->ev_in, cudaEventDisableTiming),
                             "cudaEventCreateWithFlags");
    if (st != TUTTI_OK)
        goto err_leave;
    st = tutti_alg_nccl_cuda(s, cudaEventCreateWithFlags(
                                    &s->ev_out, cudaEventDisableTiming),
                             "cudaEventCreateWithFlags");
    if (st != TUTTI_OK)
        goto err_event_in;
    st = tutti_alg_nccl_cuda(s, cudaStreamCreateWithFlags(
                                    &s->side, cudaStreamNonBlocking),
                             "cudaStreamCreateWithFlags");
    if (st != TUTTI_OK)
        goto err_event;
    if (scratch_bytes > 0) {
        char what[64];
        snprintf(what, sizeof(what), "cudaMalloc(%zu bytes of scratch)",
                 scratch_bytes);
        st = tutti_alg_nccl_cuda(s, cudaMalloc(&s->scratch, scratch_bytes),
                                 what);
        if (st != TUTTI_OK)
            goto err_stream;
    }
    tutti_alg_nccl_device_leave(inst->device_index, saved);
    *state_out = s;
    return TUTTI_OK;

err_stream:
    (void)cudaStreamDestroy(s->side);
err_event:
    (void)cudaEventDestroy(s->ev_out);
err_event_in:
    (void)cudaEventDestroy(s->ev_in);
err_leave:
    tutti_alg_nccl_device_leave(inst->device_index, saved);
err_free:
    free(s);
    return st;
}

/* Takes @p s out of its group's queue, wherever it is. */
static void dequeue(tutti_alg_nccl_state_t *s)
{
    tutti_alg_nccl_group_t *g = s->group;
    tutti_alg_nccl_state_t **link = &g->head, *prev = NULL;
    while (*link != NULL && *link != s) {
        prev = *link;
        link = &(*link)->next;
    }
    if (*link == NULL)
        return;
    *link = s->next;
    if (g->tail == s)
        g->tail = prev;
    s->next = NULL;
}

/* Most seconds run waits for NCCL to finish queueing on the caller's
 * stream (wait_queued). */
#define QUEUE_WAIT_S 30.0

/* Waits (polling the communicator) until NCCL queued what it answered
 * ncclInProgress for on the caller's stream: until then the caller must
 * not queue more there.  At most QUEUE_WAIT_S: then the communicator is
 * taken for broken. */
static tutti_status_t wait_queued(tutti_alg_nccl_state_t *s)
{
    struct timespec t0, t;
    tutti_status_t st;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while ((st = tutti_alg_nccl_comm_ready(s->group, s->impl)) ==
           TUTTI_INPROGRESS) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) +
                (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 >
            QUEUE_WAIT_S)
            return s->core->error(TUTTI_ERR_TIMEOUT, "%s: instance 0x%llx "
                                  "rank %d: NCCL did not finish queueing "
                                  "the call within %.0f s (%s)", s->impl,
                                  (unsigned long long)s->inst->instance_key,
                                  s->inst->rank, QUEUE_WAIT_S,
                                  tutti_alg_nccl_last_error(
                                      s->group->comm));
        sched_yield();
    }
    return st;
}

/* The work is queued on side: exec->stream (which the core may have
 * moved to the instance's stream meanwhile) waits for it. */
static tutti_status_t join_back(tutti_alg_nccl_state_t *s)
{
    cudaStream_t stream = (cudaStream_t)s->exec->stream;
    tutti_status_t st = tutti_alg_nccl_cuda(
        s, cudaEventRecord(s->ev_out, s->side), "cudaEventRecord");
    if (st == TUTTI_OK)
        st = tutti_alg_nccl_cuda(s, cudaStreamWaitEvent(stream, s->ev_out, 0),
                                 "cudaStreamWaitEvent");
    return st;
}

/* @p s is first in its group's queue: once the communicator takes a call,
 * make its NCCL calls; TUTTI_OK once they are ordered on exec->stream. */
static tutti_status_t launch(tutti_alg_nccl_state_t *s)
{
    const tutti_alg_exec_t *x = s->exec;
    cudaStream_t stream = (cudaStream_t)x->stream;
    int dev = s->inst->device_index, saved;
    tutti_status_t st;

    if ((st = tutti_alg_nccl_comm_ready(s->group, s->impl)) != TUTTI_OK)
        return st;
    if ((st = tutti_alg_nccl_device_enter(s->core, s->impl, dev, &saved)) !=
        TUTTI_OK)
        return st;
    if (s->phase == TUTTI_ALG_NCCL_ENQUEUING) {
        st = join_back(s); /* NCCL finished queueing on side */
    } else if (s->warm) {
        st = s->enqueue(s, x, stream);
        if (st == TUTTI_INPROGRESS)
            st = wait_queued(s);
    } else {
        st = tutti_alg_nccl_cuda(s, cudaEventRecord(s->ev_in, stream),
                                 "cudaEventRecord");
        if (st == TUTTI_OK)
            st = tutti_alg_nccl_cuda(
                s, cudaStreamWaitEvent(s->side, s->ev_in, 0),
                "cudaStreamWaitEvent");
        if (st == TUTTI_OK)
            st = s->enqueue(s, x, s->side);
        if (st == TUTTI_INPROGRESS)
            s->phase = TUTTI_ALG_NCCL_ENQUEUING;
        else if (st == TUTTI_OK)
            st = join_back(s);
    }
    tutti_alg_nccl_device_leave(dev, saved);
    if (st != TUTTI_OK)
        return st;
    s->warm = 1;
    dequeue(s);
    s->phase = TUTTI_ALG_NCCL_IDLE;
    return TUTTI_OK;
}

tutti_status_t tutti_alg_nccl_progress(void *state, tutti_alg_exec_t *x)
{
    tutti_alg_nccl_state_t *s = state;
    tutti_status_t st;

    s->exec = x; /* the core may have moved it to another stream */
    if (s->phase == TUTTI_ALG_NCCL_IDLE)
        return TUTTI_OK;
    if (s->group->head != s) {
        /* An earlier execution goes first; a broken communicator fails
         * this one now. */
        st = tutti_alg_nccl_comm_ready(s->group, s->impl);
        if (st == TUTTI_OK || st == TUTTI_INPROGRESS)
            return TUTTI_INPROGRESS;
    } else if ((st = launch(s)) == TUTTI_OK || st == TUTTI_INPROGRESS) {
        return st;
    }
    dequeue(s);
    s->phase = TUTTI_ALG_NCCL_IDLE;
    return st;
}

tutti_status_t tutti_alg_nccl_run(void *state, tutti_alg_exec_t *x)
{
    tutti_alg_nccl_state_t *s = state;
    tutti_alg_nccl_group_t *g = s->group;

    if (s->inst->count == 0)
        return TUTTI_OK;
    if (s->phase != TUTTI_ALG_NCCL_IDLE)
        return s->core->error(TUTTI_ERR_INTERNAL, "%s: instance 0x%llx: an "
                              "execution started while another is under "
                              "way", s->impl,
                              (unsigned long long)s->inst->instance_key);
    /* NCCL needs every rank's calls in one order: the queue keeps the
     * order the core launched them in. */
    s->exec = x;
    s->phase = TUTTI_ALG_NCCL_QUEUED;
    s->next = NULL;
    if (g->tail != NULL)
        g->tail->next = s;
    else
        g->head = s;
    g->tail = s;
    return tutti_alg_nccl_progress(s, x);
}

void tutti_alg_nccl_fini_context(void *state)
{
    tutti_alg_nccl_state_t *s = state;
    int dev, saved;
    if (s == NULL)
        return;
    dequeue(s);
    dev = s->inst->device_index;
    int entered = cudaGetDevice(&saved) == cudaSuccess &&
                  (saved == dev || cudaSetDevice(dev) == cudaSuccess);
    if (s->scratch != NULL)
        (void)cudaFree(s->scratch);
    (void)cudaStreamDestroy(s->side);
    (void)cudaEventDestroy(s->ev_in);
    (void)cudaEventDestroy(s->ev_out);
    if (entered)
        tutti_alg_nccl_device_leave(dev, saved);
    free(s);
}

/* Whether this process sees a CUDA device, asked once: the answer does
 * not change while the process runs, and supports() must cost nothing. */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int probe_ok;
static char probe_why[256];

static void probe_devices(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        snprintf(probe_why, sizeof(probe_why), "no usable CUDA device: "
                 "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
    else if (n <= 0)
        snprintf(probe_why, sizeof(probe_why), "no CUDA device: "
                 "cudaGetDeviceCount found none");
    else
        probe_ok = 1;
}

int tutti_alg_nccl_supports(const tutti_alg_instance_t *inst, char *why,
                            size_t len)
{
    if (!tutti_alg_nccl_check(inst, why, len))
        return 0;
    pthread_once(&probe_once, probe_devices);
    if (!probe_ok) {
        snprintf(why, len, "%s", probe_why);
        return 0;
    }
    return 1;
}
