/*
 * tutti-perf over every collective, through the real launcher: each sweep
 * has the rows it should, every row #wrong 0, sizes that follow nccl-tests'
 * convention for the collective and busbw = algbw x its bus factor.  A
 * collective no loaded implementation runs fails its test, naming it, with
 * tutti-perf's own error.  --csv and --json carry the same rows (the JSON
 * read by a strict reader of our own), and the progress line shows on a
 * terminal only.
 */
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

#include "test_json.h"
#include "test_perf.h"
#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"

/* -b 8 -e 64K -f 8: 8, 64, 512, 4K, 32K bytes. */
#define MIN_BYTES 8
#define MAX_BYTES 65536
#define STEP 8
#define ROWS 5

/* One sweep: the collective on @c nprocs processes, with @c extra options;
 * what its rows must say. */
typedef struct {
    const char *coll;
    int nprocs;
    const char *extra;   /* more tutti-perf options, or "" */
    const char *dtype;   /* the type column */
    size_t esize;
    const char *redop;   /* the redop column */
    int root;            /* the root column */
    int blocks;          /* size = n x count x esize */
    int ring;            /* bus factor: 1, or ring x (n-1)/n */
    int inplace;         /* -i among the options */
} perf_case_t;


static double factor_of(const perf_case_t *c)
{
    int n = c->nprocs;
    return c->ring == 0 ? 1.0 : (double)c->ring * (n - 1) / n;
}

/* Checks one row, read from line @p l, against the case; @p want_bytes is
 * the size the sweep asked for at this row; @p exact: the bandwidths have
 * 6 significant digits (--csv, --json), else the table's 3 decimals. */
static void check_values(const perf_case_t *c, const test_perf_row_t *rp,
                         const char *l, size_t want_bytes, int exact)
{
    test_perf_row_t r = *rp;
    size_t blocks = c->blocks ? (size_t)c->nprocs : 1;
    size_t want_count = want_bytes / c->esize / blocks;

    if (r.wrong != 0)
        fail_msg("%s on %d: %lld wrong elements at %lld bytes: '%s'",
                 c->coll, c->nprocs, r.wrong, r.size, l);
    assert_string_equal(r.coll, c->coll);
    assert_string_equal(r.type, c->dtype);
    assert_string_equal(r.op, c->redop);
    assert_int_equal(r.root, c->root);
    assert_string_not_equal(r.impl, "-");
    /* nccl-tests' size convention, rounded down per rank. */
    assert_int_equal(r.count, (long long)want_count);
    assert_int_equal(r.size, (long long)(want_count * c->esize * blocks));
    /* Both columns print 3 decimals: within half a unit of each; or 6
     * digits: within 5 parts in a million of each. */
    double f = factor_of(c), d = r.busbw - r.algbw * f;
    double tol = exact ? 1e-5 * r.busbw + 1e-12 : 0.0005 * (1.0 + f) + 1e-9;
    if (d > tol || -d > tol)
        fail_msg("%s on %d: busbw %.3f is not algbw %.3f x %.4f: '%s'",
                 c->coll, c->nprocs, r.busbw, r.algbw, f, l);
}

/* Checks one table row, as check_values(). */
static void check_row(const perf_case_t *c, const char *l, size_t want_bytes)
{
    test_perf_row_t r;

    if (!test_perf_row(l, &r) || r.coll[0] == '\0')
        fail_msg("%s on %d: not a table row: '%s'", c->coll, c->nprocs, l);
    check_values(c, &r, l, want_bytes, 0);
}

/* Runs the case's sweep with @p format ("", "--csv" or "--json"); its
 * stdout alone (stderr is shown on failure) into @p out. */
static void run_sweep(const perf_case_t *c, const char *format, char *out,
                      size_t len)
{
    char cmd[640];
    snprintf(cmd, sizeof(cmd), "%s --timeout 120 -n %d %s -c %s -b %d -e %d "
             "-f %d -n 2 -w 1 %s %s", RUN, c->nprocs, PERF, c->coll,
             MIN_BYTES, MAX_BYTES, STEP, c->extra, format);
    int rc = test_run(cmd, format[0] == '\0', out, len);
    if (rc != 0) {
        /* cmocka cuts long failure messages: the output goes first, in
         * full, and the failure says what it means. */
        test_show(cmd, out);
        fail_msg("%s on %d: tutti-perf exited %d (no implementation of %s "
                 "ran? its error is above)", c->coll, c->nprocs, rc, c->coll);
    }
}

