/*
 * Executor behaviour seen from the host API, with two members of a group
 * in one process (one thread each): wait_for chains launch in dependency
 * order, higher priority launches first, explicit step ids, wait_any and
 * wait_all.  Launch order is observed through tutti_request_info().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "members.h"
#include "test_util.h"

#define MEMBERS 2

/* One execution a scenario starts, in the order of its table: a sum of
 * @c value under instance @c key, waiting for instance @c wait_for (0:
 * none); its request, launch order, step and value go to slot @c slot. */
typedef struct {
    int slot;
    uint64_t key;
    float value;
    int priority;
    uint64_t wait_for;
    uint64_t step;
} start_t;

/* The step of a start that takes the next one. */
#define NEXT TUTTI_STEP_NEXT

typedef struct member member_t;
typedef void (*scenario_fn)(member_t *m, tutti_group_t *g);

struct member {
    tutti_context_t *ctx;
    uint64_t key;
    int index;
    scenario_fn run;
    const start_t *starts; /* for play() */
    int nstarts;
    /* Results the scenario leaves for the test to assert on. */
    tutti_status_t st;
    uint64_t order[4];
    uint64_t step[4];
    float value[4];
    size_t any_index;
};

static void *member_main(void *arg)
{
    member_t *m = arg;
    tutti_group_t *g;
    m->st = test_join(m->ctx, m->key, MEMBERS, m->index, 10, &g);
    if (m->st != TUTTI_OK)
        return NULL;
    m->run(m, g);
    tutti_group_leave(g);
    return NULL;
}

static void run_members(void **state, uint64_t key, scenario_fn run,
                        const start_t *starts, int nstarts, member_t *m)
{
    for (int i = 0; i < MEMBERS; i++) {
        memset(&m[i], 0, sizeof(m[i]));
        m[i].ctx = *state;
        m[i].key = key;
        m[i].index = i;
        m[i].run = run;
        m[i].starts = starts;
        m[i].nstarts = nstarts;
    }
    assert_int_equal(test_threads(MEMBERS, member_main, m, sizeof(m[0])), 0);
    for (int i = 0; i < MEMBERS; i++)
        if (m[i].st != TUTTI_OK)
            fail_msg("member %d: %s", i, tutti_status_name(m[i].st));
}

