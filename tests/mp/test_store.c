/*
 * Tasks that meet through a key-value store the program brings
 * (tutti_store_t): store_worker processes, started here without tutti-run
 * and with none of its variables, share a store of files.  Three tasks
 * over the default transports and over tcp alone (whose rendezvous then
 * listens on a port the system picks and says where in the store) reduce
 * exactly; a task that never comes fails the others with
 * TUTTI_ERR_TIMEOUT naming it, within the timeout; a job id given to one
 * task that differs from task 0's is refused naming both; the secret
 * task 0 made is in the store and in no line the tasks print, even at
 * trace level.
 */
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

#include "test_util.h"

#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/store_worker"
#define OUT_BYTES (8u << 20)

static char dir[256];
static char *out;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Starts store_worker for each task listed in @p tasks (of @p n) at once,
 * in an empty store, with @p env before each; waits for all; their output
 * in out.  Returns how many exited non-zero. */
static int run_tasks(const char *env, int n, const char *tasks,
                     const char *extra)
{
    char cmd[4096];
    /* In braces: the tasks' standard error (their log) comes too. */
    int at = snprintf(cmd, sizeof(cmd), "{ rm -rf %s/store && mkdir "
                      "%s/store && fails=0; pids=; for t in %s; do %s %s $t "
                      "%d %s/store %s & pids=\"$pids $!\"; done; for p in "
                      "$pids; do wait $p || fails=$((fails + 1)); done; echo "
                      "fails=$fails; }", dir, dir, tasks, env, WORKER, n, dir,
                      extra);
    assert_true(at > 0 && (size_t)at < sizeof(cmd));
    int rc = test_run(cmd, 1, out, OUT_BYTES);
    const char *f = strstr(out, "fails=");
    if (rc != 0 || f == NULL) {
        test_show("output:", out);
        fail_msg("the tasks could not be run (exit %d)", rc);
    }
    return atoi(f + 6);
}

/* Every task of @p n printed the exact sums: task t adds t + i. */
static void expect_sums(int n)
{
    char want[160];
    double s0 = n * (n - 1) / 2.0;
    for (int t = 0; t < n; t++) {
        snprintf(want, sizeof(want), "store_worker %d: job (store): %g %g %g "
                 "%g %g", t, s0, s0 + n, s0 + 2 * n, s0 + 3 * n, s0 + 4 * n);
        if (strstr(out, want) == NULL) {
            test_show("output:", out);
            fail_msg("no '%s'", want);
        }
    }
}

static void test_three_tasks(void **state)
{
    (void)state;
    assert_int_equal(run_tasks("env -u TUTTI_JOB_ID -u TUTTI_JOB_SECRET",
                               3, "0 1 2", ""), 0);
    expect_sums(3);
}

/* Over tcp: the rendezvous's address comes from the store, and the tasks
 * prove the store's secret (no TUTTI_JOB_SECRET, no rendezvous file). */
static void test_three_tasks_over_tcp(void **state)
{
    char rdv[512];
    (void)state;
    assert_int_equal(run_tasks("env -u TUTTI_JOB_SECRET -u TUTTI_RENDEZVOUS "
                               "-u TUTTI_RENDEZVOUS_FILE TUTTI_TRANSPORTS=tcp",
                               3, "0 1 2", ""), 0);
    expect_sums(3);
    snprintf(rdv, sizeof(rdv), "cat %s/store/tutti_tcp_rendezvous", dir);
    test_run_ok(rdv, 1, out, OUT_BYTES);
    unsigned port = 0;
    char host[64];
    if (sscanf(out, "%63s %u", host, &port) != 2 || port == 0)
        fail_msg("the store's tutti/tcp/rendezvous holds '%s'", out);
}

/* Task 2 of 3 never comes: tasks 0 and 1 fail naming it; task 0 never
 * comes: the others fail naming it. */
static void test_a_task_missing(void **state)
{
    (void)state;
    double t0 = now_s();
    assert_int_equal(run_tasks("TUTTI_TIMEOUT=2", 3, "0 1", ""), 2);
    double secs = now_s() - t0;
    for (int t = 0; t < 2; t++) {
        char want[200];
        snprintf(want, sizeof(want), "store_worker %d: context: ERR_TIMEOUT: "
                 "task %d of 3: task 2 never appeared in the store", t, t);
        if (strstr(out, want) == NULL) {
            test_show("output:", out);
            fail_msg("no '%s'", want);
        }
    }
    if (secs > 10.0)
        fail_msg("the tasks took %.1f s to give up (timeout 2 s)", secs);
    assert_int_equal(run_tasks("TUTTI_TIMEOUT=2", 3, "1 2", ""), 2);
    if (strstr(out, "store_worker 1: context: ERR_TIMEOUT: task 1: task 0 "
                    "never appeared in the store") == NULL) {
        test_show("output:", out);
        fail_msg("task 1 does not name task 0");
    }
}

/* The store fails where the tasks read tcp's rendezvous: their calls fail
 * at once, not after the timeout, the log naming the key and what the
 * store returned, the error naming the key. */