static void run_case(void **state)
{
    const perf_case_t *c = *state;
    char out[16384], first[64] = "";
    size_t want = MIN_BYTES;
    int rows = 0;

    run_sweep(c, "", out, sizeof(out));
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        if (l[0] == '#') {
            if (first[0] == '\0')
                snprintf(first, sizeof(first), "%s", l);
            continue;
        }
        if (rows == ROWS)
            fail_msg("%s on %d: more than %d rows; '%s'", c->coll, c->nprocs,
                     ROWS, l);
        check_row(c, l, want);
        want *= STEP;
        rows++;
    }
    assert_int_equal(rows, ROWS);
}

/* A collective no rule selects: tutti-perf says why (the selection's own
 * detail) and exits non-zero. */
static void test_unselectable_collective_fails(void **state)
{
    char cmd[512], out[8192];
    test_tmp_t t;
    (void)state;
    test_tmp_make(&t, "perftool", "bcast-only.yaml",
                  "selection:\n"
                  "  - { collective: broadcast, "
                  "algorithm: HierarchicalTreeBroadcast }\n");
    snprintf(cmd, sizeof(cmd), "TUTTI_CONFIG=%s %s --timeout 60 -n 2 %s -c "
             "allreduce -b 8 -e 8 -n 1 -w 1", t.path, RUN, PERF);
    int rc = test_run(cmd, 1, out, sizeof(out));
    test_rmtree(t.dir);
    assert_int_not_equal(rc, 0);
    if (strstr(out, "tutti-perf: rank 0: allreduce of 8 bytes: ") == NULL ||
        strstr(out, "no selection rule matches allreduce") == NULL) {
        test_show(cmd, out);
        fail_msg("tutti-perf gave no clear error (output above)");
    }
}

/* -a naming an implementation no module provides: the same. */
static void test_unknown_implementation_fails(void **state)
{
    static const char cmd[] = RUN " --timeout 60 -n 2 " PERF " -a NoSuchImpl "
                              "-b 8 -e 8 -n 1 -w 1";
    char out[8192];
    (void)state;
    int rc = test_run(cmd, 1, out, sizeof(out));
    assert_int_not_equal(rc, 0);
    if (strstr(out, "implementation 'NoSuchImpl' is not provided") == NULL) {
        test_show(cmd, out);
        fail_msg("tutti-perf gave no clear error (output above)");
    }
}

/* What --help says of every collective: its size convention and bus
 * factor. */
static const char *const help_lines[] = {
    "allreduce           count x type: each rank's buffer     2(n-1)/n",
    "broadcast           count x type: the buffer             1",
    "reduce              count x type: each rank's input      1",
    "allgather       n x count x type: the output             (n-1)/n",
    "gather          n x count x type: the root's output      (n-1)/n",
    "reduce_scatter  n x count x type: the input              (n-1)/n",
    "alltoall        n x count x type: each send buffer       (n-1)/n",
    "permute             count x type: sent to rank+1 mod n   1"};

/* --help names every collective with its size convention and bus factor;
 * a name it does not know is refused with exit status 2. */
static void test_help_and_bad_collective(void **state)
{
    char out[8192];
    (void)state;
    assert_int_equal(test_run(PERF " --help", 1, out, sizeof(out)), 0);
    for (size_t i = 0; i < sizeof(help_lines) / sizeof(help_lines[0]); i++)
        if (strstr(out, help_lines[i]) == NULL)
            fail_msg("--help lacks '%s'", help_lines[i]);
    assert_non_null(strstr(out, "      --csv              rows as CSV"));
    assert_non_null(strstr(out, "      --json             one JSON object"));
    assert_int_equal(test_run(PERF " -c barrier", 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "-c 'barrier': invalid value"));
    assert_int_equal(test_run(PERF " --csv --json", 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--csv and --json: choose one"));
}

/* A wrong result planted by a module that writes zeros for every
 * allreduce of the job, the ones tutti-perf itself makes included: #wrong
 * still counts every element of every rank (it is totalled over the
 * control plane), and the run fails.  Before, the total went through the
 * same broken allreduce and read 0. */
static void test_planted_wrong_result_counted(void **state)
{
    char cmd[768], out[16384];
    int rows = 0;
    (void)state;
    snprintf(cmd, sizeof(cmd), "TUTTI_MODULE_PATH=%s/tests/modules/wrong "
             "TUTTI_ALGO=allreduce:TestZeroAllreduce %s --timeout 60 -n 3 %s "
             "-c allreduce -b 64 -e 4096 -f 8 -n 2 -w 1", TUTTI_TEST_BUILDDIR,
             RUN, PERF);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 1) {
        test_show(cmd, out);
        fail_msg("tutti-perf with a broken allreduce exited %d, want 1", rc);
    }
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        test_perf_row_t r;
        if (l[0] == '#' || !test_perf_row(l, &r))
            continue;
        assert_string_equal(r.impl, "TestZeroAllreduce");
        /* Every element of all 3 ranks is wrong (the pattern has no 0). */
        assert_int_equal(r.wrong, 3 * r.count);
        rows++;
    }
    assert_int_equal(rows, 3); /* 64, 512, 4096 bytes */
}

