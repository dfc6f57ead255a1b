/*
 * NcclGather: one NCCL group in which every rank sends its block to the
 * root and the root receives one block from each rank (its own too, unless
 * it is already in place).  In place on any rank, the input is the rank's
 * block r*count of recvbuf.  The root receives n-1 blocks at once, so its
 * links carry them all.  Limits: CUDA memory, one GPU per rank.
 */
#include "nccl_exec.h"

#define IMPL "NcclGather"

static tutti_status_t gather_enqueue(tutti_alg_nccl_state_t *s,
                                     const tutti_alg_exec_t *x,
                                     cudaStream_t stream)
{
    const tutti_alg_instance_t *in = s->inst;
    size_t bytes = in->count * s->esize;
    const void *src = x->sendbuf;
    ncclComm_t comm = s->group->comm;
    ncclResult_t r;

    if (x->sendbuf == x->recvbuf)
        src = tutti_alg_nccl_at(x->recvbuf, (size_t)in->rank * bytes);
    if ((r = ncclGroupStart()) != ncclSuccess)
        return tutti_alg_nccl_result(s, r, "ncclGroupStart");
    if (in->rank != in->root) {
        r = ncclSend(src, in->count, s->dtype, in->root, comm, stream);
        return tutti_alg_nccl_group_end(s, r, "ncclSend");
    }
    for (int p = 0; p < in->group_size && r == ncclSuccess; p++) {
        char *dst = tutti_alg_nccl_at(x->recvbuf, (size_t)p * bytes);
        if (p == in->rank && dst == src)
            continue;
        if (p == in->rank)
            r = ncclSend(src, in->count, s->dtype, p, comm, stream);
        if (r == ncclSuccess)
            r = ncclRecv(dst, in->count, s->dtype, p, comm, stream);
    }
    return tutti_alg_nccl_group_end(s, r, "ncclSend/ncclRecv");
}

TUTTI_ALG_NCCL_OPS(gather, IMPL, gather_enqueue);
