/* Deterministic inputs and expected results for checks. */
#include <stdint.h>
#include <string.h>

#include "pattern.h"
#include "reduce.h"

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

/* Inputs are 1..5 for sums (totals <= 5 * nranks), 1..11 for min and max,
 * 1 or 2 for products (totals 2): exact in every type up to 25 members. */
double tutti_pattern_input(tutti_collective_t coll, tutti_op_t op, int rank,
                           int nranks, int root, size_t i)
{
    size_t r = (size_t)rank;
    if (coll == TUTTI_COLL_BROADCAST)
        return rank == root ? (double)((i + (size_t)root) % 97 + 1) : -1.0;
    switch (op) {
    case TUTTI_OP_PROD:
        return (size_t)rank == i % (size_t)nranks ? 2.0 : 1.0;
    case TUTTI_OP_SUM:
        return (double)((r * 3 + i) % 5 + 1);
    default: /* min, max */
        return (double)((r * 7 + i) % 11 + 1);
    }
}

double tutti_pattern_expected(tutti_collective_t coll, tutti_op_t op,
                              int nranks, int root, size_t i)
{
    double acc;
    if (coll == TUTTI_COLL_BROADCAST)
        return tutti_pattern_input(coll, op, root, nranks, root, i);
    acc = tutti_pattern_input(coll, op, 0, nranks, root, i);
    for (int r = 1; r < nranks; r++) {
        double v = tutti_pattern_input(coll, op, r, nranks, root, i);
        switch (op) {
        case TUTTI_OP_SUM: acc += v; break;
        case TUTTI_OP_PROD: acc *= v; break;
        case TUTTI_OP_MIN: acc = v < acc ? v : acc; break;
        default: acc = v > acc ? v : acc; break;
        }
    }
    return acc;
}

void tutti_pattern_fill(void *buf, tutti_dtype_t dtype, size_t count,
                        tutti_collective_t coll, tutti_op_t op, int rank,
                        int nranks, int root)
{
    for (size_t i = 0; i < count; i++)
        tutti_pattern_set(buf, dtype, i,
                          tutti_pattern_input(coll, op, rank, nranks, root, i));
}

size_t tutti_pattern_check(const void *buf, tutti_dtype_t dtype, size_t count,
                           tutti_collective_t coll, tutti_op_t op, int nranks,
                           int root, size_t *first_wrong_out)
{
    size_t wrong = 0;
    /* The expected value repeats with period lcm(3, nranks, 97) at most;
     * computing it per element keeps this simple and exact. */
    for (size_t i = 0; i < count; i++) {
        double want = tutti_pattern_expected(coll, op, nranks, root, i);
        if (tutti_pattern_get(buf, dtype, i) != want) {
            if (wrong == 0 && first_wrong_out)
                *first_wrong_out = i;
            wrong++;
        }
    }
    return wrong;
}
