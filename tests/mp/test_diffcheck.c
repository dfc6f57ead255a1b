/*
 * The differential client (tests/mp/diffcheck) on a short seed in every
 * configuration: shm between 2, 3, 4 and 5 processes, tcp between 3, shm
 * with single copy, registered memory between 3 and registered and heap
 * members mixed between 4, threads of one process (1 x 3), tasks with several
 * devices (2 x 2, 3 x 2), Open MPI's mpirun (skipped where it is
 * missing), and where the ucx module was built ucx between 3 over UCX's
 * tcp and between 3 over its shared memory.  Every member must report calls and checked elements, no wrong
 * element and no failure.  tests/run-diffcheck runs many seeds (--long).
 *
 * TUTTI_DIFFCHECK_SEED changes the seeds (config i runs seed + i).
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

#include "test_util.h"
#include "tutti-build.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define CLIENT TUTTI_TEST_BUILDDIR "/tests/mp/diffcheck"
/* Short runs: a failed call stops the run (a hang costs the timeout). */
#define ARGS "--calls 1000 --max-count 600000 --max-bytes 32M --timeout 15 " \
             "--max-failures 1"

static char out[1 << 18];

/* The first failure lines of the client's output, for the message. */
static const char *failures_in(const char *text)
{
    static char lines[4096];
    size_t at = 0;
    int k = 0;
    lines[0] = '\0';
    for (const char *l = text; *l != '\0' && k < 6;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) + 1 : strlen(l);
        if (strstr(l, ": FAIL ") != NULL && strstr(l, ": FAIL ") < l + len &&
            at + 700 < sizeof(lines)) {
            at += (size_t)snprintf(lines + at, sizeof(lines) - at, "%.*s%s",
                                   len > 600 ? 600 : (int)len, l,
                                   len > 600 ? "...\n" : "");
            k++;
        }
        l += len;
    }
    return k ? lines : text;
}

static unsigned long long base_seed(void)
{
    const char *v = getenv("TUTTI_DIFFCHECK_SEED");
    return v != NULL ? strtoull(v, NULL, 0) : 1;
}

/*
 * Runs "<prefix> <client> --seed S <extra>" (prefix: the launcher and
 * environment) and expects @p n members, each with
 * "diffcheck: rank R: seed S: C calls, E elements checked, 0 wrong,
 * 0 failures", C > 0 and E > 0, and exit status 0.
 */
