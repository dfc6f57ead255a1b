/*
 * One task of the data-integrity tests (test_verify.c), started by
 * tutti-run:
 *
 *   verify_worker COUNT...
 *
 * Joins a group of every task and runs, for each COUNT in turn, an int32
 * sum allreduce of COUNT elements (task t gives t x 1000003 + i at i),
 * then checks every element.  Prints per rank one of
 *   "verify_worker: rank R: exact: COUNT"
 *   "verify_worker: rank R: wrong: COUNT: element I is X, expected Y"
 *   "verify_worker: rank R: failed: COUNT: STATUS: DETAIL"
 * and stops at the first that is not exact.  Exit 0 when all are exact, 2
 * on a wrong value, 3 on a failed call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tutti/tutti.h>

#include "test_group.h"

static int run_one(tutti_group_t *g, int task, int n, size_t count,
                   uint64_t key)
{
    int rank = tutti_group_rank(g);
    int32_t *in = malloc(count * sizeof(int32_t));
    int32_t *out = calloc(count, sizeof(int32_t));
    int rc = 0;
    if (in == NULL || out == NULL) {
        printf("verify_worker: rank %d: failed: %zu: no memory\n", rank,
               count);
        rc = 3;
        goto out;
    }
    for (size_t i = 0; i < count; i++)
        in[i] = (int32_t)(task * 1000003 + (int)(i % 1000000));
    tutti_instance_params_t p;
    test_params(&p, key, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, count);
    tutti_status_t st = test_exec_wait(g, &p, in, out);
    if (st != TUTTI_OK) {
        printf("verify_worker: rank %d: failed: %zu: %s: %s\n", rank, count,
               tutti_status_name(st), tutti_last_error());
        rc = 3;
        goto out;
    }
    /* sum over tasks t of (t x 1000003 + i) */
    for (size_t i = 0; i < count; i++) {
        int32_t want = (int32_t)(1000003 * n * (n - 1) / 2 +
                                 n * (int)(i % 1000000));
        if (out[i] != want) {
            printf("verify_worker: rank %d: wrong: %zu: element %zu is %d, "
                   "expected %d\n", rank, count, i, out[i], want);
            rc = 2;
            goto out;
        }
    }
    printf("verify_worker: rank %d: exact: %zu\n", rank, count);
out:
    fflush(stdout);
    free(in);
    free(out);
    return rc;
}

int main(int argc, char **argv)
{
    tutti_context_t *ctx = test_context_from_env("verify_worker",
                                                 tutti_status_name);
    if (ctx == NULL)
        return 1;
    int task = tutti_context_task(ctx), n = tutti_context_num_tasks(ctx);
    tutti_group_t *g = NULL;
    if (test_join(ctx, 61, n, 0, 0, &g) != TUTTI_OK) {
        printf("verify_worker: task %d: join: %s\n", task,
               tutti_last_error());
        tutti_context_destroy(ctx);
        return 1;
    }
    int rc = 0;
    for (int i = 1; rc == 0 && i < argc; i++)
        rc = run_one(g, task, n, (size_t)strtoull(argv[i], NULL, 10),
                     (uint64_t)i);
    /* A member whose call failed exits at once: its peers learn that its
     * task is gone rather than wait in a leave for their timeout. */
    if (rc != 0)
        return rc;
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return 0;
}
