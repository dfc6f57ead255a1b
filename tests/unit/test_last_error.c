/*
 * Every public function that fails sets a fresh tutti_last_error(): before
 * each call a sentinel is planted (a failing tutti_size_parse() whose
 * message holds SENTINEL), then the call is made with one invalid argument
 * (a NULL pointer, a value outside its enum, a left group or freed
 * request, an index or rank outside its range), and the test checks that
 * the call returned its documented failure (a status, -1 or NULL), that
 * the sentinel is gone and that the message names the argument (and its
 * value where it has one).  A failing case is reported and the test goes
 * on, so one run lists every case that fails.
 *
 * Not called, because they cannot fail: tutti_status_name() and
 * tutti_strerror() (a string for every status), tutti_last_error(), and
 * what tutti.h documents "NULL ok": tutti_context_destroy(NULL),
 * tutti_group_leave(NULL), tutti_request_free(NULL) and the three
 * *_params_init(NULL), which do nothing (test_api calls them).
 * tutti_abort() takes a NULL reason; with a live context it would abort
 * the fixture's context, so only tutti_abort(NULL, ...) is called.
 * tutti_dtype_name() and tutti_dtype_size() are inline in tutti/types.h
 * for modules that do not link libtutti: they return NULL and 0 for an
 * invalid value and set no error (checked: the sentinel stays).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "members.h"
#include "test_util.h"

#define SENTINEL "sentinel-17"

static int failures;

/* Plants the sentinel: a failing call whose message names it. */
static void plant(void)
{
    uint64_t v = 7;
    tutti_status_t st = tutti_size_parse(SENTINEL, &v);
    if (st != TUTTI_ERR_INVALID_ARG || v != 7 ||
        strstr(tutti_last_error(), SENTINEL) == NULL)
        fail_msg("tutti_size_parse(\"%s\") gave %s, '%s': expected "
                 "ERR_INVALID_ARG naming it",
                 SENTINEL, tutti_status_name(st), tutti_last_error());
}

/* After the call @p what: it returned its documented failure (@p ok;
 * @p got says what it returned), the sentinel is gone, and each of
 * @p words (NULL-terminated) is in tutti_last_error(). */
static void check(const char *what, int ok, const char *got,
                  const char *const *words)
{
    const char *e = tutti_last_error();
    int bad = !ok || strstr(e, SENTINEL) != NULL;
    for (size_t i = 0; !bad && words[i] != NULL; i++)
        bad = strstr(e, words[i]) == NULL;
    if (!bad)
        return;
    failures++;
    print_error("FAIL %s: returned %s; last error '%s'; expected", what, got,
                e);
    for (size_t i = 0; words[i] != NULL; i++)
        print_error(" '%s'", words[i]);
    print_error("\n");
}

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A call returning a status: @p want. */
#define FAILS_AS(what, want, call, ...)                                        \
    do {                                                                       \
        plant();                                                               \
        tutti_status_t st_ = (call);                                           \
        check(what, st_ == (want), tutti_status_name(st_),                     \
              WORDS(__VA_ARGS__));                                             \
    } while (0)
