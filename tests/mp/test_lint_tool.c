/*
 * tutti-info --lint FILE, as a user runs it: files with one planted fault
 * each (an implementation's name misspelt, a gap between size ranges, two
 * ranges that overlap, a rule an earlier one shadows) must each give that
 * one finding, at the planted rule's file:line, and exit 1; a file with all
 * four gives the four; the shipped conf/tutti.yaml lints clean (exit 0);
 * a file that does not parse or breaks the schema exits 2 naming
 * file:line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tutti-build.h"
#include "test_util.h"

#define INFO TUTTI_TEST_BUILDDIR "/tools/tutti-info"

/* One planted fault: the line of the rule at fault and words the
 * finding's line must hold. */
typedef struct {
    int line;
    const char *word;
} planted_t;

/* A planted file and its findings. */
typedef struct {
    const char *name; /* the file's name, and the test's */
    const char *yaml;
    size_t num; /* findings expected: exactly these */
    planted_t want[4];
} lint_case_t;

static const lint_case_t cases[] = {
    /* The small allreduces' rule names an implementation no module
     * provides; the next rule still takes every call, so no gap. */
    {"typo.yaml",
     "selection:\n"
     "  - { collective: allreduce, size: \"0-4K\",\n"
     "      algorithm: RecursiveDoublingAllreduc }\n"
     "  - { collective: allreduce, algorithm: RingAllreduce }\n",
     1, {{2, "not provided by any loaded module"}}},
    /* Nothing takes the alltoalls of 513 to 1023 bytes per block: reported
     * at the rule whose range ends right below them. */
    {"gap.yaml",
     "# alltoall by block size\n"
     "selection:\n"
     "  - { collective: alltoall, size: \"0-512\", algorithm: BruckAlltoall }\n"
     "  - { collective: alltoall, size: \"1K-\",\n"
     "      algorithm: PairwiseAlltoall }\n",
     1, {{3, "no rule matches alltoall calls with size 513-1023"}}},
    /* 512 B to 1K per part is claimed by both rules. */
    {"overlap.yaml",
     "selection:\n"
     "  - { collective: allgather, size: \"0-1K\", "
     "algorithm: BruckAllgather }\n"
     "  - { collective: allgather, size: \"512-\", "
     "algorithm: RingAllgather }\n",
     1, {{3, "overlaps size 0-1K of the earlier rule"}}},
    /* The catch-all comes first: the sized rule after it never matches. */
    {"shadowed.yaml",
     "selection:\n"
     "  - collective: broadcast\n"
     "    algorithm: HierarchicalTreeBroadcast\n"
     "  - { collective: broadcast, size: \"0-1M\",\n"
     "      algorithm: HierarchicalTreeBroadcast, params: { fanout: 4 } }\n",
     1, {{4, "never matches"}}},
    /* All four in one file, each in a collective of its own. */
    {"planted.yaml",
     "# one of each\n"
     "selection:\n"
     "  - { collective: allreduce, size: \"0-4K\",\n"
     "      algorithm: RecursiveDoublingAllreduc }\n"
     "  - { collective: allreduce, algorithm: RingAllreduce }\n"
     "  - { collective: alltoall, size: \"0-512\", algorithm: BruckAlltoall }\n"
     "  - { collective: alltoall, size: \"1K-\", "
     "algorithm: PairwiseAlltoall }\n"
     "  - { collective: allgather, size: \"0-1K\", "
     "algorithm: BruckAllgather }\n"
     "  - { collective: allgather, size: \"512-\", "
     "algorithm: RingAllgather }\n"
     "  - { collective: broadcast, algorithm: HierarchicalTreeBroadcast }\n"
     "  - { collective: broadcast, size: \"0-1M\",\n"
     "      algorithm: HierarchicalTreeBroadcast }\n",
     4, {{3, "not provided by any loaded module"},
         {6, "no rule matches alltoall calls"},
         {9, "overlaps size 0-1K of the earlier rule"},
         {11, "never matches"}}},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* The line of @p out that starts with @p prefix, copied into @p line; 0 if
 * none does. */
static int line_starting(const char *out, const char *prefix, char *line,
                         size_t len)
{
    size_t n = strlen(prefix);
    for (const char *p = out; *p != '\0';) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l >= n && strncmp(p, prefix, n) == 0) {
            snprintf(line, len, "%.*s", (int)l, p);
            return 1;
        }
        p += l + (e != NULL);
    }
    return 0;
}

/* Lines of @p out that start with "<path>:" and a digit: the findings and
 * notes of the file at @p path. */
static size_t located_lines(const char *out, const char *path)
{
    size_t n = strlen(path), count = 0;
    for (const char *p = out; *p != '\0';) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        count += l > n + 1 && strncmp(p, path, n) == 0 && p[n] == ':' &&
                 p[n + 1] >= '0' && p[n + 1] <= '9';
        p += l + (e != NULL);
    }
    return count;
}

/* A case and a directory of its own, removed after the test whether it
 * passed or failed. */
typedef struct {
    const lint_case_t *c;
    test_tmp_t t;
} case_fixture_t;

static int case_setup(void **state)
{
    case_fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL || test_tmpdir(f->t.dir, sizeof(f->t.dir), "lint") != 0) {
        free(f);
        return -1;
    }
    f->c = *state;
    *state = f;
    return 0;
}

static int case_teardown(void **state)
{
    case_fixture_t *f = *state;
    test_rmtree(f->t.dir);
    free(f);
    return 0;
}

