/*
 * tutti-perf's writers (tools/perf_output.c) on fixed rows: the table
 * byte for byte as before --csv and --json existed, CSV and JSON documents
 * exact and read back, strings that need escaping in each, a number JSON
 * cannot hold; and the strict JSON reader the tests check documents with
 * (tests/common/test_json.h), on what it must refuse.
 */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/perf_output.h"
#include "test_json.h"

/* A writer's output, in memory. */
typedef struct {
    char *text;
    size_t len;
    FILE *f;
} capture_t;

static void capture_open(capture_t *c)
{
    c->text = NULL;
    c->f = open_memstream(&c->text, &c->len);
    assert_non_null(c->f);
}

/* Ends the capture; c->text holds everything written, NUL-terminated. */
static void capture_close(capture_t *c)
{
    assert_int_equal(fclose(c->f), 0);
}

/* An allreduce on 4 ranks, out of place; and a gather, rooted, in place,
 * on CUDA devices. */
static const perf_run_t allreduce_run = {
    .coll = "allreduce", .dtype = "float32", .redop = "sum", .root = -1,
    .ranks = 4, .inplace = 0, .iters = 20, .warmups = 5, .device = "cpu",
    .blocks = 0, .size_doc = "each rank's buffer",
    .bus_formula = "2(n-1)/n", .bus_factor = 1.5};
static const char *const gpus[] = {"0000:01:00.0", "0000:02:00.0"};
static const perf_run_t gather_run = {
    .coll = "gather", .dtype = "int32", .redop = "none", .root = 1,
    .ranks = 2, .inplace = 1, .iters = 3, .warmups = 0, .device = "cuda",
    .blocks = 1, .size_doc = "the root's output",
    .bus_formula = "(n-1)/n", .bus_factor = 0.5, .gpus = gpus};

static const perf_row_t rows[] = {
    {8, 2, 1.5, 8 / 1.5e3, 1.5 * 8 / 1.5e3, 0, "RecursiveDoublingAllreduce"},
    {1048576, 262144, 250.25, 1048576 / 250.25e3, 1.5 * 1048576 / 250.25e3,
     7, "RingAllreduce"}};

/* The table: what tutti-perf printed before it had other formats. */
static void test_table_as_before(void **state)
{
    capture_t c;
    perf_out_t o;
    (void)state;

    capture_open(&c);
    perf_out_begin(&o, c.f, PERF_FORMAT_TABLE, &allreduce_run);
    perf_out_row(&o, &rows[0]);
    perf_out_row(&o, &rows[1]);
    perf_out_end(&o, "not printed: the table's errors go to stderr");
    capture_close(&c);
    assert_string_equal(
        c.text,
        "# tutti-perf: allreduce, 4 ranks, float32, sum, out of place, 20 "
        "iterations (+5 warm-up)\n"
        "# size = count x float32 (each rank's buffer); busbw = algbw x "
        "2(n-1)/n = 1.5\n"
        "#       size        count      type  redop  root     time_us  "
        "algbw_GBps  busbw_GBps  #wrong  impl  coll\n"
        "           8            2   float32    sum    -1        1.50       "
        "0.005       0.008       0  RecursiveDoublingAllreduce  allreduce\n"
        "     1048576       262144   float32    sum    -1      250.25       "
        "4.190       6.285       7  RingAllreduce  allreduce\n");
    free(c.text);

    capture_open(&c);
    perf_out_begin(&o, c.f, PERF_FORMAT_TABLE, &gather_run);
    capture_close(&c);
    assert_string_equal(
        c.text,
        "# tutti-perf: gather, 2 ranks, int32, root 1, in place, 3 "
        "iterations (+0 warm-up)\n"
        "# size = n x count x int32 (the root's output); busbw = algbw x "
        "(n-1)/n = 0.5\n"
        "# rank 0: cuda, GPU 0000:01:00.0\n"
        "# rank 1: cuda, GPU 0000:02:00.0\n"
        "#       size        count      type  redop  root     time_us  "
        "algbw_GBps  busbw_GBps  #wrong  impl  coll\n");
    free(c.text);
}

/* CSV: the header line, then a line per row with the run's settings. */
static void test_csv_document(void **state)
{
    capture_t c;
    perf_out_t o;
    (void)state;

    capture_open(&c);
    perf_out_begin(&o, c.f, PERF_FORMAT_CSV, &allreduce_run);
    perf_out_row(&o, &rows[0]);
    perf_out_row(&o, &rows[1]);
    perf_out_end(&o, NULL);
    capture_close(&c);
    assert_string_equal(
        c.text,
        "size,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,#wrong,"
        "impl,coll,ranks,inplace,iters,warmup,device\n"
        "8,2,float32,sum,-1,1.5,0.00533333,0.008,0,"
        "RecursiveDoublingAllreduce,allreduce,4,0,20,5,cpu\n"
        "1048576,262144,float32,sum,-1,250.25,4.19011,6.28517,7,"
        "RingAllreduce,allreduce,4,0,20,5,cpu\n");
    free(c.text);
}

