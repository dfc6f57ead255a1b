/*
 * NcclAlltoall: one NCCL group of a send and a receive per rank (itself
 * included), so NCCL runs them all at once.  In place, the one buffer is
 * read and then written: it is first copied on the stream to a device
 * buffer of group_size*count elements made at init_context (whether a
 * call is in place is known only per call), and sent from there.  Limits:
 * equal counts (per-rank counts need an exchange of sizes that cannot be
 * ordered on the stream), CUDA memory, one GPU per rank.
 */
#include <stdint.h>

#include "nccl_exec.h"

#define IMPL "NcclAlltoall"

static tutti_status_t alltoall_enqueue(tutti_alg_nccl_state_t *s,
                                       const tutti_alg_exec_t *x,
                                       cudaStream_t stream)
{
    const tutti_alg_instance_t *in = s->inst;
    size_t bytes = in->count * s->esize;
    const void *src = x->sendbuf;
    ncclComm_t comm = s->group->comm;
    ncclResult_t r;
    tutti_status_t st;

    if (x->sendbuf == x->recvbuf) {
        st = tutti_alg_nccl_cuda(
            s, cudaMemcpyAsync(s->scratch, x->recvbuf,
                               (size_t)in->group_size * bytes,
                               cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync of the in-place input");
        if (st != TUTTI_OK)
            return st;
        src = s->scratch;
    }
    if ((r = ncclGroupStart()) != ncclSuccess)
        return tutti_alg_nccl_result(s, r, "ncclGroupStart");
    for (int p = 0; p < in->group_size && r == ncclSuccess; p++) {
        size_t off = (size_t)p * bytes;
        r = ncclSend(tutti_alg_nccl_at(src, off), in->count, s->dtype, p,
                     comm, stream);
        if (r == ncclSuccess)
            r = ncclRecv(tutti_alg_nccl_at(x->recvbuf, off), in->count,
                         s->dtype, p, comm, stream);
    }
    return tutti_alg_nccl_group_end(s, r, "ncclSend/ncclRecv");
}

static tutti_status_t alltoall_init_context(const tutti_alg_instance_t *inst,
                                            const tutti_core_ops_t *core,
                                            const void *details,
                                            size_t details_len,
                                            void **state_out)
{
    size_t esize = tutti_dtype_size(inst->dtype);
    (void)details;
    (void)details_len;
    if (esize == 0 || inst->group_size <= 0 ||
        inst->count > SIZE_MAX / esize / (size_t)inst->group_size)
        return core->error(TUTTI_ERR_INVALID_ARG, IMPL ": instance 0x%llx: "
                           "%d blocks of %zu elements of %zu bytes overflow "
                           "a size", (unsigned long long)inst->instance_key,
                           inst->group_size, inst->count, esize);
    return tutti_alg_nccl_state_create(
        inst, core, IMPL, alltoall_enqueue,
        (size_t)inst->group_size * inst->count * esize,
        state_out);
}

TUTTI_ALG_NCCL_TABLE(alltoall);
