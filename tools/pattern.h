/*
 * Deterministic inputs and their exact expected results, for tutti-perf and
 * the tests: values are small integers chosen so every supported reduction
 * is exact in every data type (int8, float16 and bfloat16 included): sums
 * for groups of up to 25 members, avg for groups of up to 7, and pre_scale
 * and post_scale exact when they are powers of two.
 */
#ifndef TUTTI_TOOLS_PATTERN_H
#define TUTTI_TOOLS_PATTERN_H

#include <stddef.h>

#include <tutti/tutti.h>

/** One collective call, as every rank of the group makes it. */
typedef struct {
    tutti_collective_t coll;
    tutti_dtype_t dtype;
    tutti_op_t op;          /**< reductions */
    int nranks;
    int root;               /**< rooted collectives */
    size_t count;           /**< per rank, or TUTTI_COUNT_PER_RANK */
    const size_t *counts;   /**< per-rank counts: allgather: nranks
                                 contributions; reduce_scatter: nranks block
                                 sizes; alltoall: nranks x nranks,
                                 counts[s * nranks + d] = elements rank s
                                 sends to rank d */
    const int *perm;        /**< permute: rank r sends to perm[r] */
    double pre_scale, post_scale; /**< 0 or 1: none */
} tutti_pattern_t;

/** Element @p i of @p buf as a double. */
double tutti_pattern_get(const void *buf, tutti_dtype_t dtype, size_t i);
/** Store @p v (a value exact in @p dtype) at element @p i. */
void tutti_pattern_set(void *buf, tutti_dtype_t dtype, size_t i, double v);

/** Elements rank @p rank reads from its sendbuf (0: none, as a broadcast's
 *  non-root). */
size_t tutti_pattern_in_count(const tutti_pattern_t *p, int rank);
/** Elements rank @p rank finds in its recvbuf afterwards (0: none, as a
 *  reduce's or gather's non-root). */
size_t tutti_pattern_out_count(const tutti_pattern_t *p, int rank);
/** In place, where rank @p rank's input sits in the one buffer: allgather
 *  and gather, its block's place in the output; else 0 (elements). */
size_t tutti_pattern_in_offset(const tutti_pattern_t *p, int rank);
/** In place, where rank @p rank's result sits in the one buffer:
 *  reduce_scatter, its block; else 0 (elements). */
size_t tutti_pattern_out_offset(const tutti_pattern_t *p, int rank);
/** Elements the one buffer of an in-place call must hold on rank @p rank:
 *  room for the input and the output at their offsets. */
size_t tutti_pattern_inplace_count(const tutti_pattern_t *p, int rank);
/** Fill rank @p rank's input: tutti_pattern_in_count() elements. */
void tutti_pattern_fill(const tutti_pattern_t *p, int rank, void *buf);
/** What rank @p rank must hold at element @p i of its output. */
double tutti_pattern_expected(const tutti_pattern_t *p, int rank, size_t i);
/** Number of output elements of rank @p rank that are wrong; the first
 *  wrong index goes to @p first_wrong_out (if not NULL). */
size_t tutti_pattern_check(const tutti_pattern_t *p, int rank,
                           const void *buf, size_t *first_wrong_out);

#endif