/* Fields that would split a line or a field are quoted, quotes doubled. */
static void test_csv_quotes_what_needs_it(void **state)
{
    static const char *const in[] = {"plain", "a,b", "say \"hi\"", "two\nlines",
                                     ""};
    static const char *const want[] = {"plain", "\"a,b\"",
                                       "\"say \"\"hi\"\"\"",
                                       "\"two\nlines\"", ""};
    (void)state;
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        capture_t c;
        capture_open(&c);
        perf_csv_field(c.f, in[i]);
        capture_close(&c);
        assert_string_equal(c.text, want[i]);
        free(c.text);
    }
}

/* A string with quotes, a backslash, control characters and UTF-8 comes
 * out escaped and reads back as it went in. */
static void test_json_string_escapes(void **state)
{
    static const char in[] = "a\"b\\c\nd\te\x01\x1f\x7f\xc3\xa9/";
    capture_t c;
    char err[128];
    (void)state;

    capture_open(&c);
    perf_json_string(c.f, in);
    capture_close(&c);
    assert_string_equal(c.text, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u001f\\u007f"
                                "\xc3\xa9/\"");
    test_json_t *v = test_json_parse(c.text, err, sizeof(err));
    if (v == NULL)
        fail_msg("%s: %s", c.text, err);
    assert_int_equal(v->type, TEST_JSON_STRING);
    assert_string_equal(v->string, in);
    test_json_free(v);
    free(c.text);
}

static const test_json_t *member(const test_json_t *v, const char *key,
                                 test_json_type_t type)
{
    const test_json_t *m = test_json_get(v, key);
    if (m == NULL)
        fail_msg("no member '%s'", key);
    if (m->type != type)
        fail_msg("member '%s' has type %d, want %d", key, m->type, type);
    return m;
}

/* JSON: the run, then the rows keyed by the columns' names; a time that is
 * not a number is null, and an implementation's name is escaped. */
static void test_json_document(void **state)
{
    perf_row_t odd = {64, 16, NAN, 0, 0, 0, "Odd \"impl\"\n"};
    capture_t c;
    perf_out_t o;
    char err[128];
    (void)state;

    capture_open(&c);
    perf_out_begin(&o, c.f, PERF_FORMAT_JSON, &gather_run);
    perf_out_row(&o, &rows[1]);
    perf_out_row(&o, &odd);
    perf_out_end(&o, NULL);
    capture_close(&c);
    test_json_t *v = test_json_parse(c.text, err, sizeof(err));
    if (v == NULL)
        fail_msg("not JSON: %s:\n%s", err, c.text);
    assert_int_equal(v->type, TEST_JSON_OBJECT);
    assert_string_equal(member(v, "tool", TEST_JSON_STRING)->string,
                        "tutti-perf");
    assert_string_equal(member(v, "collective", TEST_JSON_STRING)->string,
                        "gather");
    assert_string_equal(member(v, "dtype", TEST_JSON_STRING)->string,
                        "int32");
    assert_string_equal(member(v, "redop", TEST_JSON_STRING)->string, "none");
    assert_true(member(v, "root", TEST_JSON_NUMBER)->number == 1);
    assert_true(member(v, "ranks", TEST_JSON_NUMBER)->number == 2);
    assert_true(member(v, "inplace", TEST_JSON_BOOL)->number == 1);
    assert_true(member(v, "iters", TEST_JSON_NUMBER)->number == 3);
    assert_true(member(v, "warmup", TEST_JSON_NUMBER)->number == 0);
    assert_string_equal(member(v, "device", TEST_JSON_STRING)->string,
                        "cuda");
    assert_string_equal(member(v, "size_convention", TEST_JSON_STRING)->string,
                        "n x count x int32: the root's output");
    assert_string_equal(member(v, "bus_formula", TEST_JSON_STRING)->string,
                        "(n-1)/n");
    assert_true(member(v, "bus_factor", TEST_JSON_NUMBER)->number == 0.5);
    const test_json_t *g = member(v, "gpus", TEST_JSON_ARRAY);
    assert_int_equal(g->n, 2);
    assert_string_equal(g->items[1].string, "0000:02:00.0");
    assert_null(test_json_get(v, "error"));

    const test_json_t *rs = member(v, "rows", TEST_JSON_ARRAY);
    assert_int_equal(rs->n, 2);
    const test_json_t *r = &rs->items[0];
    assert_int_equal(r->n, 11);
    assert_true(member(r, "size", TEST_JSON_NUMBER)->number == 1048576);
    assert_true(member(r, "count", TEST_JSON_NUMBER)->number == 262144);
    assert_string_equal(member(r, "type", TEST_JSON_STRING)->string, "int32");
    assert_string_equal(member(r, "redop", TEST_JSON_STRING)->string, "none");
    assert_true(member(r, "root", TEST_JSON_NUMBER)->number == 1);
    assert_true(member(r, "time_us", TEST_JSON_NUMBER)->number == 250.25);
    assert_true(fabs(member(r, "algbw_GBps", TEST_JSON_NUMBER)->number -
                     4.19011) < 1e-9);
    assert_true(fabs(member(r, "busbw_GBps", TEST_JSON_NUMBER)->number -
                     6.28517) < 1e-9);
    assert_true(member(r, "#wrong", TEST_JSON_NUMBER)->number == 7);
    assert_string_equal(member(r, "impl", TEST_JSON_STRING)->string,
                        "RingAllreduce");
    assert_string_equal(member(r, "coll", TEST_JSON_STRING)->string,
                        "gather");
    member(&rs->items[1], "time_us", TEST_JSON_NULL);
    assert_string_equal(member(&rs->items[1], "impl", TEST_JSON_STRING)->string,
                        "Odd \"impl\"\n");
    test_json_free(v);
    free(c.text);
}

