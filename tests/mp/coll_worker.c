/*
 * One rank of the multi-process correctness test, started by tutti-run:
 * joins a group of every task and runs the matrix.  Prints
 * "coll_worker: rank R: C checks, F failures" and exits 1 on any failure.
 */
#include <stdio.h>

#include <tutti/tutti.h>

#include "check_common.h"

int main(void)
{
    tutti_context_t *ctx;
    tutti_group_t *g;
    tutti_group_params_t gp;
    tutti_status_t st = tutti_context_create(NULL, &ctx);

    if (st != TUTTI_OK) {
        fprintf(stderr, "coll_worker: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return 1;
    }
    tutti_group_params_init(&gp);
    gp.group_key = 42;
    gp.group_size = tutti_context_num_tasks(ctx);
    if ((st = tutti_group_join(ctx, &gp, &g)) != TUTTI_OK) {
        fprintf(stderr, "coll_worker: join: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        tutti_context_destroy(ctx);
        return 1;
    }
    tutti_check_result_t res = tutti_check_matrix(g, stderr);
    printf("coll_worker: rank %d: %d checks, %d failures\n",
           tutti_group_rank(g), res.checks, res.failures);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return res.failures == 0 && res.checks > 0 ? 0 : 1;
}
