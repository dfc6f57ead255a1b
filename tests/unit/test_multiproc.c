/*
 * Multi-process runs through the real launcher: the correctness matrix on
 * 2, 3 and 4 processes over shared memory, tutti-perf's own checks, and the
 * launcher's handling of a failing rank.  No shared-memory name may be left.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/coll_worker"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"

/* Runs @p cmd, keeps its stdout in @p out; returns its exit status. */
static int run(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    assert_non_null(p);
    while (n + 1 < len && fgets(out + n, (int)(len - n), p) != NULL)
        n += strlen(out + n);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int shm_names_with(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void matrix_on(int nprocs)
{
    char cmd[512], out[8192], job[64], line[128];
    snprintf(job, sizeof(job), "mtest%d-%ld", nprocs, (long)getpid());
    snprintf(cmd, sizeof(cmd), "%s --job-id %s -n %d %s", RUN, job, nprocs,
             WORKER);
    int rc = run(cmd, out, sizeof(out));
    if (rc != 0)
        fail_msg("%s exited %d:\n%s", cmd, rc, out);
    for (int r = 0; r < nprocs; r++) {
        /* 10 dtypes x 5 counts x (4 ops x 2 placements + n roots) */
        snprintf(line, sizeof(line), "coll_worker: rank %d: %d checks, 0 "
                 "failures", r, 10 * 5 * (8 + nprocs));
        if (strstr(out, line) == NULL)
            fail_msg("missing '%s' in:\n%s", line, out);
    }
    snprintf(line, sizeof(line), "tutti-%s-", job);
    assert_int_equal(shm_names_with(line), 0);
}

static void test_matrix_2_procs(void **state) { (void)state; matrix_on(2); }
static void test_matrix_3_procs(void **state) { (void)state; matrix_on(3); }
static void test_matrix_4_procs(void **state) { (void)state; matrix_on(4); }

/* tutti-perf checks every result; its table says #wrong 0 on each row. */
static void test_perf_table(void **state)
{
    char cmd[512], out[16384];
    (void)state;
    snprintf(cmd, sizeof(cmd), "%s -n 3 %s -b 4 -e 3M -f 7 -n 2 -w 1 -d int64",
             RUN, PERF);
    int rc = run(cmd, out, sizeof(out));
    if (rc != 0)
        fail_msg("%s exited %d:\n%s", cmd, rc, out);
    int rows = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        long long size, count, wrong;
        char type[16], op[16], impl[64];
        int root;
        double t, algbw, busbw;
        if (l[0] == '#')
            continue;
        assert_int_equal(sscanf(l, "%lld %lld %15s %15s %d %lf %lf %lf %lld "
                                "%63s", &size, &count, type, op, &root, &t,
                                &algbw, &busbw, &wrong, impl), 10);
        assert_string_equal(type, "int64");
        assert_int_equal(size, count * 8);
        assert_int_equal(wrong, 0);
        assert_string_equal(impl, "RingReduce");
        rows++;
    }
    assert_int_equal(rows, 7); /* 4 B .. 3 MiB by 7x: 4, 28, .. 470596 */
}

/* One rank fails: the launcher stops the others and reports it. */
static void test_failing_rank_stops_job(void **state)
{
    char out[4096];
    struct timespec a, b;
    (void)state;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = run(RUN " -n 3 sh -c 'if [ $TUTTI_RANK = 1 ]; then exit 3; fi; "
                 "sleep 60' 2>&1", out, sizeof(out));
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "rank 1"));
    assert_true(b.tv_sec - a.tv_sec < 30);
}

static void test_launcher_env(void **state)
{
    char out[4096];
    (void)state;
    int rc = run(RUN " --job-id envtest -n 2 sh -c 'echo \"r=$TUTTI_RANK "
                 "s=$TUTTI_SIZE j=$TUTTI_JOB_ID\"' | sort", out, sizeof(out));
    assert_int_equal(rc, 0);
    assert_string_equal(out, "r=0 s=2 j=envtest\nr=1 s=2 j=envtest\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launcher_env),
        cmocka_unit_test(test_failing_rank_stops_job),
        cmocka_unit_test(test_matrix_2_procs),
        cmocka_unit_test(test_matrix_3_procs),
        cmocka_unit_test(test_matrix_4_procs),
        cmocka_unit_test(test_perf_table),
    };
    return cmocka_run_group_tests_name("multiproc", tests, NULL, NULL);
}
