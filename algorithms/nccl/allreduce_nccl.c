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

static tutti_status_t allreduce_init_context(const tutti_alg_instance_t *inst,
                                             const tutti_core_ops_t *core,
                                             const void *details,
                                             size_t details_len,
                                             void **state_out)
{
    (void)details;
    (void)details_len;
    return tutti_alg_nccl_state_create(inst, core, IMPL, allreduce_enqueue, 0,
                                       state_out);
}

const tutti_alg_ops_t tutti_alg_nccl_allreduce_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = allreduce_init_context,
    .run = tutti_alg_nccl_run, .progress = tutti_alg_nccl_progress,
    .fini_context = tutti_alg_nccl_fini_context,
    .supports = tutti_alg_nccl_supports};