#define FAILS(want, call, ...) FAILS_AS(#call, want, call, __VA_ARGS__)
#define REFUSED(call, ...)                                                     \
    FAILS_AS(#call, TUTTI_ERR_INVALID_ARG, call, __VA_ARGS__)

/* Calls returning an int (-1 on failure), a string (NULL), or nothing. */
#define FAILS_INT(call, ...)                                                   \
    do {                                                                       \
        plant();                                                               \
        int ok_ = (call) == -1;                                                \
        check(#call, ok_, ok_ ? "-1" : "not -1", WORDS(__VA_ARGS__));          \
    } while (0)
#define FAILS_NULL(call, ...)                                                  \
    do {                                                                       \
        plant();                                                               \
        int ok_ = (call) == NULL;                                              \
        check(#call, ok_, ok_ ? "NULL" : "not NULL", WORDS(__VA_ARGS__));      \
    } while (0)
#define FAILS_VOID(call, ...)                                                  \
    do {                                                                       \
        plant();                                                               \
        call;                                                                  \
        check(#call, 1, "(void)", WORDS(__VA_ARGS__));                         \
    } while (0)

/* The end of a test: every case passed. */
static void no_failures(void)
{
    int n = failures;
    failures = 0;
    if (n != 0)
        fail_msg("%d case%s failed (listed above)", n, n == 1 ? "" : "s");
}

static tutti_group_t *join_one(tutti_context_t *ctx, uint64_t key)
{
    tutti_group_t *g = NULL;
    assert_int_equal(test_join(ctx, key, 1, 0, 5, &g), TUTTI_OK);
    assert_non_null(g);
    return g;
}

/* ---- values: parsers and names --------------------------------------- */

/* Parser @p i of parsers[] (an int holds any of the enums). */
static tutti_status_t parse(size_t i, const char *name, int *out)
{
    switch (i) {
        case 0:
            return tutti_dtype_parse(name, (tutti_dtype_t *)out);
        case 1:
            return tutti_op_parse(name, (tutti_op_t *)out);
        case 2:
            return tutti_collective_parse(name, (tutti_collective_t *)out);
        default:
            return tutti_device_type_parse(name, (tutti_device_type_t *)out);
    }
}

static const struct {
    const char *fn, *out, *good, *bad, *expected;
} parsers[] = {
    {"tutti_dtype_parse", "dtype_out", "float32", "float33", "int8"},
    {"tutti_op_parse", "op_out", "max", "summ", "sum"},
    {"tutti_collective_parse", "coll_out", "alltoall", "all_reduce",
     "allreduce"},
    {"tutti_device_type_parse", "type_out", "cuda", "gpu", "cpu"},
};

/* Name lookup @p i of namers[]. */
static const char *name_of(size_t i, int v)
{
    switch (i) {
        case 0:
            return tutti_op_name((tutti_op_t)v);
        case 1:
            return tutti_collective_name((tutti_collective_t)v);
        default:
            return tutti_device_type_name((tutti_device_type_t)v);
    }
}

static const struct {
    const char *fn, *arg;
    int count;
} namers[] = {
    {"tutti_op_name", "op", TUTTI_OP_COUNT},
    {"tutti_collective_name", "coll", TUTTI_COLL_COUNT},
    {"tutti_device_type_name", "type", TUTTI_DEVICE_COUNT},
};

static void test_values(void **state)
{
    uint64_t bytes = 5;
    int out = -7; /* room for any of the enums */
    char what[96], num[16];
    (void)state;

    REFUSED(tutti_size_parse(NULL, &bytes), "tutti_size_parse", "text is NULL");
    REFUSED(tutti_size_parse("64K", NULL), "tutti_size_parse", "bytes_out");
    REFUSED(tutti_size_parse("12Q", &bytes), "tutti_size_parse", "text",
            "'12Q'");
    assert_int_equal(bytes, 5);

    for (size_t i = 0; i < sizeof(parsers) / sizeof(parsers[0]); i++) {
        const char *fn = parsers[i].fn;
        snprintf(what, sizeof(what), "%s(NULL, &out)", fn);
        FAILS_AS(what, TUTTI_ERR_INVALID_ARG, parse(i, NULL, &out), fn,
                 "name is NULL");
        snprintf(what, sizeof(what), "%s(\"%s\", NULL)", fn, parsers[i].good);
        FAILS_AS(what, TUTTI_ERR_INVALID_ARG, parse(i, parsers[i].good, NULL),
                 fn, parsers[i].out);
        snprintf(what, sizeof(what), "%s(\"%s\", &out)", fn, parsers[i].bad);
        snprintf(num, sizeof(num), "'%s'", parsers[i].bad);
        FAILS_AS(what, TUTTI_ERR_NOT_FOUND, parse(i, parsers[i].bad, &out), fn,
                 "name", num, parsers[i].expected);
        assert_int_equal(out, -7);
        assert_int_equal(parse(i, parsers[i].good, &out), TUTTI_OK);
        out = -7;
    }

    for (size_t i = 0; i < sizeof(namers) / sizeof(namers[0]); i++) {
        const int bad[] = {namers[i].count, 99, -1};
        for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
            char arg[32];
            snprintf(what, sizeof(what), "%s(%d)", namers[i].fn, bad[b]);
            snprintf(arg, sizeof(arg), "%s %d", namers[i].arg, bad[b]);
            plant();
            int ok = name_of(i, bad[b]) == NULL;
            check(what, ok, ok ? "NULL" : "not NULL", WORDS(namers[i].fn, arg));
        }
    }

    /* Inline for modules that do not link libtutti: no error set. */
    plant();
    assert_null(tutti_dtype_name((tutti_dtype_t)TUTTI_DTYPE_COUNT));
    assert_int_equal(tutti_dtype_size((tutti_dtype_t)-1), 0);
    assert_non_null(strstr(tutti_last_error(), SENTINEL));
    no_failures();
}

/* ---- the context and introspection ----------------------------------- */

static void test_context(void **state)
{
    tutti_context_t *ctx = *state, *made = NULL;
    tutti_context_params_t cp;
    tutti_module_info_t mi;
    tutti_impl_info_t ii;
    tutti_select_query_t q;
    const char *impl = "unset";
    char buf[256];
    uint64_t sum = 3;
    size_t findings = 9;

    REFUSED(tutti_context_create(NULL, NULL), "tutti_context_create",
            "ctx_out");
    test_one_task_params(&cp, "", NULL, "off");
    cp.num_tasks = 0;
    FAILS(TUTTI_ERR_CONFIG, tutti_context_create(&cp, &made), "num_tasks 0");
    cp.task = 3;
    cp.num_tasks = 2;
    FAILS(TUTTI_ERR_CONFIG, tutti_context_create(&cp, &made), "task 3",
          "num_tasks 2");
    test_one_task_params(&cp, "/nonexistent/tutti.yaml", NULL, "off");
    FAILS(TUTTI_ERR_NOT_FOUND, tutti_context_create(&cp, &made),
          "/nonexistent/tutti.yaml");
    test_one_task_params(&cp, "", NULL, "loud");
    FAILS(TUTTI_ERR_CONFIG, tutti_context_create(&cp, &made), "log level",
          "'loud'");
    test_one_task_params(&cp, "", NULL, "off");
    cp.job_id = "a.b";
    FAILS(TUTTI_ERR_CONFIG, tutti_context_create(&cp, &made), "job id",
          "'a.b'");
    assert_null(made);

    FAILS_INT(tutti_context_task(NULL), "tutti_context_task", "ctx");
    FAILS_INT(tutti_context_num_tasks(NULL), "tutti_context_num_tasks", "ctx");
    REFUSED(tutti_context_sum(NULL, 1, &sum), "tutti_context_sum", "ctx");
    REFUSED(tutti_context_sum(ctx, 1, NULL), "tutti_context_sum", "sum_out");
    assert_int_equal(sum, 3);
    REFUSED(tutti_abort(NULL, "x"), "tutti_abort", "ctx");
    REFUSED(tutti_abort(NULL, NULL), "tutti_abort", "ctx");

    REFUSED(tutti_info_module(NULL, 0, &mi), "tutti_info_module", "ctx");
    REFUSED(tutti_info_module(ctx, 0, NULL), "tutti_info_module", "info_out");
    FAILS(TUTTI_ERR_NOT_FOUND, tutti_info_module(ctx, 100000, &mi),
          "tutti_info_module", "index 100000");
    REFUSED(tutti_info_impl(NULL, 0, &ii), "tutti_info_impl", "ctx");
    REFUSED(tutti_info_impl(ctx, 0, NULL), "tutti_info_impl", "info_out");
    FAILS(TUTTI_ERR_NOT_FOUND, tutti_info_impl(ctx, 100000, &ii),
          "tutti_info_impl", "index 100000");

    q = (tutti_select_query_t){
        TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CPU, TUTTI_FLOAT32, 64, 2, 1, 0,
        0};
    REFUSED(tutti_info_explain(NULL, &q, buf, sizeof(buf), &impl),
            "tutti_info_explain", "ctx");
    REFUSED(tutti_info_explain(ctx, NULL, buf, sizeof(buf), &impl),
            "tutti_info_explain", "query");
    REFUSED(tutti_info_explain(ctx, &q, NULL, 8, &impl), "tutti_info_explain",
            "buf");
    REFUSED(tutti_info_explain(ctx, &q, buf, sizeof(buf), NULL),
            "tutti_info_explain", "impl_out");
    q.collective = (tutti_collective_t)99;
    REFUSED(tutti_info_explain(ctx, &q, buf, sizeof(buf), &impl),
            "tutti_info_explain", "collective 99");
    q.collective = TUTTI_COLL_ALLREDUCE;
    q.device_type = (tutti_device_type_t)77;
    REFUSED(tutti_info_explain(ctx, &q, buf, sizeof(buf), &impl),
            "tutti_info_explain", "device_type 77");
    q.device_type = TUTTI_DEVICE_CPU;
    q.dtype = (tutti_dtype_t)55;
    REFUSED(tutti_info_explain(ctx, &q, buf, sizeof(buf), &impl),
            "tutti_info_explain", "dtype 55");
    /* Refused before anything was chosen: the output says so. */
    assert_null(impl);

    REFUSED(tutti_info_lint(NULL, stderr, &findings), "tutti_info_lint", "ctx");
    REFUSED(tutti_info_lint(ctx, NULL, &findings), "tutti_info_lint", "file");
    REFUSED(tutti_info_lint(ctx, stderr, NULL), "tutti_info_lint",
            "findings_out");
    assert_int_equal(findings, 9);
    FAILS_VOID(tutti_info_print_config(NULL, stderr), "tutti_info_print_config",
               "ctx");
    FAILS_VOID(tutti_info_print_config(ctx, NULL), "tutti_info_print_config",
               "file");
    FAILS_VOID(tutti_info_print_settings(NULL, stderr),
               "tutti_info_print_settings", "ctx");
    FAILS_VOID(tutti_info_print_settings(ctx, NULL),
               "tutti_info_print_settings", "file");
    no_failures();
}

/* ---- groups ------------------------------------------------------------ */

static void test_groups(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_group_params_t gp;
    tutti_group_t *g = NULL;
    tutti_locality_t loc = {.task = 42};
    const int bad_order[1] = {3};

    tutti_group_params_init(&gp);
    gp.group_key = 0xe1;
    gp.timeout = 5;
    REFUSED(tutti_group_join(NULL, &gp, &g), "tutti_group_join", "ctx");
    REFUSED(tutti_group_join(ctx, NULL, &g), "tutti_group_join", "params");
    REFUSED(tutti_group_join(ctx, &gp, NULL), "tutti_group_join", "group_out");
    gp.size = 8;
    REFUSED(tutti_group_join(ctx, &gp, &g), "tutti_group_join",
            "params->size 8");
    tutti_group_params_init(&gp);
    gp.group_key = 0xe1;
    gp.group_size = 0;
    REFUSED(tutti_group_join(ctx, &gp, &g), "tutti_group_join", "group_size 0");
    gp.group_size = 1;
    gp.device_index = -1;
    REFUSED(tutti_group_join(ctx, &gp, &g), "tutti_group_join",
            "device_index -1");
    gp.device_index = 0;
    gp.device_type = (tutti_device_type_t)7;
    REFUSED(tutti_group_join(ctx, &gp, &g), "tutti_group_join",
            "device_type 7");
    gp.device_type = TUTTI_DEVICE_CPU;
    gp.device_order = (tutti_device_order_t)9;
    REFUSED(tutti_group_join(ctx, &gp, &g), "tutti_group_join",
            "device_order 9");
    gp.device_order = TUTTI_ORDER_TASK;
    gp.ring_order = bad_order;
    FAILS(TUTTI_ERR_MISMATCH, tutti_group_join(ctx, &gp, &g), "ring_order");
    assert_null(g);

    g = join_one(ctx, 0xe2);
    REFUSED(tutti_group_locality(g, 0, NULL), "tutti_group_locality",
            "locality_out");
    REFUSED(tutti_group_locality(g, 1, &loc), "tutti_group_locality", "rank 1");
    REFUSED(tutti_group_locality(g, -1, &loc), "tutti_group_locality",
            "rank -1");
    assert_int_equal(loc.task, 42);
    FAILS_NULL(tutti_group_host(g, 1), "tutti_group_host", "host 1");
    FAILS_NULL(tutti_group_host(g, -1), "tutti_group_host", "host -1");
    FAILS_NULL(tutti_group_pci_bus_id(g, 1), "tutti_group_pci_bus_id",
               "rank 1");
    FAILS_NULL(tutti_group_pci_bus_id(g, -1), "tutti_group_pci_bus_id",
               "rank -1");

    /* NULL, then left: every call that takes a group. */
    for (int left = 0; left < 2; left++) {
        tutti_group_t *h = left ? g : NULL;
        const char *why = left ? "was left" : "group is NULL";
        if (left)
            tutti_group_leave(g);
        FAILS_INT(tutti_group_rank(h), "tutti_group_rank", why);
        FAILS_INT(tutti_group_size(h), "tutti_group_size", why);
        REFUSED(tutti_group_locality(h, 0, &loc), "tutti_group_locality", why);
        FAILS_NULL(tutti_group_host(h, 0), "tutti_group_host", why);
        FAILS_NULL(tutti_group_pci_bus_id(h, 0), "tutti_group_pci_bus_id", why);
    }
    FAILS_VOID(tutti_group_leave(g), "tutti_group_leave", "was left");
    no_failures();
}

/* ---- executions and requests ----------------------------------------- */

static void test_execute(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_instance_params_t ip;
    tutti_request_t *r = NULL;
    const uint64_t keys[TUTTI_MAX_WAIT_FOR + 1] = {0};
    float x = 1, y = 0;

    tutti_group_t *g = join_one(ctx, 0xe3);
    test_params(&ip, 0x31, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    REFUSED(tutti_execute(NULL, &ip, &x, &y, &r), "tutti_execute",
            "group is NULL");
    REFUSED(tutti_execute(g, NULL, &x, &y, &r), "tutti_execute", "params");
    REFUSED(tutti_execute(g, &ip, &x, &y, NULL), "tutti_execute",
            "request_out");
    ip.size = 8;
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "tutti_execute",
            "params->size 8");
    test_params(&ip, 1ULL << 63, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "tutti_execute",
            "instance key 0x8000000000000000");
    test_params(&ip, 0x32, (tutti_collective_t)99, TUTTI_FLOAT32, 1);
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "tutti_execute",
            "collective 99");
    test_params(&ip, 0x33, TUTTI_COLL_ALLREDUCE, (tutti_dtype_t)999, 1);
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "tutti_execute", "dtype 999");
    test_params(&ip, 0x34, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    ip.op = (tutti_op_t)99;
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "tutti_execute", "op 99");
    test_params(&ip, 0x35, TUTTI_COLL_BROADCAST, TUTTI_FLOAT32, 1);
    ip.root = 5;
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "root 5");
    test_params(&ip, 0x36, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    REFUSED(tutti_execute(g, &ip, NULL, &y, &r), "NULL sendbuf");
    REFUSED(tutti_execute(g, &ip, &x, NULL, &r), "NULL recvbuf");
    ip.wait_for = keys;
    ip.num_wait_for = TUTTI_MAX_WAIT_FOR + 1;
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "9 wait_for keys");
    ip.wait_for = NULL;
    ip.num_wait_for = 1;
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "wait_for");
    assert_null(r);
    tutti_group_leave(g);
    test_params(&ip, 0x37, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    REFUSED(tutti_execute(g, &ip, &x, &y, &r), "tutti_execute", "was left");
    assert_null(r);
    no_failures();
}

