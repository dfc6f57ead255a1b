/*
 * The tree module: latency and rooted algorithms, whose messages follow a
 * tree or a hypercube rather than a ring.
 */
#include <tutti/module.h>

#include "tree.h"

static const tutti_alg_impl_t tree_impls[] = {
    {"RecursiveDoublingReduce",
     "allreduce for small messages: log2(n) exchanges, any group size",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_tree_rd_ops, 0},
    {"HierarchicalTreeBroadcast",
     "broadcast from any root across hosts, then tasks, then inside "
     "each, down k-ary trees pipelined in chunks",
     TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_tree_bcast_ops, 0},
    {"TreeReduce",
     "reduce to any root up a k-ary tree, pipelined in chunks, reduced on "
     "receipt",
     TUTTI_COLL_BIT(TUTTI_COLL_REDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_tree_reduce_ops, 0},
    {"TreeGather",
     "gather to any root down a binomial tree, one message per subtree",
     TUTTI_COLL_BIT(TUTTI_COLL_GATHER), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_tree_gather_ops, 0},
    {"BruckAllgather",
     "allgather for small messages: ceil(log2 n) steps, any group size, "
     "equal counts",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_tree_bruck_ops, 0},
};

TUTTI_MODULE_DEFINE("tree", "0.3.0", tree_impls);