/* --csv's header line: the table's columns, then the run's settings. */
#define CSV_HEADER                                                          \
    "size,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,#wrong,impl," \
    "coll,ranks,inplace,iters,warmup,device"
#define CSV_FIELDS 16

/* --csv: the header line, then one line per size, each the row the table
 * would print (with 6 significant digits) and the run's settings. */
static void csv_case(void **state)
{
    const perf_case_t *c = *state;
    char out[16384], *save = NULL;
    size_t want = MIN_BYTES;
    int rows = 0;

    run_sweep(c, "--csv", out, sizeof(out));
    char *l = strtok_r(out, "\n", &save);
    if (l == NULL || strcmp(l, CSV_HEADER) != 0)
        fail_msg("%s on %d: first line '%s', want '%s'", c->coll, c->nprocs,
                 l ? l : "(none)", CSV_HEADER);
    while ((l = strtok_r(NULL, "\n", &save)) != NULL) {
        char line[512], *f[CSV_FIELDS + 1], *rest = line, *end;
        int n = 0;
        test_perf_row_t r;

        snprintf(line, sizeof(line), "%s", l);
        while (n <= CSV_FIELDS && (f[n] = strsep(&rest, ",")) != NULL)
            n++;
        if (n != CSV_FIELDS || strchr(l, '"') != NULL)
            fail_msg("%s on %d: not %d plain fields: '%s'", c->coll,
                     c->nprocs, CSV_FIELDS, l);
        r.size = strtoll(f[0], &end, 10);
        r.count = strtoll(f[1], &end, 10);
        snprintf(r.type, sizeof(r.type), "%s", f[2]);
        snprintf(r.op, sizeof(r.op), "%s", f[3]);
        r.root = atoi(f[4]);
        r.time = strtod(f[5], &end);
        r.algbw = strtod(f[6], &end);
        r.busbw = strtod(f[7], &end);
        r.wrong = strtoll(f[8], &end, 10);
        if (*end != '\0')
            fail_msg("%s on %d: #wrong '%s' is not a number", c->coll,
                     c->nprocs, f[8]);
        snprintf(r.impl, sizeof(r.impl), "%s", f[9]);
        snprintf(r.coll, sizeof(r.coll), "%s", f[10]);
        if (rows == ROWS)
            fail_msg("%s on %d: more than %d rows; '%s'", c->coll, c->nprocs,
                     ROWS, l);
        check_values(c, &r, l, want, 1);
        assert_int_equal(atoi(f[11]), c->nprocs);
        assert_string_equal(f[12], c->inplace ? "1" : "0");
        assert_string_equal(f[13], "2");
        assert_string_equal(f[14], "1");
        assert_string_equal(f[15], "cpu");
        want *= STEP;
        rows++;
    }
    assert_int_equal(rows, ROWS);
}

/* Member @p key of @p v, which must have type @p type. */
static const test_json_t *json_member(const test_json_t *v, const char *key,
                                      test_json_type_t type)
{
    const test_json_t *m = test_json_get(v, key);
    if (m == NULL || m->type != type)
        fail_msg("JSON member '%s': %s", key,
                 m == NULL ? "missing" : "of another type");
    return m;
}

/* --json: one document (read by a strict reader), the run's description,
 * then the rows the table would print, each keyed by the column names. */
