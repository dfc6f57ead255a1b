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

TUTTI_ALG_NCCL_OPS(broadcast, IMPL, broadcast_enqueue);
