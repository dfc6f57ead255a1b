/*
 * tutti_execute() and the request API (exec.h): an execution is checked,
 * its instance found or proposed, its request queued and launched when it
 * can be; tests, waits, information and the free list of requests.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "exec/exec.h"

/* Instance keys from 2^63 up are the blocking helpers' (blocking.c). */
#define RESERVED_KEYS (1ULL << 63)

/* Whether an execution of @p inst, whose fixed fields passed the full
 * checks before, would pass them again: it repeats those fields byte for
 * byte (the checks read nothing else of the call but the named
 * implementation's text, compared again here, and a permutation's
 * entries, which keep permute off this path) and gives the buffers its
 * elements need.  Then only what may change per call is checked. */
static int warm_call(const tutti_group_t *g, const tutti__instance_t *inst,
                     const tutti_instance_params_t *p, const void *sendbuf,
                     const void *recvbuf)
{
    /* As words, the or of their differences: a load, an xor and an or a
     * word, where memcmp() is a call and a loop. */
    uint64_t diff = 0;
    for (size_t i = 0; i < TUTTI__PARAMS_FIXED / 8; i++) {
        uint64_t w;
        memcpy(&w, (const char *)p + 8 * i, sizeof(w));
        diff |= w ^ inst->seen[i];
    }
    return inst->warm && diff == 0 &&
           (sendbuf != NULL || inst->in_elems == 0) &&
           (recvbuf != NULL || inst->out_elems == 0) &&
           (p->algorithm == NULL ||
            tutti__instance_same_impl(g, inst, p->algorithm));
}

/* The full checks of an execution of @p *inst_io (NULL: its first, which
 * records the instance and proposes it); @p bytes_out gets its input's
 * bytes.  A call that passes them becomes the one the warm path compares
 * with, where the checks' outcome follows from the fixed fields alone:
 * not with per-rank counts, nor a permutation. */
static tutti_status_t cold_checks(tutti_group_t *g,
                                  const tutti_instance_params_t *params,
                                  const void *sendbuf, void *recvbuf,
                                  const char *call,
                                  tutti__instance_t **inst_io,
                                  uint64_t *bytes_out)
{
    tutti__instance_t *inst = *inst_io;
    tutti_status_t st;

    if (inst == NULL) {
        if ((st = tutti__instance_check(g, params, call)) != TUTTI_OK ||
            (st = tutti__coll_check_exec(params, g->rank, g->size, sendbuf,
                                         recvbuf, call, bytes_out)) !=
                TUTTI_OK ||
            (st = tutti__cuda_check_buffers(g, params, sendbuf, recvbuf)) !=
                TUTTI_OK ||
            (st = tutti__instance_new(g, params, &inst)) != TUTTI_OK)
            return st;
    } else if (inst->failed != TUTTI_OK) {
        return tutti__error(inst->failed, "exec", "%s",
                            inst->failure ? inst->failure
                                          : "(refused; the detail was lost: "
                                            "no memory to keep it)");
    } else if ((st = tutti__instance_check_same(g, inst, params)) != TUTTI_OK ||
               (st = tutti__coll_check_exec(params, g->rank, g->size,
                                            sendbuf, recvbuf, call,
                                            bytes_out)) != TUTTI_OK) {
        return st;
    }
    if (!inst->per_rank && inst->permutation == NULL) {
        memcpy(inst->seen, params, TUTTI__PARAMS_FIXED);
        inst->warm = 1;
    }
    *inst_io = inst;
    return TUTTI_OK;
}

/* A caller built against 0.1's header ends before stream: its struct is
 * read into a whole one, the fields it lacks left at zero.  Apart, so
 * that the usual call's frame does not hold a second struct. */
static tutti_status_t execute_short(tutti_group_t *g,
                                    const tutti_instance_params_t *params,
                                    const void *sendbuf, void *recvbuf,
                                    const char *call,
                                    tutti_request_t **request_out)
{
    tutti_instance_params_t whole;
    memset(&whole, 0, sizeof(whole));
    memcpy(&whole, params, params->size);
    whole.size = sizeof(whole);
    return tutti__execute(g, &whole, sendbuf, recvbuf, call, request_out);
}

/* tutti_execute and tutti__execute: inline in both, whole (gcc would
 * split it, and the warm path pay two calls' entries and exits). */