static void run_case(void **state)
{
    case_fixture_t *f = *state;
    const lint_case_t *c = f->c;
    test_tmp_t *t = &f->t;
    char cmd[512], out[16384], prefix[192], line[2048], summary[256];

    test_tmpfile(t->path, sizeof(t->path), t->dir, c->name, c->yaml);
    snprintf(cmd, sizeof(cmd), INFO " --lint %s", t->path);
    /* stdout alone: the findings are there; the load's warnings on
     * stderr name some of the same lines. */
    int rc = test_run(cmd, 0, out, sizeof(out));
    if (rc != 1) {
        test_show(cmd, out);
        fail_msg("%s: exited %d; expected 1 (findings)", c->name, rc);
    }
    for (size_t i = 0; i < c->num; i++) {
        snprintf(prefix, sizeof(prefix), "%s:%d:", t->path, c->want[i].line);
        if (!line_starting(out, prefix, line, sizeof(line)) ||
            strstr(line, c->want[i].word) == NULL) {
            test_show(cmd, out);
            fail_msg("%s: no line '%s... %s ...'", c->name, prefix,
                     c->want[i].word);
        }
    }
    snprintf(summary, sizeof(summary), "%s: %zu finding%s", t->path,
             c->num, c->num == 1 ? "" : "s");
    if (located_lines(out, t->path) != c->num ||
        !test_has_lines(out, summary)) {
        test_show(cmd, out);
        fail_msg("%s: expected exactly %zu findings and the line '%s'",
                 c->name, c->num, summary);
    }
}

/* The shipped file has no findings.  Its CUDA rules name NCCL's
 * implementations: in a build without the nccl module they are notes,
 * which do not count. */
static void test_shipped_file_is_clean(void **state)
{
    const char *path = TUTTI_TEST_SRCDIR "/conf/tutti.yaml";
    char cmd[512], out[16384], summary[512];
    (void)state;

    snprintf(cmd, sizeof(cmd), INFO " --lint %s", path);
    int rc = test_run(cmd, 0, out, sizeof(out));
    snprintf(summary, sizeof(summary), "%s: no findings", path);
    if (rc != 0 || !test_has_lines(out, summary) ||
        located_lines(out, path) != (size_t)test_count_of(out, ": note: ")) {
        test_show(cmd, out);
        fail_msg("%s exited %d; expected 0, no findings", path, rc);
    }
}

/* A file that cannot be linted: the library's error names file:line (the
 * column is libyaml's for a syntax error), and the exit status is 2, not
 * the findings' 1. */
static void test_unusable_files(void **state)
{
    static const struct {
        const char *name, *yaml;
        int line;
        const char *what;
    } r[] = {
        /* The flow mapping of line 2 is never closed. */
        {"syntax.yaml",
         "selection:\n"
         "  - { collective: allreduce, algorithm: RingAllreduce\n"
         "log_level: warn\n",
         3, "did not find expected ',' or '}'"},
        {"schema.yaml",
         "selection:\n"
         "  - { collective: allreduce, algorithm: RingAllreduce }\n"
         "  - { collective: broadcast, sise: \"0-4K\",\n"
         "      algorithm: HierarchicalTreeBroadcast }\n",
         3, "unknown key 'sise' in selection rule"},
    };
    test_tmp_t *t = *state;
    char cmd[512], out[8192], at[256];

    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
        test_tmpfile(t->path, sizeof(t->path), t->dir, r[i].name, r[i].yaml);
        snprintf(cmd, sizeof(cmd), INFO " --lint %s", t->path);
        snprintf(at, sizeof(at), "tutti-info: configuration error: %s:%d:",
                 t->path, r[i].line);
        int rc = test_run(cmd, 1, out, sizeof(out));
        const char *found = strstr(out, at);
        const char *eol = found ? strchr(found, '\n') : NULL;
        const char *what = found ? strstr(found, r[i].what) : NULL;
        if (rc != 2 || what == NULL || (eol != NULL && what > eol)) {
            test_show(cmd, out);
            fail_msg("%s exited %d; expected 2 and '%s...%s'", r[i].name, rc,
                     at, r[i].what);
        }
    }
}

/* --lint takes its FILE as the configuration: with --config, --explain or
 * --settings it is refused as a bad option. */
static void test_refusals(void **state)
{
    static const char *const args[] = {
        "--lint x.yaml --config y.yaml", "--lint x.yaml --explain allreduce",
        "--settings --lint x.yaml"};
    char cmd[512], out[4096];
    (void)state;

    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
        snprintf(cmd, sizeof(cmd), INFO " %s", args[i]);
        int rc = test_run(cmd, 1, out, sizeof(out));
        if (rc != 2 ||
            strstr(out, "tutti-info: --lint goes apart from --explain, "
                        "--settings and --config") == NULL) {
            test_show(cmd, out);
            fail_msg("'%s' exited %d; expected 2", args[i], rc);
        }
    }
}

/* --help names --lint and its exit statuses. */
static void test_help(void **state)
{
    char out[8192];
    (void)state;
    test_run_ok(INFO " --help", 1, out, sizeof(out));
    assert_non_null(strstr(out, "tutti-info --lint FILE [--modules DIRS]"));
    assert_non_null(strstr(out, "With --lint: 0 no findings; 1 findings; 2 "
                                "FILE cannot be linted"));
}

int main(void)
{
    struct CMUnitTest tests[NCASES + 4];
    size_t k = 0;
    for (; k < NCASES; k++)
        tests[k] = (struct CMUnitTest){cases[k].name, run_case, case_setup,
                                       case_teardown, (void *)&cases[k]};
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(test_shipped_file_is_clean);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
        test_unusable_files, test_tmp_setup, test_tmp_teardown);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(test_refusals);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(test_help);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
