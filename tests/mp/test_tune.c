/*
 * tutti-tune through the real tools: a small sweep (allreduce and
 * allgather on 2 processes, 8 B to 64 KiB by 8, one round) whose file,
 * loaded back by tutti-info, selects for every measured size the winner
 * the summary names, and at the size above each measured one the winner of
 * the next; the file's comments; an implementation whose run fails left
 * out; bad options refused with a message naming them; an unwritable -o
 * path failing with no file left.  No timing is asserted: only that the
 * file agrees with what was measured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define TUNE TUTTI_TEST_BUILDDIR "/tools/tutti-tune"
#define INFO TUTTI_TEST_BUILDDIR "/tools/tutti-info"
#define SWEEP "-n 2 -c allreduce,allgather -b 8 -e 64K -f 8 -r 1 --iters 3"

/* One line of the summary: collective, size as the rules count it, the
 * winner, and each candidate's median. */
typedef struct {
    char coll[32];
    unsigned long long bytes;
    char winner[64];
    char cand[4][64];
    double median[4];
    int ncand;
} tune_line_t;

#define MAX_LINES 16

/* The summary's lines: stdout's, but for comments. */
static int parse_summary(char *out, tune_line_t *lines)
{
    int n = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l != NULL;
         l = strtok_r(NULL, "\n", &save)) {
        int used;
        tune_line_t *t = &lines[n];
        if (l[0] == '#')
            continue;
        if (n == MAX_LINES)
            fail_msg("more than %d summary lines: '%s'", MAX_LINES, l);
        if (sscanf(l, "%31s %llu %63s%n", t->coll, &t->bytes, t->winner,
                   &used) != 3)
            fail_msg("not a summary line: '%s'", l);
        t->ncand = 0;
        for (char *p = l + used; *p != '\0';) {
            char name[64];
            double m;
            int len;
            if (sscanf(p, " %63[^=]=%lf%n", name, &m, &len) != 2)
                fail_msg("bad candidate in '%s' at '%s'", l, p);
            if (t->ncand == 4)
                fail_msg("more than 4 candidates: '%s'", l);
            snprintf(t->cand[t->ncand], 64, "%s", name);
            t->median[t->ncand++] = m;
            p += len;
        }
        n++;
    }
    return n;
}

/* What tutti-info --config @p file --explain selects for @p coll at
 * @p bytes on 2 members over 2 tasks, into @p impl. */
static void explain(const char *file, const char *coll,
                    unsigned long long bytes, char *impl, size_t len)
{
    char cmd[512], out[16384];
    snprintf(cmd, sizeof(cmd), INFO " --config %s --explain %s --size %llu "
             "--group-size 2 --num-tasks 2", file, coll, bytes);
    int rc = test_run(cmd, 1, out, sizeof(out));
    const char *arrow = strstr(out, "\n=> ");
    if (rc != 0 || arrow == NULL) {
        test_show(cmd, out);
        fail_msg("tutti-info --explain %s --size %llu exited %d (above)",
                 coll, bytes, rc);
    }
    snprintf(impl, len, "%.*s", (int)strcspn(arrow + 4, "\n"), arrow + 4);
}

/* Runs tutti-tune with @p args, its stdout into @p out and its stderr
 * into the file <dir>/stderr (named in @p err); fails the test, showing
 * both, unless it exits 0. */
static void run_tune(const char *dir, const char *args, char *out,
                     size_t len, char *err, size_t errlen)
{
    char cmd[1024];
    snprintf(err, errlen, "%s/stderr", dir);
    snprintf(cmd, sizeof(cmd), TUNE " %s 2>%s", args, err);
    int rc = test_run(cmd, 0, out, len);
    if (rc != 0) {
        FILE *f = fopen(err, "r");
        char line[1024];
        test_show(cmd, out);
        printf("its stderr:\n");
        while (f != NULL && fgets(line, sizeof(line), f) != NULL)
            printf("  %s", line);
        if (f != NULL)
            fclose(f);
        fail_msg("tutti-tune %s exited %d (output above)", args, rc);
    }
}

/* The file's comment for a size: "8 B", "4 KiB". */
static void human(unsigned long long v, char *buf, size_t len)
{
    if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, len, "%llu KiB", v / 1024);
    else
        snprintf(buf, len, "%llu B", v);
}