static void test_requests(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_instance_params_t ip;
    tutti_request_t *r, *freed, *live[2], *many[TUTTI_MAX_WAIT_ANY + 1];
    tutti_request_info_t info = {.step = 99};
    size_t index = 77;
    float x = 1, y = 0;

    tutti_group_t *g = join_one(ctx, 0xe4);
    /* A new instance waits for its resolution: in progress until a test
     * or wait moves it. */
    test_params(&ip, 0x41, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    assert_int_equal(tutti_execute(g, &ip, &x, &y, &r), TUTTI_OK);
    FAILS_VOID(tutti_request_free(r), "tutti_request_free",
               "is still in progress");
    /* Freed last, so no later execution takes its slot. */
    ip.instance_key = 0x42;
    assert_int_equal(tutti_execute(g, &ip, &x, &y, &freed), TUTTI_OK);
    assert_int_equal(tutti_request_wait(freed), TUTTI_OK);
    tutti_request_free(freed);
    assert_ptr_not_equal(r, freed);
    live[0] = r;
    live[1] = NULL;
    for (size_t i = 0; i <= TUTTI_MAX_WAIT_ANY; i++)
        many[i] = r;

    REFUSED(tutti_request_test(NULL), "tutti_request_test", "request is NULL");
    REFUSED(tutti_request_test(freed), "tutti_request_test", "freed");
    REFUSED(tutti_request_wait(NULL), "tutti_request_wait", "request is NULL");
    REFUSED(tutti_request_wait(freed), "tutti_request_wait", "freed");
    FAILS_VOID(tutti_request_free(freed), "tutti_request_free", "freed");
    FAILS_VOID(tutti_request_info(NULL, &info), "tutti_request_info",
               "request is NULL");
    FAILS_VOID(tutti_request_info(freed, &info), "tutti_request_info", "freed");
    FAILS_VOID(tutti_request_info(r, NULL), "tutti_request_info", "info_out");
    assert_int_equal(info.step, 99);
    FAILS_VOID(tutti_request_set_callback(NULL, NULL, NULL),
               "tutti_request_set_callback", "request is NULL");
    FAILS_VOID(tutti_request_set_callback(freed, NULL, NULL),
               "tutti_request_set_callback", "freed");

    REFUSED(tutti_request_wait_all(NULL, 1), "tutti_request_wait_all",
            "requests is NULL");
    REFUSED(tutti_request_wait_all(live, 2), "tutti_request_wait_all",
            "requests[1]", "NULL");
    live[1] = freed;
    REFUSED(tutti_request_wait_all(live, 2), "tutti_request_wait_all",
            "requests[1]", "freed");
    REFUSED(tutti_request_wait_any(live, 0, &index), "tutti_request_wait_any",
            "n is 0");
    REFUSED(tutti_request_wait_any(many, TUTTI_MAX_WAIT_ANY + 1, &index),
            "tutti_request_wait_any", "n is 65");
    REFUSED(tutti_request_wait_any(NULL, 1, &index), "tutti_request_wait_any",
            "requests is NULL");
    REFUSED(tutti_request_wait_any(live, 1, NULL), "tutti_request_wait_any",
            "index_out");
    REFUSED(tutti_request_wait_any(live, 2, &index), "tutti_request_wait_any",
            "requests[1]", "freed");
    live[1] = NULL;
    REFUSED(tutti_request_wait_any(live, 2, &index), "tutti_request_wait_any",
            "requests[1]", "NULL");
    assert_int_equal(index, 77);

    /* A request kept past its group's leave. */
    assert_int_equal(tutti_request_wait(r), TUTTI_OK);
    tutti_group_leave(g);
    REFUSED(tutti_request_test(r), "tutti_request_test", "group that was left");
    REFUSED(tutti_request_wait(r), "tutti_request_wait", "group that was left");
    FAILS_VOID(tutti_request_free(r), "tutti_request_free",
               "group that was left");
    no_failures();
}

/* ---- blocking helpers --------------------------------------------------- */

enum { REDUCES = 1, ROOTED = 2, TYPED = 4 };

static const struct {
    const char *fn;
    int has;
} helpers[] = {
    {"tutti_allreduce", REDUCES | TYPED},
    {"tutti_broadcast", ROOTED | TYPED},
    {"tutti_reduce", REDUCES | ROOTED | TYPED},
    {"tutti_allgather", TYPED},
    {"tutti_gather", ROOTED | TYPED},
    {"tutti_reduce_scatter", REDUCES | TYPED},
    {"tutti_alltoall", TYPED},
    {"tutti_allgatherv", TYPED},
    {"tutti_barrier", 0},
};

/* Helper @p i with one element of @p dt. */
static tutti_status_t helper(size_t i, tutti_group_t *g, const void *s, void *r,
                             tutti_dtype_t dt, tutti_op_t op, int root)
{
    switch (i) {
        case 0:
            return tutti_allreduce(g, s, r, 1, dt, op);
        case 1:
            return tutti_broadcast(g, r, 1, dt, root);
        case 2:
            return tutti_reduce(g, s, r, 1, dt, op, root);
        case 3:
            return tutti_allgather(g, s, r, 1, dt);
        case 4:
            return tutti_gather(g, s, r, 1, dt, root);
        case 5:
            return tutti_reduce_scatter(g, s, r, 1, dt, op);
        case 6:
            return tutti_alltoall(g, s, r, 1, dt);
        case 7:
            return tutti_allgatherv(g, s, 1, r, 1, dt, NULL, NULL);
        default:
            return tutti_barrier(g);
    }
}

static void test_blocking(void **state)
{
    tutti_context_t *ctx = *state;
    const tutti_dtype_t f32 = TUTTI_FLOAT32;
    const tutti_op_t sum = TUTTI_OP_SUM;
    float x[2] = {1, 1}, y[2] = {0, 0};
    size_t counts[1] = {5}, total = 5;
    char what[96];

    tutti_group_t *g = join_one(ctx, 0xe5), *left = join_one(ctx, 0xe6);
    tutti_group_leave(left);
    for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++) {
        const char *fn = helpers[i].fn;
        int has = helpers[i].has;
#define HELPER_FAILS(desc, call, ...)                                          \
    do {                                                                       \
        snprintf(what, sizeof(what), "%s(%s)", fn, desc);                      \
        FAILS_AS(what, TUTTI_ERR_INVALID_ARG, call, __VA_ARGS__);              \
    } while (0)
        HELPER_FAILS("group NULL", helper(i, NULL, x, y, f32, sum, 0), fn,
                     "group is NULL");
        HELPER_FAILS("group left", helper(i, left, x, y, f32, sum, 0), fn,
                     "was left");
        if (has & TYPED)
            HELPER_FAILS("dtype 999",
                         helper(i, g, x, y, (tutti_dtype_t)999, sum, 0), fn,
                         "dtype 999");
        if (has & REDUCES)
            HELPER_FAILS("op 99", helper(i, g, x, y, f32, (tutti_op_t)99, 0),
                         fn, "op 99");
        if (has & ROOTED)
            HELPER_FAILS("root 5", helper(i, g, x, y, f32, sum, 5), fn,
                         "root 5");
        if (has & TYPED)
            HELPER_FAILS("NULL buffer", helper(i, g, NULL, NULL, f32, sum, 0),
                         fn, "NULL", "buf");
#undef HELPER_FAILS
    }
    /* Too small a buffer: every member learns what it needs. */
    FAILS(TUTTI_ERR_TOO_SMALL,
          tutti_allgatherv(g, x, 2, y, 1, f32, counts, &total), "too small",
          "needs 2");
    tutti_group_leave(g);
    no_failures();
}

