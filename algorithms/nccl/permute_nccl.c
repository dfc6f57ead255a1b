/*
 * NcclPermute: one NCCL group of a send to rank permutation[rank] and a
 * receive from the rank whose entry names this one.  In place, the input
 * is first copied on the stream to a device buffer of count elements (made
 * at init_context, only for a member that does not map to itself), since
 * the receive overwrites what the send reads; a member that maps to
 * itself copies its buffer (or, in place, does nothing).  Limits: a
 * permutation that names every rank once, CUDA memory, one GPU per rank.
 */
#include "nccl_exec.h"

#define IMPL "NcclPermute"

static tutti_status_t permute_enqueue(tutti_alg_nccl_state_t *s,
                                      const tutti_alg_exec_t *x,
                                      cudaStream_t stream)
{
    size_t bytes = s->inst->count * s->esize;
    const void *src = x->sendbuf;
    ncclComm_t comm = s->group->comm;
    tutti_status_t st;
    ncclResult_t r;

    if (s->to == s->inst->rank) {
        if (x->sendbuf == x->recvbuf)
            return TUTTI_OK;
        return tutti_alg_nccl_cuda(
            s, cudaMemcpyAsync(x->recvbuf, x->sendbuf, bytes,
                               cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync to itself");
    }
    if (x->sendbuf == x->recvbuf) {
        st = tutti_alg_nccl_cuda(
            s, cudaMemcpyAsync(s->scratch, x->recvbuf, bytes,
                               cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync of the in-place input");
        if (st != TUTTI_OK)
            return st;
        src = s->scratch;
    }
    if ((r = ncclGroupStart()) != ncclSuccess)
        return tutti_alg_nccl_result(s, r, "ncclGroupStart");
    r = ncclSend(src, s->inst->count, s->dtype, s->to, comm, stream);
    if (r == ncclSuccess)
        r = ncclRecv(x->recvbuf, s->inst->count, s->dtype, s->from, comm,
                     stream);
    return tutti_alg_nccl_group_end(s, r, "ncclSend/ncclRecv");
}

static tutti_status_t permute_init_context(const tutti_alg_instance_t *inst,
                                           const tutti_core_ops_t *core,
                                           const void *details,
                                           size_t details_len,
                                           void **state_out)
{
    int n = inst->group_size, r = inst->rank, from = -1, named = 0, to;
    tutti_alg_nccl_state_t *s;
    tutti_status_t st;
    void *made;
    (void)details;
    (void)details_len;

    if (inst->permutation == NULL)
        return core->error(TUTTI_ERR_INVALID_ARG, IMPL ": instance 0x%llx: "
                           "no permutation (expected %d entries)",
                           (unsigned long long)inst->instance_key, n);
    to = inst->permutation[r];
    for (int i = 0; i < n; i++)
        if (inst->permutation[i] == r) {
            from = i;
            named++;
        }
    if (to < 0 || to >= n || named != 1)
        return core->error(TUTTI_ERR_INVALID_ARG, IMPL ": instance 0x%llx "
                           "rank %d: permutation[%d] = %d and %d entries name "
                           "rank %d: expected each of 0..%d once",
                           (unsigned long long)inst->instance_key, r, r, to,
                           named, r, n - 1);
    st = tutti_alg_nccl_state_create(
        inst, core, IMPL, permute_enqueue,
        to != r ? inst->count * tutti_dtype_size(inst->dtype) : 0, &made);
    if (st != TUTTI_OK)
        return st;
    s = made;
    s->to = to;
    s->from = from;
    *state_out = made;
    return TUTTI_OK;
}

TUTTI_ALG_NCCL_TABLE(permute);
