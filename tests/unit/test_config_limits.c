/* Unit tests for the limits a config file is held to (core/config): alias
 * expansion, nesting depth, anchors, linear growth and hashed duplicate
 * checks, regular files only, timeouts clamped, every error naming its
 * place and key, and names in modules.load that no module answers to. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* By path: the build directory's autoconf config.h shadows "config.h". */
#include "base/log.h"
#include "config/config.h"
#include "job/job.h"
#include "test_util.h"
#include "config_fixture.h"

/* Growth is checked by counting realloc() calls: the sanitizers own
 * realloc, so there the count is not taken. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_REALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COUNT_REALLOC 0
#endif
#endif
#ifndef COUNT_REALLOC
#define COUNT_REALLOC 1
extern void *__libc_realloc(void *p, size_t n);
static size_t reallocs;
void *realloc(void *p, size_t n)
{
    reallocs++;
    return __libc_realloc(p, n);
}
#endif

/* A text of @p n copies of printf(@p fmt, i) between @p head and
 * @p tail, in a string the caller frees. */
static char *repeat(const char *head, const char *fmt, int n,
                    const char *tail)
{
    size_t cap = strlen(head) + strlen(tail) + (size_t)n * 48 + 1, len;
    char *s = malloc(cap);

    assert_non_null(s);
    len = (size_t)snprintf(s, cap, "%s", head);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, fmt, i);
    snprintf(s + len, cap - len, "%s", tail);
    return s;
}

/* ---- aliases, nesting, anchors ------------------------------------------ */

/* Six levels of ten: a million nodes from 300 bytes.  Refused at the alias
 * that passes the limit, with its place and key. */
static void test_alias_expansion(void **state)
{
    fixture_t *f = *state;
    char *text;

    expect_error(f, "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                    "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
                 "5:36", "alias '*d' (11111 nodes) makes more than 100000 "
                 "nodes visible through aliases in the value of 'e'");
    expect_detail("expected at most 100000 nodes", "through aliases");
    /* The case: one rule of many parameters, aliased many times
     * (3x10^8 parameters from 4 MB before). */
    text = repeat("selection:\n  - &r {algorithm: A, params: {p0: 1, p1: 1, "
                  "p2: 1, p3: 1, p4: 1, p5: 1, p6: 1, p7: 1, p8: 1, p9: "
                  "1}}\n", "  - *r\n", 20000, "");
    expect_error(f, text, "4003:5", "alias '*r' (25 nodes) makes more than "
                 "100000 nodes visible through aliases in the value of "
                 "'selection'");
    free(text);
    /* Within the limit an alias is read as its anchor. */
    load_yaml(f, "ok.yaml", "selection:\n  - &r {algorithm: A, params: "
              "{chunk: 1M}}\n  - *r\n");
    assert_int_equal(f->cfg.num_rules, 2);
    assert_string_equal(param(&f->cfg.rules[1], "chunk")->value, "1M");
}

static void test_alias_loops_and_strays(void **state)
{
    fixture_t *f = *state;

    expect_error(f, "shm: {}\nx: &a [1, *a]\n", "2:11",
                 "alias '*a' is inside its own anchor in the value of 'x'");
    expect_error(f, "timeout: *t\n", "1:10",
                 "alias '*t' names no anchor before it in the value of "
                 "'timeout'");
    expect_error(f, "a: &x 1\nb: &x 2\n", "2:4",
                 "anchor '&x' defined twice in the value of 'b'");
}

static void test_anchors_limit(void **state)
{
    fixture_t *f = *state;
    char *text = repeat("selection:\n", "  - {algorithm: &a%d A}\n", 1001, "");

    expect_error(f, text, "1002:17", "anchor '&a1000' is one more than 1000 "
                 "in the value of 'selection.algorithm'");
    free(text);
}

/* 100k '[' took libyaml's scanner over 20 s; refused at the 64th level,
 * before the loader recursed. */