/* ---- point-to-point ---------------------------------------------------- */

/* Call @p i of tutti_isend, tutti_irecv, tutti_send, tutti_recv. */
static tutti_status_t p2p(int i, tutti_group_t *g, void *buf, size_t count,
                          tutti_dtype_t dt, int peer, tutti_request_t **r)
{
    switch (i) {
        case 0:
            return tutti_isend(g, buf, count, dt, peer, 0, r);
        case 1:
            return tutti_irecv(g, buf, count, dt, peer, 0, r);
        case 2:
            return tutti_send(g, buf, count, dt, peer, 0);
        default:
            return tutti_recv(g, buf, count, dt, peer, 0);
    }
}

static void test_p2p(void **state)
{
    static const char *const fns[] = {"tutti_isend", "tutti_irecv",
                                      "tutti_send", "tutti_recv"};
    tutti_context_t *ctx = *state;
    const tutti_dtype_t f32 = TUTTI_FLOAT32;
    float x[2] = {1, 1};
    tutti_request_t *r = NULL;
    char what[96];

    tutti_group_t *g = join_one(ctx, 0xe7), *left = join_one(ctx, 0xe8);
    tutti_group_leave(left);
    for (int i = 0; i < 4; i++) {
        const char *fn = fns[i];
#define P2P_FAILS(desc, call, ...)                                             \
    do {                                                                       \
        snprintf(what, sizeof(what), "%s(%s)", fn, desc);                      \
        FAILS_AS(what, TUTTI_ERR_INVALID_ARG, call, __VA_ARGS__);              \
    } while (0)
        P2P_FAILS("group NULL", p2p(i, NULL, x, 1, f32, 1, &r), fn,
                  "group is NULL");
        P2P_FAILS("group left", p2p(i, left, x, 1, f32, 1, &r), fn,
                  "was left");
        P2P_FAILS("dtype 999", p2p(i, g, x, 1, (tutti_dtype_t)999, 1, &r),
                  fn, "dtype 999");
        /* A group of one: the only rank is the caller. */
        P2P_FAILS("peer self", p2p(i, g, x, 1, f32, 0, &r), fn, "peer 0",
                  "another rank");
        P2P_FAILS("any source", p2p(i, g, x, 1, f32, -1, &r), fn,
                  "peer -1", "any source");
        P2P_FAILS("NULL buffer", p2p(i, g, NULL, 2, f32, 1, &r), fn,
                  "peer 1");
#undef P2P_FAILS
    }
    REFUSED(tutti_isend(g, x, 1, f32, 1, 0, NULL), "tutti_isend",
            "request_out");
    tutti_group_leave(g);
    no_failures();
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_context),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_execute),
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_blocking),
        cmocka_unit_test(test_p2p),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("last_error", tests,
                                       test_single_task_setup,
                                       test_context_teardown);
}
