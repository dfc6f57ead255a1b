/*
 * What the ring module's per-rank-count collectives share (internal to
 * alg_ring.so): the state they set up for their counts, a buffer's layout
 * in one block per rank, a one-round exchange of small fixed-size records
 * with every peer, and the decision, the same on every member, whether
 * every receive buffer holds what it must receive.
 */
#ifndef TUTTI_ALG_RING_COUNTS_H
#define TUTTI_ALG_RING_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/module.h>

#include "ring.h"

/* Tags of the record exchanges; data steps use small tags below these. */
#define TUTTI_ALG_RING_TAG_META 0x40000000u

/** What one member tells the others: a count of elements (what it sends,
 *  or what it must receive) and how many elements its recvbuf holds. */
typedef struct {
    uint64_t count;
    uint64_t capacity;
} tutti_alg_ring_rec_t;

/** Progress of one record exchange. */
typedef struct {
    tutti_xfer_t *sx, *rx;  /* group_size slots each, indexed by peer */
    int next;               /* peers below this one are complete */
    int own_slots;          /* sx and rx were made for the exchange */
} tutti_alg_ring_meta_t;

/** What RingAllgather and PairwiseAlltoall keep from init_context on for their
 *  counts: the instance and its element size, whether the counts are per
 *  rank and, if they are, a record per rank and their exchange. */
typedef struct {
    const tutti_alg_instance_t *inst;
    size_t esize;
    int per_rank;               /* inst->count is TUTTI_COUNT_PER_RANK */
    tutti_alg_ring_rec_t *rec;  /* group_size records, indexed by rank */
    tutti_alg_ring_meta_t meta; /* and the exchange's transfer slots */
} tutti_alg_ring_counts_t;

/** A buffer cut into one block per rank, in elements. */
typedef struct {
    size_t *off, *len;          /* group_size entries each */
} tutti_alg_ring_blocks_t;

/**
 * Allocate @p b for @p inst's group (at init_context).  With equal counts
 * block i is then count elements at i * count; with per-rank counts
 * tutti_alg_ring_blocks_set() lays out each call.  Returns
 * TUTTI_ERR_NO_MEMORY without recording it: the caller names itself and
 * what it was making.  tutti_alg_ring_blocks_fini() frees what it made.
 */
tutti_status_t tutti_alg_ring_blocks_init(tutti_alg_ring_blocks_t *b,
                                          const tutti_alg_instance_t *inst);
void tutti_alg_ring_blocks_fini(tutti_alg_ring_blocks_t *b);

/** Lay the blocks end to end, block i of @p counts[i] elements, for
 *  @p n ranks. */
void tutti_alg_ring_blocks_set(tutti_alg_ring_blocks_t *b, int n,
                               const size_t *counts);

/**
 * Fill @p c for @p inst (at init_context), with per-rank counts allocating
 * its records.  The exchange uses @p sx and @p rx, the caller's arrays of
 * group_size transfer slots each, which must be idle whenever an exchange
 * is under way (as data slots are before the data moves); a caller
 * without such arrays passes NULL for both and the slots are made here.
 * TUTTI_ERR_NO_MEMORY as for tutti_alg_ring_blocks_init().
 * tutti_alg_ring_counts_fini() frees what it made.
 */
tutti_status_t tutti_alg_ring_counts_init(tutti_alg_ring_counts_t *c,
                                          const tutti_alg_instance_t *inst,
                                          tutti_xfer_t *sx, tutti_xfer_t *rx);
void tutti_alg_ring_counts_fini(tutti_alg_ring_counts_t *c);

/**
 * Post a send of @p rec_bytes bytes to every peer (the record for peer p at
 * @p send + p * @p send_stride; stride 0: one record for all) and a receive
 * of @p rec_bytes from every peer into @p recv + p * @p rec_bytes, under
 * @p tag.  Returns the first error of core->send/recv as it is.
 */
tutti_status_t tutti_alg_ring_meta_post(tutti_alg_exec_t *x,
                                        tutti_alg_ring_meta_t *m, uint32_t tag,
                                        const void *send, size_t send_stride,
                                        void *recv, size_t rec_bytes);

/** TUTTI_OK once every transfer of the exchange completed,
 *  TUTTI_INPROGRESS, or a transfer's error as it is. */
tutti_status_t tutti_alg_ring_meta_test(tutti_alg_exec_t *x,
                                        tutti_alg_ring_meta_t *m);

/**
 * Decide whether every member's recvbuf holds what it must receive: rank r
 * needs *@p need elements (with @p need NULL: recs[r].count) and holds
 * recs[r].capacity.  Every member decides alike from the same
 * records.  Sets *fits_out to 1 if all fit.  Otherwise returns
 * TUTTI_ERR_TOO_SMALL, recorded with core->error() naming @p impl, the
 * short ranks, what each holds and needs, or TUTTI_OK on a member that
 * asked for sizes only (recvbuf NULL and capacity 0).
 */
tutti_status_t tutti_alg_ring_check_fit(tutti_alg_exec_t *x, const char *impl,
                                        const tutti_alg_ring_rec_t *recs,
                                        const uint64_t *need, int *fits_out);

/** Sum of @p a and @p b, UINT64_MAX when it overflows (then no buffer
 *  fits and the call fails with TUTTI_ERR_TOO_SMALL). */
static inline uint64_t tutti_alg_ring_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif
