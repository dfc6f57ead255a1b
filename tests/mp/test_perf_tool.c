/*
 * tutti-perf over every collective, through the real launcher: each sweep
 * has the rows it should, every row #wrong 0, sizes that follow nccl-tests'
 * convention for the collective and busbw = algbw x its bus factor.  A
 * collective no loaded implementation runs fails its test, naming it, with
 * tutti-perf's own error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

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
} perf_case_t;


static double factor_of(const perf_case_t *c)
{
    int n = c->nprocs;
    return c->ring == 0 ? 1.0 : (double)c->ring * (n - 1) / n;
}

/* Checks one table row against the case; @p want_bytes is the size the
 * sweep asked for at this row. */
static void check_row(const perf_case_t *c, const char *l, size_t want_bytes)
{
    test_perf_row_t r;
    size_t blocks = c->blocks ? (size_t)c->nprocs : 1;
    size_t want_count = want_bytes / c->esize / blocks;

    if (!test_perf_row(l, &r) || r.coll[0] == '\0')
        fail_msg("%s on %d: not a table row: '%s'", c->coll, c->nprocs, l);
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
    /* Both columns print 3 decimals: within half a unit of each. */
    double f = factor_of(c), d = r.busbw - r.algbw * f;
    if (d > 0.0005 * (1.0 + f) + 1e-9 || -d > 0.0005 * (1.0 + f) + 1e-9)
        fail_msg("%s on %d: busbw %.3f is not algbw %.3f x %.4f: '%s'",
                 c->coll, c->nprocs, r.busbw, r.algbw, f, l);
}

static void run_case(void **state)
{
    const perf_case_t *c = *state;
    char cmd[512], out[16384], first[64] = "";
    size_t want = MIN_BYTES;
    int rows = 0;

    snprintf(cmd, sizeof(cmd), "%s --timeout 120 -n %d %s -c %s -b %d -e %d "
             "-f %d -n 2 -w 1 %s", RUN, c->nprocs, PERF, c->coll, MIN_BYTES,
             MAX_BYTES, STEP, c->extra);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 0) {
        /* cmocka cuts long failure messages: the output goes first, in
         * full, and the failure says what it means. */
        test_show(cmd, out);
        fail_msg("%s on %d: tutti-perf exited %d (no implementation of %s "
                 "ran? its error is above)", c->coll, c->nprocs, rc, c->coll);
    }
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
    assert_int_equal(test_run(PERF " -c barrier", 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "-c 'barrier': invalid value"));
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

int main(void)
{
    struct CMUnitTest tests[NCOLLS * VARIANTS + 4];
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
    return cmocka_run_group_tests(tests, NULL, NULL);
}
