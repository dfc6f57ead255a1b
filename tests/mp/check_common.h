/*
 * The correctness matrix every member of a group runs: allreduce for every
 * dtype x op x count, in place and out of place, and broadcast for every
 * dtype x count x root, each result compared element by element with the
 * sequential reference in tools/pattern.c.
 */
#ifndef TUTTI_TEST_CHECK_COMMON_H
#define TUTTI_TEST_CHECK_COMMON_H

#include <stdio.h>

#include <tutti/tutti.h>

typedef struct {
    int checks;    /* collectives run and checked */
    int failures;  /* calls that failed or gave a wrong element */
} tutti_check_result_t;

/** Counts every check runs with (0, 1, 3, 1023, 1 Mi + 3 elements). */
extern const size_t tutti_check_counts[];
extern const int tutti_check_num_counts;

/** Runs the whole matrix on @p g; reports each failure on @p log. */
tutti_check_result_t tutti_check_matrix(tutti_group_t *g, FILE *log);

#endif
