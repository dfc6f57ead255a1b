/*
 * tutti-run's binding of ranks to CPUs (--bind-to, --report-bindings,
 * TUTTI_BIND), seen from the ranks: bind_worker prints the CPU set each
 * rank has after exec.  Every expectation comes from the CPU set this test
 * may run on, so the tests hold on any machine with 2 CPUs or more.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_*_S */

#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/bind_worker"
#define SET_BITS (1u << 16)
#define OUT_BYTES (4u << 20)

static int cpus[SET_BITS];    /* the CPUs this test may run on, ascending */
static int ncpus;
static char all_cpus[SET_BITS * 8];   /* as bind_worker prints them */
static char all_ranges[SET_BITS * 8]; /* as tutti-run reports them */
static char *out;

/* The calling thread's CPUs into cpus, ncpus and the two texts; 0, or
 * -1 if they cannot be read. */
static int read_own_cpus(void)
{
    size_t size = CPU_ALLOC_SIZE(SET_BITS), a = 0, r = 0;
    cpu_set_t *set = CPU_ALLOC(SET_BITS);

    if (set == NULL || sched_getaffinity(0, size, set) != 0)
        return -1;
    ncpus = 0;
    for (int c = 0; c < (int)SET_BITS; c++)
        if (CPU_ISSET_S((size_t)c, size, set))
            cpus[ncpus++] = c;
    CPU_FREE(set);
    for (int i = 0; i < ncpus; i++)
        a += (size_t)snprintf(all_cpus + a, sizeof all_cpus - a, "%s%d",
                              i ? "," : "", cpus[i]);
    for (int i = 0; i < ncpus; i++) {
        int j = i;

        while (j + 1 < ncpus && cpus[j + 1] == cpus[j] + 1)
            j++;
        r += (size_t)snprintf(all_ranges + r, sizeof all_ranges - r,
                              j == i ? "%s%d" : "%s%d-%d", i ? "," : "",
                              cpus[i], cpus[j]);
        i = j;
    }
    return 0;
}

/* Pins this thread (so what it starts) to the CPUs in @p set of @p n. */
static void restrict_to(const int *set, int n)
{
    size_t size = CPU_ALLOC_SIZE(SET_BITS);
    cpu_set_t *s = CPU_ALLOC(SET_BITS);

    assert_non_null(s);
    CPU_ZERO_S(size, s);
    for (int i = 0; i < n; i++)
        CPU_SET_S((size_t)set[i], size, s);
    assert_int_equal(sched_setaffinity(0, size, s), 0);
    CPU_FREE(s);
}

static int setup(void **state)
{
    (void)state;
    out = malloc(OUT_BYTES);
    return out == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    free(out);
    out = NULL;
    return 0;
}

/* Gives this test back every CPU it started with. */
static int restore_cpus(void **state)
{
    (void)state;
    restrict_to(cpus, ncpus);
    return 0;
}

/* tutti-run @p args -n @p np bind_worker, stderr joined; its status. */
static int run_workers(const char *args, int np)
{
    char cmd[512];

    snprintf(cmd, sizeof cmd, "%s --timeout 60 %s -n %d %s", RUN, args, np,
             WORKER);
    return test_run(cmd, 1, out, OUT_BYTES);
}

/* Rank @p r printed "bind @p bind cpus @p list" (the whole line). */
static void expect_rank(int r, const char *bind, const char *list)
{
    char *want = malloc(strlen(list) + 128);

    assert_non_null(want);
    snprintf(want, strlen(list) + 128, "bind_worker: rank %d bind %s cpus %s",
             r, bind, list);
    if (!test_has_lines(out, want)) {
        test_show("tutti-run said:", out);
        fail_msg("no line '%.200s'", want);
    }
    free(want);
}

/* @p np ranks, rank i on the i-th CPU alone: each on one CPU, no two on
 * the same one. */
static void expect_bound(int np)
{
    char cpu[16];

    assert_int_equal(test_count_of(out, "bind_worker: rank "), np);
    for (int r = 0; r < np; r++) {
        snprintf(cpu, sizeof cpu, "%d", cpus[r]);
        expect_rank(r, "core", cpu);
    }
}

/* @p np ranks, each on every CPU this test has. */
static void expect_unbound(int np)
{
    assert_int_equal(test_count_of(out, "bind_worker: rank "), np);
    for (int r = 0; r < np; r++)
        expect_rank(r, "none", all_cpus);
}

static void test_default_binds_one_cpu_each(void **state)
{
    (void)state;
    assert_int_equal(run_workers("", 2), 0);
    expect_bound(2);
    /* as many ranks as CPUs is still one each (bounded: output) */
    if (ncpus > 2 && ncpus <= 64) {
        assert_int_equal(run_workers("", ncpus), 0);
        expect_bound(ncpus);
    }
}

static void test_bind_to_core(void **state)
{
    (void)state;
    assert_int_equal(run_workers("--bind-to core", 2), 0);
    expect_bound(2);
}

static void test_bind_to_none(void **state)
{
    (void)state;
    assert_int_equal(run_workers("--bind-to none", 2), 0);
    expect_unbound(2);
}