static void run_config(const char *name, int cfg, const char *prefix,
                       const char *extra, int n)
{
    char cmd[1024];
    unsigned long long seed = base_seed() + (unsigned long long)cfg;
    struct timespec a, b;
    long calls0 = -1;

    snprintf(cmd, sizeof(cmd), "%s %s --seed %llu " ARGS " %s 2>&1", prefix,
             CLIENT, seed, extra);
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = test_run(cmd, 0, out, sizeof(out));
    clock_gettime(CLOCK_MONOTONIC, &b);
    for (int r = 0; r < n; r++) {
        char want[96];
        long calls = -1, wrong = -1, failures = -1;
        long long elements = -1;
        unsigned long long s = 0;
        snprintf(want, sizeof(want), "diffcheck: rank %d: seed ", r);
        const char *line = strstr(out, want);
        if (line == NULL)
            fail_msg("%s: no summary line for rank %d (exit %d) from\n%s\n"
                     "%.3000s", name, r, rc, cmd, failures_in(out));
        if (sscanf(line + strlen(want), "%llu: %ld calls, %lld elements "
                   "checked, %ld wrong, %ld failures", &s, &calls, &elements,
                   &wrong, &failures) != 5)
            fail_msg("%s: unreadable summary: %.200s", name, line);
        if (wrong != 0 || failures != 0)
            fail_msg("%s: rank %d: %ld wrong, %ld failures (exit %d); "
                     "replay: %s\n%.3000s", name, r, wrong, failures, rc, cmd,
                     failures_in(out));
        assert_int_equal(s, seed);
        assert_true(calls > 0);
        assert_true(elements > 0);
        if (r == 0)
            calls0 = calls;
        assert_int_equal(calls, calls0); /* every member ran every call */
    }
    if (strstr(out, ": FAIL ") != NULL)
        fail_msg("%s: a failure line:\n%.3000s", name, failures_in(out));
    if (rc != 0)
        fail_msg("%s: %s exited %d:\n%.3000s", name, cmd, rc, out);
    print_message("%s: seed %llu, %ld calls on each of %d members, %.1f s\n",
                  name, seed, calls0, n,
                  (double)(b.tv_sec - a.tv_sec) +
                      (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
}

/* @p nprocs processes of @p devices members each under tutti-run, with
 * @p env set; nothing may be left in /dev/shm. */
static void launch_with(const char *name, int cfg, const char *env,
                        int nprocs, int devices, const char *more)
{
    char prefix[512], extra[96], job[64], names[96];
    snprintf(job, sizeof(job), "dc%d-%ld", cfg, (long)getpid());
    snprintf(prefix, sizeof(prefix), "%s %s --timeout 300 --grace 60 "
             "--job-id %s -n %d", env, RUN, job, nprocs);
    snprintf(extra, sizeof(extra), "--devices %d %s", devices, more);
    run_config(name, cfg, prefix, extra, nprocs * devices);
    snprintf(names, sizeof(names), "tutti-%s-", job);
    assert_int_equal(test_shm_names_with(names), 0);
}

static void launch(const char *name, int cfg, const char *env, int nprocs,
                   int devices)
{
    launch_with(name, cfg, env, nprocs, devices, "");
}

static void test_shm_2(void **s) { (void)s; launch("shm 2", 0, "", 2, 1); }
static void test_shm_3(void **s) { (void)s; launch("shm 3", 1, "", 3, 1); }
static void test_shm_4(void **s) { (void)s; launch("shm 4", 2, "", 4, 1); }
static void test_shm_5(void **s) { (void)s; launch("shm 5", 3, "", 5, 1); }

static void test_tcp_3(void **s)
{
    (void)s;
    launch("tcp 3", 4, "TUTTI_TRANSPORTS=tcp", 3, 1);
}

static void test_single_copy_3(void **s)
{
    (void)s;
    launch("shm single copy 3", 5, "TUTTI_SHM_SINGLE_COPY=auto", 3,
                   1);
}

static void test_tasks_2x2(void **s)
{
    (void)s;
    launch("2 tasks x 2 devices", 6, "", 2, 2);
}

static void test_tasks_3x2(void **s)
{
    (void)s;
    launch("3 tasks x 2 devices", 7, "", 3, 2);
}

/* Registered memory (tutti_mem_alloc): every member's buffers, and each
 * member's choice per call (mixed), read by peers in place. */
static void test_registered_3(void **s)
{
    (void)s;
    launch_with("shm registered 3", 10, "", 3, 1, "--memory registered");
}

static void test_registered_mixed_4(void **s)
{
    (void)s;
    launch_with("shm registered/heap mixed 4", 11, "", 4, 1,
                "--memory mixed");
}

/* One process, three members (threads): the local transport. */
static void test_threads_1x3(void **s)
{
    (void)s;
    run_config("1 task x 3 devices", 8, "timeout 300", "--devices 3", 3);
}

/* Open MPI's mpirun, with no TUTTI_* variable set (they would win over
 * its own). */
static void test_mpirun_2(void **s)
{
    char prefix[768];
    size_t at = 0;
    extern char **environ;
    (void)s;
    test_require_ompi_mpirun("");
    at += (size_t)snprintf(prefix, sizeof(prefix), "timeout 300 env");
    for (char **e = environ; *e != NULL && at + 64 < sizeof(prefix); e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "TUTTI_", 6) == 0 && eq != NULL)
            at += (size_t)snprintf(prefix + at, sizeof(prefix) - at,
                                   " -u %.*s", (int)(eq - *e), *e);
    }
    snprintf(prefix + at, sizeof(prefix) - at, " mpirun -n 2 --oversubscribe "
             "--bind-to none%s", test_mpirun_root_flag());
    run_config("mpirun 2", 9, prefix, "", 2);
}

#if TUTTI_HAVE_UCX
static void test_ucx_tcp_3(void **s)
{
    (void)s;
    launch("ucx (UCX's tcp) 3", 12, "TUTTI_TRANSPORTS=ucx UCX_TLS=tcp", 3, 1);
}

static void test_ucx_sm_3(void **s)
{
    (void)s;
    launch("ucx (UCX's shared memory) 3", 13,
           "TUTTI_TRANSPORTS=ucx UCX_TLS=sm,self", 3, 1);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shm_2),
        cmocka_unit_test(test_shm_3),
        cmocka_unit_test(test_shm_4),
        cmocka_unit_test(test_shm_5),
        cmocka_unit_test(test_tcp_3),
        cmocka_unit_test(test_single_copy_3),
        cmocka_unit_test(test_registered_3),
        cmocka_unit_test(test_registered_mixed_4),
        cmocka_unit_test(test_threads_1x3),
        cmocka_unit_test(test_tasks_2x2),
        cmocka_unit_test(test_tasks_3x2),
        cmocka_unit_test(test_mpirun_2),
#if TUTTI_HAVE_UCX
        cmocka_unit_test(test_ucx_tcp_3),
        cmocka_unit_test(test_ucx_sm_3),
#endif
    };
    return test_exit(
        cmocka_run_group_tests_name("diffcheck", tests, NULL, NULL));
}