static void test_nesting_depth(void **state)
{
    fixture_t *f = *state;
    char *text = malloc(200020);

    assert_non_null(text);
    memcpy(text, "timeout: ", 9);
    memset(text + 9, '[', 100000);
    memset(text + 100009, ']', 100000);
    memcpy(text + 200009, "\n", 2);
    expect_error(f, text, "1:73", "a list nested more than 64 deep in the "
                 "value of 'timeout'");
    free(text);
    /* Depth through aliases counts too. */
    {
        char big[8192];
        size_t n = (size_t)snprintf(big, sizeof(big), "x0: &l0 [0]\n");
        for (int i = 1; i < 70; i++)
            n += (size_t)snprintf(big + n, sizeof(big) - n,
                                  "x%d: &l%d [*l%d]\n", i, i, i - 1);
        expect_error(f, big, "64:12", "alias '*l62' nests lists and "
                     "mappings 65 deep in the value of 'x63'");
    }
}

/* ---- linear growth, hashed duplicates ----------------------------------- */

/* Rules, parameters and a module's section of 20000 each: each list
 * grows by doubling (before: a realloc per item, quadratic copying under
 * ASan, 100k rules over 60 s). */
static void test_growth_linear(void **state)
{
#if COUNT_REALLOC
    fixture_t *f = *state;
    static const struct {
        const char *head, *fmt, *tail;
    } files[] = {
        {"selection:\n", "  - {algorithm: A%d}\n", ""},
        {"selection:\n  - algorithm: A\n    params:\n", "      p%d: 1\n", ""},
        {"shmx:\n", "  k%d: 1\n", ""},
    };

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char *text = repeat(files[i].head, files[i].fmt, 20000,
                            files[i].tail);
        write_yaml(f, "big.yaml", text);
        free(text);
        reset_config(f);
        reallocs = 0;
        assert_int_equal(tutti__config_load_file(&f->cfg, f->path),
                         TUTTI_OK);
        if (reallocs > 400)
            fail_msg("file %zu: %zu reallocs for 20000 items", i, reallocs);
    }
    assert_int_equal(f->cfg.num_pending, 20001);
    reset_config(f);
    load_yaml(f, "big.yaml", "selection:\n  - {algorithm: A}\n");
    assert_int_equal(f->cfg.num_rules, 1);
#else
    (void)state;
    skip();
#endif
}

/* 400000 parameters: a scan of those before would take minutes (80000
 * took 6 s); the duplicate at the end is named with the first's line. */
static void test_duplicates_hashed(void **state)
{
    fixture_t *f = *state;
    char *text = repeat("selection:\n  - algorithm: A\n    params:\n",
                        "      p%d: 1\n", 400000, "      p7: 2\n");

    expect_error(f, text, "400004:7", "duplicate parameter 'p7' (first at "
                 "line 11)");
    free(text);
    text = repeat("shmx:\n", "  k%d: 1\n", 400000, "  k3: 2\n");
    expect_error(f, text, "400002:3", "duplicate key 'k3' (first at line 5)");
    free(text);
}

/* ---- regular files only ------------------------------------------------- */

static void die_on_alarm(int sig)
{
    (void)sig;
    fprintf(stderr, "a config file blocked the test\n");
    _exit(1);
}

/* A FIFO blocked forever; a directory, a device too are refused by what
 * they are. */
