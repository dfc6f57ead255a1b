/*
 * Every end of an execution of a CUDA group opens the gate that holds its
 * caller's stream, whatever ended it: a refusal by the coordinator (also
 * of an execution queued behind the refused one), a failing init_group
 * or init_context, a resolution that timed out, an abort of the job while
 * executions are held; the modules' aborts come after the gates opened.
 * And the core works on a member's device and gives the caller back its
 * own.  Under the CUDA double (tests/common/fake_cuda.c), which also
 * records what real CUDA would hang on or refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "tutti-build.h"

#include "fake_cuda.h"
#include "members.h"
#include "cuda_members.h"
#include "test_util.h"

/* After a failed execution on @p m's stream: no gate left closed, and
 * the test's consumer copy queued behind it ran. */
static void check_released(cm_t *m, const char *what)
{
    int32_t seen = -7, mark = 5;
    fake_cuda_enqueue_copy(m->stream, &seen, &mark, sizeof(seen));
    fake_cuda_pump();
    CHECK(m, fake_cuda_held(m->stream) == 0, "%s: %zu gate(s) still hold "
          "the caller's stream", what, fake_cuda_held(m->stream));
    CHECK(m, fake_cuda_queued(m->stream) == 0 && seen == 5, "%s: %zu "
          "operations left on the caller's stream", what,
          fake_cuda_queued(m->stream));
}

/* No record, launch or copy that real CUDA would hang on or refuse. */
static void check_no_violation(cm_t *m, const char *what)
{
    char why[300];
    size_t n = fake_cuda_violations(why, sizeof(why));
    CHECK(m, n == 0, "%s: %zu violation(s), the first: %s", what, n, why);
}

/* One execution of @p p on the member's stream, held (its instance is
 * new), and waited for; its status, the error text to @p err. */
static tutti_status_t held_once(cm_t *m, tutti_group_t *g,
                                tutti_instance_params_t *p, void *buf,
                                char *err, size_t len)
{
    tutti_request_t *r;
    p->stream = m->stream;
    tutti_status_t st = tutti_execute(g, p, buf, buf, &r);
    err[0] = '\0';
    if (st != TUTTI_OK) {
        snprintf(err, len, "execute: %s", tutti_last_error());
        return st;
    }
    CHECK(m, fake_cuda_gates(m->stream) >= 1, "the execution did not hold "
          "the caller's stream");
    st = tutti_request_wait(r);
    snprintf(err, len, "%s", tutti_last_error());
    tutti_request_free(r);
    return st;
}

/* ---- refused by the coordinator ---------------------------------------- */

/* The members disagree on the count: both executions of the instance, the
 * second queued behind the first, are refused naming the count. */
static void refused_body(cm_t *m, tutti_group_t *g)
{
    int32_t *buf = dev_alloc((COUNT + 1) * sizeof(int32_t));
    tutti_instance_params_t p;
    tutti_request_t *r[2];
    test_params(&p, 0x7e1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32,
                COUNT + (size_t)m->rank);
    p.algorithm = "TestUnordered";
    p.stream = m->stream;
    for (int i = 0; i < 2; i++) {
        tutti_status_t st = tutti_execute(g, &p, buf, buf, &r[i]);
        CHECK(m, st == TUTTI_OK, "execute %d: %s", i, tutti_last_error());
        if (st != TUTTI_OK)
            return;
    }
    CHECK(m, fake_cuda_gates(m->stream) == 2, "%zu gates for 2 held "
          "executions", fake_cuda_gates(m->stream));
    for (int i = 0; i < 2; i++) {
        tutti_status_t st = tutti_request_wait(r[i]);
        CHECK(m, st == TUTTI_ERR_MISMATCH, "execution %d: %s, expected "
              "TUTTI_ERR_MISMATCH", i, tutti_status_name(st));
        CHECK(m, strstr(tutti_last_error(), "disagree on count") != NULL,
              "execution %d: the error does not name the count: %s", i,
              tutti_last_error());
        tutti_request_free(r[i]);
    }
    check_released(m, "refused");
    check_no_violation(m, "refused");
    dev_free(buf);
}

