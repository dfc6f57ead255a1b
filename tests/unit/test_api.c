/*
 * The host API against misuse: NULL pointers and handles, handles used
 * after tutti_group_leave() or tutti_request_free(), a request freed
 * twice, instance keys the library keeps for its blocking helpers, a
 * group joined twice as one device, and a stale tutti_last_error() after
 * a later failure.  Each is refused with TUTTI_ERR_INVALID_ARG (or the
 * call's own error) and a detail naming what was wrong, never a crash.
 * A test name as argument runs that test alone.
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

/* @p st is TUTTI_ERR_INVALID_ARG and the last error mentions @p word. */
#define assert_refused(st, word)                                          \
    do {                                                                  \
        tutti_status_t st_ = (st);                                        \
        if (st_ != TUTTI_ERR_INVALID_ARG)                                 \
            fail_msg("%s: %s, expected ERR_INVALID_ARG", #st,             \
                     tutti_status_name(st_));                             \
        if (strstr(tutti_last_error(), (word)) == NULL)                   \
            fail_msg("%s: last error '%s' does not name '%s'", #st,       \
                     tutti_last_error(), (word));                         \
    } while (0)

/* The last error mentions @p word (after a void call). */
#define assert_named(word)                                                \
    do {                                                                  \
        if (strstr(tutti_last_error(), (word)) == NULL)                   \
            fail_msg("last error '%s' does not name '%s'",                \
                     tutti_last_error(), (word));                         \
    } while (0)

static tutti_group_t *join_one(tutti_context_t *ctx, uint64_t key)
{
    tutti_group_t *g = NULL;
    assert_int_equal(test_join(ctx, key, 1, 0, 5, &g), TUTTI_OK);
    assert_non_null(g);
    return g;
}

