/*
 * The ring module's implementations (internal to alg_ring.so): each file
 * defines one ops table; ring_module.c lists them in the descriptor.
 */
#ifndef TUTTI_ALG_RING_H
#define TUTTI_ALG_RING_H

#include <tutti/module.h>

extern const tutti_alg_ops_t tutti_alg_ring_reduce_ops;
extern const tutti_alg_ops_t tutti_alg_ring_gather_ops;
extern const tutti_alg_ops_t tutti_alg_ring_reduce_scatter_ops;
extern const tutti_alg_ops_t tutti_alg_ring_alltoall_ops;
extern const tutti_alg_ops_t tutti_alg_ring_permute_ops;

#endif
