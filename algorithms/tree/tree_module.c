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
     &tutti_alg_tree_rd_ops},
    {"HierarchicalTreeBroadcast",
     "broadcast from any root down a k-ary tree, pipelined in chunks",
     TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_tree_bcast_ops},
};

TUTTI_MODULE_DEFINE("tree", "0.2.0", tree_impls);