static void test_refusal_releases_the_callers_stream(void **state)
{
    cm_t m[2];
    fake_cuda_reset(2, NULL);
    run_members(*state, 0x7e0, 2, NULL, TUTTI_ORDER_TASK, refused_body, NULL,
                m);
}

/* ---- a module's set-up fails --------------------------------------------- */

/* m->arg: the implementation, then the text its error must hold. */
static void setup_fails_body(cm_t *m, tutti_group_t *g)
{
    const char *const *a = m->arg;
    int32_t *buf = dev_alloc(sizeof(int32_t));
    tutti_instance_params_t p;
    char err[300];
    test_params(&p, 0x5e7, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 1);
    p.algorithm = a[0];
    tutti_status_t st = held_once(m, g, &p, buf, err, sizeof(err));
    CHECK(m, st != TUTTI_OK, "%s: the execution did not fail", a[0]);
    CHECK(m, strstr(err, a[1]) != NULL, "%s: %s: the error does not name "
          "'%s': %s", a[0], tutti_status_name(st), a[1], err);
    check_released(m, a[0]);
    check_no_violation(m, a[0]);
    dev_free(buf);
}

static void test_failing_init_group_releases_the_callers_stream(void **state)
{
    static const char *const arg[2] = {"TestUnordered",
                                       "init_group fails"};
    cm_t m[2];
    fake_cuda_reset(2, NULL);
    setenv("TUTTI_TEST_GROUP_FAIL", "init_group", 1);
    run_members(*state, 0x5e1, 2, NULL, TUTTI_ORDER_TASK, setup_fails_body,
                arg, m);
}

/* The module's set-up works again, also after a failed test. */
static int group_fail_off(void **state)
{
    (void)state;
    unsetenv("TUTTI_TEST_GROUP_FAIL");
    return 0;
}

static void
test_failing_init_context_releases_the_callers_stream(void **state)
{
    /* TestDeviceCopy's init_context refuses a group of two. */
    static const char *const arg[2] = {"TestDeviceCopy",
                                       "runs in a group of one, not of 2"};
    cm_t m[2];
    fake_cuda_reset(2, NULL);
    run_members(*state, 0x5e2, 2, NULL, TUTTI_ORDER_TASK, setup_fails_body,
                arg, m);
}

/* ---- a module's group state made at join -------------------------------- */

/* A first execution through TestDeviceCopy (mod_group, which keeps group
 * state) after the join; m->arg: 1 when the context sets modules up at
 * join (cuda.group_setup: join), 0 for first_use.  At join, init_group
 * has run before any gate and does not run again; with first_use it runs
 * behind the execution's held stream, which is what join avoids. */
static void setup_body(cm_t *m, tutti_group_t *g)
{
    const int at_join = *(const int *)m->arg;
    int32_t *src = dev_alloc(COUNT * sizeof(int32_t));
    int32_t *dst = dev_alloc(COUNT * sizeof(int32_t));
    size_t closed = 0, n = fake_cuda_inits(&closed);
    tutti_instance_params_t p;
    tutti_request_t *r;

    CHECK(m, n == (size_t)at_join && closed == 0, "after the join: %zu "
          "set-up(s) of mod_group's state with %zu gate(s) closed, "
          "expected %d with none", n, closed, at_join);
    for (int i = 0; i < COUNT; i++)
        src[i] = 40 + i;
    test_params(&p, 0x5e70, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = "TestDeviceCopy";
    p.stream = m->stream;
    tutti_status_t st = tutti_execute(g, &p, src, dst, &r);
    CHECK(m, st == TUTTI_OK, "execute: %s", tutti_last_error());
    if (st != TUTTI_OK)
        goto out;
    CHECK(m, fake_cuda_gates(m->stream) == 1, "the first execution did "
          "not hold the caller's stream");
    st = tutti_request_wait(r);
    CHECK(m, st == TUTTI_OK, "wait: %s", tutti_last_error());
    tutti_request_free(r);
    fake_cuda_pump();
    for (int i = 0; i < COUNT; i++)
        CHECK(m, dst[i] == 40 + i, "element %d: %d, expected %d", i,
              (int)dst[i], 40 + i);
    n = fake_cuda_inits(&closed);
    if (at_join)
        CHECK(m, n == 1 && closed == 0, "after the execution: %zu "
              "set-up(s), %zu gate(s) closed at them; expected the one "
              "of the join", n, closed);
    else
        CHECK(m, n == 1 && closed == 1, "first_use: %zu set-up(s) with "
              "%zu gate(s) closed; expected one behind the held stream",
              n, closed);
    check_released(m, "set-up");
    check_no_violation(m, "set-up");
out:
    dev_free(src);
    dev_free(dst);
}

static void test_group_state_made_at_join(void **state)
{
    static const int at_join = 1;
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0x5e71, 1, NULL, TUTTI_ORDER_TASK, setup_body,
                &at_join, m);
}

