/*
 * Cost of resolution: the first execution of an instance asks the
 * coordinator (task 0) to check and decide it; later executions reuse the
 * decision.  For K fresh instances this times the first and the second
 * execution of each (8-byte allreduce) and counts the control frames this
 * task sent around each.  Rank 0 prints medians.
 *
 *   tutti-run -n N bench/tutti-resolve-cost [K]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tutti/tutti.h>

#include "context.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double run_once(tutti_group_t *g, uint64_t key)
{
    float in[2] = {1, 2}, out[2];
    tutti_instance_params_t p;
    tutti_request_t *r;
    tutti_instance_params_init(&p);
    p.instance_key = key;
    p.count = 2;
    double t = now_us();
    if (tutti_execute(g, &p, in, out, &r) != TUTTI_OK ||
        tutti_request_wait(r) != TUTTI_OK) {
        fprintf(stderr, "resolve_cost: %s\n", tutti_last_error());
        exit(1);
    }
    tutti_request_free(r);
    return now_us() - t;
}

int main(int argc, char **argv)
{
    int k = argc > 1 ? atoi(argv[1]) : 50;
    tutti_context_t *ctx;
    tutti_group_t *g;
    tutti_group_params_t gp;
    if (k < 1 || tutti_context_create(NULL, &ctx) != TUTTI_OK)
        return 1;
    tutti_group_params_init(&gp);
    gp.group_key = 9;
    gp.group_size = tutti_context_num_tasks(ctx);
    if (tutti_group_join(ctx, &gp, &g) != TUTTI_OK)
        return 1;
    double *first = calloc((size_t)k, sizeof(double));
    double *second = calloc((size_t)k, sizeof(double));
    uint64_t frames_first = 0, frames_second = 0;
    for (int i = 0; i < k; i++) {
        tutti_barrier(g);
        uint64_t f0 = tutti__context_frames_sent(ctx);
        first[i] = run_once(g, 1000 + (uint64_t)i);
        uint64_t f1 = tutti__context_frames_sent(ctx);
        tutti_barrier(g);
        second[i] = run_once(g, 1000 + (uint64_t)i);
        frames_first += f1 - f0;
        frames_second += tutti__context_frames_sent(ctx) - f1;
    }
    qsort(first, (size_t)k, sizeof(double), cmp);
    qsort(second, (size_t)k, sizeof(double), cmp);
    if (tutti_group_rank(g) == 0 || tutti_context_num_tasks(ctx) == 1)
        printf("%d tasks, %d instances: first execution median %.1f us, "
               "second %.2f us; control frames sent by this task: %.2f per "
               "first execution, %.2f per second\n",
               tutti_context_num_tasks(ctx), k, first[k / 2], second[k / 2],
               (double)frames_first / k, (double)frames_second / k);
    free(first);
    free(second);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return 0;
}
