/*
 * Deterministic inputs and their exact expected results, for tutti-perf and
 * the tests: values are small integers chosen so every supported reduction
 * is exact in every data type (int8, float16 and bfloat16 included) for
 * groups of up to 25 members.
 */
#ifndef TUTTI_TOOLS_PATTERN_H
#define TUTTI_TOOLS_PATTERN_H

#include <stddef.h>

#include <tutti/tutti.h>

/** Element @p i of @p buf as a double. */
double tutti_pattern_get(const void *buf, tutti_dtype_t dtype, size_t i);
/** Store @p v (an integer value exact in @p dtype) at element @p i. */
void tutti_pattern_set(void *buf, tutti_dtype_t dtype, size_t i, double v);

/** What rank @p rank contributes at element @p i. */
double tutti_pattern_input(tutti_collective_t coll, tutti_op_t op, int rank,
                           int nranks, int root, size_t i);
/** What every rank must hold at element @p i afterwards. */
double tutti_pattern_expected(tutti_collective_t coll, tutti_op_t op,
                              int nranks, int root, size_t i);

/** Fill @p count elements of @p buf with this rank's input. */
void tutti_pattern_fill(void *buf, tutti_dtype_t dtype, size_t count,
                        tutti_collective_t coll, tutti_op_t op, int rank,
                        int nranks, int root);
/** Number of elements of @p buf that differ from the expected result;
 *  the first wrong index goes to @p first_wrong_out (if not NULL). */
size_t tutti_pattern_check(const void *buf, tutti_dtype_t dtype, size_t count,
                           tutti_collective_t coll, tutti_op_t op, int nranks,
                           int root, size_t *first_wrong_out);

#endif
