/*
 * Multi-process runs through the real launcher: the correctness matrix
 * (check_common.h) on 2, 3, 4 and 5 processes over shared memory and on
 * tasks with several devices, tutti-perf's own checks, and the
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

#include "test_perf.h"
#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/coll_worker"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"
#define INFO TUTTI_TEST_BUILDDIR "/tools/tutti-info"

/*
 * Every one of @p n ranks printed "coll_worker: rank R: C checks, F
 * failures, S sampled out" with 0 failures and the same C and S (they run
 * the same cases); the first rank's C and S go to @p checks_out and
 * @p sampled_out.
 */
static void expect_clean_ranks(const char *out, int n, int *checks_out,
                               int *sampled_out)
{
    for (int r = 0; r < n; r++) {
        char want[64];
        int checks = -1, failures = -1, sampled = -1;
        snprintf(want, sizeof(want), "coll_worker: rank %d: ", r);
        const char *line = strstr(out, want);
        if (line == NULL)
            fail_msg("no line for rank %d in:\n%s", r, out);
        assert_int_equal(sscanf(line + strlen(want), "%d checks, %d failures, "
                                "%d sampled out", &checks, &failures,
                                &sampled), 3);
        if (failures != 0)
            fail_msg("rank %d: %d failures:\n%s", r, failures, out);
        if (r == 0) {
            *checks_out = checks;
            *sampled_out = sampled;
        }
        assert_int_equal(checks, *checks_out);
        assert_int_equal(sampled, *sampled_out);
        assert_true(checks > 1);
    }
}

