/*
 * The ring module's implementations (internal to alg_ring.so): each file
 * <collective>_<algorithm>.c defines one ops table, named
 * tutti_alg_ring_<collective>_<algorithm>_ops (the algorithm left out where
 * it is the ring itself); ring_module.c lists them in the descriptor.
 */
#ifndef TUTTI_ALG_RING_H
#define TUTTI_ALG_RING_H

#include <tutti/module.h>

extern const tutti_alg_ops_t tutti_alg_ring_allreduce_ops;
extern const tutti_alg_ops_t tutti_alg_ring_allgather_ops;
extern const tutti_alg_ops_t tutti_alg_ring_reduce_scatter_ops;
extern const tutti_alg_ops_t tutti_alg_ring_alltoall_pairwise_ops;
extern const tutti_alg_ops_t tutti_alg_ring_permute_direct_ops;

#endif
