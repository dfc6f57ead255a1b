/*
 * What one progress pass costs against the number of executions in
 * flight, counted (not timed): the test module's TestGate counts every
 * call to its progress in the execution's output, and ends an execution
 * only once its caller opens the execution's gate (its input).  With
 * 10,000 in flight, waiting for or testing one of them advances that one
 * and a bounded share of the others per pass (a pass over all of them
 * made each wait cost 10,000 progress calls per pass); the others are
 * still advanced, round the list, so one that only the others can
 * unblock ends too.  A test name as argument runs that test alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "members.h"
#include "test_util.h"

#define GOOD_DIR TUTTI_TEST_BUILDDIR "/tests/modules/good"
#define IN_FLIGHT 10000

typedef struct {
    tutti_context_t *ctx;
    tutti_group_t *g;
    tutti_request_t *req[IN_FLIGHT];
    int32_t gate[IN_FLIGHT];
    int32_t calls[IN_FLIGHT];
} fixture_t;

static int setup(void **state)
{
    tutti_context_params_t p;
    fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    test_one_task_params(&p, "", GOOD_DIR, "off");
    if (tutti_context_create(&p, &f->ctx) != TUTTI_OK ||
        test_join(f->ctx, 91, 1, 0, 20, &f->g) != TUTTI_OK) {
        fprintf(stderr, "setup: %s\n", tutti_last_error());
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    tutti_group_leave(f->g);
    tutti_context_destroy(f->ctx);
    free(f);
    return 0;
}

/* Issues IN_FLIGHT executions of distinct TestGate instances, each with
 * its gate closed. */
static void issue_all(fixture_t *f, uint64_t base)
{
    tutti_instance_params_t ip;
    for (int i = 0; i < IN_FLIGHT; i++) {
        test_params(&ip, base + (uint64_t)i, TUTTI_COLL_ALLREDUCE,
                    TUTTI_INT32, 1);
        ip.algorithm = "TestGate";
        f->gate[i] = 0;
        tutti_status_t st = tutti_execute(f->g, &ip, &f->gate[i],
                                          &f->calls[i], &f->req[i]);
        if (st != TUTTI_OK)
            fail_msg("execute %d: %s: %s", i, tutti_status_name(st),
                     tutti_last_error());
    }
}

static long total_calls(const fixture_t *f)
{
    long n = 0;
    for (int i = 0; i < IN_FLIGHT; i++)
        n += f->calls[i];
    return n;
}

/* Every gate opened, every execution waited for and freed: each ended
 * with TUTTI_OK after at least one progress call. */
static void finish_all(fixture_t *f)
{
    for (int i = 0; i < IN_FLIGHT; i++)
        __atomic_store_n(&f->gate[i], 1, __ATOMIC_RELEASE);
    long before = total_calls(f);
    assert_int_equal(tutti_request_wait_all(f->req, IN_FLIGHT), TUTTI_OK);
    /* Ending 10,000 costs a few calls each, not 10,000 each. */
    long spent = total_calls(f) - before;
    if (spent > 4L * IN_FLIGHT)
        fail_msg("ending %d executions took %ld progress calls",
                 IN_FLIGHT, spent);
    for (int i = 0; i < IN_FLIGHT; i++) {
        if (f->calls[i] < 1)
            fail_msg("execution %d ended without a progress call", i);
        tutti_request_free(f->req[i]);
    }
}

/* Waiting for the one whose gate is open costs a handful of progress
 * calls in all, whatever else is in flight; testing a closed one too. */
static void test_wait_one_of_many(void **state)
{
    fixture_t *f = *state;
    issue_all(f, 0x10000);
    __atomic_store_n(&f->gate[IN_FLIGHT - 1], 1, __ATOMIC_RELEASE);
    long before = total_calls(f);
    tutti_status_t st = tutti_request_wait(f->req[IN_FLIGHT - 1]);
    if (st != TUTTI_OK)
        fail_msg("wait: %s: %s", tutti_status_name(st), tutti_last_error());
    long spent = total_calls(f) - before;
    if (spent > 64)
        fail_msg("waiting for 1 of %d in flight took %ld progress calls "
                 "(expected a handful)", IN_FLIGHT, spent);
    assert_int_equal(f->calls[IN_FLIGHT - 1], 1);

    before = total_calls(f);
    for (int k = 0; k < 1000; k++)
        assert_int_equal(tutti_request_test(f->req[0]), TUTTI_INPROGRESS);
    spent = total_calls(f) - before;
    if (spent > 64L * 1000)
        fail_msg("1000 tests of 1 of %d in flight took %ld progress calls "
                 "(expected a handful each)", IN_FLIGHT, spent);
    /* The focus is advanced on each test. */
    assert_true(f->calls[0] >= 1000);
    finish_all(f);
}

/* Opens gate @p arg: the callback of another execution. */
static void open_gate(tutti_request_t *r, tutti_status_t st, void *arg)
{
    (void)r;
    (void)st;
    __atomic_store_n((int32_t *)arg, 1, __ATOMIC_RELEASE);
}

/* The executions nobody waits for still advance: the first waits for a
 * gate that only the end of one in the middle opens, whose own gate is
 * open but which nobody waits for or tests. */
static void test_others_still_advance(void **state)
{
    fixture_t *f = *state;
    int mid = IN_FLIGHT / 2;
    issue_all(f, 0x20000);
    tutti_request_set_callback(f->req[mid], open_gate, &f->gate[0]);
    __atomic_store_n(&f->gate[mid], 1, __ATOMIC_RELEASE);
    assert_int_equal(tutti_request_wait(f->req[0]), TUTTI_OK);
    assert_int_equal(tutti_request_test(f->req[mid]), TUTTI_OK);
    assert_int_equal(f->gate[0], 1);
    /* Each execution was advanced once at most per pass, and the wait
     * took fewer passes than a pass per execution. */
    for (int i = 1; i < IN_FLIGHT; i++) {
        if (i != mid && f->calls[i] > f->calls[0])
            fail_msg("execution %d: %d progress calls, the one waited for "
                     "%d", i, f->calls[i], f->calls[0]);
    }
    finish_all(f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_one_of_many),
        cmocka_unit_test(test_others_still_advance),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("inflight", tests, setup, teardown);
}