/* The matrix on a group of @p nprocs tasks x @p devices devices. */
static void matrix_on(int nprocs, int devices)
{
    char cmd[512], out[8192], job[64], line[128];
    int n = nprocs * devices, checks = 0, sampled = 0;
    struct timespec a, b;
    snprintf(job, sizeof(job), "mtest%dx%d-%ld", nprocs, devices,
             (long)getpid());
    snprintf(cmd, sizeof(cmd), "%s --timeout 600 --job-id %s -n %d %s "
             "--devices %d", RUN, job, nprocs, WORKER, devices);
    clock_gettime(CLOCK_MONOTONIC, &a);
    test_run_ok(cmd, 0, out, sizeof(out));
    clock_gettime(CLOCK_MONOTONIC, &b);
    expect_clean_ranks(out, n, &checks, &sampled);
    print_message("matrix, %d tasks x %d devices: %d cases per member ran, "
                  "%d sampled out (TUTTI_CHECK_FULL=1 runs them), %.1f s\n",
                  nprocs, devices, checks, sampled,
                  (double)(b.tv_sec - a.tv_sec) +
                      (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
    snprintf(line, sizeof(line), "tutti-%s-", job);
    assert_int_equal(test_shm_names_with(line), 0);
}

static void test_matrix_2x1(void **state) { (void)state; matrix_on(2, 1); }
static void test_matrix_3x1(void **state) { (void)state; matrix_on(3, 1); }
static void test_matrix_4x1(void **state) { (void)state; matrix_on(4, 1); }
static void test_matrix_5x1(void **state) { (void)state; matrix_on(5, 1); }
static void test_matrix_2x3(void **state) { (void)state; matrix_on(2, 3); }
static void test_matrix_1x4(void **state) { (void)state; matrix_on(1, 4); }

/* Rank 1 (or task 1, for join fields) asks for another @p field: every
 * member of every task is refused with the same message naming it. */
static void disagree_on(const char *field, const char *named)
{
    char cmd[512], out[8192], first[512] = "";
    snprintf(cmd, sizeof(cmd), "%s --timeout 60 -n 3 %s --disagree %s", RUN,
             WORKER, field);
    int lines = 0;
    test_run_ok(cmd, 0, out, sizeof(out));
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        char *detail = strstr(l, ": refused: ");
        if (detail == NULL)
            fail_msg("member not refused: %s", l);
        if (strstr(detail, named) == NULL)
            fail_msg("refusal does not name '%s': %s", named, l);
        if (first[0] == '\0')
            snprintf(first, sizeof(first), "%s", detail);
        assert_string_equal(detail, first);
        lines++;
    }
    assert_int_equal(lines, 3);
}

static void test_disagree_collective(void **s) { (void)s; disagree_on("collective", "disagree on collective: rank 0 has broadcast, rank 1 has allreduce"); }
static void test_disagree_dtype(void **s) { (void)s; disagree_on("dtype", "disagree on dtype: rank 0 has float64, rank 1 has int64"); }
static void test_disagree_count(void **s) { (void)s; disagree_on("count", "disagree on count: rank 0 has 8, rank 1 has 7"); }
static void test_disagree_op(void **s) { (void)s; disagree_on("op", "disagree on op: rank 0 has sum, rank 1 has max"); }
static void test_disagree_root(void **s) { (void)s; disagree_on("root", "disagree on root: rank 0 has 0, rank 1 has 1"); }
static void test_disagree_group_size(void **s) { (void)s; disagree_on("group_size", "group size differs"); }
static void test_disagree_device_type(void **s) { (void)s; disagree_on("device_type", "device type differs"); }

/* tutti-perf checks every result; its table says #wrong 0 on each row. */
static void test_perf_table(void **state)
{
    char cmd[512], out[16384];
    (void)state;
    snprintf(cmd, sizeof(cmd), "%s -n 3 %s -b 4 -e 3M -f 7 -n 2 -w 1 -d int64",
             RUN, PERF);
    test_run_ok(cmd, 0, out, sizeof(out));
    int rows = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        test_perf_row_t r;
        if (l[0] == '#')
            continue;
        assert_true(test_perf_row(l, &r));
        assert_string_equal(r.type, "int64");
        assert_int_equal(r.size, r.count * 8);
        assert_int_equal(r.wrong, 0);
        /* the default config: recursive doubling up to 8K for 3 */
        assert_string_equal(r.impl, r.size <= 8192
                                        ? "RecursiveDoublingAllreduce"
                                        : "RingAllreduce");
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
    int rc = test_run(RUN " -n 3 sh -c 'if [ $TUTTI_RANK = 1 ]; then exit 3; fi; "
                 "sleep 60' 2>&1", 0, out, sizeof(out));
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "rank 1"));
    assert_true(b.tv_sec - a.tv_sec < 30);
}

static void test_launcher_env(void **state)
{
    char out[4096];
    (void)state;
    int rc = test_run(RUN " --job-id envtest -n 2 sh -c 'echo \"r=$TUTTI_RANK "
                 "s=$TUTTI_SIZE j=$TUTTI_JOB_ID\"' | sort", 0, out, sizeof(out));
    assert_int_equal(rc, 0);
    assert_string_equal(out, "r=0 s=2 j=envtest\nr=1 s=2 j=envtest\n");
}

/* Task 0 aborts while the others wait: every task fails with the reason,
 * and a new context works afterwards. */
static void test_abort_reaches_every_task(void **state)
{
    char cmd[512], out[4096];
    (void)state;
    snprintf(cmd, sizeof(cmd), "%s --timeout 60 -n 3 %s --abort", RUN,
             WORKER);
    test_run_ok(cmd, 0, out, sizeof(out));
    for (int t = 0; t < 3; t++) {
        char want[128];
        snprintf(want, sizeof(want), "coll_worker: task %d: aborted: ", t);
        assert_non_null(strstr(out, want));
        snprintf(want, sizeof(want), "coll_worker: task %d: new context ok",
                 t);
        assert_non_null(strstr(out, want));
    }
    assert_non_null(strstr(out, "aborted by task 0: operator stop"));
}

/* Tasks 0 and 2 of a --victim run reported within 5 s that task 1 is
 * gone. */