/* Every public entry given NULL where it needs an object. */
static void test_null_arguments(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_group_params_t gp;
    tutti_instance_params_t ip;
    tutti_group_t *g = NULL;
    tutti_request_t *r = NULL;
    tutti_module_info_t mi;
    tutti_impl_info_t ii;
    tutti_select_query_t q;
    tutti_locality_t loc;
    tutti_request_info_t info;
    const char *impl;
    char buf[64];
    uint64_t sum;
    size_t index;
    float x = 1;

    tutti_group_params_init(&gp);
    assert_refused(tutti_group_join(NULL, &gp, &g), "ctx");
    assert_null(g);
    assert_refused(tutti_group_join(ctx, &gp, NULL), "group_out");
    assert_refused(tutti_group_join(ctx, NULL, &g), "params");
    assert_refused(tutti_info_module(NULL, 0, &mi), "ctx");
    assert_refused(tutti_info_module(ctx, 0, NULL), "info_out");
    assert_refused(tutti_info_impl(NULL, 0, &ii), "ctx");
    assert_refused(tutti_info_impl(ctx, 0, NULL), "info_out");
    memset(&q, 0, sizeof(q));
    assert_refused(tutti_info_explain(NULL, &q, buf, sizeof(buf), &impl),
                   "ctx");
    assert_refused(tutti_info_explain(ctx, NULL, buf, sizeof(buf), &impl),
                   "query");
    assert_refused(tutti_info_explain(ctx, &q, NULL, 8, &impl), "buf");
    assert_refused(tutti_info_explain(ctx, &q, buf, sizeof(buf), NULL),
                   "impl_out");
    tutti_info_print_config(NULL, stderr);
    assert_named("ctx");
    tutti_info_print_settings(ctx, NULL);
    assert_named("file");
    assert_refused(tutti_context_sum(NULL, 1, &sum), "ctx");
    assert_refused(tutti_context_sum(ctx, 1, NULL), "sum_out");
    assert_refused(tutti_abort(NULL, "x"), "ctx");
    assert_int_equal(tutti_context_task(NULL), -1);
    assert_named("ctx");
    assert_int_equal(tutti_context_num_tasks(NULL), -1);
    assert_refused(tutti_context_create(NULL, NULL), "ctx_out");
    tutti_context_params_init(NULL);
    tutti_group_params_init(NULL);
    tutti_instance_params_init(NULL);
    tutti_context_destroy(NULL);

    assert_int_equal(tutti_group_rank(NULL), -1);
    assert_named("group");
    assert_int_equal(tutti_group_size(NULL), -1);
    assert_refused(tutti_group_locality(NULL, 0, &loc), "group");
    assert_null(tutti_group_host(NULL, 0));
    assert_null(tutti_group_pci_bus_id(NULL, 0));
    tutti_group_leave(NULL);

    g = join_one(ctx, 0xa1);
    assert_refused(tutti_group_locality(g, 0, NULL), "locality_out");
    test_params(&ip, 5, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    assert_refused(tutti_execute(NULL, &ip, &x, &x, &r), "group");
    assert_refused(tutti_execute(g, &ip, &x, &x, NULL), "request_out");
    assert_refused(tutti_execute(g, NULL, &x, &x, &r), "params");
    assert_refused(tutti_allreduce(NULL, &x, &x, 1, TUTTI_FLOAT32,
                                   TUTTI_OP_SUM), "group");
    assert_refused(tutti_barrier(NULL), "group");
    assert_refused(tutti_allgatherv(NULL, &x, 1, &x, 1, TUTTI_FLOAT32, NULL,
                                    NULL), "group");
    assert_refused(tutti_request_test(NULL), "request");
    assert_refused(tutti_request_wait(NULL), "request");
    assert_refused(tutti_request_wait_all(NULL, 1), "requests");
    tutti_request_t *none[2] = {NULL, NULL};
    assert_refused(tutti_request_wait_all(none, 2), "request");
    assert_refused(tutti_request_wait_any(none, 2, &index), "request");
    assert_int_equal(tutti_execute(g, &ip, &x, &x, &r), TUTTI_OK);
    assert_refused(tutti_request_wait_any(&r, 1, NULL), "index_out");
    assert_int_equal(tutti_request_wait(r), TUTTI_OK);
    tutti_request_info(NULL, &info);
    assert_named("request");
    tutti_request_info(r, NULL);
    assert_named("info_out");
    tutti_request_set_callback(NULL, NULL, NULL);
    assert_named("request");
    tutti_request_free(NULL);
    tutti_request_free(r);
    tutti_group_leave(g);
}

/* A group used after it was left, and a request of it kept past that. */
static void test_use_after_leave(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_instance_params_t ip;
    tutti_request_t *r, *kept;
    float x = 1, y = 0;

    tutti_group_t *g = join_one(ctx, 0xa2);
    test_params(&ip, 7, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    assert_int_equal(tutti_execute(g, &ip, &x, &y, &kept), TUTTI_OK);
    assert_int_equal(tutti_request_wait(kept), TUTTI_OK);
    tutti_group_leave(g);
    assert_refused(tutti_execute(g, &ip, &x, &y, &r), "left");
    assert_int_equal(tutti_group_rank(g), -1);
    assert_int_equal(tutti_group_size(g), -1);
    assert_refused(tutti_allreduce(g, &x, &y, 1, TUTTI_FLOAT32,
                                   TUTTI_OP_SUM), "left");
    tutti_group_leave(g); /* twice: refused, no crash */
    assert_named("left");
    assert_refused(tutti_request_test(kept), "request");
    assert_refused(tutti_request_wait(kept), "request");
    tutti_request_free(kept);
    assert_named("request");
}

/* A request freed twice, or tested after it was freed. */
static void test_request_double_free(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_instance_params_t ip;
    tutti_request_t *r, *r1, *r2;
    float x = 1, y = 0, z = 0;

    tutti_group_t *g = join_one(ctx, 0xa3);
    test_params(&ip, 9, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    assert_int_equal(tutti_execute(g, &ip, &x, &y, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_OK);
    tutti_request_free(r);
    tutti_request_free(r);
    assert_named("freed");
    assert_refused(tutti_request_test(r), "freed");
    assert_refused(tutti_request_wait(r), "freed");
    /* The free list was not corrupted: two requests in flight at once are
     * two requests. */
    assert_int_equal(tutti_execute(g, &ip, &x, &y, &r1), TUTTI_OK);
    ip.instance_key = 10;
    assert_int_equal(tutti_execute(g, &ip, &x, &z, &r2), TUTTI_OK);
    assert_ptr_not_equal(r1, r2);
    assert_int_equal(tutti_request_wait(r1), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r2), TUTTI_OK);
    assert_true(y == 1.0f && z == 1.0f);
    tutti_request_free(r1);
    tutti_request_free(r2);
    tutti_group_leave(g);
}

/* Keys at or above 2^63 are the blocking helpers'. */
static void test_reserved_instance_key(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_instance_params_t ip;
    tutti_request_t *r = NULL;
    float x = 2, y = 0;

    tutti_group_t *g = join_one(ctx, 0xa4);
    test_params(&ip, 1ULL << 63, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 1);
    assert_refused(tutti_execute(g, &ip, &x, &y, &r), "0x8000000000000000");
    assert_null(r);
    ip.instance_key = UINT64_MAX - 1;
    assert_refused(tutti_execute(g, &ip, &x, &y, &r), "reserved");
    /* The helpers still have them. */
    assert_int_equal(tutti_allreduce(g, &x, &y, 1, TUTTI_FLOAT32,
                                     TUTTI_OP_SUM), TUTTI_OK);
    assert_true(y == 2.0f);
    assert_int_equal(tutti_barrier(g), TUTTI_OK);
    tutti_group_leave(g);
}

/* One device joins a group once at a time. */
static void test_double_join(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_group_t *g2 = NULL;

    tutti_group_t *g = join_one(ctx, 0xa5);
    assert_refused(test_join(ctx, 0xa5, 1, 0, 5, &g2), "0xa5");
    assert_named("cpu:0");
    assert_null(g2);
    assert_int_equal(tutti_group_rank(g), 0);
    tutti_group_leave(g);
    /* Left: it may join again. */
    g = join_one(ctx, 0xa5);
    tutti_group_leave(g);
}

/* A failure that follows another leaves its own detail, not the old one. */
static void test_last_error_not_stale(void **state)
{
    tutti_context_t *ctx = *state;
    tutti_instance_params_t ip;
    tutti_module_info_t mi;
    tutti_impl_info_t ii;
    tutti_request_t *r;
    float x = 1;

    tutti_group_t *g = join_one(ctx, 0xa6);
    test_params(&ip, 11, TUTTI_COLL_ALLREDUCE, (tutti_dtype_t)999, 1);
    assert_int_not_equal(tutti_execute(g, &ip, &x, &x, &r), TUTTI_OK);
    assert_non_null(strstr(tutti_last_error(), "999"));
    assert_int_equal(tutti_info_module(ctx, 100000, &mi),
                     TUTTI_ERR_NOT_FOUND);
    assert_named("100000");
    assert_int_not_equal(tutti_execute(g, &ip, &x, &x, &r), TUTTI_OK);
    assert_int_equal(tutti_info_impl(ctx, 200000, &ii), TUTTI_ERR_NOT_FOUND);
    assert_named("200000");
    tutti_select_query_t q;
    const char *impl;
    char buf[256];
    memset(&q, 0, sizeof(q));
    q.collective = TUTTI_COLL_ALLREDUCE;
    q.dtype = TUTTI_FLOAT32;
    q.group_size = 1;
    q.num_tasks = 1;
    q.device_type = (tutti_device_type_t)77;
    assert_int_not_equal(tutti_execute(g, &ip, &x, &x, &r), TUTTI_OK);
    assert_int_not_equal(tutti_info_explain(ctx, &q, buf, sizeof(buf), &impl),
                         TUTTI_OK);
    assert_null(strstr(tutti_last_error(), "999"));
    tutti_group_leave(g);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_use_after_leave),
        cmocka_unit_test(test_request_double_free),
        cmocka_unit_test(test_reserved_instance_key),
        cmocka_unit_test(test_double_join),
        cmocka_unit_test(test_last_error_not_stale),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("api", tests, test_single_task_setup,
                                       test_context_teardown);
}