static void test_sweep_file_selects_winners(void **state)
{
    test_tmp_t *t = *state;
    char file[256], args[512], out[32768], impl[64], text[256], tmp[300];
    char err[256];
    tune_line_t l[MAX_LINES];
    /* The rules' sizes: allreduce each rank's buffer, allgather one rank's
     * part (tutti-perf's size over 2). */
    static const unsigned long long want[2][5] = {
        {8, 64, 512, 4096, 32768}, {4, 32, 256, 2048, 16384}};

    test_tmpfile(file, sizeof(file), t->dir, "tuned.yaml", NULL);
    snprintf(args, sizeof(args), SWEEP " -o %s", file);
    run_tune(t->dir, args, out, sizeof(out), err, sizeof(err));
    int n = parse_summary(out, l);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) {
        const char *coll = i < 5 ? "allreduce" : "allgather";
        int best = 0, won = -1;
        assert_string_equal(l[i].coll, coll);
        assert_int_equal(l[i].bytes, want[i / 5][i % 5]);
        /* Every cpu implementation of each was timed (allreduce: ring,
         * recursive doubling and the two hierarchical ones; allgather:
         * ring, Bruck, hierarchical); the winner is the one with the
         * lowest median. */
        assert_int_equal(l[i].ncand, i < 5 ? 4 : 3);
        for (int k = 0; k < l[i].ncand; k++) {
            if (l[i].median[k] < l[i].median[best])
                best = k;
            if (strcmp(l[i].cand[k], l[i].winner) == 0)
                won = k;
        }
        if (won < 0 || l[i].median[won] != l[i].median[best])
            fail_msg("%s %llu: winner %s is not the fastest candidate",
                     coll, l[i].bytes, l[i].winner);
        /* Loaded back, the file picks it at the measured size ... */
        explain(file, coll, l[i].bytes, impl, sizeof(impl));
        if (strcmp(impl, l[i].winner) != 0)
            fail_msg("%s of %llu bytes: the file selects %s, measured "
                     "fastest %s", coll, l[i].bytes, impl, l[i].winner);
        /* ... and one byte above it, where the next size's range begins
         * (the last range is open: a far larger size keeps its winner). */
        int last = i % 5 == 4;
        unsigned long long above = last ? l[i].bytes * 1024 : l[i].bytes + 1;
        explain(file, coll, above, impl, sizeof(impl));
        const char *next = last ? l[i].winner : l[i + 1].winner;
        if (strcmp(impl, next) != 0)
            fail_msg("%s of %llu bytes: the file selects %s, expected %s "
                     "(the winner at the next measured size)", coll, above,
                     impl, next);
        /* The rule's comment gives the size with the winner first. */
        human(l[i].bytes, text, sizeof(text));
        snprintf(text + strlen(text), sizeof(text) - strlen(text), ": %s ",
                 l[i].winner);
        if (!test_file_has(file, text))
            fail_msg("no comment '  # %s...' in %s", text, file);
    }
    test_expect_in_file(file, "# Tutti selection rules measured by "
                        "tutti-tune.\n# When: ");
    test_expect_in_file(file, "# Shape: 2 members over 2 tasks (tutti-run "
                        "-n 2), float32.\n");
    test_expect_in_file(file, "# Sweep: tutti-perf -b 8 -e 64K -f 8 -n 3 "
                        "for every candidate, 1 round\n");
    test_expect_in_file(file, "\nselection:\n  # allreduce, candidates: ");
    test_expect_in_file(file, "  - { collective: allreduce, group_size: 2, "
                        "num_tasks: 2, size: \"0-");
    snprintf(tmp, sizeof(tmp), "%s.tmp", file);
    assert_int_not_equal(access(tmp, F_OK), 0);
}

/* A module whose allreduce writes zeros: tutti-perf fails it, tutti-tune
 * says so and leaves it out, and the file names it as left out. */
static void test_failing_implementation_left_out(void **state)
{
    test_tmp_t *t = *state;
    char file[256], args[512], out[32768], err[256];
    tune_line_t l[MAX_LINES];

    test_tmpfile(file, sizeof(file), t->dir, "tuned.yaml", NULL);
    snprintf(args, sizeof(args), "-n 2 -c allreduce -b 8 -e 64 -f 8 -r 1 "
             "--iters 2 -o %s", file);
    setenv("TUTTI_MODULE_PATH", TUTTI_TEST_BUILDDIR "/tests/modules/wrong",
           1);
    run_tune(t->dir, args, out, sizeof(out), err, sizeof(err));
    unsetenv("TUTTI_MODULE_PATH");
    test_expect_in_file(err, "tutti-tune: allreduce: TestZeroAllreduce "
                        "failed (tutti-run exited 1; its errors are above): "
                        "left out\n");
    assert_int_equal(parse_summary(out, l), 2);
    /* The shipped two and whatever else of tests/modules/wrong runs (its
     * TestTailAllreduce is right at these sizes), never the failed one. */
    for (int i = 0; i < 2; i++) {
        assert_true(l[i].ncand >= 2);
        for (int k = 0; k < l[i].ncand; k++)
            assert_string_not_equal(l[i].cand[k], "TestZeroAllreduce");
    }
    test_expect_in_file(file, "left out (run failed): TestZeroAllreduce\n");
}

