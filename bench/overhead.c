/*
 * The framework's own cost per call on the cached path: a group of one
 * member, an instance already resolved, an 8-byte float32 allreduce
 * (execute, wait, free), so what is timed is the library's work around an
 * implementation that has nothing to send.  Prints the best and the
 * median of R rounds of N calls, in nanoseconds per call.
 *
 *   bench/tutti-overhead [N (1000000)] [R (7)] [IMPLEMENTATION]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tutti/tutti.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    tutti_context_params_t cp;
    tutti_group_params_t gp;
    tutti_instance_params_t p;
    tutti_context_t *ctx;
    tutti_group_t *g;
    float in[2] = {1, 2}, out[2];
    if (n < 1 || rounds < 1 || rounds > 99) {
        fprintf(stderr, "usage: %s [calls >= 1] [rounds 1-99] [impl]\n",
                argv[0]);
        return 2;
    }
    tutti_context_params_init(&cp);
    cp.task = 0;
    cp.num_tasks = 1;
    tutti_group_params_init(&gp);
    gp.group_key = 1;
    gp.group_size = 1;
    tutti_instance_params_init(&p);
    p.instance_key = 5;
    p.collective = TUTTI_COLL_ALLREDUCE;
    p.dtype = TUTTI_FLOAT32;
    p.count = 2;
    p.algorithm = argc > 3 ? argv[3] : NULL;
    if (tutti_context_create(&cp, &ctx) != TUTTI_OK ||
        tutti_group_join(ctx, &gp, &g) != TUTTI_OK) {
        fprintf(stderr, "overhead: %s\n", tutti_last_error());
        return 1;
    }
    double per_call[99];
    for (int k = 0; k < rounds; k++) {
        double t = now_ns();
        for (long i = 0; i < n; i++) {
            tutti_request_t *r;
            if (tutti_execute(g, &p, in, out, &r) != TUTTI_OK ||
                tutti_request_wait(r) != TUTTI_OK) {
                fprintf(stderr, "overhead: %s\n", tutti_last_error());
                return 1;
            }
            tutti_request_free(r);
        }
        per_call[k] = (now_ns() - t) / (double)n;
    }
    tutti_request_info_t info;
    tutti_request_t *r;
    tutti_execute(g, &p, in, out, &r);
    tutti_request_wait(r);
    tutti_request_info(r, &info);
    qsort(per_call, (size_t)rounds, sizeof(double), cmp);
    printf("overhead: %s, group of 1, 8 B float32 allreduce: best %.1f ns, "
           "median %.1f ns per call (%d rounds of %ld)\n", info.algorithm,
           per_call[0], per_call[rounds / 2], rounds, n);
    tutti_request_free(r);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return out[0] == 1.0f && out[1] == 2.0f ? 0 : 1;
}
