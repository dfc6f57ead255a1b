/*
 * The tree module: latency and rooted algorithms, whose messages follow a
 * tree or a hypercube rather than a ring.  RecursiveDoublingAllreduce
 * keeps its former name as an alias, so rules and calls that name it so
 * still select it.
 */
#include <tutti/module.h>

#include "tree.h"

#define CPU TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)

static const char *const rd_was[] = {"RecursiveDoublingReduce", NULL};
/* The rule parameters of the pipelined k-ary trees (tree_plan.c); the
 * others read none (an empty list: NULL would mean "not declared"). */
static const char *const tree_params[] = {"fanout", "chunk", NULL};
static const char *const no_params[] = {NULL};

static const tutti_alg_impl_t tree_impls[] = {
    {.name = "RecursiveDoublingAllreduce", .aliases = rd_was,
     .description = "allreduce for small messages: log2(n) exchanges, any "
                    "group size",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), .device_types = CPU,
     .ops = &tutti_alg_tree_allreduce_recursive_doubling_ops,
     .params = no_params},
    {.name = "HierarchicalTreeBroadcast",
     .description = "broadcast from any root across hosts, then tasks, then "
                    "inside each, down k-ary trees pipelined in chunks",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST), .device_types = CPU,
     .ops = &tutti_alg_tree_broadcast_hierarchical_ops, .params = tree_params},
    {.name = "TreeReduce",
     .description = "reduce to any root up a k-ary tree, pipelined in "
                    "chunks, reduced on receipt",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE), .device_types = CPU,
     .ops = &tutti_alg_tree_reduce_ops, .params = tree_params},
    {.name = "TreeGather",
     .description = "gather to any root down a binomial tree, one message "
                    "per subtree",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_GATHER), .device_types = CPU,
     .ops = &tutti_alg_tree_gather_binomial_ops,
     .params = no_params},
    {.name = "BruckAllgather",
     .description = "allgather for small messages: ceil(log2 n) steps, any "
                    "group size, equal counts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER), .device_types = CPU,
     .ops = &tutti_alg_tree_allgather_bruck_ops,
     .params = no_params},
    {.name = "RecursiveHalvingReduceScatter",
     .description = "reduce_scatter for small blocks: log2(n) exchanges of "
                    "halving parts, any group size, equal counts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     .device_types = CPU,
     .ops = &tutti_alg_tree_reduce_scatter_recursive_halving_ops,
     .params = no_params},
    {.name = "BruckAlltoall",
     .description = "alltoall for small blocks: ceil(log2 n) exchanges of "
                    "packed blocks, any group size, equal counts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL), .device_types = CPU,
     .ops = &tutti_alg_tree_alltoall_bruck_ops,
     .params = no_params},
};

TUTTI_MODULE_DEFINE("tree", "0.5.0", tree_impls);
