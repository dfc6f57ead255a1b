/*
 * One task of the idle-wait tests (test_idle.c), started by tutti-run:
 *
 *   idle_worker late MS        the last rank sleeps MS milliseconds, then
 *                              joins an int32 allreduce the others wait in
 *   idle_worker mixed N        N int32 allreduces of 1 to 1000 elements,
 *                              a rank sleeping 2 ms before some of them
 *   idle_worker stall MS       the last rank never calls; the group's time
 *                              limit is MS milliseconds
 *
 * Each rank prints one line:
 *   "idle_worker: rank R: waited W ms, cpu C ms"   (late; the last rank
 *                                                   prints "slept")
 *   "idle_worker: rank R: exact: N"                 (mixed)
 *   "idle_worker: rank R: failed after W ms: STATUS" (stall, and any call
 *                                                   that fails)
 *   "idle_worker: rank R: wrong: ..."
 * Exit 0 when the mode went as described, 2 on a wrong value, 3 on a
 * failed call (stall: 0 when the waiting ranks fail with a time-out).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tutti/tutti.h>

#include "members.h"

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One int32 sum allreduce of @p count elements under instance @p key:
 * rank r gives r + i at i; checks every element.  0, 2 or 3 as main. */
static int allreduce(tutti_group_t *g, uint64_t key, size_t count)
{
    int rank = tutti_group_rank(g), n = tutti_group_size(g);
    int32_t in[1000], out[1000];
    tutti_instance_params_t p;
    for (size_t i = 0; i < count; i++)
        in[i] = rank + (int32_t)i;
    test_params(&p, key, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, count);
    tutti_status_t st = test_exec_wait(g, &p, in, out);
    if (st != TUTTI_OK) {
        printf("idle_worker: rank %d: failed: %s: %s\n", rank,
               tutti_status_name(st), tutti_last_error());
        return 3;
    }
    for (size_t i = 0; i < count; i++) {
        int32_t want = (int32_t)(n * (n - 1) / 2 + n * (int)i);
        if (out[i] != want) {
            printf("idle_worker: rank %d: wrong: instance %llu element %zu "
                   "is %d, expected %d\n", rank, (unsigned long long)key, i,
                   out[i], want);
            return 2;
        }
    }
    return 0;
}

static int late(tutti_group_t *g, int ms)
{
    int rank = tutti_group_rank(g), n = tutti_group_size(g), rc;
    rc = allreduce(g, 1, 4); /* resolved and connected: only waits remain */
    if (rc != 0)
        return rc;
    if (rank == n - 1) {
        sleep_ms(ms);
        printf("idle_worker: rank %d: slept %d ms\n", rank, ms);
        return allreduce(g, 1, 4);
    }
    double wall = clock_ms(CLOCK_MONOTONIC);
    double cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    rc = allreduce(g, 1, 4);
    if (rc == 0)
        printf("idle_worker: rank %d: waited %.0f ms, cpu %.0f ms\n", rank,
               clock_ms(CLOCK_MONOTONIC) - wall,
               clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu);
    return rc;
}

static int mixed(tutti_group_t *g, int rounds)
{
    int rank = tutti_group_rank(g), n = tutti_group_size(g);
    for (int i = 0; i < rounds; i++) {
        if (i % 5 == 0 && rank == (i / 5) % n)
            sleep_ms(2);
        int rc = allreduce(g, 10 + (uint64_t)(i % 7),
                           1 + (size_t)(i % 7) * 166);
        if (rc != 0)
            return rc;
    }
    printf("idle_worker: rank %d: exact: %d\n", rank, rounds);
    return 0;
}

static int stall(tutti_group_t *g, int ms)
{
    int rank = tutti_group_rank(g), n = tutti_group_size(g);
    int rc = allreduce(g, 1, 4); /* resolved: the second only waits */
    if (rc != 0)
        return rc;
    if (rank == n - 1) {
        sleep_ms(4 * ms);
        return 0;
    }
    int32_t in[4] = {0}, out[4];
    tutti_instance_params_t p;
    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 4);
    double wall = clock_ms(CLOCK_MONOTONIC);
    tutti_status_t st = test_exec_wait(g, &p, in, out);
    printf("idle_worker: rank %d: failed after %.0f ms: %s\n", rank,
           clock_ms(CLOCK_MONOTONIC) - wall, tutti_status_name(st));
    return st == TUTTI_ERR_TIMEOUT ? 0 : 3;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: idle_worker late|mixed|stall NUMBER\n");
        return 1;
    }
    int arg = atoi(argv[2]);
    tutti_context_t *ctx = test_context_from_env("idle_worker",
                                                 tutti_status_name);
    if (ctx == NULL)
        return 1;
    int task = tutti_context_task(ctx), n = tutti_context_num_tasks(ctx);
    double limit = strcmp(argv[1], "stall") == 0 ? arg / 1e3 : 0;
    tutti_group_t *g = NULL;
    if (test_join(ctx, 71, n, 0, limit, &g) != TUTTI_OK) {
        printf("idle_worker: task %d: join: %s\n", task, tutti_last_error());
        tutti_context_destroy(ctx);
        return 1;
    }
    int rc = strcmp(argv[1], "late") == 0    ? late(g, arg)
             : strcmp(argv[1], "mixed") == 0 ? mixed(g, arg)
                                             : stall(g, arg);
    fflush(stdout);
    /* A member whose call failed (or a stalled group) exits at once. */
    if (rc != 0 || strcmp(argv[1], "stall") == 0)
        return rc;
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return 0;
}