static void expect_victim_named(const char *out)
{
    for (int t = 0; t < 3; t += 2) {
        char want[160];
        double secs = 99;
        snprintf(want, sizeof(want), "coll_worker: task %d: failed after ", t);
        const char *line = strstr(out, want);
        if (line == NULL)
            fail_msg("task %d did not report:\n%s", t, out);
        assert_int_equal(sscanf(line + strlen(want), "%lf", &secs), 1);
        if (secs >= 5.0)
            fail_msg("task %d took %.1f s to see task 1 gone:\n%s", t, secs,
                     out);
        assert_non_null(strstr(line, "ERR_PEER: group 0x2d rank"));
        assert_non_null(strstr(line, "task 1 (rank 1) is gone"));
    }
}

/* kill -9 of one task in the middle of a 16 MiB allreduce: the others fail
 * within 5 s naming it; the launcher exits non-zero and nothing is left. */
static void test_killed_task_is_named(void **state)
{
    char cmd[512], out[4096], job[64], prefix[80];
    (void)state;
    snprintf(job, sizeof(job), "victim-%ld", (long)getpid());
    snprintf(cmd, sizeof(cmd), "%s --grace 10 --timeout 60 --job-id %s -n 3 "
             "%s --victim", RUN, job, WORKER);
    int rc = test_run(cmd, 0, out, sizeof(out));
    assert_int_equal(rc, 128 + 9); /* the first failure: task 1's SIGKILL */
    expect_victim_named(out);
    snprintf(prefix, sizeof(prefix), "tutti-%s-", job);
    assert_int_equal(test_shm_names_with(prefix), 0);
    /* The bracket keeps pgrep from matching the shell that runs it. */
    snprintf(cmd, sizeof(cmd), "pgrep -f 'coll_worke[r] --victim' >/dev/null");
    assert_int_not_equal(system(cmd), 0);
}

/* The same with task 1's parent never reaping it: a zombie is gone too.
 * Its parent is a sleep that outlives the others' 5 s. */
static void test_unreaped_task_is_named(void **state)
{
    char cmd[768], out[4096];
    (void)state;
    snprintf(cmd, sizeof(cmd), "(export TUTTI_SIZE=3 TUTTI_JOB_ID=zombie%ld; "
             "for i in 0 2; do TUTTI_RANK=$i timeout 60 %s --victim & done; "
             "TUTTI_RANK=1 sh -c '%s --victim & exec sleep 9' & wait)",
             (long)getpid(), WORKER, WORKER);
    test_run(cmd, 1, out, sizeof(out));
    expect_victim_named(out);
}

/* tutti-info --resolve forms a real group and reports what ran where; all
 * three members in one task here (tests/mp/test_info_tool.c spreads them
 * over several). */
static void test_info_resolve(void **state)
{
    char out[8192];
    (void)state;
    int rc = test_run(INFO " --explain allreduce --size 4K --group-size 3 "
                 "--num-tasks 1 --resolve 2>/dev/null", 0, out, sizeof(out));
    if (rc != 0)
        fail_msg("tutti-info --resolve exited %d:\n%s", rc, out);
    assert_non_null(strstr(out, "=> RecursiveDoublingAllreduce"));
    for (int r = 0; r < 3; r++) {
        char want[96];
        snprintf(want, sizeof(want), "rank %d: task 0 cpu:%d, host ", r, r);
        assert_non_null(strstr(out, want));
    }
    assert_non_null(strstr(out, "ran RecursiveDoublingAllreduce (step 0)"));
}

/* In a group over 2 tasks x 2 devices, a member reaches the other member
 * of its process through local channels and the two others through shared
 * memory (the shm transport's debug line says which). */
