/*
 * One row of tutti-perf's table as the tests read it (header-only,
 * static): size, count, type, redop, root, time, algbw, busbw, #wrong,
 * the implementation, and the collective where the table names it.
 */
#ifndef TUTTI_TEST_PERF_H
#define TUTTI_TEST_PERF_H

#include <stdio.h>
#include <string.h>

typedef struct {
    long long size, count, wrong;
    char type[16], op[16], impl[64], coll[32];
    int root;
    double time, algbw, busbw;
} test_perf_row_t;

/* Reads @p line into @p r: 1 if its first ten columns are a row's (coll
 * is "" when there is no eleventh), else 0 (a header or another line). */
static inline int test_perf_row(const char *line, test_perf_row_t *r)
{
    r->coll[0] = '\0';
    return sscanf(line, "%lld %lld %15s %15s %d %lf %lf %lf %lld %63s %31s",
                  &r->size, &r->count, r->type, r->op, &r->root, &r->time,
                  &r->algbw, &r->busbw, &r->wrong, r->impl, r->coll) >= 10;
}

/* Rows of a tutti-perf table in @p out whose #wrong is 0; -1 if a row
 * has wrong elements.  @p out is left as it was. */
static inline int test_perf_rows_exact(const char *out)
{
    int rows = 0;
    for (const char *l = out; l != NULL && *l != '\0';) {
        const char *nl = strchr(l, '\n');
        test_perf_row_t r;
        if (l[0] != '#' && test_perf_row(l, &r)) {
            if (r.wrong != 0)
                return -1;
            rows++;
        }
        l = nl != NULL ? nl + 1 : NULL;
    }
    return rows;
}

#endif
