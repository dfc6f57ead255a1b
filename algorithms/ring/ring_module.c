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
    {"RingReduce", "allreduce: reduce-scatter then allgather around a ring",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_ring_reduce_ops, 0},
    {"RingGather", "allgather: each member forwards around a ring the block "
     "it got last step (n-1 steps); per-rank counts too",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_ring_gather_ops, TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER)},
    {"RingReduceScatter", "reduce_scatter: partial results travel around a "
     "ring, reduced on receipt (n-1 steps); per-rank counts too",
     TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER),
     TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), &tutti_alg_ring_reduce_scatter_ops,
     TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER)},
    {"AllToAll", "alltoall: pairwise exchange as ring shifts (step k: send "
     "to rank+k, receive from rank-k), a few steps in flight; per-rank "
     "counts too",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_ring_alltoall_ops, TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL)},
    {"Permute", "permute: each member sends its buffer straight to its "
     "target rank",
     TUTTI_COLL_BIT(TUTTI_COLL_PERMUTE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_ring_permute_ops, 0},
};

TUTTI_MODULE_DEFINE("ring", "0.3.0", ring_impls);
