/*
 * The hierarchical module: collectives that follow the group's hosts, so
 * the data crosses each host's link the least (HierarchicalAllreduce,
 * HierarchicalAllgather, HierarchicalReduceScatter) or in the fewest
 * messages (HierarchicalLeaderAllreduce, HierarchicalAlltoall), with the
 * steps inside a host on the host's own transport.  Each declines groups
 * whose hosts hold different numbers of members (selection goes on to the
 * next rule).  Rules pick them by the number of hosts (`hosts:`).
 */
#include <tutti/module.h>

#include "hier.h"

#define CPU TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)

static const char *const no_params[] = {NULL};

static const tutti_alg_impl_t hier_impls[] = {
    {.name = "HierarchicalAllreduce",
     .description = "allreduce: reduce-scatter inside hosts, ring allreduce "
                    "of each shard between hosts, allgather inside hosts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), .device_types = CPU,
     .ops = &tutti_alg_hier_allreduce_hierarchical_ops, .params = no_params},
    {.name = "HierarchicalLeaderAllreduce",
     .description = "allreduce for small messages: reduce to each host's "
                    "leader, leaders exchange, broadcast inside hosts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), .device_types = CPU,
     .ops = &tutti_alg_hier_allreduce_leader_ops, .params = no_params},
    {.name = "HierarchicalAllgather",
     .description = "allgather: rings between hosts per local index, then a "
                    "ring inside each host; equal counts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER), .device_types = CPU,
     .ops = &tutti_alg_hier_allgather_hierarchical_ops, .params = no_params},
    {.name = "HierarchicalReduceScatter",
     .description = "reduce_scatter: a ring inside each host, then rings "
                    "between hosts per local index; equal counts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     .device_types = CPU,
     .ops = &tutti_alg_hier_reduce_scatter_hierarchical_ops,
     .params = no_params},
    {.name = "HierarchicalAlltoall",
     .description = "alltoall: blocks packed per pair of hosts, one message "
                    "between each pair; equal counts",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL), .device_types = CPU,
     .ops = &tutti_alg_hier_alltoall_hierarchical_ops, .params = no_params},
};

TUTTI_MODULE_DEFINE("hier", "0.1.0", hier_impls);
