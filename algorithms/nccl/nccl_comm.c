/*
 * The NCCL module's per-group state (see nccl_comm.h): the unique id made
 * at task 0, a non-blocking communicator per member, its readiness and
 * errors, abort and an orderly finish.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "nccl_comm.h"

#define MOD "nccl"
/* How long leaving a group waits for NCCL to finish the communicator's
 * calls before it aborts it instead: a peer that is gone would otherwise
 * hold the member forever. */
#define FINI_WAIT_S 30.0

tutti_status_t tutti_alg_nccl_device_enter(const tutti_core_ops_t *core,
                                           const char *impl, int device,
                                           int *saved_out)
{
    int saved = -1;
    cudaError_t e = cudaGetDevice(&saved);
    if (e != cudaSuccess)
        return core->error(TUTTI_ERR_MODULE, "%s: cudaGetDevice: %s: %s",
                           impl, cudaGetErrorName(e), cudaGetErrorString(e));
    if (saved != device && (e = cudaSetDevice(device)) != cudaSuccess)
        return core->error(TUTTI_ERR_MODULE, "%s: cudaSetDevice(%d): %s: %s",
                           impl, device, cudaGetErrorName(e),
                           cudaGetErrorString(e));
    *saved_out = saved;
    return TUTTI_OK;
}

void tutti_alg_nccl_device_leave(int device, int saved)
{
    if (saved != device)
        (void)cudaSetDevice(saved);
}

/* device_enter for teardown, which has no one to report to: 1 if
 * @p device is current now. */
static int enter_quiet(int device, int *saved_out)
{
    return cudaGetDevice(saved_out) == cudaSuccess &&
           (*saved_out == device || cudaSetDevice(device) == cudaSuccess);
}

const char *tutti_alg_nccl_last_error(ncclComm_t comm)
{
    const char *text = ncclGetLastError(comm);
    return text != NULL && text[0] != '\0' ? text : "no further detail";
}

/* NCCL's version code as major, minor, patch (the coding changed at
 * 2.9: X*1000+Y*100+Z before, X*10000+Y*100+Z since). */
static void version_split(int code, int v[3])
{
    int major_unit = code >= 10000 ? 10000 : 1000;
    v[0] = code / major_unit;
    v[1] = code % major_unit / 100;
    v[2] = code % 100;
}

/* NCCL starts threads of its own (the bootstrap root that
 * ncclGetUniqueId leaves listening, a communicator's proxy), whose code is
 * in libnccl: once one may run, libnccl stays mapped (RTLD_NODELETE) when
 * the registry unloads this module, else such a thread would wake in
 * unmapped code and kill the process. */
static void keep_nccl_once(void)
{
    Dl_info info;
    if (dladdr((void *)&ncclGetUniqueId, &info) != 0 &&
        info.dli_fname != NULL)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void keep_nccl(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    (void)pthread_once(&once, keep_nccl_once);
}

static tutti_status_t nccl_init_group_params(const tutti_alg_group_t *group,
                                             const tutti_core_ops_t *core,
                                             void *details, size_t *len_out)
{
    ncclUniqueId id;
    _Static_assert(sizeof(id) <= TUTTI_GROUP_DETAILS_MAX,
                   "an NCCL unique id fits the group's details");
    keep_nccl();
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
        return core->error(TUTTI_ERR_MODULE, MOD ": group 0x%llx: "
                           "ncclGetUniqueId: %s (%s)",
                           (unsigned long long)group->group_key,
                           ncclGetErrorString(r),
                           tutti_alg_nccl_last_error(NULL));
    memcpy(details, &id, sizeof(id));
    *len_out = sizeof(id);
    return TUTTI_OK;
}

static tutti_status_t nccl_init_group(const tutti_alg_group_t *group,
                                      const tutti_core_ops_t *core,
                                      const void *details, size_t details_len,
                                      void **state_out)
{
    unsigned long long key = (unsigned long long)group->group_key;
    tutti_alg_nccl_group_t *g;
    ncclUniqueId id;
    int code = 0, have[3], saved;
    tutti_status_t st;
    ncclResult_t r;

    if (group->device_type != TUTTI_DEVICE_CUDA)
        return core->error(TUTTI_ERR_UNSUPPORTED, MOD ": group 0x%llx is "
                           "not a cuda group (device type %d): NCCL runs on "
                           "cuda devices only", key,
                           (int)group->device_type);
    if (details_len != sizeof(id))
        return core->error(TUTTI_ERR_MODULE, MOD ": group 0x%llx: %zu bytes "
                           "of unique id, expected %zu", key, details_len,
                           sizeof(id));
    if ((r = ncclGetVersion(&code)) != ncclSuccess)
        return core->error(TUTTI_ERR_MODULE, MOD ": ncclGetVersion: %s",
                           ncclGetErrorString(r));
    version_split(code, have);
    if (have[0] != NCCL_MAJOR)
        return core->error(TUTTI_ERR_MODULE, MOD ": the NCCL library loaded "
                           "is %d.%d.%d, the module was built against "
                           "%d.%d.%d: major versions differ", have[0],
                           have[1], have[2], NCCL_MAJOR, NCCL_MINOR,
                           NCCL_PATCH);
    memcpy(&id, details, sizeof(id));
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, MOD ": out of memory");
    g->core = core;
    g->group_key = group->group_key;
    g->rank = group->rank;
    g->size = group->group_size;
    g->device = group->device_index;
    st = tutti_alg_nccl_device_enter(core, MOD, g->device, &saved);
    if (st != TUTTI_OK)
        goto err_free;
    /* Non-blocking: the set-up goes on in NCCL's threads, and the first
     * execution polls it (nccl_comm_ready), so joining waits for no
     * peer. */
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    keep_nccl();
    r = ncclCommInitRankConfig(&g->comm, g->size, id, g->rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        st = core->error(TUTTI_ERR_MODULE, MOD ": group 0x%llx rank %d of "
                         "%d on GPU %d: ncclCommInitRankConfig: %s (%s)",
                         key, g->rank, g->size, g->device,
                         ncclGetErrorString(r),
                         tutti_alg_nccl_last_error(g->comm));
        if (g->comm != NULL)
            (void)ncclCommAbort(g->comm);
        tutti_alg_nccl_device_leave(g->device, saved);
        goto err_free;
    }
    tutti_alg_nccl_device_leave(g->device, saved);
    *state_out = g;
    return TUTTI_OK;

err_free:
    free(g);
    return st;
}

