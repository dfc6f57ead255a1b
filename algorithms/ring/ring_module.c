/*
 * The ring module: bandwidth algorithms whose steps pass data to ring
 * neighbours, or (all-to-all, permute) to the peer k places along the ring
 * at step k.  AllToAll lives here because its pairwise schedule is a
 * sequence of ring shifts: at step k a member sends to rank+k and receives
 * from rank-k, the ring pattern with a stride of k; Permute is one such
 * shift per pair, of the distance the permutation gives it.
 */
#include <tutti/module.h>

#include "ring.h"

static const tutti_alg_impl_t ring_impls[] = {
    {.name = "RingReduce",
     .description = "allreduce: reduce-scatter then allgather around a ring",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &tutti_alg_ring_allreduce_ops},
    {.name = "RingGather",
     .description = "allgather: each member forwards around a ring the "
                    "block it got last step (n-1 steps); per-rank counts too",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &tutti_alg_ring_allgather_ops,
     .per_rank_collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER)},
    {.name = "RingReduceScatter",
     .description = "reduce_scatter: partial results travel around a ring, "
                    "reduced on receipt (n-1 steps); per-rank counts too",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &tutti_alg_ring_reduce_scatter_ops,
     .per_rank_collectives = TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER)},
    {.name = "AllToAll",
     .description = "alltoall: pairwise exchange as ring shifts (step k: "
                    "send to rank+k, receive from rank-k), a few steps in "
                    "flight; per-rank counts too",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &tutti_alg_ring_alltoall_pairwise_ops,
     .per_rank_collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL)},
    {.name = "Permute",
     .description = "permute: each member sends its buffer straight to its "
                    "target rank",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_PERMUTE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &tutti_alg_ring_permute_direct_ops},
};

TUTTI_MODULE_DEFINE("ring", "0.3.0", ring_impls);