static void test_group_state_made_at_first_use(void **state)
{
    static const int at_join = 0;
    tutti_context_params_t cp;
    tutti_context_t *ctx = NULL;
    cm_t m[1];
    (void)state;
    fake_cuda_reset(1, NULL);
    setenv("TUTTI_CUDA_GROUP_SETUP", "first_use", 1);
    test_one_task_params(&cp, CONF, GOOD_DIR, "off");
    tutti_status_t st = tutti_context_create(&cp, &ctx);
    unsetenv("TUTTI_CUDA_GROUP_SETUP");
    assert_int_equal(st, TUTTI_OK);
    run_members(ctx, 0x5e72, 1, NULL, TUTTI_ORDER_TASK, setup_body,
                &at_join, m);
    tutti_context_destroy(ctx);
}

/* ---- a resolution that times out ----------------------------------------- */

/* Rank 0 executes an instance rank 1 never executes. */
static void timeout_body(cm_t *m, tutti_group_t *g)
{
    int32_t *buf = dev_alloc(sizeof(int32_t));
    tutti_instance_params_t p;
    char err[300];
    if (m->rank == 0) {
        test_params(&p, 0x713, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 1);
        p.algorithm = "TestUnordered";
        p.timeout = 0.3;
        tutti_status_t st = held_once(m, g, &p, buf, err, sizeof(err));
        CHECK(m, st == TUTTI_ERR_TIMEOUT, "%s, expected TUTTI_ERR_TIMEOUT: "
              "%s", tutti_status_name(st), err);
        CHECK(m, strstr(err, "0x713") != NULL && strstr(err, "1") != NULL,
              "the error does not name the instance and rank: %s", err);
        check_released(m, "timed out");
        check_no_violation(m, "timed out");
        atomic_store(m->shared, 1);
    } else {
        while (!atomic_load(m->shared))
            usleep(1000);
    }
    dev_free(buf);
}

static void test_resolution_timeout_releases_the_callers_stream(void **state)
{
    cm_t m[2];
    fake_cuda_reset(2, NULL);
    run_members(*state, 0x710, 2, NULL, TUTTI_ORDER_TASK, timeout_body, NULL,
                m);
}

/* ---- an abort while executions are held ---------------------------------- */

/* Both resolve instance A; then the member of device 0 executes A again
 * (launched, waiting for the other member) and a new instance B (not
 * resolved: its instance has no CUDA set-up yet), and the other member
 * aborts the job. */
