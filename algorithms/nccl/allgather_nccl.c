/*
 * NcclAllgather: ncclAllGather on the caller's stream.  In place, rank r's
 * block already sits at element r*count of recvbuf, which is how NCCL
 * takes an in-place allgather (sendbuff == recvbuff + rank*count).
 * Limits: equal counts (per-rank counts need an exchange of sizes that
 * cannot be ordered on the stream), CUDA memory, one GPU per rank.
 */
#include "nccl_exec.h"

#define IMPL "NcclAllgather"

static tutti_status_t allgather_enqueue(tutti_alg_nccl_state_t *s,
                                        const tutti_alg_exec_t *x,
                                        cudaStream_t stream)
{
    size_t bytes = s->inst->count * s->esize;
    const void *src = x->sendbuf;
    if (x->sendbuf == x->recvbuf)
        src = tutti_alg_nccl_at(x->recvbuf, (size_t)s->inst->rank * bytes);
    return tutti_alg_nccl_result(
        s, ncclAllGather(src, x->recvbuf, s->inst->count, s->dtype,
                         s->group->comm, stream),
        "ncclAllGather");
}

static tutti_status_t allgather_init_context(const tutti_alg_instance_t *inst,
                                             const tutti_core_ops_t *core,
                                             const void *details,
                                             size_t details_len,
                                             void **state_out)
{
    (void)details;
    (void)details_len;
    return tutti_alg_nccl_state_create(inst, core, IMPL, allgather_enqueue, 0,
                                       state_out);
}

const tutti_alg_ops_t tutti_alg_nccl_allgather_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = allgather_init_context,
    .run = tutti_alg_nccl_run, .progress = tutti_alg_nccl_progress,
    .fini_context = tutti_alg_nccl_fini_context,
    .supports = tutti_alg_nccl_supports};