static void test_mixed_group_uses_local_channels(void **state)
{
    char cmd[512], out[8192], log[64];
    (void)state;
    snprintf(log, sizeof(log), "/tmp/tutti-mixed-%ld.log", (long)getpid());
    snprintf(cmd, sizeof(cmd), "TUTTI_LOG_LEVEL=debug %s --timeout 600 -n 2 "
             "%s --devices 2 2>%s", RUN, WORKER, log);
    test_run_ok(cmd, 0, out, sizeof(out));
    for (int r = 0; r < 4; r++) {
        char want[128];
        /* The matrix's first group: key 42 * 4096. */
        snprintf(want, sizeof(want), "group 0x2a000 rank %d: local to 1 "
                 "peer(s), shm to 2 peer(s)", r);
        test_expect_in_file(log, want);
    }
    int checks = 0, sampled = 0;
    expect_clean_ranks(out, 4, &checks, &sampled);
    print_message("matrix, 2 tasks x 2 devices: %d cases per member ran, %d "
                  "sampled out\n", checks, sampled);
    unlink(log);
}

/* @p cmd, which ran the matrix's selection pass on 3 tasks, exited @p rc
 * with @p out: 0, and every rank clean. */
static void expect_clean_selection(const char *cmd, int rc, const char *out)
{
    int checks = 0, sampled = 0;
    if (rc != 0)
        fail_msg("%s exited %d:\n%s", cmd, rc, out);
    expect_clean_ranks(out, 3, &checks, &sampled);
}

/* Task 1's config gives the tree another fanout and chunk than task 0's:
 * every member still follows the one plan the resolver (task 0) made, so
 * the matrix's pass through selection stays exact. */
static void test_plan_comes_from_the_resolver(void **state)
{
    char cmd[1024], out[8192];
    test_tmp_t t;
    (void)state;
    test_tmp_make(&t, "plan", "other.yaml",
                  "selection:\n"
                  "  - { collective: allreduce, algorithm: RingReduce }\n"
                  "  - { collective: broadcast, "
                  "algorithm: HierarchicalTreeBroadcast,\n"
                  "      params: { fanout: 1, chunk: 4K } }\n");
    snprintf(cmd, sizeof(cmd), "%s --timeout 120 -n 3 sh -c 'if [ "
             "$TUTTI_RANK = 1 ]; then export TUTTI_CONFIG=%s; fi; exec %s "
             "--selection-only allreduce,broadcast'", RUN, t.path, WORKER);
    int rc = test_run(cmd, 0, out, sizeof(out));
    test_rmtree(t.dir);
    expect_clean_selection(cmd, rc, out);
}

/* RingAllreduce (named by its former name, RingReduce) with 3 subdivisions (rings of different orders in flight
 * together), through the selection pass of the matrix on 3 processes:
 * results exact, and the plan says 3 where the count allows it. */
static void test_ring_subdivisions(void **state)
{
    char log[128], cmd[1024], out[8192];
    test_tmp_t t;
    (void)state;
    test_tmp_make(&t, "subdiv", "s3.yaml",
                  "selection:\n"
                  "  - { collective: allreduce, algorithm: RingReduce,\n"
                  "      params: { subdivisions: 3 } }\n");
    test_tmpfile(log, sizeof(log), t.dir, "log", NULL);
    snprintf(cmd, sizeof(cmd), "TUTTI_CONFIG=%s TUTTI_LOG_LEVEL=debug %s "
             "--timeout 120 -n 3 %s --selection-only allreduce 2>%s", t.path,
             RUN, WORKER, log);
    int rc = test_run(cmd, 0, out, sizeof(out));
    int planned = test_file_has(log, "bytes, 3 subdivisions");
    test_rmtree(t.dir);
    expect_clean_selection(cmd, rc, out);
    if (!planned)
        fail_msg("no RingAllreduce plan with 3 subdivisions in the debug "
                 "log");
}

#define GOOD_SO TUTTI_TEST_BUILDDIR "/tests/modules/good/.libs/mod_good.so"

/* Task 0 loads modules from @p dir_a, task 1 from @p dir_b; both try to
 * join one group.  Returns the output. */
