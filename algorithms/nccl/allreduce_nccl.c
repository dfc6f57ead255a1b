/*
 * NcclAllreduce: ncclAllReduce on the caller's stream; NCCL picks ring,
 * tree or NVLS by size and topology.  In place as NCCL takes it (the one
 * buffer in and out).  Limits: CUDA memory, one GPU per rank.
 */
#include "nccl_exec.h"

#define IMPL "NcclAllreduce"

static tutti_status_t allreduce_enqueue(tutti_alg_nccl_state_t *s,
                                        const tutti_alg_exec_t *x,
                                        cudaStream_t stream)
{
    return tutti_alg_nccl_result(
        s, ncclAllReduce(x->sendbuf, x->recvbuf, s->inst->count, s->dtype,
                         s->op, s->group->comm, stream),
        "ncclAllReduce");
}

TUTTI_ALG_NCCL_OPS(allreduce, IMPL, allreduce_enqueue);
