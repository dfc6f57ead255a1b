/*
 * NcclReduceScatter: ncclReduceScatter on the caller's stream.  With
 * per-rank counts (known to every rank: the call gives them all), one NCCL
 * group of an ncclReduce per block to the rank it belongs to, which NCCL
 * runs together; empty blocks are left out alike on every rank.  In place,
 * block r of the buffer gets the result, which is how NCCL takes an
 * in-place reduce-scatter (recvbuff == sendbuff + rank*count).  Limits:
 * CUDA memory, one GPU per rank.
 */
#include "nccl_exec.h"

#define IMPL "NcclReduceScatter"

static tutti_status_t per_rank_enqueue(tutti_alg_nccl_state_t *s,
                                       const tutti_alg_exec_t *x,
                                       cudaStream_t stream)
{
    const tutti_alg_instance_t *in = s->inst;
    int same = x->sendbuf == x->recvbuf;
    size_t off = 0;
    ncclResult_t r;

    if ((r = ncclGroupStart()) != ncclSuccess)
        return tutti_alg_nccl_result(s, r, "ncclGroupStart");
    for (int p = 0; p < in->group_size && r == ncclSuccess; p++) {
        size_t n = x->counts[p];
        const void *src = tutti_alg_nccl_at(x->sendbuf, off);
        void *dst = NULL; /* a non-root's is not used */
        if (p == in->rank)
            dst = same ? (void *)(uintptr_t)src : x->recvbuf;
        if (n > 0)
            r = ncclReduce(src, dst, n, s->dtype, s->op, p, s->group->comm,
                           stream);
        off += n * s->esize;
    }
    return tutti_alg_nccl_group_end(s, r, "ncclReduce");
}

static tutti_status_t reduce_scatter_enqueue(tutti_alg_nccl_state_t *s,
                                             const tutti_alg_exec_t *x,
                                             cudaStream_t stream)
{
    const tutti_alg_instance_t *in = s->inst;
    void *dst = x->recvbuf;
    if (in->count == TUTTI_COUNT_PER_RANK)
        return per_rank_enqueue(s, x, stream);
    if (x->sendbuf == x->recvbuf)
        dst = tutti_alg_nccl_at(x->recvbuf,
                                (size_t)in->rank * in->count * s->esize);
    return tutti_alg_nccl_result(
        s, ncclReduceScatter(x->sendbuf, dst, in->count, s->dtype, s->op,
                             s->group->comm, stream),
        "ncclReduceScatter");
}

static tutti_status_t
reduce_scatter_init_context(const tutti_alg_instance_t *inst,
                            const tutti_core_ops_t *core, const void *details,
                            size_t details_len, void **state_out)
{
    (void)details;
    (void)details_len;
    return tutti_alg_nccl_state_create(inst, core, IMPL,
                                       reduce_scatter_enqueue, 0,
                                       state_out);
}

TUTTI_ALG_NCCL_TABLE(reduce_scatter);
