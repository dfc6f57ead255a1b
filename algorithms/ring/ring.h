/*
 * The ring module's implementations (internal to alg_ring.so): each file
 * <collective>_<algorithm>.c defines one ops table, named
 * tutti_alg_ring_<collective>_<algorithm>_ops (the algorithm left out where
 * it is the ring itself); ring_module.c lists them in the descriptor.
 * Also the index and buffer arithmetic every ring schedule uses.
 */
#ifndef TUTTI_ALG_RING_H
#define TUTTI_ALG_RING_H

#include <stddef.h>

#include <tutti/module.h>

extern const tutti_alg_ops_t tutti_alg_ring_allreduce_ops;
extern const tutti_alg_ops_t tutti_alg_ring_allgather_ops;
extern const tutti_alg_ops_t tutti_alg_ring_reduce_scatter_ops;
extern const tutti_alg_ops_t tutti_alg_ring_alltoall_pairwise_ops;
extern const tutti_alg_ops_t tutti_alg_ring_permute_direct_ops;

/** The ring order that keeps each host's members consecutive: hosts in
 *  the order of their lowest rank, a host's members by rank (rank order
 *  itself where every host's ranks are consecutive, or without
 *  localities).  Writes group_size ranks into @p order (position ->
 *  rank); returns this member's position.  O(n^2), at set-up only. */
int tutti_alg_ring_host_order(const tutti_alg_instance_t *inst, int *order);

/** ((a mod n) + n) mod n. */
static inline int tutti_alg_ring_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/** @p base advanced by @p off bytes; no arithmetic for an offset of 0, so
 *  a NULL buffer of 0 elements stays NULL. */
static inline char *tutti_alg_ring_at(void *base, size_t off)
{
    return off == 0 ? (char *)base : (char *)base + off;
}

static inline const char *tutti_alg_ring_cat(const void *base, size_t off)
{
    return off == 0 ? (const char *)base : (const char *)base + off;
}

#endif
