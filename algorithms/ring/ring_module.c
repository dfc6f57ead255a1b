/*
 * The ring module: bandwidth algorithms whose steps pass data to ring
 * neighbours, or (all-to-all, permute) to the peer k places along the ring
 * at step k.
 */
#include <tutti/module.h>

#include "ring.h"

static const tutti_alg_impl_t ring_impls[] = {
    {"RingReduce", "allreduce: reduce-scatter then allgather around a ring",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &tutti_alg_ring_reduce_ops},
};

TUTTI_MODULE_DEFINE("ring", "0.2.0", ring_impls);
