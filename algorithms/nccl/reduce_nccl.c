/*
 * NcclReduce: ncclReduce to the root on the caller's stream.  Only the
 * root's recvbuf is written (the others' may be NULL); in place at the
 * root as NCCL takes it.  Limits: CUDA memory, one GPU per rank.
 */
#include "nccl_exec.h"

#define IMPL "NcclReduce"

static tutti_status_t reduce_enqueue(tutti_alg_nccl_state_t *s,
                                     const tutti_alg_exec_t *x,
                                     cudaStream_t stream)
{
    return tutti_alg_nccl_result(
        s, ncclReduce(x->sendbuf, x->recvbuf, s->inst->count, s->dtype, s->op,
                      s->inst->root, s->group->comm, stream),
        "ncclReduce");
}

TUTTI_ALG_NCCL_OPS(reduce, IMPL, reduce_enqueue);
