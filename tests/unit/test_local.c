/*
 * The local transport: several members of one group in one process, one
 * thread each (1 to 5), running the correctness matrix (tools/conformance/matrix.h); and the errors of
 * joining (a member that never comes, a member with another group size);
 * and, with more members than processors, waits that sleep on the mesh's
 * doorbells.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "matrix.h"
#include "members.h"
#include "test_util.h"

typedef struct {
    tutti_context_t *ctx;
    uint64_t key;
    int size, index;
    double timeout;
    tutti_status_t join_status;
    char join_error[512];
    tutti_check_result_t res;
} member_t;

/* Joins @p m's group; keeps the status and detail in @p m. */
static tutti_group_t *join(member_t *m)
{
    tutti_group_t *g = NULL;

    m->join_status = test_join(m->ctx, m->key, m->size, m->index, m->timeout,
                               &g);
    snprintf(m->join_error, sizeof(m->join_error), "%s", tutti_last_error());
    return m->join_status == TUTTI_OK ? g : NULL;
}

static void *member_main(void *arg)
{
    member_t *m = arg;
    tutti_group_t *g = join(m);

    if (g == NULL)
        return NULL;
    tutti_group_leave(g);
    return NULL;
}

/* Runs the matrix as member @p m (it joins groups of its own). */
static void *matrix_member(void *arg)
{
    member_t *m = arg;
    tutti_check_env_t env;
    tutti_check_env_init(&env, m->ctx);
    env.group_key = m->key;
    env.group_size = m->size;
    env.device_index = m->index;
    env.timeout = m->timeout;
    m->res = tutti_check_matrix(&env);
    m->join_status = TUTTI_OK;
    return NULL;
}

/* Runs @p fn as each of the @p n members and waits for them. */
static void run_members(member_t *m, int n, void *(*fn)(void *))
{
    assert_int_equal(test_threads(n, fn, m, sizeof(m[0])), 0);
}

static void matrix_with(void **state, int n)
{
    member_t m[8];
    for (int i = 0; i < n; i++)
        m[i] = (member_t){*state, 100 + (uint64_t)n, n, i, 30, 0, "",
                          {0, 0, 0, 0}};
    run_members(m, n, matrix_member);
    print_message("matrix, 1 task x %d devices: %d cases per member ran, %d "
                  "sampled out (TUTTI_CHECK_FULL=1 runs them)\n", n,
                  m[0].res.checks, m[0].res.sampled_out);
    for (int i = 0; i < n; i++) {
        assert_int_equal(m[i].res.checks, m[0].res.checks);
        assert_true(m[i].res.checks > 1);
        if (m[i].res.failures != 0)
            fail_msg("member %d: %d failures (see the log)", i,
                     m[i].res.failures);
    }
}

static void test_matrix_1(void **state) { matrix_with(state, 1); }
static void test_matrix_2(void **state) { matrix_with(state, 2); }
static void test_matrix_5(void **state) { matrix_with(state, 5); }
static void test_matrix_3(void **state) { matrix_with(state, 3); }
static void test_matrix_4(void **state) { matrix_with(state, 4); }

static void test_member_never_joins(void **state)
{
    member_t m[2];
    for (int i = 0; i < 2; i++)
        m[i] = (member_t){*state, 200, 3, i, 0.5, 0, "", {0, 0, 0, 0}};
    run_members(m, 2, member_main);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(m[i].join_status, TUTTI_ERR_TIMEOUT);
        /* The member that gives up first withdraws, so the other may name
         * it too; rank 2 is named by both. */
        if (strstr(m[i].join_error, "of 3 members joined within the time "
                                    "limit (task 0 cpu:") == NULL)
            fail_msg("join error: %s", m[i].join_error);
    }
}