static void abort_body(cm_t *m, tutti_group_t *g)
{
    int32_t *a = dev_alloc(sizeof(int32_t)), *b = dev_alloc(sizeof(int32_t));
    tutti_instance_params_t p[2];
    tutti_request_t *r[2];
    for (int i = 0; i < 2; i++) {
        test_params(&p[i], 0xa0 + (uint64_t)i, TUTTI_COLL_ALLREDUCE,
                    TUTTI_INT32, 1);
        p[i].algorithm = "TestUnordered";
    }
    tutti_status_t st = exec_wait(m, g, &p[0], a, a);
    CHECK(m, st == TUTTI_OK, "first: %s", tutti_last_error());
    if (m->device != 0) {
        while (!atomic_load(m->shared))
            usleep(1000);
        usleep(50 * 1000);
        tutti_abort(m->ctx, "the test aborts");
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        p[i].stream = m->stream;
        st = tutti_execute(g, &p[i], i ? b : a, i ? b : a, &r[i]);
        CHECK(m, st == TUTTI_OK, "execute %d: %s", i, tutti_last_error());
        if (st != TUTTI_OK) {
            atomic_store(m->shared, 1);
            goto out;
        }
    }
    atomic_store(m->shared, 1);
    for (int i = 0; i < 2; i++) {
        st = tutti_request_wait(r[i]);
        CHECK(m, st == TUTTI_ERR_ABORTED, "%s: %s (%s), expected "
              "TUTTI_ERR_ABORTED", i ? "unresolved" : "launched",
              tutti_status_name(st), tutti_last_error());
        CHECK(m, strstr(tutti_last_error(), "the test aborts") != NULL,
              "the error does not give the abort's reason: %s",
              tutti_last_error());
        tutti_request_free(r[i]);
    }
    check_released(m, "aborted");
    check_no_violation(m, "aborted");
out:
    dev_free(a);
    dev_free(b);
}

static void test_abort_releases_every_held_stream_first(void **state)
{
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    cm_t m[2];
    size_t closed = 0;
    (void)state;
    fake_cuda_reset(2, NULL);
    test_one_task_params(&cp, CONF, GOOD_DIR, "off");
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_OK);
    run_members(ctx, 0xab1, 2, NULL, TUTTI_ORDER_TASK, abort_body, NULL, m);
    tutti_context_destroy(ctx);
    /* The held member's module stopped its device work (the aborting
     * member's may not have, having left first), and no gate was closed
     * on the member's device then. */
    assert_true(fake_cuda_aborts(&closed) >= 1);
    assert_int_equal(closed, 0);
}

/* ---- the member's device ------------------------------------------------- */

/* The member is on cuda:1, the caller's thread on cuda:0: every record,
 * wait and launch for the member happens on cuda:1 (the double records a
 * violation otherwise), and each call returns with cuda:0 current. */
static void device_body(cm_t *m, tutti_group_t *g)
{
    const char *const impls[2] = {"TestUnordered", "TestDeviceCopy"};
    int32_t *send = dev_alloc(sizeof(int32_t));
    int32_t *recv = dev_alloc(sizeof(int32_t));
    const tutti__cuda_ops_t *ops = fake_cuda_ops();
    for (int i = 0; i < 2; i++) {
        tutti_instance_params_t p;
        tutti_request_t *r;
        test_params(&p, 0xde0 + (uint64_t)i, TUTTI_COLL_ALLREDUCE,
                    TUTTI_INT32, 1);
        p.algorithm = impls[i];
        p.stream = m->stream;
        /* The first execution resolves the instance, the second launches
         * within tutti_execute. */
        for (int k = 0; k < 2; k++) {
            *send = 7 + k;
            *recv = -1;
            CHECK(m, ops->set_device(0) == 0, "set_device(0)");
            tutti_status_t st = tutti_execute(g, &p, send, recv, &r);
            CHECK(m, st == TUTTI_OK, "%s %d: %s", impls[i], k,
                  tutti_last_error());
            if (st != TUTTI_OK)
                break;
            CHECK(m, fake_cuda_current_device() == 0, "%s %d: "
                  "tutti_execute left cuda:%d current", impls[i], k,
                  fake_cuda_current_device());
            st = tutti_request_wait(r);
            CHECK(m, st == TUTTI_OK, "%s %d: %s", impls[i], k,
                  tutti_last_error());
            CHECK(m, fake_cuda_current_device() == 0, "%s %d: "
                  "tutti_request_wait left cuda:%d current", impls[i], k,
                  fake_cuda_current_device());
            tutti_request_free(r);
            fake_cuda_pump();
            CHECK(m, *recv == 7 + k, "%s %d: %d, expected %d", impls[i], k,
                  *recv, 7 + k);
        }
    }
    check_no_violation(m, "on cuda:1");
    ops->set_device(1);
    dev_free(send);
    dev_free(recv);
}