tutti_status_t tutti_alg_nccl_comm_ready(tutti_alg_nccl_group_t *g,
                                         const char *impl)
{
    const tutti_core_ops_t *core = g->core;
    ncclResult_t async = ncclSuccess, r;

    if (g->aborted)
        return core->error(TUTTI_ERR_ABORTED, "%s: the NCCL communicator of "
                           "group 0x%llx (rank %d) was aborted: %s", impl,
                           (unsigned long long)g->group_key, g->rank,
                           g->reason);
    if (g->broken != TUTTI_OK)
        return core->error(g->broken, "%s: %s", impl, g->reason);
    if ((r = ncclCommGetAsyncError(g->comm, &async)) != ncclSuccess)
        async = r;
    if (async == ncclSuccess) {
        g->ready = 1;
        return TUTTI_OK;
    }
    if (async == ncclInProgress)
        return TUTTI_INPROGRESS;
    /* Sockets and remote ranks: a peer or the network failed. */
    g->broken = async == ncclRemoteError || async == ncclSystemError
                    ? TUTTI_ERR_PEER
                    : TUTTI_ERR_MODULE;
    snprintf(g->reason, sizeof(g->reason), "the NCCL communicator of group "
             "0x%llx (rank %d of %d, GPU %d) %s: %s (%s)",
             (unsigned long long)g->group_key, g->rank, g->size, g->device,
             g->ready ? "failed" : "could not be set up",
             ncclGetErrorString(async),
             tutti_alg_nccl_last_error(g->comm));
    return core->error(g->broken, "%s: %s", impl, g->reason);
}

static void nccl_abort_group(void *state, const char *reason)
{
    tutti_alg_nccl_group_t *g = state;
    int saved;
    if (g == NULL || g->aborted)
        return;
    g->aborted = 1;
    snprintf(g->reason, sizeof(g->reason), "%s",
             reason != NULL ? reason : "no reason given");
    if (g->comm == NULL)
        return;
    /* Abort does not wait for the peers; it stops the kernels in flight
     * so that nothing waits for them. */
    int entered = enter_quiet(g->device, &saved);
    ncclResult_t r = ncclCommAbort(g->comm);
    if (r != ncclSuccess)
        g->core->log(1, MOD, "group 0x%llx rank %d: ncclCommAbort: %s",
                     (unsigned long long)g->group_key, g->rank,
                     ncclGetErrorString(r));
    g->comm = NULL;
    if (entered)
        tutti_alg_nccl_device_leave(g->device, saved);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls the communicator until NCCL has nothing in progress, for at most
 * FINI_WAIT_S; its state then. */
static ncclResult_t wait_idle(ncclComm_t comm)
{
    double deadline = now_s() + FINI_WAIT_S;
    struct timespec nap = {0, 100000};
    ncclResult_t async = ncclInProgress, r;
    for (;;) {
        if ((r = ncclCommGetAsyncError(comm, &async)) != ncclSuccess)
            return r;
        if (async != ncclInProgress || now_s() > deadline)
            return async;
        nanosleep(&nap, NULL);
    }
}

static void nccl_fini_group(void *state)
{
    tutti_alg_nccl_group_t *g = state;
    ncclResult_t r = ncclSuccess;
    int saved;
    if (g == NULL)
        return;
    if (g->comm == NULL) /* aborted: nothing is left to free */
        goto out_free;
    int entered = enter_quiet(g->device, &saved);
    /* A healthy communicator is finished in order, so the peers' last
     * calls complete; one that failed, or does not finish in time, is
     * aborted. */
    if (g->broken == TUTTI_OK && (r = wait_idle(g->comm)) == ncclSuccess) {
        r = ncclCommFinalize(g->comm);
        if (r == ncclSuccess || r == ncclInProgress)
            r = wait_idle(g->comm);
    }
    if (g->broken == TUTTI_OK && r == ncclSuccess) {
        (void)ncclCommDestroy(g->comm);
    } else {
        if (g->broken == TUTTI_OK)
            g->core->log(1, MOD, "group 0x%llx rank %d: the communicator "
                         "did not finish (%s: %s): aborted",
                         (unsigned long long)g->group_key, g->rank,
                         ncclGetErrorString(r),
                         tutti_alg_nccl_last_error(g->comm));
        (void)ncclCommAbort(g->comm);
    }
    g->comm = NULL;
    if (entered)
        tutti_alg_nccl_device_leave(g->device, saved);
out_free:
    free(g);
}

const tutti_alg_group_ops_t tutti_alg_nccl_group_ops = {
    .size = sizeof(tutti_alg_group_ops_t),
    .init_group_params = nccl_init_group_params,
    .init_group = nccl_init_group, .abort_group = nccl_abort_group,
    .fini_group = nccl_fini_group};
