/*
 * NcclBroadcast: ncclBroadcast from the root on the caller's stream.  The
 * root's sendbuf is copied to its recvbuf too unless the call is in place
 * there; the others' sendbuf is not read.  Limits: CUDA memory, one GPU
 * per rank.
 */
#include "nccl_exec.h"

#define IMPL "NcclBroadcast"

static tutti_status_t broadcast_enqueue(tutti_alg_nccl_state_t *s,
                                        const tutti_alg_exec_t *x,
                                        cudaStream_t stream)
{
    return tutti_alg_nccl_result(
        s, ncclBroadcast(x->sendbuf, x->recvbuf, s->inst->count, s->dtype,
                         s->inst->root, s->group->comm, stream),
        "ncclBroadcast");
}

static tutti_status_t broadcast_init_context(const tutti_alg_instance_t *inst,
                                             const tutti_core_ops_t *core,
                                             const void *details,
                                             size_t details_len,
                                             void **state_out)
{
    (void)details;
    (void)details_len;
    return tutti_alg_nccl_state_create(inst, core, IMPL, broadcast_enqueue, 0,
                                       state_out);
}

const tutti_alg_ops_t tutti_alg_nccl_broadcast_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = broadcast_init_context,
    .run = tutti_alg_nccl_run, .progress = tutti_alg_nccl_progress,
    .fini_context = tutti_alg_nccl_fini_context,
    .supports = tutti_alg_nccl_supports};