static void test_more_ranks_than_cpus_default_to_none(void **state)
{
    (void)state;
    assert_int_equal(run_workers("--report-bindings", ncpus + 1), 0);
    expect_unbound(ncpus + 1);
    for (int r = 0; r <= ncpus; r++) {
        char want[sizeof all_ranges + 64];

        snprintf(want, sizeof want, "tutti-run: rank %d not bound (cpus %s)",
                 r, all_ranges);
        assert_true(test_has_lines(out, want));
    }
}

/* The report, one line per rank, comes before any rank runs. */
static void test_report_bindings(void **state)
{
    char want[sizeof all_ranges + 64];
    (void)state;

    assert_int_equal(run_workers("--report-bindings", 2), 0);
    expect_bound(2);
    for (int r = 0; r < 2; r++) {
        snprintf(want, sizeof want, "tutti-run: rank %d bound to cpu %d", r,
                 cpus[r]);
        if (!test_has_lines(out, want))
            fail_msg("no line '%s' in:\n%s", want, out);
        assert_true(strstr(out, want) < strstr(out, "bind_worker: "));
    }
    assert_int_equal(test_count_of(out, "tutti-run: rank "), 2);

    assert_int_equal(run_workers("--report-bindings --bind-to none", 2), 0);
    for (int r = 0; r < 2; r++) {
        snprintf(want, sizeof want, "tutti-run: rank %d not bound (cpus %s)",
                 r, all_ranges);
        if (!test_has_lines(out, want))
            fail_msg("no line '%s' in:\n%s", want, out);
        assert_true(strstr(out, want) < strstr(out, "bind_worker: "));
    }

    /* without the option, no report */
    assert_int_equal(run_workers("", 2), 0);
    assert_int_equal(test_count_of(out, "tutti-run: "), 0);
}

static void test_core_with_too_many_ranks_fails(void **state)
{
    char want[sizeof all_ranges + 256];
    (void)state;

    assert_int_equal(run_workers("--bind-to core", ncpus + 1), 125);
    snprintf(want, sizeof want, "tutti-run: --bind-to core gives each rank a "
             "CPU of its own, but %d ranks were asked for and tutti-run may "
             "run on %d CPUs (%s); start at most %d, or use --bind-to none",
             ncpus + 1, ncpus, all_ranges, ncpus);
    if (!test_has_lines(out, want))
        fail_msg("expected '%s', got:\n%s", want, out);
    assert_int_equal(test_count_of(out, "bind_worker: "), 0);
}

static void test_bad_value_is_refused(void **state)
{
    (void)state;
    assert_int_equal(run_workers("--bind-to socket", 2), 125);
    assert_string_equal(out, "tutti-run: --bind-to expects core or none, "
                             "got 'socket'\n");
}

/* Under a narrower set (the last CPU alone) rank 0 goes to that CPU, the
 * first of the set, not to CPU 0; 2 ranks fall back to none within it. */
static void test_binding_follows_the_launchers_set(void **state)
{
    int last = cpus[ncpus - 1];
    char one[16], want[128];
    (void)state;

    snprintf(one, sizeof one, "%d", last);
    restrict_to(&last, 1);
    assert_int_equal(run_workers("--report-bindings", 1), 0);
    expect_rank(0, "core", one);
    snprintf(want, sizeof want, "tutti-run: rank 0 bound to cpu %d", last);
    assert_true(test_has_lines(out, want));

    assert_int_equal(run_workers("", 2), 0);
    expect_rank(0, "none", one);
    expect_rank(1, "none", one);

    assert_int_equal(run_workers("--bind-to core", 2), 125);
    snprintf(want, sizeof want, "but 2 ranks were asked for and tutti-run "
             "may run on 1 CPU (%d);", last);
    if (strstr(out, want) == NULL)
        fail_msg("expected '%s' in:\n%s", want, out);
}

static void test_help_names_the_options(void **state)
{
    (void)state;
    assert_int_equal(test_run(RUN " --help", 0, out, OUT_BYTES), 0);
    assert_non_null(strstr(out, "--bind-to core|none"));
    assert_non_null(strstr(out, "--report-bindings"));
    assert_non_null(strstr(out, "  TUTTI_BIND "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_binds_one_cpu_each),
        cmocka_unit_test(test_bind_to_core),
        cmocka_unit_test(test_bind_to_none),
        cmocka_unit_test(test_report_bindings),
        cmocka_unit_test(test_more_ranks_than_cpus_default_to_none),
        cmocka_unit_test(test_core_with_too_many_ranks_fails),
        cmocka_unit_test(test_bad_value_is_refused),
        cmocka_unit_test_teardown(test_binding_follows_the_launchers_set,
                                  restore_cpus),
        cmocka_unit_test(test_help_names_the_options),
    };

    if (read_own_cpus() != 0) {
        perror("test_run_bind: sched_getaffinity");
        return 1;
    }
    if (ncpus < 2) {
        printf("test_run_bind: skipped: this test may run on %d CPU, it "
               "needs 2\n", ncpus);
        return 77;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