static void join_with_modules(const char *dir_a, const char *dir_b, char *out,
                              size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s --timeout 60 -n 2 sh -c 'if [ "
             "$TUTTI_RANK = 1 ]; then export TUTTI_MODULE_PATH=%s; else export "
             "TUTTI_MODULE_PATH=%s; fi; exec %s --join' 2>/dev/null", RUN,
             dir_b, dir_a, WORKER);
    test_run_ok(cmd, 0, out, len);
}

static void expect_both_refused(const char *out, const char *detail)
{
    for (int t = 0; t < 2; t++) {
        char want[256];
        snprintf(want, sizeof(want), "coll_worker: task %d: refused: "
                 "ERR_MISMATCH", t);
        if (strstr(out, want) == NULL)
            fail_msg("task %d not refused:\n%s", t, out);
    }
    if (strstr(out, detail) == NULL)
        fail_msg("no '%s' in:\n%s", detail, out);
}

/* Members must run the same build of every module: a copy of the test
 * module with one byte more (same name and version) is refused with both
 * file hashes; a module only one task loaded is named too. */
static void test_module_builds_must_agree(void **state)
{
    char a[64], b[64], cmd[512], out[4096];
    (void)state;
    assert_int_equal(test_tmpdir(a, sizeof(a), "mods-a"), 0);
    assert_int_equal(test_tmpdir(b, sizeof(b), "mods-b"), 0);
    snprintf(cmd, sizeof(cmd), "cp %s %s/ && cp %s %s/ && printf x >> "
             "%s/mod_good.so", GOOD_SO, a, GOOD_SO, b, b);
    assert_int_equal(system(cmd), 0);
    join_with_modules(a, b, out, sizeof(out));
    expect_both_refused(out, "module 'testgood' differs: task ");
    assert_non_null(strstr(out, "has 1.2.3 (file hash "));

    snprintf(cmd, sizeof(cmd), "rm %s/mod_good.so", b);
    assert_int_equal(system(cmd), 0);
    join_with_modules(a, b, out, sizeof(out));
    expect_both_refused(out, "module 'testgood' is loaded by task 0 but not "
                             "by task 1");

    /* The same build everywhere joins. */
    join_with_modules(a, a, out, sizeof(out));
    assert_non_null(strstr(out, "coll_worker: task 0: joined"));
    assert_non_null(strstr(out, "coll_worker: task 1: joined"));
    test_rmtree(a);
    test_rmtree(b);
}

/* A normal run says nothing at warn level: the selection pass of the
 * per-rank collectives includes size queries and a rank whose buffer is
 * short, answered with ERR_TOO_SMALL (an answer, not an error line). */
static void test_normal_run_is_quiet(void **state)
{
    char cmd[512], out[16384];
    (void)state;
    snprintf(cmd, sizeof(cmd), "TUTTI_LOG_LEVEL=warn %s --timeout 120 -n 3 "
             "%s --selection-only allgather,alltoall,reduce_scatter", RUN,
             WORKER);
    test_run_ok(cmd, 1, out, sizeof(out));
    if (strstr(out, "tutti[") != NULL)
        fail_msg("log lines in a normal run:\n%s", out);
}

/* What every task finds alike in the config is reported once per job, by
 * task 0: a skipped rule as a warning, a bad file as an error. */