static void test_group_size_mismatch(void **state)
{
    member_t first = {*state, 300, 2, 0, 2.0, 0, "", {0, 0, 0, 0}};
    member_t other = {*state, 300, 3, 1, 0.5, 0, "", {0, 0, 0, 0}};
    struct timespec pause = {0, 300 * 1000 * 1000};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, member_main, &first), 0);
    /* Let the first member create the group before the other arrives. */
    nanosleep(&pause, NULL);
    member_main(&other);
    pthread_join(t, NULL);
    /* Both learn the same reason, naming both values. */
    assert_int_equal(other.join_status, TUTTI_ERR_MISMATCH);
    assert_int_equal(first.join_status, TUTTI_ERR_MISMATCH);
    const char *want = "group 0x12c: group size differs: task 0 cpu:0 has 2, "
                       "task 0 cpu:1 has 3";
    assert_string_equal(other.join_error, want);
    assert_string_equal(first.join_error, want);
}

static atomic_int idle_stop;

/* Joins the group and then never calls a collective. */
static void *idle_member(void *arg)
{
    struct timespec nap = {0, 1000 * 1000};
    tutti_group_t *g = join(arg);

    if (g == NULL)
        return NULL;
    while (!atomic_load(&idle_stop))
        nanosleep(&nap, NULL);
    tutti_group_leave(g);
    return NULL;
}

/* A peer that never arrives: the execution fails within the time limit,
 * naming group, instance and step, and the group refuses further calls. */
