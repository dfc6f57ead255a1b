/*
 * The ring module: bandwidth algorithms whose steps pass data to ring
 * neighbours, or (all-to-all, permute) straight to other members.
 * PairwiseAlltoall lives here because its schedule is a sequence of
 * exchanges with one partner per step, the ring pattern's generalisation;
 * DirectPermute is one such step, in which each member sends to the rank
 * the permutation gives it and receives from the rank whose entry names
 * it.  Each implementation keeps its former name as an alias, so rules and
 * calls that name it so still select it.
 */
#include <tutti/module.h>

#include "ring.h"

#define CPU TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)

static const char *const allreduce_was[] = {"RingReduce", NULL};
static const char *const allgather_was[] = {"RingGather", NULL};
static const char *const alltoall_was[] = {"AllToAll", NULL};
static const char *const permute_was[] = {"Permute", NULL};
/* The rule parameters each reads (core->param_size); an empty list: it
 * reads none (NULL would mean "not declared", and rules went unchecked). */
static const char *const allreduce_params[] = {"subdivisions", NULL};
static const char *const chunk_params[] = {"chunk", NULL};
static const char *const no_params[] = {NULL};

static const tutti_alg_impl_t ring_impls[] = {
    {.name = "RingAllreduce", .aliases = allreduce_was,
     .description = "allreduce: reduce-scatter then allgather around a ring",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), .device_types = CPU,
     .ops = &tutti_alg_ring_allreduce_ops, .params = allreduce_params},
    {.name = "RingAllgather", .aliases = allgather_was,
     .description = "allgather: each member forwards around a ring the "
                    "block it got last step (n-1 steps); per-rank counts too",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER), .device_types = CPU,
     .ops = &tutti_alg_ring_allgather_ops,
     .per_rank_collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER),
     .params = no_params},
    {.name = "RingReduceScatter",
     .description = "reduce_scatter: partial results travel around a ring, "
                    "reduced on receipt (n-1 steps); per-rank counts too",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     .device_types = CPU, .ops = &tutti_alg_ring_reduce_scatter_ops,
     .per_rank_collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     .params = chunk_params},
    {.name = "PairwiseAlltoall", .aliases = alltoall_was,
     .description = "alltoall: at step k each member exchanges blocks with "
                    "(k - rank) mod n, a few steps in flight; per-rank "
                    "counts too",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL), .device_types = CPU,
     .ops = &tutti_alg_ring_alltoall_pairwise_ops,
     .per_rank_collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL),
     .params = no_params},
    {.name = "DirectPermute", .aliases = permute_was,
     .description = "permute: each member sends its buffer straight to its "
                    "target rank",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_PERMUTE), .device_types = CPU,
     .ops = &tutti_alg_ring_permute_direct_ops, .params = no_params},
};

TUTTI_MODULE_DEFINE("ring", "0.4.0", ring_impls);
