/* Deterministic inputs and expected results for checks (see pattern.h). */
#include <stdint.h>
#include <string.h>

#include "pattern.h"
#include "base/reduce.h"

double tutti_pattern_get(const void *buf, tutti_dtype_t dtype, size_t i)
{
    switch (dtype) {
    case TUTTI_INT8: return ((const int8_t *)buf)[i];
    case TUTTI_UINT8: return ((const uint8_t *)buf)[i];
    case TUTTI_INT32: return ((const int32_t *)buf)[i];
    case TUTTI_UINT32: return ((const uint32_t *)buf)[i];
    case TUTTI_INT64: return (double)((const int64_t *)buf)[i];
    case TUTTI_UINT64: return (double)((const uint64_t *)buf)[i];
    case TUTTI_FLOAT16: return tutti__half_to_float(((const uint16_t *)buf)[i]);
    case TUTTI_BFLOAT16: return tutti__bf16_to_float(((const uint16_t *)buf)[i]);
    case TUTTI_FLOAT32: return ((const float *)buf)[i];
    case TUTTI_FLOAT64: return ((const double *)buf)[i];
    default: return 0;
    }
}

void tutti_pattern_set(void *buf, tutti_dtype_t dtype, size_t i, double v)
{
    switch (dtype) {
    case TUTTI_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case TUTTI_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case TUTTI_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case TUTTI_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case TUTTI_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case TUTTI_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case TUTTI_FLOAT16: ((uint16_t *)buf)[i] = tutti__float_to_half((float)v); break;
    case TUTTI_BFLOAT16: ((uint16_t *)buf)[i] = tutti__float_to_bf16((float)v); break;
    case TUTTI_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case TUTTI_FLOAT64: ((double *)buf)[i] = v; break;
    default: break;
    }
}

static int per_rank(const tutti_pattern_t *p)
{
    return p->count == TUTTI_COUNT_PER_RANK;
}

static double scale_of(double f)
{
    return f == 0.0 ? 1.0 : f;
}

/* Elements of block @p b: rank b's contribution (allgather), block b of the
 * reduced vector (reduce_scatter). */
static size_t block(const tutti_pattern_t *p, int b)
{
    return per_rank(p) ? p->counts[b] : p->count;
}

static size_t block_off(const tutti_pattern_t *p, int b)
{
    size_t off = 0;
    for (int k = 0; k < b; k++)
        off += block(p, k);
    return off;
}

/* alltoall: elements rank s sends rank d, and where they sit in s's input
 * (d's block) and in d's output (s's block). */
static size_t a2a(const tutti_pattern_t *p, int s, int d)
{
    return per_rank(p) ? p->counts[(size_t)s * (size_t)p->nranks + (size_t)d]
                       : p->count;
}

static size_t a2a_send_off(const tutti_pattern_t *p, int s, int d)
{
    size_t off = 0;
    for (int k = 0; k < d; k++)
        off += a2a(p, s, k);
    return off;
}

static size_t a2a_recv_off(const tutti_pattern_t *p, int d, int s)
{
    size_t off = 0;
    for (int k = 0; k < s; k++)
        off += a2a(p, k, d);
    return off;
}

/*
 * What rank @p r contributes at element @p j of the reduced vector.  Sums:
 * 1..5 (totals <= 5 x nranks); min and max 1..11; products 1 or 2 (one rank
 * per element gives 2); avg: nranks x (1 or 2), so the sum divides exactly.
 */
static double reduce_input(const tutti_pattern_t *p, int r, size_t j)
{
    size_t ur = (size_t)r;
    switch (p->op) {
    case TUTTI_OP_PROD:
        return ur == j % (size_t)p->nranks ? 2.0 : 1.0;
    case TUTTI_OP_SUM:
        return (double)((ur * 3 + j) % 5 + 1);
    case TUTTI_OP_AVG:
        return (double)p->nranks * (double)((ur + j) % 2 + 1);
    default: /* min, max */
        return (double)((ur * 7 + j) % 11 + 1);
    }
}

/* Element @p j of the reduced vector, scaled as the call asks. */
static double reduce_expected(const tutti_pattern_t *p, size_t j)
{
    double pre = scale_of(p->pre_scale);
    double acc = pre * reduce_input(p, 0, j);
    for (int r = 1; r < p->nranks; r++) {
        double v = pre * reduce_input(p, r, j);
        switch (p->op) {
        case TUTTI_OP_SUM:
        case TUTTI_OP_AVG: acc += v; break;
        case TUTTI_OP_PROD: acc *= v; break;
        case TUTTI_OP_MIN: acc = v < acc ? v : acc; break;
        default: acc = v > acc ? v : acc; break;
        }
    }
    if (p->op == TUTTI_OP_AVG)
        acc /= p->nranks;
    return acc * scale_of(p->post_scale);
}

/* Data moved unreduced: distinct small integers per source, exact in
 * int8 and bfloat16 (at most 97). */
static double moved(int src, size_t k)
{
    return (double)(((size_t)src * 29 + k) % 97 + 1);
}

size_t tutti_pattern_in_count(const tutti_pattern_t *p, int rank)
{
    int n = p->nranks;
    switch (p->coll) {
    case TUTTI_COLL_BROADCAST:
        return rank == p->root ? p->count : 0;
    case TUTTI_COLL_ALLGATHER:
        return block(p, rank);
    case TUTTI_COLL_REDUCE_SCATTER:
        return block_off(p, n);
    case TUTTI_COLL_ALLTOALL:
        return a2a_send_off(p, rank, n);
    default: /* allreduce, reduce, gather, permute */
        return p->count;
    }
}

