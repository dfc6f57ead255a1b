/*
 * One task of a job that meets through a key-value store the program
 * brings (tutti_store_t), not the environment: a store of files in a
 * directory every task sees (tests/common/file_store.h).
 * Usage: store_worker TASK TASKS DIR [JOB_ID]; joins a group of every task, allreduces (sum, float64) task + i for i < 5 and
 * prints "store_worker T: job J: S0 S1 S2 S3 S4", or the error and exits
 * 1.  TUTTI_TEST_STORE_FAIL=KEY: the store's get of KEY fails (returns
 * -1), as a broken store would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "file_store.h"

/* file_store_get, failing for the key TUTTI_TEST_STORE_FAIL names. */
static int get_or_fail(void *user, const char *key, void *buf, size_t cap,
                       size_t *len_out, double timeout)
{
    const char *fail = getenv("TUTTI_TEST_STORE_FAIL");
    if (fail != NULL && strcmp(fail, key) == 0)
        return -1;
    return file_store_get(user, key, buf, cap, len_out, timeout);
}

int main(int argc, char **argv)
{
    tutti_store_t store;
    tutti_context_params_t cp;
    tutti_group_params_t gp;
    tutti_context_t *ctx = NULL;
    tutti_group_t *g = NULL;
    tutti_status_t st;
    double x[5];

    if (argc < 4) {
        fprintf(stderr, "usage: store_worker TASK TASKS DIR [JOB_ID]\n");
        return 2;
    }
    tutti_store_init(&store);
    store.user = argv[3];
    store.set = file_store_set;
    store.get = get_or_fail;
    tutti_context_params_init(&cp);
    cp.task = atoi(argv[1]);
    cp.num_tasks = atoi(argv[2]);
    cp.job_id = argc > 4 ? argv[4] : NULL;
    cp.store = &store;
    if ((st = tutti_context_create(&cp, &ctx)) != TUTTI_OK) {
        printf("store_worker %d: context: %s: %s\n", cp.task,
               tutti_status_name(st), tutti_last_error());
        return 1;
    }
    tutti_group_params_init(&gp);
    gp.group_key = 5;
    gp.group_size = cp.num_tasks;
    for (int i = 0; i < 5; i++)
        x[i] = cp.task + i;
    if ((st = tutti_group_join(ctx, &gp, &g)) != TUTTI_OK ||
        (st = tutti_allreduce(g, x, x, 5, TUTTI_FLOAT64, TUTTI_OP_SUM)) !=
            TUTTI_OK) {
        printf("store_worker %d: %s: %s\n", cp.task, tutti_status_name(st),
               tutti_last_error());
        tutti_group_leave(g);
        tutti_context_destroy(ctx);
        return 1;
    }
    printf("store_worker %d: job %s: %g %g %g %g %g\n", cp.task,
           cp.job_id ? cp.job_id : "(store)", x[0], x[1], x[2], x[3], x[4]);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return 0;
}