static void test_regular_files_only(void **state)
{
    fixture_t *f = *state;
    char fifo[256];

    snprintf(fifo, sizeof(fifo), "%s/fifo", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    signal(SIGALRM, die_on_alarm);
    alarm(60);
    assert_int_equal(tutti__config_load_file(&f->cfg, fifo), TUTTI_ERR_IO);
    alarm(0);
    expect_detail(fifo, "is a FIFO; expected a regular file");
    assert_int_equal(tutti__config_load_file(&f->cfg, f->dir), TUTTI_ERR_IO);
    expect_detail(f->dir, "is a directory; expected a regular file");
    assert_int_equal(tutti__config_load_file(&f->cfg, "/dev/null"),
                     TUTTI_ERR_IO);
    expect_detail("'/dev/null' is a character device", "regular file");
    assert_null(f->cfg.path);
    unlink(fifo);
}

/* ---- timeouts ----------------------------------------------------------- */

/* 1e300 overflowed time_t where it became a deadline, and calls timed out
 * at once: the setting is clamped to 1e6 s, and deadlines take any
 * double. */
static void test_timeout_clamped(void **state)
{
    fixture_t *f = *state;
    const double bad[] = {1e300, INFINITY, NAN, -1.0, 1e18};
    struct timespec ts;
    time_t now;

    load_yaml(f, "t.yaml", "timeout: 1e300\n");
    assert_true(f->cfg.timeout == 1e6);
    assert_string_equal(value_of(f, "timeout"), "1e+06");
    setenv("TUTTI_TIMEOUT", "1e200", 1);
    assert_int_equal(tutti__config_apply_env(&f->cfg), TUTTI_OK);
    assert_true(f->cfg.timeout == 1e6);
    unsetenv("TUTTI_TIMEOUT");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        now = time(NULL);
        tutti__job_deadline(&ts, bad[i]);
        assert_true(ts.tv_sec >= now);
        assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
        if (bad[i] > 1e6)
            assert_true(ts.tv_sec > now + 1000000);
    }
}

/* ---- every error names its place and its key ---------------------------- */

static void test_errors_name_the_key(void **state)
{
    fixture_t *f = *state;

    expect_error(f, "modules: {load: {a: b}}\n", "1:17",
                 "found a mapping for 'modules.load'");
    expect_error(f, "selection:\n  - {algorithm: X, params: {chunk: [1]}}\n",
                 "2:36", "found a list for 'selection.params.chunk'");
    expect_error(f, "timeout: 5\nlog_level: \"\xff\"\n", "2:13",
                 "invalid leading UTF-8 octet (byte 23)");
    expect_error(f, "log_level: warn\ntimeout: [1, 2\nshm: {}\n", "3:4",
                 "in the value of 'timeout'");
}

/* ---- modules.load ------------------------------------------------------- */

/* A name no module found answers to loaded nothing and said nothing. */
static void test_unknown_module_in_load(void **state)
{
    fixture_t *f = *state;
    char named[256];

    load_yaml(f, "m.yaml", "modules: {load: [shm, nosuchmodule]}\n");
    assert_int_equal(take_modules(f), TUTTI_ERR_CONFIG);
    snprintf(named, sizeof(named), "modules.load (from %s)", f->path);
    expect_detail(named, "names 'nosuchmodule', which no module found");
    reset_config(f);
    setenv("TUTTI_MODULES_LOAD", "tcp,nosuch2", 1);
    assert_int_equal(tutti__config_apply_env(&f->cfg), TUTTI_OK);
    assert_int_equal(take_modules(f), TUTTI_ERR_CONFIG);
    expect_detail("modules.load (from TUTTI_MODULES_LOAD)", "'nosuch2'");
    unsetenv("TUTTI_MODULES_LOAD");
    reset_config(f);
    load_yaml(f, "m.yaml", "modules: {load: [shm, tcp]}\n");
    assert_int_equal(take_modules(f), TUTTI_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_alias_expansion),
        FIXTURE_TEST(test_alias_loops_and_strays),
        FIXTURE_TEST(test_anchors_limit),
        FIXTURE_TEST(test_nesting_depth),
        FIXTURE_TEST(test_growth_linear),
        FIXTURE_TEST(test_duplicates_hashed),
        FIXTURE_TEST(test_regular_files_only),
        FIXTURE_TEST(test_timeout_clamped),
        FIXTURE_TEST(test_errors_name_the_key),
        FIXTURE_TEST(test_unknown_module_in_load),
    };

    /* Errors are expected here; keep the log quiet. */
    tutti__log_set_level(TUTTI_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