static void test_work_on_the_members_device_caller_keeps_its_own(void **state)
{
    cm_t m[1];
    const int devices[1] = {1};
    fake_cuda_reset(2, NULL);
    run_members(*state, 0xde, 1, devices, TUTTI_ORDER_TASK, device_body,
                NULL, m);
}

/* ---- the double's own checks --------------------------------------------- */

/* A blocking copy on a held stream, a free under a closed gate, a record
 * with another device current: each a violation. */
static void test_double_records_what_cuda_would_hang_on(void **state)
{
    const tutti__cuda_ops_t *ops = fake_cuda_ops();
    void *s, *ev, *dev, *spare;
    static uint32_t word;
    int32_t host = 0;
    char why[300];
    (void)state;
    fake_cuda_reset(2, NULL);
    word = 0;
    assert_int_equal(ops->set_device(0), 0);
    fake_cuda_forget_kernels(0); /* a library that loads them lazily */
    assert_int_equal(ops->stream_create(&s), 0);
    assert_int_equal(ops->event_create(&ev), 0);
    assert_int_equal(ops->dev_alloc(sizeof(host), &dev), 0);
    assert_int_equal(ops->gate(s, &word, 1), 0);
    assert_int_equal(fake_cuda_held(s), 1);
    assert_int_equal(fake_cuda_violations(NULL, 0), 0);
    assert_int_equal(ops->memcpy_async(&host, dev, sizeof(host), s), 0);
    assert_int_equal(fake_cuda_violations(why, sizeof(why)), 1);
    assert_non_null(strstr(why, "pageable host memory"));
    assert_int_equal(ops->scale(TUTTI_INT32, dev, dev, 1, 2.0, s), 0);
    assert_int_equal(fake_cuda_violations(NULL, 0), 2); /* lazy loading */
    assert_int_equal(ops->set_device(1), 0);
    assert_int_equal(ops->event_record(ev, s), 0);
    assert_int_equal(fake_cuda_violations(NULL, 0), 3);
    assert_int_equal(ops->set_device(0), 0);
    /* A buffer no queued work reads: the copy and the kernel above read
     * dev, which goes only after they ran. */
    assert_int_equal(ops->dev_alloc(sizeof(host), &spare), 0);
    ops->dev_free(spare);
    assert_int_equal(fake_cuda_violations(NULL, 0), 4);
    word = 1;
    fake_cuda_pump();
    assert_int_equal(fake_cuda_held(s), 0);
    ops->dev_free(dev);
    assert_int_equal(fake_cuda_violations(NULL, 0), 4);
    ops->event_destroy(ev);
    ops->stream_destroy(s);
    assert_int_equal(fake_cuda_live(), 0);
    fake_cuda_reset(1, NULL);
    assert_int_equal(fake_cuda_violations(NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_double_records_what_cuda_would_hang_on),
        cmocka_unit_test(test_refusal_releases_the_callers_stream),
        cmocka_unit_test_teardown(
            test_failing_init_group_releases_the_callers_stream,
            group_fail_off),
        cmocka_unit_test(
            test_failing_init_context_releases_the_callers_stream),
        cmocka_unit_test(test_group_state_made_at_join),
        cmocka_unit_test(test_group_state_made_at_first_use),
        cmocka_unit_test(test_resolution_timeout_releases_the_callers_stream),
        cmocka_unit_test(test_abort_releases_every_held_stream_first),
        cmocka_unit_test(
            test_work_on_the_members_device_caller_keeps_its_own),
    };
    return cmocka_run_group_tests_name("cuda_release", tests, cuda_setup,
                                       cuda_teardown);
}
