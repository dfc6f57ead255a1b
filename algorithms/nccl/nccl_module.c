/*
 * The NCCL module: one implementation per collective NCCL runs, on CUDA
 * device memory and the caller's stream, launched in the caller's order
 * (NCCL's rule for one communicator), with one communicator per group
 * (nccl_comm.c).  Per-rank allgather and alltoall are not offered: their
 * output sizes are known only after an exchange, which cannot be ordered
 * on the stream without a round trip through the host.
 */
#include <tutti/module.h>

#include "nccl_comm.h"
#include "nccl_exec.h"

#define CUDA TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA)
#define FLAGS (TUTTI_IMPL_DEVICE_MEMORY | TUTTI_IMPL_ORDERED)
#define STR2_(x) #x
#define STR_(x) STR2_(x)
#define VERSION                                                                \
    "0.1.0 (NCCL " STR_(NCCL_MAJOR) "." STR_(NCCL_MINOR) "."                   \
        STR_(NCCL_PATCH) ")"

/* NCCL's implementations read no rule parameter (NCCL reads its own
 * NCCL_* variables). */
static const char *const no_params[] = {NULL};

static const tutti_alg_impl_t nccl_impls[] = {
    {.name = "NcclAllreduce", .description = "allreduce: ncclAllReduce",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), .device_types = CUDA,
     .ops = &tutti_alg_nccl_allreduce_ops, .flags = FLAGS,
     .params = no_params},
    {.name = "NcclBroadcast", .description = "broadcast: ncclBroadcast",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST), .device_types = CUDA,
     .ops = &tutti_alg_nccl_broadcast_ops, .flags = FLAGS,
     .params = no_params},
    {.name = "NcclReduce", .description = "reduce: ncclReduce",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE), .device_types = CUDA,
     .ops = &tutti_alg_nccl_reduce_ops, .flags = FLAGS,
     .params = no_params},
    {.name = "NcclAllgather", .description = "allgather: ncclAllGather",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER), .device_types = CUDA,
     .ops = &tutti_alg_nccl_allgather_ops, .flags = FLAGS,
     .params = no_params},
    {.name = "NcclReduceScatter",
     .description = "reduce_scatter: ncclReduceScatter; per-rank counts "
                    "too, as one grouped ncclReduce per block",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     .device_types = CUDA, .ops = &tutti_alg_nccl_reduce_scatter_ops,
     .per_rank_collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     .flags = FLAGS,
     .params = no_params},
    {.name = "NcclAlltoall",
     .description = "alltoall: one NCCL group of ncclSend and ncclRecv per "
                    "rank",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL), .device_types = CUDA,
     .ops = &tutti_alg_nccl_alltoall_ops, .flags = FLAGS,
     .params = no_params},
    {.name = "NcclGather",
     .description = "gather: one NCCL group of sends to the root",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_GATHER), .device_types = CUDA,
     .ops = &tutti_alg_nccl_gather_ops, .flags = FLAGS,
     .params = no_params},
    {.name = "NcclPermute",
     .description = "permute: one NCCL group of a send to the target rank "
                    "and a receive from the source",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_PERMUTE), .device_types = CUDA,
     .ops = &tutti_alg_nccl_permute_ops, .flags = FLAGS,
     .params = no_params},
};

TUTTI_MODULE_DEFINE_WITH_GROUP("nccl", VERSION, nccl_impls,
                               &tutti_alg_nccl_group_ops);