static void test_config_findings_once_per_job(void **state)
{
    char cmd[512], out[16384];
    test_tmp_t t;
    const char *cfg = t.path;
    (void)state;
    test_tmp_make(&t, "once", "t.yaml",
                  "selection:\n"
                  "  - { collective: allreduce, "
                  "algorithm: NoSuchImplementation }\n"
                  "  - { collective: allreduce, algorithm: RingReduce }\n");
    snprintf(cmd, sizeof(cmd), "TUTTI_LOG_LEVEL=warn TUTTI_CONFIG=%s %s "
             "--timeout 60 -n 3 %s --join", cfg, RUN, WORKER);
    test_run_ok(cmd, 1, out, sizeof(out));
    if (test_count_of(out, "rule skipped") != 1 ||
        test_count_of(out, "tutti[task 0] warn config: ") != 1)
        fail_msg("want one skipped-rule warning, from task 0:\n%s", out);

    /* Three tasks of a job started here, so that none is stopped before
     * it reads the bad file (tutti-run stops a job at its first failure). */
    test_write_file(cfg, "timeout: 5\nno_such_key: 1\n");
    snprintf(cmd, sizeof(cmd), "(for i in 0 1 2; do TUTTI_LOG_LEVEL=warn "
             "TUTTI_CONFIG=%s TUTTI_RANK=$i TUTTI_SIZE=3 TUTTI_JOB_ID=once%ld "
             "timeout 60 %s --join & done; wait)", cfg, (long)getpid(),
             WORKER);
    test_run(cmd, 1, out, sizeof(out));
    /* Each task's call fails with the detail (the worker prints it). */
    assert_int_equal(test_count_of(out, "coll_worker: configuration error: "),
                     3);
    assert_int_equal(test_count_of(out, "no_such_key"), 4);
    if (test_count_of(out, "] error config: ") != 1 ||
        test_count_of(out, "tutti[task 0] error config: ") != 1)
        fail_msg("want one config error line, from task 0:\n%s", out);
    test_rmtree(t.dir);
}

/* Resolution is cached: over 20 instances on 2 tasks, each first
 * execution makes one control round trip, each second one none. */
static void test_second_execution_skips_resolution(void **state)
{
    char out[1024];
    (void)state;
    int rc = test_run(RUN " --timeout 60 -n 2 " TUTTI_TEST_BUILDDIR
                 "/bench/tutti-resolve-cost 20", 0, out, sizeof(out));
    if (rc != 0)
        fail_msg("tutti-resolve-cost exited %d:\n%s", rc, out);
    if (strstr(out, "control frames sent by this task: 1.00 per first "
                    "execution, 0.00 per second") == NULL)
        fail_msg("unexpected: %s", out);
}

#define PROBE_DIR TUTTI_TEST_BUILDDIR "/tests/modules/probe"

/* tutti-info --settings with config @p conf and @p env; expects exit 1
 * and @p what in its output. */
static void expect_probe_refused(const char *conf, const char *env,
                                 const char *what)
{
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof(cmd), "TUTTI_CONFIG=%s TUTTI_MODULE_PATH=%s %s %s "
             "--settings", conf, PROBE_DIR, env, INFO);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 1 || strstr(out, what) == NULL)
        fail_msg("%s exited %d, expected 1 and '%s':\n%s", cmd, rc, what, out);
}

/* A transport module of the suite (tests/modules/tp_probe.c) declares
 * settings of its own, one of each type: the file's section, the
 * environment and the defaults reach it typed on every task, while shm
 * carries the data; bad values and unknown keys are refused with their
 * place, as the core's own settings are. */