size_t tutti_pattern_out_count(const tutti_pattern_t *p, int rank)
{
    int n = p->nranks;
    switch (p->coll) {
    case TUTTI_COLL_REDUCE:
        return rank == p->root ? p->count : 0;
    case TUTTI_COLL_GATHER:
        return rank == p->root ? p->count * (size_t)n : 0;
    case TUTTI_COLL_ALLGATHER:
        return block_off(p, n);
    case TUTTI_COLL_REDUCE_SCATTER:
        return block(p, rank);
    case TUTTI_COLL_ALLTOALL:
        return a2a_recv_off(p, rank, n);
    default: /* allreduce, broadcast, permute */
        return p->count;
    }
}

size_t tutti_pattern_in_offset(const tutti_pattern_t *p, int rank)
{
    if (p->coll == TUTTI_COLL_ALLGATHER || p->coll == TUTTI_COLL_GATHER)
        return block_off(p, rank);
    return 0;
}

size_t tutti_pattern_out_offset(const tutti_pattern_t *p, int rank)
{
    return p->coll == TUTTI_COLL_REDUCE_SCATTER ? block_off(p, rank) : 0;
}

size_t tutti_pattern_inplace_count(const tutti_pattern_t *p, int rank)
{
    size_t in = tutti_pattern_in_offset(p, rank) +
                tutti_pattern_in_count(p, rank);
    size_t out = tutti_pattern_out_offset(p, rank) +
                 tutti_pattern_out_count(p, rank);
    return in > out ? in : out;
}

/* Input element @p i of rank @p rank. */
static double input_at(const tutti_pattern_t *p, int rank, size_t i)
{
    if (tutti_collective_reduces(p->coll))
        return reduce_input(p, rank, i);
    if (p->coll == TUTTI_COLL_ALLTOALL) {
        int d = 0;
        while (d + 1 < p->nranks && i >= a2a_send_off(p, rank, d + 1))
            d++;
        /* Encode the destination too, so a block sent to the wrong rank
         * shows. */
        return moved(rank * p->nranks + d, i - a2a_send_off(p, rank, d));
    }
    return moved(rank, i);
}

void tutti_pattern_fill(const tutti_pattern_t *p, int rank, void *buf)
{
    size_t n = tutti_pattern_in_count(p, rank);
    if (p->coll == TUTTI_COLL_ALLTOALL) {
        size_t i = 0;
        for (int d = 0; d < p->nranks; d++)
            for (size_t k = 0; k < a2a(p, rank, d); k++, i++)
                tutti_pattern_set(buf, p->dtype, i,
                                  moved(rank * p->nranks + d, k));
        return;
    }
    for (size_t i = 0; i < n; i++)
        tutti_pattern_set(buf, p->dtype, i, input_at(p, rank, i));
}

double tutti_pattern_expected(const tutti_pattern_t *p, int rank, size_t i)
{
    int n = p->nranks, s = 0;
    switch (p->coll) {
    case TUTTI_COLL_BROADCAST:
        return moved(p->root, i);
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_REDUCE:
        return reduce_expected(p, i);
    case TUTTI_COLL_REDUCE_SCATTER:
        return reduce_expected(p, block_off(p, rank) + i);
    case TUTTI_COLL_ALLGATHER:
        while (s + 1 < n && i >= block_off(p, s + 1))
            s++;
        return moved(s, i - block_off(p, s));
    case TUTTI_COLL_GATHER:
        return moved((int)(i / p->count), i % p->count);
    case TUTTI_COLL_ALLTOALL:
        while (s + 1 < n && i >= a2a_recv_off(p, rank, s + 1))
            s++;
        return moved(s * n + rank, i - a2a_recv_off(p, rank, s));
    case TUTTI_COLL_PERMUTE:
        for (s = 0; s < n && p->perm[s] != rank; s++)
            ;
        return moved(s, i);
    default:
        return 0;
    }
}

/* Counts element @p i of @p buf wrong unless it holds @p want. */
static void check_at(const tutti_pattern_t *p, const void *buf, size_t i,
                     double want, size_t *wrong, size_t *first_wrong_out)
{
    if (tutti_pattern_get(buf, p->dtype, i) == want)
        return;
    if (*wrong == 0 && first_wrong_out)
        *first_wrong_out = i;
    (*wrong)++;
}

size_t tutti_pattern_check(const tutti_pattern_t *p, int rank,
                           const void *buf, size_t *first_wrong_out)
{
    size_t wrong = 0, i = 0, n = tutti_pattern_out_count(p, rank);
    int nr = p->nranks;

    /* Collectives whose output is one block per source: walked block by
     * block, so checking costs one pass whatever the group size (the
     * per-element tutti_pattern_expected() searches the blocks). */
    switch (p->coll) {
    case TUTTI_COLL_ALLGATHER:
        for (int s = 0; s < nr; s++)
            for (size_t k = 0; k < block(p, s); k++, i++)
                check_at(p, buf, i, moved(s, k), &wrong, first_wrong_out);
        return wrong;
    case TUTTI_COLL_GATHER:
        for (int s = 0; i < n && s < nr; s++)
            for (size_t k = 0; k < p->count; k++, i++)
                check_at(p, buf, i, moved(s, k), &wrong, first_wrong_out);
        return wrong;
    case TUTTI_COLL_ALLTOALL:
        for (int s = 0; s < nr; s++)
            for (size_t k = 0; k < a2a(p, s, rank); k++, i++)
                check_at(p, buf, i, moved(s * nr + rank, k), &wrong,
                         first_wrong_out);
        return wrong;
    default:
        for (; i < n; i++)
            check_at(p, buf, i, tutti_pattern_expected(p, rank, i), &wrong,
                     first_wrong_out);
        return wrong;
    }
}