/* Starts a one-float sum of @p buf under @p key. */
static tutti_request_t *start(member_t *m, tutti_group_t *g, uint64_t key,
                              float *buf, int priority, const uint64_t *deps,
                              size_t ndeps, uint64_t step)
{
    tutti_instance_params_t p;
    tutti_request_t *r = NULL;
    test_params(&p, key, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    p.priority = priority;
    p.wait_for = deps;
    p.num_wait_for = ndeps;
    p.step = step;
    tutti_status_t st = tutti_execute(g, &p, buf, buf, &r);
    if (st != TUTTI_OK && m->st == TUTTI_OK)
        m->st = st;
    return r;
}

static void finish(member_t *m, tutti_request_t **r, int n)
{
    tutti_status_t st = tutti_request_wait_all(r, (size_t)n);
    if (st != TUTTI_OK && m->st == TUTTI_OK)
        m->st = st;
    for (int i = 0; i < n; i++) {
        tutti_request_info_t info;
        tutti_request_info(r[i], &info);
        m->order[i] = info.launch_order;
        m->step[i] = info.step;
        tutti_request_free(r[i]);
    }
}


/* The scenario of m->starts. */
static void play(member_t *m, tutti_group_t *g)
{
    const start_t *s = m->starts;
    int n = m->nstarts;
    float v[4];
    tutti_request_t *r[4];
    for (int i = 0; i < n; i++) {
        const start_t *e = &s[i];
        v[e->slot] = e->value;
        r[e->slot] = start(m, g, e->key, &v[e->slot], e->priority,
                           e->wait_for ? &e->wait_for : NULL,
                           e->wait_for ? 1 : 0, e->step);
    }
    if (m->st == TUTTI_OK)
        finish(m, r, n);
    memcpy(m->value, v, (size_t)n * sizeof(v[0]));
}

/* C waits for B, B for A; issued C, B, A. */
static void test_wait_for_chain_launches_in_order(void **state)
{
    static const start_t chain[] = {
        {2, 3, 1, 0, 2, NEXT}, {1, 2, 1, 0, 1, NEXT}, {0, 1, 1, 0, 0, NEXT}};
    member_t m[MEMBERS];

    run_members(state, 600, play, chain, 3, m);
    for (int i = 0; i < MEMBERS; i++) {
        /* order[k]: launch order of instance k+1 on member i */
        assert_true(m[i].order[0] > 0);
        assert_true(m[i].order[0] < m[i].order[1]);
        assert_true(m[i].order[1] < m[i].order[2]);
        for (int k = 0; k < 3; k++)
            assert_true(m[i].value[k] == 2.0f);
    }
}

/* Low (10) and high (11) priority both wait for Z (12), issued last: when
 * Z launches both become ready at once, and the high one goes first. */
static void test_higher_priority_launches_first(void **state)
{
    static const start_t priorities[] = {{0, 10, 1, 0, 12, NEXT},
                                         {1, 11, 1, 5, 12, NEXT},
                                         {2, 12, 1, 0, 0, NEXT}};
    member_t m[MEMBERS];

    run_members(state, 700, play, priorities, 3, m);
    for (int i = 0; i < MEMBERS; i++) {
        assert_true(m[i].order[2] < m[i].order[1]); /* Z, then */
        assert_true(m[i].order[1] < m[i].order[0]); /* high, then low */
        assert_true(m[i].value[0] == 2.0f && m[i].value[1] == 2.0f);
    }
}

/* Explicit step ids travel with the execution. */
static void test_explicit_steps(void **state)
{
    static const start_t steps[] = {{0, 20, 1, 0, 0, 100}, {1, 20, 3, 0, 0, 7}};
    member_t m[MEMBERS];

    run_members(state, 800, play, steps, 2, m);
    for (int i = 0; i < MEMBERS; i++) {
        assert_int_equal(m[i].step[0], 100);
        assert_int_equal(m[i].step[1], 7);
        assert_true(m[i].value[0] == 2.0f && m[i].value[1] == 6.0f);
    }
}

/* wait_any returns a request that has completed. */
static void any(member_t *m, tutti_group_t *g)
{
    float v[2] = {1, 2};
    tutti_request_t *r[2];
    r[0] = start(m, g, 30, &v[0], 0, NULL, 0, NEXT);
    r[1] = start(m, g, 31, &v[1], 0, NULL, 0, NEXT);
    if (m->st != TUTTI_OK)
        return;
    m->st = tutti_request_wait_any(r, 2, &m->any_index);
    m->value[0] = tutti_request_test(r[m->any_index]) == TUTTI_OK;
    finish(m, r, 2);
    m->value[1] = v[0] + v[1];
}

static void test_wait_any(void **state)
{
    member_t m[MEMBERS];
    run_members(state, 900, any, NULL, 0, m);
    for (int i = 0; i < MEMBERS; i++) {
        assert_true(m[i].any_index < 2);
        assert_true(m[i].value[0] == 1.0f);  /* it had completed */
        assert_true(m[i].value[1] == 6.0f);  /* 2 + 4 */
    }
}

static double test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* wait_for in slices: member 1 starts late; member 0's slices pass
 * (INPROGRESS, counted in order[0]) until the sum comes. */
static void slices(member_t *m, tutti_group_t *g)
{
    float v = (float)(m->index + 1);
    if (m->index == 1)
        test_sleep(0.3);
    tutti_request_t *r = start(m, g, 40, &v, 0, NULL, 0, NEXT);
    if (m->st != TUTTI_OK)
        return;
    tutti_status_t st;
    while ((st = tutti_request_wait_for(r, 0.01)) == TUTTI_INPROGRESS)
        m->order[0]++;
    m->st = st;
    m->value[0] = v;
    tutti_request_free(r);
}

static void test_wait_for_slices(void **state)
{
    member_t m[MEMBERS];
    run_members(state, 920, slices, NULL, 0, m);
    assert_true(m[0].order[0] >= 5);   /* about 30 slices of 10 ms */
    for (int i = 0; i < MEMBERS; i++)
        assert_true(m[i].value[0] == 3.0f);
}

/* The execution's time limit counts across slices: member 1 never starts
 * it; member 0's slices of 20 ms end in TUTTI_ERR_TIMEOUT after the 0.2 s
 * limit, not never. */
static void slices_time_out(member_t *m, tutti_group_t *g)
{
    if (m->index == 1) {
        test_sleep(1.5);
        return;
    }
    tutti_instance_params_t p;
    tutti_request_t *r = NULL;
    float v = 1;
    test_params(&p, 41, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    p.timeout = 0.2;
    m->st = tutti_execute(g, &p, &v, &v, &r);
    if (m->st != TUTTI_OK)
        return;
    double t0 = test_now();
    tutti_status_t st;
    while ((st = tutti_request_wait_for(r, 0.02)) == TUTTI_INPROGRESS &&
           test_now() - t0 < 10)
        m->order[0]++;
    m->value[0] = (float)(test_now() - t0);
    m->order[1] = (uint64_t)-st;
    m->value[1] = strstr(tutti_last_error(), "rank 0") != NULL;
    tutti_request_free(r);
}

static void test_wait_for_time_limit(void **state)
{
    member_t m[MEMBERS];
    run_members(state, 921, slices_time_out, NULL, 0, m);
    assert_int_equal(m[0].order[1], (uint64_t)-TUTTI_ERR_TIMEOUT);
    assert_true(m[0].order[0] >= 5);
    assert_true(m[0].value[0] < 5.0f);
    tutti_request_t *bad = NULL;
    assert_int_equal(tutti_request_wait_for(bad, 1), TUTTI_ERR_INVALID_ARG);
}

/* The limits tutti.h states are enforced, with messages naming them. */
static void test_documented_limits(void **state)
{
    tutti_group_t *g;
    tutti_instance_params_t p;
    tutti_request_t *reqs[TUTTI_MAX_WAIT_ANY + 1], *r;
    uint64_t keys[TUTTI_MAX_WAIT_FOR + 1] = {0};
    size_t index = 99;
    float x = 1, y = 0;

    assert_int_equal(test_join(*state, 950, 1, 0, 0, &g), TUTTI_OK);
    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    p.wait_for = keys;
    p.num_wait_for = TUTTI_MAX_WAIT_FOR + 1;
    assert_int_equal(tutti_execute(g, &p, &x, &y, &r), TUTTI_ERR_INVALID_ARG);
    assert_non_null(strstr(tutti_last_error(), "9 wait_for keys: expected at "
                           "most 8"));
    /* pre_scale 0 is no scaling, not a product with zero. */
    p.num_wait_for = 0;
    p.pre_scale = 0;
    assert_int_equal(tutti_execute(g, &p, &x, &y, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_OK);
    assert_true(y == 1.0f);
    for (int i = 0; i <= TUTTI_MAX_WAIT_ANY; i++)
        reqs[i] = r;
    assert_int_equal(tutti_request_wait_any(reqs, TUTTI_MAX_WAIT_ANY + 1,
                                            &index), TUTTI_ERR_INVALID_ARG);
    assert_non_null(strstr(tutti_last_error(), "tutti_request_wait_any: n "
                           "is 65: expected 1..64"));
    assert_int_equal(tutti_request_wait_any(reqs, TUTTI_MAX_WAIT_ANY,
                                            &index), TUTTI_OK);
    assert_int_equal(index, 0);
    tutti_request_free(r);
    tutti_group_leave(g);
}

/* A job of one task: the sum is the value, round after round. */
static void test_context_sum_single_task(void **state)
{
    uint64_t sum = 0;
    assert_int_equal(tutti_context_sum(*state, 5, &sum), TUTTI_OK);
    assert_int_equal(sum, 5);
    assert_int_equal(tutti_context_sum(*state, UINT64_MAX, &sum), TUTTI_OK);
    assert_true(sum == UINT64_MAX);
    assert_int_equal(tutti_context_sum(*state, 1, NULL),
                     TUTTI_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_for_chain_launches_in_order),
        cmocka_unit_test(test_higher_priority_launches_first),
        cmocka_unit_test(test_explicit_steps),
        cmocka_unit_test(test_wait_any),
        cmocka_unit_test(test_wait_for_slices),
        cmocka_unit_test(test_wait_for_time_limit),
        cmocka_unit_test(test_documented_limits),
        cmocka_unit_test(test_context_sum_single_task),
    };
    return cmocka_run_group_tests_name("exec", tests, test_single_task_setup,
                                       test_context_teardown);
}