static void test_store_fails_at_the_rendezvous(void **state)
{
    (void)state;
    double t0 = now_s();
    assert_int_equal(run_tasks("TUTTI_TIMEOUT=20 TUTTI_TRANSPORTS=tcp "
                               "TUTTI_TEST_STORE_FAIL=tutti/tcp/rendezvous",
                               2, "0 1", ""), 2);
    double secs = now_s() - t0;
    if (strstr(out, "the store's get of key 'tutti/tcp/rendezvous' failed "
                    "(it returned -1)") == NULL ||
        strstr(out, "store_worker 1: context: ERR_PEER") == NULL ||
        strstr(out, "the store's key tutti/tcp/rendezvous: the store's get "
                    "failed") == NULL) {
        test_show("output:", out);
        fail_msg("the store's failure is not named");
    }
    printf("both tasks failed in %.1f s (timeout 20 s)\n", secs);
    if (secs > 10.0)
        fail_msg("the tasks took %.1f s: a failing store waited for the "
                 "timeout", secs);
}

/* Task 0 made the job id; a task told another one is refused. */
static void test_job_id_differs(void **state)
{
    char cmd[2048];
    (void)state;
    /* Task 0 alone first: its job id is in the store when task 1 comes. */
    snprintf(cmd, sizeof(cmd), "{ rm -rf %s/store && mkdir %s/store && "
             "(TUTTI_TIMEOUT=2 %s 0 2 %s/store mine > /dev/null 2>&1 &) && "
             "sleep 0.3 && TUTTI_TIMEOUT=2 %s 1 2 %s/store theirs; }", dir,
             dir, WORKER, dir, WORKER, dir);
    int rc = test_run(cmd, 1, out, OUT_BYTES);
    assert_int_equal(rc, 1);
    if (strstr(out, "task 1 has job id 'theirs' (api), task 0 published "
                    "'mine' in the store") == NULL) {
        test_show("output:", out);
        fail_msg("the mismatch is not named");
    }
}

/* The secret is in the store and nowhere in what the tasks print. */
static void test_secret_not_printed(void **state)
{
    char cmd[512], secret[80];
    (void)state;
    assert_int_equal(run_tasks("TUTTI_LOG_LEVEL=trace TUTTI_TRANSPORTS=tcp",
                               2, "0 1", ""), 0);
    char *printed = strdup(out);
    assert_non_null(printed);
    snprintf(cmd, sizeof(cmd), "cat %s/store/tutti_secret", dir);
    test_run_ok(cmd, 1, out, OUT_BYTES);
    snprintf(secret, sizeof(secret), "%.64s", out);
    assert_int_equal(strlen(secret), 64);
    assert_int_equal(strspn(secret, "0123456789abcdef"), 64);
    if (strstr(printed, secret) != NULL || strstr(printed, "secret") != NULL)
        fail_msg("the tasks' output names the secret:\n%.2000s", printed);
    if (strstr(printed, "met through the store") == NULL)
        fail_msg("no trace of the meeting at trace level:\n%.2000s",
                 printed);
    free(printed);
}

static int never_set(void *user, const char *key, const void *value,
                     size_t len)
{
    (void)user, (void)key, (void)value, (void)len;
    return 7;
}

static int never_there(void *user, const char *key, void *buf, size_t cap,
                       size_t *len_out, double timeout)
{
    (void)user, (void)key, (void)buf, (void)cap, (void)len_out, (void)timeout;
    return 1;
}

/* A store without get, without its size (tutti_store_init), or without
 * task and count, or whose set fails: refused, each naming what is
 * wrong. */
static void test_store_params_checked(void **state)
{
    tutti_store_t half, failing, unsized = {0};
    tutti_context_params_t cp;
    tutti_context_t *ctx = NULL;
    (void)state;
    tutti_store_init(&half);
    half.set = never_set;
    tutti_store_init(&failing);
    failing.set = never_set;
    failing.get = never_there;
    unsized.set = never_set;
    unsized.get = never_there;
    tutti_context_params_init(&cp);
    cp.store = &half;
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_ERR_CONFIG);
    assert_non_null(strstr(tutti_last_error(), "params store is set with "
                                               "task -1, num_tasks -1"));
    cp.task = 0;
    cp.num_tasks = 2;
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_ERR_INVALID_ARG);
    assert_non_null(strstr(tutti_last_error(), "params store has get NULL"));
    assert_null(ctx);
    cp.store = &unsized;
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_ERR_INVALID_ARG);
    assert_non_null(strstr(tutti_last_error(), "params store->size 0: "
                                               "expected"));
    assert_null(ctx);
    cp.store = &failing;
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_ERR_IO);
    assert_non_null(strstr(tutti_last_error(), "the store's set of key "
                                               "'tutti/job_id'"));
    assert_non_null(strstr(tutti_last_error(), "(it returned 7)"));
    assert_null(ctx);
}

static int setup(void **state)
{
    (void)state;
    out = malloc(OUT_BYTES);
    return out == NULL || test_tmpdir(dir, sizeof(dir), "store") != 0;
}

static int teardown(void **state)
{
    (void)state;
    test_rmtree(dir);
    free(out);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_params_checked),
        cmocka_unit_test(test_three_tasks),
        cmocka_unit_test(test_three_tasks_over_tcp),
        cmocka_unit_test(test_a_task_missing),
        cmocka_unit_test(test_store_fails_at_the_rendezvous),
        cmocka_unit_test(test_job_id_differs),
        cmocka_unit_test(test_secret_not_printed),
    };
    return cmocka_run_group_tests_name("store", tests, setup, teardown);
}