static void test_transport_module_settings(void **state)
{
    char cmd[1024], out[16384], want[256];
    test_tmp_t *tmp = *state; /* removed by test_tmp_teardown */
    const char *conf = tmp->path;
    test_tmpfile(tmp->path, sizeof(tmp->path), tmp->dir, "probe.yaml", NULL);
    test_write_file(conf, "transports: [probe, shm]\n"
                          "probe: { depth: 5, mode: careful, window: 128K }\n");
    snprintf(cmd, sizeof(cmd), "TUTTI_CONFIG=%s TUTTI_MODULE_PATH=%s "
             "TUTTI_ALGO=allreduce:RingReduce TUTTI_PROBE_GREETING=hi "
             "PROBE_PORTS=100-200 TUTTI_LOG_LEVEL=warn %s -n 2 %s -b 8 "
             "-e 64K -f 64", conf, PROBE_DIR, RUN, PERF);
    test_run_ok(cmd, 1, out, sizeof(out));
    for (int t = 0; t < 2; t++) {
        snprintf(want, sizeof(want), "tutti[task %d] warn probe: greeting "
                 "'hi', depth 5, mode careful, window 131072, ports "
                 "100-200, patience 1.5", t);
        if (strstr(out, want) == NULL)
            fail_msg("no '%s' in:\n%s", want, out);
    }
    assert_non_null(strstr(out, "RingAllreduce"));

    snprintf(cmd, sizeof(cmd), "TUTTI_CONFIG=%s TUTTI_MODULE_PATH=%s %s",
             conf, PROBE_DIR, INFO);
    assert_int_equal(test_run(cmd, 1, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "probe.depth = 5 (file)\n"));
    assert_non_null(strstr(out, "probe.greeting = \"hello\" (default)\n"));

    test_write_file(conf, "probe:\n  depth: 9\n");
    snprintf(want, sizeof(want), "%s:2:10: found '9' for depth; expected a "
             "whole number from 1 to 8", conf);
    expect_probe_refused(conf, "", want);
    test_write_file(conf, "probe: { colour: red }\n");
    snprintf(want, sizeof(want), "%s:1:10: unknown key 'colour' in probe; "
             "expected one of greeting, depth, mode, window, ports, "
             "patience", conf);
    expect_probe_refused(conf, "", want);
    test_write_file(conf, "log_level: warn\n");
    expect_probe_refused(conf, "TUTTI_PROBE_MODE=slow",
                         "TUTTI_PROBE_MODE='slow': not a valid probe.mode; "
                         "expected one of fast, careful");
    expect_probe_refused(conf, "TUTTI_PROBE_WINDOW=3K",
                         "expected a power of two from 4K to 1M");
}

/* The three lines tutti-info --settings gives a setting, whole: @p key and
 * its doc; its default and variable; what it accepts. */
static void expect_setting(const char *out, const char *key, const char *doc,
                           const char *defaults, const char *accepts)
{
    char want[512];
    snprintf(want, sizeof(want), "%-20s %s\n%-23s%s\n%-23s%s", key, doc, "",
             defaults, "", accepts);
    if (!test_has_lines(out, want))
        fail_msg("no lines\n%s\nin:\n%s", want, out);
}

/* tutti-info --settings lists every setting, the core's and the loaded
 * modules' (the probe's six among them): its doc, its default (quoted,
 * '' for an empty string, none for an empty list) with its variable (a
 * row's own where it names one), and what it accepts. */
static void test_settings_listing(void **state)
{
    char cmd[512], out[16384];
    (void)state;
    snprintf(cmd, sizeof(cmd), "TUTTI_MODULE_PATH=%s %s --settings",
             PROBE_DIR, INFO);
    test_run_ok(cmd, 0, out, sizeof(out));
    expect_setting(out, "timeout", "seconds a call may make no progress "
                   "before it fails", "default '300', environment "
                   "TUTTI_TIMEOUT", "a number of seconds above 0, e.g. 300 "
                   "or 0.5");
    expect_setting(out, "modules.path", "directories searched for modules "
                   "before the built-in one", "default none, environment "
                   "TUTTI_MODULE_PATH", "a directory or a list of "
                   "directories");
    expect_setting(out, "probe.greeting", "a word", "default 'hello', "
                   "environment TUTTI_PROBE_GREETING", "text of at most 31 "
                   "characters");
    expect_setting(out, "probe.window", "how wide", "default '64K', "
                   "environment TUTTI_PROBE_WINDOW", "a power of two from "
                   "4K to 1M (suffixes K, M, G, T)");
    expect_setting(out, "probe.ports", "where", "default '0', environment "
                   "PROBE_PORTS", "0 (any) or a range LO-HI of whole numbers "
                   "from 1 to 65535");
    assert_int_equal(test_count_of(out, "probe."), 6);
    /* A string row whose default is empty (tcp's, loaded from the build). */
    if (!test_has_lines(out, "                       default '', "
                             "environment TUTTI_TCP_IFNAME"))
        fail_msg("no empty default for tcp.interface in:\n%s", out);
}

