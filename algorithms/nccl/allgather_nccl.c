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

TUTTI_ALG_NCCL_OPS(allgather, IMPL, allgather_enqueue);