static void json_case(void **state)
{
    const perf_case_t *c = *state;
    char out[16384], err[128];
    size_t want = MIN_BYTES;

    run_sweep(c, "--json", out, sizeof(out));
    test_json_t *v = test_json_parse(out, err, sizeof(err));
    if (v == NULL) {
        test_show("tutti-perf --json", out);
        fail_msg("%s on %d: not JSON: %s", c->coll, c->nprocs, err);
    }
    assert_string_equal(json_member(v, "collective", TEST_JSON_STRING)->string,
                        c->coll);
    assert_string_equal(json_member(v, "dtype", TEST_JSON_STRING)->string,
                        c->dtype);
    assert_string_equal(json_member(v, "redop", TEST_JSON_STRING)->string,
                        c->redop);
    assert_true(json_member(v, "root", TEST_JSON_NUMBER)->number == c->root);
    assert_true(json_member(v, "ranks", TEST_JSON_NUMBER)->number ==
                c->nprocs);
    assert_true(json_member(v, "inplace", TEST_JSON_BOOL)->number ==
                c->inplace);
    assert_true(json_member(v, "iters", TEST_JSON_NUMBER)->number == 2);
    assert_true(json_member(v, "warmup", TEST_JSON_NUMBER)->number == 1);
    assert_string_equal(json_member(v, "device", TEST_JSON_STRING)->string,
                        "cpu");
    double f = json_member(v, "bus_factor", TEST_JSON_NUMBER)->number;
    assert_true(f > factor_of(c) * (1 - 1e-5) && f < factor_of(c) * (1 + 1e-5));
    assert_null(test_json_get(v, "error"));
    const test_json_t *rows = json_member(v, "rows", TEST_JSON_ARRAY);
    assert_int_equal(rows->n, ROWS);
    for (size_t i = 0; i < rows->n; i++, want *= STEP) {
        const test_json_t *o = &rows->items[i];
        test_perf_row_t r;
        assert_int_equal(o->type, TEST_JSON_OBJECT);
        assert_int_equal(o->n, 11);
        r.size = (long long)json_member(o, "size", TEST_JSON_NUMBER)->number;
        r.count = (long long)json_member(o, "count", TEST_JSON_NUMBER)->number;
        snprintf(r.type, sizeof(r.type), "%s",
                 json_member(o, "type", TEST_JSON_STRING)->string);
        snprintf(r.op, sizeof(r.op), "%s",
                 json_member(o, "redop", TEST_JSON_STRING)->string);
        r.root = (int)json_member(o, "root", TEST_JSON_NUMBER)->number;
        r.time = json_member(o, "time_us", TEST_JSON_NUMBER)->number;
        r.algbw = json_member(o, "algbw_GBps", TEST_JSON_NUMBER)->number;
        r.busbw = json_member(o, "busbw_GBps", TEST_JSON_NUMBER)->number;
        r.wrong = (long long)json_member(o, "#wrong", TEST_JSON_NUMBER)->number;
        snprintf(r.impl, sizeof(r.impl), "%s",
                 json_member(o, "impl", TEST_JSON_STRING)->string);
        snprintf(r.coll, sizeof(r.coll), "%s",
                 json_member(o, "coll", TEST_JSON_STRING)->string);
        check_values(c, &r, "(a JSON row)", want, 1);
    }
    test_json_free(v);
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A sweep of 36 tiny sizes, @c %d iterations each, as CSV into a file. */
#define LONG_SWEEP RUN " --timeout 300 -n 2 " PERF " -b 8 -e 16 -f 1.02 " \
    "-n %d -w 1 --csv"
#define LONG_SWEEP_ROWS 36

/* The progress line: on stderr when it is a terminal (util-linux's script
 * gives it one) once a sweep has run a second (tools/perf_output.h); the
 * CSV in the file stays clean.  With stderr a pipe, the same sweep writes
 * nothing there.  The sweep is lengthened until it runs 2 seconds. */
static void test_progress_only_on_terminal(void **state)
{
    test_tmp_t *t = *state;
    char cmd[1024], out[65536], sweep[512];
    int iters = 100000, rc;
    double took;

    if (test_run("script --version", 1, out, sizeof(out)) != 0) {
        test_skip("test_perf_tool: skipped: no 'script' (util-linux) "
                      "to give tutti-perf a terminal\n");
    }
    test_tmpfile(t->path, sizeof(t->path), t->dir, "sweep.csv", NULL);
    for (;;) {
        snprintf(sweep, sizeof(sweep), LONG_SWEEP, iters);
        snprintf(cmd, sizeof(cmd), "script -qec '%s > %s' /dev/null "
                 "< /dev/null", sweep, t->path);
        took = wall_s();
        rc = test_run(cmd, 1, out, sizeof(out));
        took = wall_s() - took;
        if (rc != 0) {
            test_show(cmd, out);
            fail_msg("the sweep on a terminal exited %d", rc);
        }
        if (took >= 2.0 || iters >= 6400000)
            break;
        iters *= 4;
    }
    if (strstr(out, " sizes done, now ") == NULL) {
        test_show(cmd, out);
        fail_msg("a sweep of %.1f s showed no progress on a terminal", took);
    }
    assert_non_null(strstr(out, "\r\033[K"));
    /* The file has the CSV alone: the header and every size. */
    assert_true(test_file_has(t->path, CSV_HEADER "\n"));
    assert_false(test_file_has(t->path, "\033"));
    assert_false(test_file_has(t->path, "sizes done"));
    FILE *fp = fopen(t->path, "r");
    int lines = 0;
    assert_non_null(fp);
    while (fgets(out, sizeof(out), fp) != NULL)
        lines++;
    fclose(fp);
    assert_int_equal(lines, 1 + LONG_SWEEP_ROWS);

    /* stderr a pipe (the output below is stderr's alone): nothing. */
    snprintf(cmd, sizeof(cmd), "%s 2>&1 >/dev/null", sweep);
    rc = test_run(cmd, 0, out, sizeof(out));
    if (rc != 0 || out[0] != '\0') {
        test_show(cmd, out);
        fail_msg("with stderr a pipe: exit %d, and it wrote %zu bytes there "
                 "(above)", rc, strlen(out));
    }
}

/* The collectives: name, redop column, rooted, n blocks, ring factor. */
static const struct {
    const char *name;
    int reduction, rooted, blocks, ring;
} colls[] = {
    {"allreduce", 1, 0, 0, 2},      {"broadcast", 0, 1, 0, 0},
    {"reduce", 1, 1, 0, 0},         {"allgather", 0, 0, 1, 1},
    {"gather", 0, 1, 1, 1},         {"reduce_scatter", 1, 0, 1, 1},
    {"alltoall", 0, 0, 1, 1},       {"permute", 0, 0, 0, 0},
};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

/* Per collective: the plain sweep on 2 and on 4 processes (float32, sum,
 * root 0), and in place on 3 with root 2, int32 and max. */
#define VARIANTS 3
static perf_case_t cases[NCOLLS * VARIANTS];
static char names[NCOLLS * VARIANTS][64];

/* The cases --csv and --json run too: allreduce on 4, reduce_scatter in
 * place on 3 (rows of n blocks, a reduction), gather in place on 3
 * (rooted). */
static const char *const format_cases[] = {"allreduce on 4",
                                           "reduce_scatter on 3, in place",
                                           "gather on 3, in place"};
#define NFORMAT (sizeof(format_cases) / sizeof(format_cases[0]))
static char format_names[2 * NFORMAT][80];

int main(void)
{
    struct CMUnitTest tests[NCOLLS * VARIANTS + 2 * NFORMAT + 5];
    size_t k = 0;

    for (size_t i = 0; i < NCOLLS; i++) {
        for (int v = 0; v < VARIANTS; v++, k++) {
            perf_case_t *c = &cases[k];
            int inplace = v == 2;
            c->coll = colls[i].name;
            c->nprocs = inplace ? 3 : 2 + 2 * v;
            c->extra = inplace ? "-i -r 2 -d int32 -o max" : "";
            c->dtype = inplace ? "int32" : "float32";
            c->esize = 4;
            c->redop = !colls[i].reduction ? "none" : inplace ? "max" : "sum";
            c->root = !colls[i].rooted ? -1 : inplace ? 2 : 0;
            c->blocks = colls[i].blocks;
            c->ring = colls[i].ring;
            c->inplace = inplace;
            snprintf(names[k], sizeof(names[k]), "%s on %d%s", c->coll,
                     c->nprocs, inplace ? ", in place" : "");
            tests[k] = (struct CMUnitTest){names[k], run_case, NULL, NULL, c};
        }
    }
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(
        test_unselectable_collective_fails);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(
        test_unknown_implementation_fails);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(
        test_help_and_bad_collective);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(
        test_planted_wrong_result_counted);
    for (size_t i = 0; i < 2 * NFORMAT; i++) {
        const char *name = format_cases[i % NFORMAT];
        size_t j = 0;
        while (j < NCOLLS * VARIANTS && strcmp(names[j], name) != 0)
            j++;
        if (j == NCOLLS * VARIANTS) {
            fprintf(stderr, "test_perf_tool: no case '%s'\n", name);
            return 1;
        }
        snprintf(format_names[i], sizeof(format_names[i]), "%s, %s", name,
                 i < NFORMAT ? "--csv" : "--json");
        tests[k++] = (struct CMUnitTest){format_names[i],
                                         i < NFORMAT ? csv_case : json_case,
                                         NULL, NULL, &cases[j]};
    }
    tests[k++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_progress_only_on_terminal, test_tmp_setup, test_tmp_teardown);
    return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