/* A module's per-group state across tasks: task 0's init_group_params
 * runs once for the group, and every member's init_group, in its own
 * process, gets the same bytes over the control plane (as an NCCL unique
 * id travels); each member's state ends at leave (mod_group logs each). */
static void test_group_state_across_tasks(void **state)
{
    test_tmp_t *t = *state;
    char log[160], cmd[768], out[4096], hex[3][64];
    int inits = 0, finis = 0, ranks = 0;
    test_tmpfile(log, sizeof(log), t->dir, "group.log", NULL);
    snprintf(cmd, sizeof(cmd), "TUTTI_TEST_GROUP_LOG=%s TUTTI_MODULE_PATH=%s"
             " %s --timeout 60 -n 3 %s --named TestOrdered", log,
             TUTTI_TEST_BUILDDIR "/tests/modules/good", RUN, WORKER);
    test_run_ok(cmd, 0, out, sizeof(out));
    for (int task = 0; task < 3; task++) {
        char want[64];
        snprintf(want, sizeof(want), "task %d: named TestOrdered: ok", task);
        assert_non_null(strstr(out, want));
    }
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[256];
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long key;
        int rank;
        char bytes[64];
        if (sscanf(line, "init %llx %d %63s", &key, &rank, bytes) == 3) {
            assert_int_equal(key, 47);
            assert_in_range(rank, 0, 2);
            snprintf(hex[inits < 3 ? inits : 2], sizeof(hex[0]), "%s", bytes);
            ranks |= 1 << rank;
            inits++;
        } else if (sscanf(line, "fini %llx %d", &key, &rank) == 2) {
            finis++;
        }
    }
    fclose(f);
    /* Once per member although each ran two instances; the same bytes. */
    assert_int_equal(inits, 3);
    assert_int_equal(ranks, 7);
    assert_string_equal(hex[0], hex[1]);
    assert_string_equal(hex[0], hex[2]);
    assert_int_equal(finis, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launcher_env),
        cmocka_unit_test(test_failing_rank_stops_job),
        cmocka_unit_test(test_matrix_2x1),
        cmocka_unit_test(test_matrix_3x1),
        cmocka_unit_test(test_matrix_4x1),
        cmocka_unit_test(test_matrix_5x1),
        cmocka_unit_test(test_matrix_2x3),
        cmocka_unit_test(test_matrix_1x4),
        cmocka_unit_test(test_mixed_group_uses_local_channels),
        cmocka_unit_test(test_disagree_collective),
        cmocka_unit_test(test_disagree_dtype),
        cmocka_unit_test(test_disagree_count),
        cmocka_unit_test(test_disagree_op),
        cmocka_unit_test(test_disagree_root),
        cmocka_unit_test(test_disagree_group_size),
        cmocka_unit_test(test_disagree_device_type),
        cmocka_unit_test(test_perf_table),
        cmocka_unit_test(test_info_resolve),
        cmocka_unit_test(test_plan_comes_from_the_resolver),
        cmocka_unit_test(test_ring_subdivisions),
        cmocka_unit_test(test_module_builds_must_agree),
        cmocka_unit_test(test_second_execution_skips_resolution),
        cmocka_unit_test_setup_teardown(test_transport_module_settings,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test(test_settings_listing),
        cmocka_unit_test(test_normal_run_is_quiet),
        cmocka_unit_test(test_config_findings_once_per_job),
        cmocka_unit_test(test_abort_reaches_every_task),
        cmocka_unit_test(test_killed_task_is_named),
        cmocka_unit_test(test_unreaped_task_is_named),
        cmocka_unit_test_setup_teardown(test_group_state_across_tasks,
                                        test_tmp_setup, test_tmp_teardown),
    };
    return cmocka_run_group_tests_name("multiproc", tests, NULL, NULL);
}