/* Each bad option: exit 2, a message naming it, no file. */
static void test_bad_options_refused(void **state)
{
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"-n 0", "tutti-tune: -n '0': invalid value: expected processes "
                 "from 1 to 1024"},
        {"-n 2 -c allreduce,barrier", "tutti-tune: -c 'barrier': invalid "
                                      "value: expected allreduce, "},
        {"-n 2 -c allreduce,allreduce", "-c 'allreduce': invalid value: "
                                        "expected each collective once"},
        {"-n 2 -f 1", "tutti-tune: -f '1': invalid value: expected a factor "
                      "above 1"},
        {"-n 2 -b 8Q", "tutti-tune: -b '8Q': invalid value"},
        {"-n 2 -b 1M -e 8", "tutti-tune: -b 1048576 exceeds -e 8"},
        {"-n 2 -r 0", "tutti-tune: -r '0': invalid value: expected rounds"},
        {"-n 2 --iters x", "tutti-tune: --iters 'x': invalid value"},
        {"-n 2 -b 1 -e 1G -f 1.01", "more than 128 sizes"},
        {"-c allreduce", "tutti-tune: -n N is required"},
        {"-n 2 --tutti-run /nonexistent/tutti-run",
         "tutti-tune: --tutti-run '/nonexistent/tutti-run': "},
        {"-n 2 --bogus", "unrecognized option '--bogus'"},
    };
    test_tmp_t *t = *state;
    char file[256], cmd[768], out[8192];

    test_tmpfile(file, sizeof(file), t->dir, "tuned.yaml", NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(cmd, sizeof(cmd), TUNE " %s -o %s", bad[i].args, file);
        int rc = test_run(cmd, 1, out, sizeof(out));
        if (rc != 2 || strstr(out, bad[i].message) == NULL) {
            test_show(cmd, out);
            fail_msg("'%s' exited %d, want 2 and '%s'", bad[i].args, rc,
                     bad[i].message);
        }
        assert_int_not_equal(access(file, F_OK), 0);
    }
}

/* -o in a directory that does not exist: refused before the sweep; and a
 * file whose .tmp cannot be made (a directory has that name): refused
 * after it.  Neither leaves a file. */
static void test_unwritable_output(void **state)
{
    test_tmp_t *t = *state;
    char file[256], tmp[300], cmd[768], out[16384];
    struct stat sb;

    test_tmpfile(file, sizeof(file), t->dir, "missing/tuned.yaml", NULL);
    snprintf(cmd, sizeof(cmd), TUNE " " SWEEP " -o %s", file);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 1 || strstr(out, "-o ") == NULL ||
        strstr(out, "/missing/tuned.yaml: cannot write in ") == NULL) {
        test_show(cmd, out);
        fail_msg("tutti-tune -o %s exited %d, want 1 naming it", file, rc);
    }
    assert_null(strstr(out, "round 1"));   /* nothing was run */

    test_tmpfile(file, sizeof(file), t->dir, "tuned.yaml", NULL);
    snprintf(tmp, sizeof(tmp), "%s.tmp", file);
    assert_int_equal(mkdir(tmp, 0700), 0);
    snprintf(cmd, sizeof(cmd), TUNE " -n 2 -c allreduce -b 8 -e 64 -r 1 "
             "--iters 2 -o %s", file);
    rc = test_run(cmd, 1, out, sizeof(out));
    int named = strstr(out, "cannot write ") != NULL &&
                strstr(out, "tuned.yaml.tmp: Is a directory") != NULL &&
                strstr(out, "tutti-tune: no file written") != NULL;
    int kept = stat(tmp, &sb) == 0 && S_ISDIR(sb.st_mode);
    rmdir(tmp);
    if (rc != 1 || !named) {
        test_show(cmd, out);
        fail_msg("tutti-tune exited %d, want 1 naming %s", rc, tmp);
    }
    assert_true(kept);     /* what was there is left alone */
    assert_int_not_equal(access(file, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sweep_file_selects_winners,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test_setup_teardown(test_failing_implementation_left_out,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test_setup_teardown(test_bad_options_refused,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_output,
                                        test_tmp_setup, test_tmp_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
