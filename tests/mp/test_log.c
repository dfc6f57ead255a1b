/*
 * Logging through the real launcher: per-subsystem levels over log_level
 * (TUTTI_LOG, log_subsystems in YAML), a file per task instead of stderr
 * (TUTTI_LOG_FILE, log_file), rank and device on every member's line, and
 * the errors a user can make there, each naming the setting.
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

#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"
#define JOB RUN " --timeout 60 -n 2 " PERF " -b 8 -e 8 -n 1 -w 0"
#define OUT_BYTES (1u << 20)

static char *out;

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
    return 0;
}

/* Lines of out at @p level ("debug"): how many, and how many of them are
 * of subsystem @p subsys. */
static void count_lines(const char *level, const char *subsys, int *all,
                        int *of_subsys)
{
    char tag[48], mine[96];
    snprintf(tag, sizeof(tag), "] %s ", level);
    snprintf(mine, sizeof(mine), "] %s %s: ", level, subsys);
    *all = *of_subsys = 0;
    for (const char *p = out; (p = strstr(p, tag)) != NULL; p++) {
        (*all)++;
        *of_subsys += strncmp(p, mine, strlen(mine)) == 0;
    }
}

/* log_level warn, registry at debug: the registry's debug lines, no
 * other subsystem's. */
static void test_subsystem_above_level(void **state)
{
    int all, reg;
    (void)state;
    int rc = test_run("TUTTI_LOG_LEVEL=warn TUTTI_LOG=registry:debug " JOB,
                      1, out, OUT_BYTES);
    assert_int_equal(rc, 0);
    count_lines("debug", "registry", &all, &reg);
    if (reg == 0 || all != reg)
        fail_msg("%d debug lines, %d of them registry's:\n%s", all, reg, out);
}

/* log_level debug, registry at warn: every subsystem's debug lines but
 * the registry's. */
static void test_subsystem_below_level(void **state)
{
    int all, reg;
    (void)state;
    int rc = test_run("TUTTI_LOG_LEVEL=debug TUTTI_LOG=registry:warn,tcp:off "
                      JOB, 1, out, OUT_BYTES);
    assert_int_equal(rc, 0);
    count_lines("debug", "registry", &all, &reg);
    if (all == 0 || reg != 0)
        fail_msg("%d debug lines, %d of them registry's:\n%s", all, reg, out);
}

/* The same from YAML (log_subsystems), with log_level there too. */
static void test_subsystems_from_yaml(void **state)
{
    int all, reg;
    char path[64], cmd[512];
    (void)state;
    snprintf(path, sizeof(path), "/tmp/tutti-log-%ld.yaml", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "log_level: error\nlog_subsystems: \"registry:debug\"\n"
               "selection:\n  - { collective: allreduce, algorithm: "
               "RingAllreduce }\n");
    fclose(f);
    snprintf(cmd, sizeof(cmd), "TUTTI_CONFIG=%s " JOB, path);
    int rc = test_run(cmd, 1, out, OUT_BYTES);
    unlink(path);
    assert_int_equal(rc, 0);
    count_lines("debug", "registry", &all, &reg);
    if (reg == 0 || all != reg)
        fail_msg("%d debug lines, %d of them registry's:\n%s", all, reg, out);
}

/* Checks file @p path holds lines of task @p task only, and, if
 * @p members, at least one of a member's (with its rank and device). */
static void expect_task_file(const char *path, int task, int members)
{
    char want[32], member[64];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail_msg("no log file %s", path);
    size_t n = fread(out, 1, OUT_BYTES - 1, f);
    fclose(f);
    out[n] = '\0';
    unlink(path);
    snprintf(want, sizeof(want), "tutti[task %d", task);
    snprintf(member, sizeof(member), "tutti[task %d rank ", task);
    int lines = 0, of_members = 0;
    for (char *l = strtok(out, "\n"); l != NULL; l = strtok(NULL, "\n")) {
        if (strncmp(l, want, strlen(want)) != 0)
            fail_msg("%s: line of another task: %s", path, l);
        lines++;
        of_members += strncmp(l, member, strlen(member)) == 0 &&
                      strstr(l, "/cpu:") != NULL;
    }
    assert_true(lines > 0);
    if (members && of_members == 0)
        fail_msg("%s: no line of a member (rank and device)", path);
}

/* A file per task, %t replaced; stderr keeps no library line. */
static void test_file_per_task(void **state)
{
    char cmd[512], path[96];
    (void)state;
    long id = (long)getpid();
    snprintf(cmd, sizeof(cmd), "TUTTI_LOG_LEVEL=debug "
             "TUTTI_LOG_FILE=/tmp/tutti-log-%ld-%%t.txt " JOB " 2>&1", id);
    assert_int_equal(test_run(cmd, 0, out, OUT_BYTES), 0);
    /* The lines before the config is read (none at this level) could go to
     * stderr; the job's go to the files. */
    if (strstr(out, "] debug ") != NULL)
        fail_msg("debug lines on stderr:\n%s", out);
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof(path), "/tmp/tutti-log-%ld-%d.txt", id, t);
        expect_task_file(path, t, 1);
    }
    /* Without %t, .TASK is appended. */
    snprintf(cmd, sizeof(cmd), "TUTTI_LOG_LEVEL=info "
             "TUTTI_LOG_FILE=/tmp/tutti-log-%ld.txt " JOB, id);
    assert_int_equal(test_run(cmd, 1, out, OUT_BYTES), 0);
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof(path), "/tmp/tutti-log-%ld.txt.%d", id, t);
        expect_task_file(path, t, 0);
    }
}

/* A malformed list and a file that cannot be opened: the job fails, the
 * message names the setting and what was expected or why. */
static void test_errors_name_the_setting(void **state)
{
    (void)state;
    int rc = test_run("TUTTI_LOG=registry:loud " JOB, 1, out, OUT_BYTES);
    assert_int_not_equal(rc, 0);
    if (strstr(out, "TUTTI_LOG='registry:loud'") == NULL ||
        strstr(out, "SUBSYSTEM:LEVEL") == NULL)
        fail_msg("no error naming TUTTI_LOG and the form:\n%s", out);
    rc = test_run("TUTTI_LOG=registry:debug, " JOB, 1, out, OUT_BYTES);
    assert_int_not_equal(rc, 0);
    if (strstr(out, "TUTTI_LOG='registry:debug,'") == NULL)
        fail_msg("an empty item: no error naming TUTTI_LOG:\n%s", out);
    rc = test_run("TUTTI_LOG_FILE=/nonexistent-dir/x.%t " JOB, 1, out,
                  OUT_BYTES);
    assert_int_not_equal(rc, 0);
    if (strstr(out, "log_file (TUTTI_LOG_FILE) /nonexistent-dir/x.") == NULL ||
        strstr(out, "No such file or directory") == NULL)
        fail_msg("no error naming the log file and why:\n%s", out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subsystem_above_level),
        cmocka_unit_test(test_subsystem_below_level),
        cmocka_unit_test(test_subsystems_from_yaml),
        cmocka_unit_test(test_file_per_task),
        cmocka_unit_test(test_errors_name_the_setting),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
