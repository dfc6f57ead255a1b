/*
 * One task of the data-integrity tests (test_verify.c), started by
 * tutti-run:
 *
 *   verify_worker [--inflight K] COUNT...
 *
 * Joins a group of every task and runs, for each COUNT in turn, an int32
 * sum allreduce of COUNT elements (task t gives t x 1000003 + i at i),
 * then checks every element.  With --inflight K, K allreduces of COUNT
 * (K instances, the j-th adding j to every input) run at once, started
 * before any is waited for, and each is checked.  Prints per rank one of
 *   "verify_worker: rank R: exact: COUNT"
 *   "verify_worker: rank R: wrong: COUNT: element I is X, expected Y"
 *   "verify_worker: rank R: failed: COUNT: STATUS: DETAIL"
 * and stops at the first that is not exact.  Exit 0 when all are exact, 2
 * on a wrong value, 3 on a failed call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "members.h"

#define INFLIGHT_MAX 256

static int run_one(tutti_group_t *g, int task, int n, size_t count,
                   uint64_t key, int k)
{
    int rank = tutti_group_rank(g);
    int32_t *in = malloc((size_t)k * count * sizeof(int32_t));
    int32_t *out = calloc((size_t)k * count, sizeof(int32_t));
    tutti_request_t *req[INFLIGHT_MAX] = {0};
    tutti_status_t st = TUTTI_OK;
    int rc = 0, started = 0;
    if (in == NULL || out == NULL) {
        printf("verify_worker: rank %d: failed: %zu: no memory\n", rank,
               count);
        rc = 3;
        goto out;
    }
    for (int j = 0; j < k; j++)
        for (size_t i = 0; i < count; i++)
            in[(size_t)j * count + i] =
                (int32_t)(task * 1000003 + (int)(i % 1000000) + j);
    for (; st == TUTTI_OK && started < k; started++) {
        tutti_instance_params_t p;
        test_params(&p, key * INFLIGHT_MAX + (uint64_t)started,
                    TUTTI_COLL_ALLREDUCE, TUTTI_INT32, count);
        st = tutti_execute(g, &p, in + (size_t)started * count,
                           out + (size_t)started * count, &req[started]);
    }
    if (st == TUTTI_OK)
        st = tutti_request_wait_all(req, (size_t)k);
    if (st != TUTTI_OK) {
        printf("verify_worker: rank %d: failed: %zu: %s: %s\n", rank, count,
               tutti_status_name(st), tutti_last_error());
        rc = 3;
        goto out;
    }
    /* sum over tasks t of (t x 1000003 + i + j) */
    for (int j = 0; j < k; j++) {
        for (size_t i = 0; i < count; i++) {
            int32_t want = (int32_t)(1000003 * n * (n - 1) / 2 +
                                     n * ((int)(i % 1000000) + j));
            int32_t got = out[(size_t)j * count + i];
            if (got != want) {
                printf("verify_worker: rank %d: wrong: %zu: element %zu is "
                       "%d, expected %d (execution %d of %d)\n", rank, count,
                       i, got, want, j, k);
                rc = 2;
                goto out;
            }
        }
    }
    printf("verify_worker: rank %d: exact: %zu\n", rank, count);
out:
    fflush(stdout);
    /* A failed wait leaves requests in flight: exit without freeing them
     * or the buffers they use. */
    if (rc == 3)
        return rc;
    for (int j = 0; j < started; j++)
        tutti_request_free(req[j]);
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
    int rc = 0, first = 1, k = 1;
    if (argc > 2 && strcmp(argv[1], "--inflight") == 0) {
        k = atoi(argv[2]);
        first = 3;
        if (k < 1 || k > INFLIGHT_MAX) {
            printf("verify_worker: --inflight %s: expected 1 to %d\n",
                   argv[2], INFLIGHT_MAX);
            return 1;
        }
    }
    for (int i = first; rc == 0 && i < argc; i++)
        rc = run_one(g, task, n, (size_t)strtoull(argv[i], NULL, 10),
                     (uint64_t)i, k);
    /* A member whose call failed exits at once: its peers learn that its
     * task is gone rather than wait in a leave for their timeout. */
    if (rc != 0)
        return rc;
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return 0;
}