static inline __attribute__((always_inline)) tutti_status_t
execute(tutti_group_t *g, const tutti_instance_params_t *params,
        const void *sendbuf, void *recvbuf, const char *call,
        tutti_request_t **request_out)
{
    tutti_status_t st;
    tutti__instance_t *inst;
    tutti_request_t *r;

    /* tutti__group_check_health's own first test, without the call. */
    if (atomic_load_explicit(&g->job->health_epoch, memory_order_relaxed) !=
        g->health_seen)
        tutti__group_check_health(g);
    if (g->failed != TUTTI_OK)
        return tutti__error(g->failed, "exec", "group 0x%llx rank %d failed "
                            "earlier and must be left: %s",
                            (unsigned long long)g->key, g->rank, g->failure);
    if (params != NULL && params->size < sizeof(*params) &&
        params->size >= offsetof(tutti_instance_params_t, stream))
        return execute_short(g, params, sendbuf, recvbuf, call, request_out);
    if (params == NULL || params->size < sizeof(*params))
        return tutti__instance_check(g, params, call);
    /* What is fixed for the instance is checked in full on its first
     * execution; a later one that repeats a checked call's fixed fields
     * costs one comparison (warm_call), any other the full checks. */
    uint64_t bytes = 0;
    inst = tutti__instance_find(g, params->instance_key);
    if (inst != NULL && inst->failed == TUTTI_OK &&
        warm_call(g, inst, params, sendbuf, recvbuf))
        bytes = inst->in_bytes;
    else if ((st = cold_checks(g, params, sendbuf, recvbuf, call, &inst,
                               &bytes)) != TUTTI_OK)
        return st;
    if (params->num_wait_for > TUTTI_MAX_WAIT_FOR ||
        (params->num_wait_for > 0 && params->wait_for == NULL))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx: %zu wait_for keys: expected at most %d, "
                            "in an array", call,
                            (unsigned long long)params->instance_key,
                            params->num_wait_for, TUTTI_MAX_WAIT_FOR);
    if ((r = tutti__request_get(g)) == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "group 0x%llx: no "
                            "memory for a request of instance 0x%llx",
                            (unsigned long long)g->key,
                            (unsigned long long)params->instance_key);
    r->inst = inst;
    r->priority = params->priority;
    r->timeout = params->timeout > 0 ? params->timeout : g->timeout;
    r->num_wait_for = params->num_wait_for;
    for (size_t i = 0; i < params->num_wait_for; i++)
        r->wait_for[i] = params->wait_for[i];
    uint64_t step = params->step == TUTTI_STEP_NEXT ? inst->next_step++
                                                    : params->step;
    r->link.instance_key = params->instance_key;
    r->link.algorithm = inst->algorithm;
    r->exec = (tutti_alg_exec_t){
        .size = sizeof(r->exec), .core = g->core_ops, .inst = &inst->alg,
        .sendbuf = sendbuf, .recvbuf = recvbuf, .step = step,
        .core_private = &r->link, .counts = params->counts,
        .send_count = params->send_count,
        .recv_capacity = params->recv_capacity, .recv_counts = r->recv_counts,
        .recv_total = inst->per_rank ? tutti__coll_recv_total(params, g->rank,
                                                              g->size)
                                     : inst->out_elems};
    /* reduce_scatter's per-rank counts are the call's, known to all. */
    if (inst->per_rank && params->collective == TUTTI_COLL_REDUCE_SCATTER)
        memcpy(r->recv_counts, params->counts,
               (size_t)g->size * sizeof(size_t));
    r->stream = params->stream;
    if (g->cuda != NULL && (st = tutti__cuda_issue(r)) != TUTTI_OK) {
        if (params->step == TUTTI_STEP_NEXT)
            inst->next_step--; /* the step was not taken */
        r->status = TUTTI_OK; /* never issued: back to the free list */
        tutti_request_free(r);
        return st;
    }
    if (!inst->resolved || inst->ordered)
        tutti__request_order_add(g, r);
    tutti__request_enqueue(g, r, bytes);
    if (g->cuda != NULL)
        tutti__cuda_issued(r);
    *request_out = r;
    return TUTTI_OK;
}

tutti_status_t tutti__execute(tutti_group_t *g,
                              const tutti_instance_params_t *params,
                              const void *sendbuf, void *recvbuf,
                              const char *call, tutti_request_t **request_out)
{
    return execute(g, params, sendbuf, recvbuf, call, request_out);
}

tutti_status_t tutti_execute(tutti_group_t *g,
                             const tutti_instance_params_t *params,
                             const void *sendbuf, void *recvbuf,
                             tutti_request_t **request_out)
{
    tutti_status_t st = tutti__group_check(g, "tutti_execute");
    if (st != TUTTI_OK)
        return st;
    if (request_out == NULL || params == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_execute: "
                            "%s is NULL", params ? "request_out" : "params");
    if (params->size >= offsetof(tutti_instance_params_t, instance_key) +
                            sizeof(params->instance_key) &&
        params->instance_key >= RESERVED_KEYS)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_execute: "
                            "instance key 0x%llx is reserved for the "
                            "library's blocking helpers: expected a key "
                            "below 2^63",
                            (unsigned long long)params->instance_key);
    return execute(g, params, sendbuf, recvbuf, "tutti_execute", request_out);
}

void tutti_request_info(const tutti_request_t *r, tutti_request_info_t *info)
{
    if (tutti__request_check(r, "tutti_request_info") != TUTTI_OK)
        return;
    if (info == NULL) {
        tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_request_info: "
                     "info_out is NULL");
        return;
    }
    info->instance_key = r->inst->params.instance_key;
    info->step = r->exec.step;
    info->launch_order = r->launch_order;
    info->algorithm = r->inst->resolved ? r->inst->algorithm : "";
    info->recv_total = r->exec.recv_total;
    info->recv_counts = NULL;
    if (r->inst->per_rank && r->status != TUTTI_INPROGRESS)
        info->recv_counts = r->recv_counts;
}

void tutti_request_free(tutti_request_t *r)
{
    if (r == NULL ||
        tutti__request_check(r, "tutti_request_free") != TUTTI_OK)
        return;
    if (r->status == TUTTI_INPROGRESS) {
        tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_request_free: "
                     "request %p (instance 0x%llx) is still in progress; "
                     "not freed", (void *)r,
                     (unsigned long long)r->inst->params.instance_key);
        return;
    }
    tutti_group_t *g = r->group;
    r->state = TUTTI__HANDLE_FREE;
    /* Last in, first out: the shell taken next is the one most likely
     * still in the cache. */
    r->next = g->free_list;
    g->free_list = r;
}

void tutti_request_set_callback(tutti_request_t *r, tutti_request_cb_t cb,
                                void *arg)
{
    if (tutti__request_check(r, "tutti_request_set_callback") != TUTTI_OK)
        return;
    r->cb = cb;
    r->cb_arg = arg;
    if (r->status != TUTTI_INPROGRESS && cb != NULL)
        cb(r, r->status, arg);
}