/* A sweep that stopped at its first size: no rows, and the error. */
static void test_json_error_without_rows(void **state)
{
    capture_t c;
    perf_out_t o;
    char err[128];
    (void)state;

    capture_open(&c);
    perf_out_begin(&o, c.f, PERF_FORMAT_JSON, &allreduce_run);
    perf_out_end(&o, "allreduce of 8 bytes: implementation 'X\"' missing");
    capture_close(&c);
    test_json_t *v = test_json_parse(c.text, err, sizeof(err));
    if (v == NULL)
        fail_msg("not JSON: %s:\n%s", err, c.text);
    assert_int_equal(member(v, "rows", TEST_JSON_ARRAY)->n, 0);
    assert_null(test_json_get(v, "gpus"));
    assert_string_equal(member(v, "error", TEST_JSON_STRING)->string,
                        "allreduce of 8 bytes: implementation 'X\"' missing");
    test_json_free(v);
    free(c.text);
}

/* The reader the tests trust: it refuses what is not JSON, each for the
 * reason given, and reads what is. */
static void test_json_reader_is_strict(void **state)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "expected a value"},
        {"{\"a\":1,}", "expected a key"},
        {"[1,]", "expected a value"},
        {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
        {"{'a':1}", "expected a key"},
        {"{\"a\":NaN}", "expected a value"},
        {"{\"a\":01}", "expected ',' or '}'"},
        {"{\"a\":1.}", "digits expected after '.'"},
        {"{\"a\":1e}", "digits expected in the exponent"},
        {"\"a\x01\"", "control character in a string"},
        {"\"a\\x\"", "bad escape"},
        {"\"\\ud800\"", "unpaired surrogate"},
        {"\"abc", "unterminated string"},
        {"{\"a\":1}{\"b\":2}", "text after the document"},
        {"{\"a\":1,\"a\":2}", "duplicate key"},
        {"[[[", "expected a value"},
    };
    char err[128];
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        test_json_t *v = test_json_parse(bad[i].text, err, sizeof(err));
        if (v != NULL)
            fail_msg("accepted '%s'", bad[i].text);
        if (strstr(err, bad[i].why) == NULL)
            fail_msg("'%s': '%s', want '%s'", bad[i].text, err, bad[i].why);
    }
    test_json_t *v = test_json_parse(
        " {\"a\": [0, -2.5e3, true, false, null, \"\\u00e9\\ud83d\\ude00\"],"
        " \"b\": {}}\n", err, sizeof(err));
    if (v == NULL)
        fail_msg("refused valid JSON: %s", err);
    const test_json_t *a = member(v, "a", TEST_JSON_ARRAY);
    assert_int_equal(a->n, 6);
    assert_true(a->items[1].number == -2500);
    assert_int_equal(a->items[2].type, TEST_JSON_BOOL);
    assert_int_equal(a->items[4].type, TEST_JSON_NULL);
    assert_string_equal(a->items[5].string, "\xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(member(v, "b", TEST_JSON_OBJECT)->n, 0);
    test_json_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_as_before),
        cmocka_unit_test(test_csv_document),
        cmocka_unit_test(test_csv_quotes_what_needs_it),
        cmocka_unit_test(test_json_string_escapes),
        cmocka_unit_test(test_json_document),
        cmocka_unit_test(test_json_error_without_rows),
        cmocka_unit_test(test_json_reader_is_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