static void test_execution_timeout(void **state)
{
    member_t idle = {*state, 400, 2, 1, 0.5, 0, "", {0, 0, 0, 0}};
    tutti_instance_params_t ip;
    tutti_request_t *r;
    tutti_group_t *g;
    pthread_t t;
    float x[4] = {1, 2, 3, 4}, y[4];

    atomic_store(&idle_stop, 0);
    assert_int_equal(pthread_create(&t, NULL, idle_member, &idle), 0);
    /* The group's time limit is 30 s: the call's own below is what counts. */
    assert_int_equal(test_join(*state, 400, 2, 0, 30, &g), TUTTI_OK);
    test_params(&ip, 9, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 4);
    ip.timeout = 0.5;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(tutti_execute(g, &ip, x, y, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_ERR_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    tutti_request_free(r);
    const char *want = "instance 0x9 of group 0x190: rank 1 never executed "
                       "it within the time limit";
    assert_string_equal(tutti_last_error(), want);
    /* The instance stays refused; the group itself is still usable. */
    assert_int_equal(tutti_execute(g, &ip, x, y, &r), TUTTI_ERR_TIMEOUT);
    assert_string_equal(tutti_last_error(), want);
    atomic_store(&idle_stop, 1);
    pthread_join(t, NULL);
    assert_int_equal(idle.join_status, TUTTI_OK);
    tutti_group_leave(g);
}

/* Executes instance @p key (4-float sum); waits unless @p req_out. */
static tutti_status_t exec_sum(tutti_group_t *g, uint64_t key, float *buf,
                               tutti_request_t **req_out)
{
    tutti_instance_params_t ip;
    test_params(&ip, key, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 4);
    if (req_out == NULL)
        return test_exec_wait(g, &ip, buf, buf);
    return tutti_execute(g, &ip, buf, buf, req_out);
}

typedef struct {
    member_t m;
    float a[4], b[4];
    tutti_status_t st;
} order_member_t;

/* Member 0 issues A then B and waits for both; member 1 runs B to the end
 * before it even issues A.  A's message reaches member 1 first and must
 * not block B's behind it. */
static void *order_main(void *arg)
{
    order_member_t *o = arg;
    tutti_group_t *g = join(&o->m);
    tutti_request_t *ra, *rb;
    if (g == NULL)
        return NULL;
    o->st = exec_sum(g, 1, o->a, NULL);      /* resolve both, same order */
    if (o->st == TUTTI_OK)
        o->st = exec_sum(g, 2, o->b, NULL);
    for (int i = 0; i < 4; i++)
        o->a[i] = o->b[i] = (float)(o->m.index + 1 + i);
    if (o->st == TUTTI_OK && o->m.index == 0) {
        if ((o->st = exec_sum(g, 1, o->a, &ra)) == TUTTI_OK &&
            (o->st = exec_sum(g, 2, o->b, &rb)) == TUTTI_OK) {
            o->st = tutti_request_wait(ra);
            tutti_status_t st2 = tutti_request_wait(rb);
            o->st = o->st != TUTTI_OK ? o->st : st2;
            tutti_request_free(ra);
            tutti_request_free(rb);
        }
    } else if (o->st == TUTTI_OK) {
        o->st = exec_sum(g, 2, o->b, NULL);
        if (o->st == TUTTI_OK)
            o->st = exec_sum(g, 1, o->a, NULL);
    }
    tutti_group_leave(g);
    return NULL;
}

static void test_instances_in_opposite_orders(void **state)
{
    order_member_t o[2];
    for (int i = 0; i < 2; i++) {
        memset(&o[i], 0, sizeof(o[i]));
        o[i].m = (member_t){*state, 500, 2, i, 5.0, 0, "", {0, 0, 0, 0}};
    }
    assert_int_equal(test_threads(2, order_main, o, sizeof(o[0])), 0);
    for (int i = 0; i < 2; i++) {
        if (o[i].st != TUTTI_OK)
            fail_msg("member %d: %s", i, tutti_status_name(o[i].st));
        for (int k = 0; k < 4; k++) {
            /* (1 + k) + (2 + k) */
            assert_true(o[i].a[k] == (float)(3 + 2 * k));
            assert_true(o[i].b[k] == (float)(3 + 2 * k));
        }
    }
}

/* Member 1 runs instance 9 once with member 0, then stops calling. */
static void *quitter(void *arg)
{
    member_t *m = arg;
    tutti_group_t *g = join(m);
    float x[4] = {1, 1, 1, 1};
    struct timespec nap = {0, 1000 * 1000};
    if (g == NULL)
        return NULL;
    m->join_status = exec_sum(g, 9, x, NULL);
    while (!atomic_load(&idle_stop))
        nanosleep(&nap, NULL);
    tutti_group_leave(g);
    return NULL;
}


/* A launched execution whose peer stops: the timeout writes the flight
 * recorder, naming the rank it waited for and the executions before. */
static void test_flight_recorder_on_timeout(void **state)
{
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    char log[] = "/tmp/tutti-flight-XXXXXX";
    float x[4] = {1, 1, 1, 1};
    pthread_t t;
    (void)state;

    tutti_context_params_init(&cp);
    cp.task = 0;
    cp.num_tasks = 1;
    cp.log_level = "error";
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_OK);
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    close(fd);

    member_t quit = {ctx, 1000, 2, 1, 0.5, 0, "", {0, 0, 0, 0}};
    member_t me = {ctx, 1000, 2, 0, 0.5, 0, "", {0, 0, 0, 0}};
    atomic_store(&idle_stop, 0);
    assert_int_equal(pthread_create(&t, NULL, quitter, &quit), 0);
    tutti_group_t *g = join(&me);
    tutti_status_t first = exec_sum(g, 9, x, NULL);
    tutti_status_t second = exec_sum(g, 9, x, NULL);
    atomic_store(&idle_stop, 1);
    pthread_join(t, NULL);
    tutti_group_leave(g);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    tutti_context_destroy(ctx);

    assert_int_equal(first, TUTTI_OK);
    assert_int_equal(second, TUTTI_ERR_TIMEOUT);
    assert_true(test_file_has(log, "instance 0x9 step 1 "
                                   "(RecursiveDoublingAllreduce) made no "
                                   "progress for"));
    assert_true(test_file_has(log, "s; waiting for rank 1"));
    assert_true(test_file_has(log, "flight: group 0x3e8 rank 0 (task:0/cpu:0): no "
                             "progress for"));
    /* Rank 1 never came: its receive awaited; the send to it is done
     * (the local transport keeps an unexpected send's bytes). */
    assert_true(test_file_has(log, "instance 0x9 step 1: waiting for rank(s) 1; "
                             "sends to rank(s) none not taken; heard from "
                             "rank(s) none"));
    assert_true(test_file_has(log, "#1 instance 0x9 step 0 "
                             "RecursiveDoublingAllreduce 16 bytes "
                             "done"));
    assert_true(test_file_has(log, "#2 instance 0x9 step 1 "
                             "RecursiveDoublingAllreduce 16 bytes "
                             "running"));
    unlink(log);
}

typedef struct {
    tutti_context_t *ctx;
    uint64_t key;
    int index;
    const int *order;
    tutti_status_t st;
    char error[512];
    int rank;
    int device_at_rank0;
    float sum;
} ordered_t;

static void *ordered_main(void *arg)
{
    ordered_t *o = arg;
    tutti_group_params_t gp;
    tutti_group_t *g;
    tutti_locality_t loc;
    float x, y = 0;
    tutti_group_params_init(&gp);
    gp.group_key = o->key;
    gp.group_size = 3;
    gp.device_index = o->index;
    gp.timeout = 10;
    gp.ring_order = o->order;
    o->st = tutti_group_join(o->ctx, &gp, &g);
    snprintf(o->error, sizeof(o->error), "%s", tutti_last_error());
    if (o->st != TUTTI_OK)
        return NULL;
    o->rank = tutti_group_rank(g);
    tutti_group_locality(g, 0, &loc);
    o->device_at_rank0 = loc.device_index;
    x = (float)(o->index + 1);
    o->st = tutti_allreduce(g, &x, &y, 1, TUTTI_FLOAT32, TUTTI_OP_SUM);
    o->sum = y;
    tutti_group_leave(g);
    return NULL;
}

static void run_ordered(void **state, uint64_t key, const int *const *orders,
                        ordered_t *o)
{
    for (int i = 0; i < 3; i++) {
        memset(&o[i], 0, sizeof(o[i]));
        o[i].ctx = *state;
        o[i].key = key;
        o[i].index = i;
        o[i].order = orders[i];
    }
    assert_int_equal(test_threads(3, ordered_main, o, sizeof(o[0])), 0);
}

/* rank r goes to the member at default position order[r]. */
/* ---- more members than processors -------------------------------------- */

typedef struct {
    member_t m;
    int late_ms;          /* member 1: how late it comes to the call */
    double waited_ms, cpu_ms; /* member 0: its wait, and the CPU it took */
    int wrong;            /* elements wrong over the rounds */
    tutti_status_t st;
} sleeper_t;

static double ms_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One 8-int32 allreduce under @p key; counts wrong elements into @p s. */
static void sum_round(sleeper_t *s, tutti_group_t *g, uint64_t key, int n)
{
    int32_t in[8], out[8];
    tutti_instance_params_t ip;
    for (int i = 0; i < 8; i++)
        in[i] = s->m.index * 10 + i;
    test_params(&ip, key, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 8);
    if ((s->st = test_exec_wait(g, &ip, in, out)) != TUTTI_OK)
        return;
    for (int i = 0; i < 8; i++)
        s->wrong += out[i] != 10 * n * (n - 1) / 2 + n * i;
}

static void *sleeper_main(void *arg)
{
    sleeper_t *s = arg;
    tutti_group_t *g = join(&s->m);
    struct timespec late = {0, 2000000};
    if (g == NULL)
        return NULL;
    sum_round(s, g, 1, s->m.size); /* resolved: then only waits */
    if (s->st == TUTTI_OK && s->m.index == 1) {
        struct timespec ts = {s->late_ms / 1000,
                              (long)(s->late_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        sum_round(s, g, 1, s->m.size);
    } else if (s->st == TUTTI_OK) {
        double wall = ms_of(CLOCK_MONOTONIC);
        double cpu = ms_of(CLOCK_THREAD_CPUTIME_ID);
        sum_round(s, g, 1, s->m.size);
        s->waited_ms = ms_of(CLOCK_MONOTONIC) - wall;
        s->cpu_ms = ms_of(CLOCK_THREAD_CPUTIME_ID) - cpu;
    }
    /* Rounds with a member late by 2 ms now and then: no wake-up lost. */
    for (int i = 0; s->st == TUTTI_OK && i < 200; i++) {
        if (i % 7 == 0 && s->m.index == (i / 7) % s->m.size)
            nanosleep(&late, NULL);
        sum_round(s, g, 2 + (uint64_t)(i % 3), s->m.size);
    }
    tutti_group_leave(g);
    return NULL;
}

/* Three members as threads of a process held to one CPU (as taskset
 * would, tutti-run's TUTTI_BIND=none saying its ranks are unpinned): the
 * member waiting 300 ms for a late one sleeps on its doorbell, taking a
 * few ms of CPU (yielding alone on the CPU it took all of it), and every
 * sum of the rounds after is exact. */
static void test_oversubscribed_waits_sleep(void **state)
{
    cpu_set_t old, one;
    int cpu = 0;
    assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
    while (!CPU_ISSET(cpu, &old))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    assert_int_equal(setenv("TUTTI_BIND", "none", 1), 0);
    sleeper_t s[3];
    for (int i = 0; i < 3; i++)
        s[i] = (sleeper_t){{*state, 700, 3, i, 30, 0, "", {0, 0, 0, 0}},
                           300, 0, 0, 0, TUTTI_OK};
    int started = test_threads(3, sleeper_main, s, sizeof(s[0]));
    unsetenv("TUTTI_BIND");
    assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
    assert_int_equal(started, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s[i].m.join_status, TUTTI_OK);
        if (s[i].st != TUTTI_OK || s[i].wrong != 0)
            fail_msg("member %d: %s, %d elements wrong: %s", i,
                     tutti_status_name(s[i].st), s[i].wrong,
                     tutti_last_error());
    }
    print_message("member 0 waited %.0f ms, took %.1f ms of CPU\n",
                  s[0].waited_ms, s[0].cpu_ms);
    assert_true(s[0].waited_ms > 200);
    if (s[0].cpu_ms > 0.2 * s[0].waited_ms)
        fail_msg("member 0 took %.0f ms of CPU in a %.0f ms wait", s[0].cpu_ms,
                 s[0].waited_ms);
}

static void test_ring_order(void **state)
{
    static const int order[3] = {2, 0, 1};
    const int *orders[3] = {order, order, order};
    ordered_t o[3];
    run_ordered(state, 1100, orders, o);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(o[i].st, TUTTI_OK);
        assert_int_equal(order[o[i].rank], i);
        assert_int_equal(o[i].device_at_rank0, 2);
        assert_true(o[i].sum == 6.0f);
    }
}

static void test_ring_order_disagreement(void **state)
{
    static const int a[3] = {2, 0, 1}, b[3] = {0, 1, 2}, bad[3] = {0, 0, 1};
    const int *mixed[3] = {a, b, a}, *broken[3] = {bad, bad, bad};
    ordered_t o[3];
    run_ordered(state, 1200, mixed, o);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(o[i].st, TUTTI_ERR_MISMATCH);
        assert_non_null(strstr(o[i].error, "ring_order differs: "));
        assert_non_null(strstr(o[i].error, "gives [2,0,1]"));
        assert_non_null(strstr(o[i].error, "gives [0,1,2]"));
    }
    run_ordered(state, 1300, broken, o);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(o[i].st, TUTTI_ERR_MISMATCH);
        assert_non_null(strstr(o[i].error, "ring_order is not a permutation "
                                           "of 0..2"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix_1),
        cmocka_unit_test(test_matrix_2),
        cmocka_unit_test(test_matrix_3),
        cmocka_unit_test(test_matrix_4),
        cmocka_unit_test(test_matrix_5),
        cmocka_unit_test(test_member_never_joins),
        cmocka_unit_test(test_group_size_mismatch),
        cmocka_unit_test(test_execution_timeout),
        cmocka_unit_test(test_instances_in_opposite_orders),
        cmocka_unit_test(test_flight_recorder_on_timeout),
        cmocka_unit_test(test_oversubscribed_waits_sleep),
        cmocka_unit_test(test_ring_order),
        cmocka_unit_test(test_ring_order_disagreement),
    };
    return cmocka_run_group_tests_name("local", tests, test_single_task_setup,
                                       test_context_teardown);
}
