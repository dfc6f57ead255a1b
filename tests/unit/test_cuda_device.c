/*
 * The device path of the core's CUDA executions, on a machine without a
 * GPU, under the double of the CUDA operations (fake_cuda.h):
 * implementations on device memory (mod_group's TestDeviceCopy and
 * TestDeviceLate) get no gate once resolved, the caller's stream held
 * otherwise, their work on the instance's own stream when they could not
 * queue it during the call, scaling by the stream's kernels as the host
 * computes it, and a captured stream; staging buffers outgrown while a
 * gate is closed are freed only once it opens.
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

#include <tutti/tutti.h>

#include "tutti-build.h"

#include "base/reduce.h"
#include "device/device.h"
#include "device/stage.h"
#include "fake_cuda.h"
#include "members.h"
#include "cuda_members.h"
#include "test_util.h"

/* ---- the device path (TestDeviceCopy, TestDeviceLate) ------------------- */

#define STREAM_TEXT 128

/* Copies of the device implementations so far, and the last one's
 * stream. */
static void *copies(int *n_out)
{
    return fake_cuda_device_copy_stream(n_out);
}

/* Whether the caller's stream ran everything once pumped: else the test
 * fails, and what is left there is dropped (it would hold later work, and
 * write to buffers gone by then). */
static int stream_done(cm_t *m, const char *what)
{
    char q[STREAM_TEXT];
    fake_cuda_pump();
    if (fake_cuda_queued(m->stream) == 0)
        return 1;
    CHECK(m, 0, "%s: the caller's stream is still held after the request "
          "completed: \"%s\" left there", what,
          fake_cuda_describe(m->stream, q, sizeof(q)));
    fake_cuda_drop(m->stream);
    return 0;
}

/* Waits for @p r by tests and pumps, checking after each that the
 * consumer copy into @p seen (first word -7 until it runs) is still held;
 * the request's status. */
static tutti_status_t wait_held(cm_t *m, tutti_request_t *r,
                                const int32_t *seen, const char *what)
{
    tutti_status_t st;
    for (int i = 0; (st = tutti_request_test(r)) == TUTTI_INPROGRESS; i++) {
        fake_cuda_pump();
        CHECK(m, seen[0] == -7, "%s: the consumer ran before the request "
              "completed", what);
        if (i == 20000) /* 10 s */
            return tutti_request_wait(r);
        usleep(500);
    }
    return st;
}

/* One execution the core must hold: its work cannot go on the caller's
 * stream within tutti_execute (the instance's first, or TestDeviceLate's
 * run queuing nothing).  The caller's stream gets an event and a gate,
 * the implementation's copy goes on another stream (out[0]), and a
 * consumer queued after the call sees the result once the request
 * completed. */
static void held_once(cm_t *m, tutti_group_t *g, tutti_instance_params_t *p,
                      const int32_t *send, int32_t *recv, const char *what)
{
    int32_t seen[COUNT];
    char q[STREAM_TEXT];
    tutti_request_t *r;
    int before, after;
    for (int i = 0; i < COUNT; i++)
        seen[i] = recv[i] = -7;
    copies(&before);
    p->stream = m->stream;
    tutti_status_t st = tutti_execute(g, p, send, recv, &r);
    CHECK(m, st == TUTTI_OK, "%s: %s", what, tutti_last_error());
    if (st != TUTTI_OK)
        return;
    fake_cuda_describe(m->stream, q, sizeof(q));
    CHECK(m, strcmp(q, "record gate") == 0, "%s: the caller's stream holds "
          "\"%s\", expected \"record gate\"", what, q);
    copies(&after);
    CHECK(m, after == before, "%s: %d copies queued within tutti_execute",
          what, after - before);
    fake_cuda_enqueue_copy(m->stream, seen, recv, sizeof(seen));
    st = wait_held(m, r, seen, what);
    tutti_request_free(r);
    CHECK(m, st == TUTTI_OK, "%s: %s", what, tutti_last_error());
    void *s = copies(&after);
    CHECK(m, after == before + 1 && s != m->stream && s != NULL, "%s: %d "
          "copies, the last on stream %p (the caller's: %p), expected one "
          "on the instance's own", what, after - before, s, m->stream);
    m->out[0] = (uint64_t)(uintptr_t)s;
    if (!stream_done(m, what))
        return;
    CHECK(m, memcmp(seen, send, sizeof(seen)) == 0, "%s: the consumer saw "
          "%d %d.., not the result %d %d..", what, seen[0], seen[1], send[0],
          send[1]);
}

static void fill(int32_t *send)
{
    for (int i = 0; i < COUNT; i++)
        send[i] = 3 * i - 5;
}

/* A resolved TestDeviceCopy queues on the caller's stream within
 * tutti_execute, no gate, and completes once that work ran. */
static void device_fast_body(cm_t *m, tutti_group_t *g)
{
    int32_t *send = dev_alloc(COUNT * 4), *recv = dev_alloc(COUNT * 4);
    int32_t seen[COUNT];
    char q[STREAM_TEXT];
    tutti_instance_params_t p;
    tutti_request_t *r;
    fill(send);
    test_params(&p, 0xdf, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = "TestDeviceCopy";
    held_once(m, g, &p, send, recv, "first");
    for (int in_place = 0; in_place < 2 && !m->fail[0]; in_place++) {
        const char *what = in_place ? "in place" : "out of place";
        int32_t *out = in_place ? send : recv;
        int before, after;
        size_t gates = fake_cuda_gates(m->stream);
        memset(recv, 0xee, COUNT * 4);
        memset(seen, 0xff, sizeof(seen));
        seen[0] = -7;
        copies(&before);
        fake_cuda_lazy(1); /* nothing runs until pumped */
        tutti_status_t st = tutti_execute(g, &p, send, out, &r);
        CHECK(m, st == TUTTI_OK, "%s: %s", what, tutti_last_error());
        if (st != TUTTI_OK)
            break;
        void *s = copies(&after);
        fake_cuda_describe(m->stream, q, sizeof(q));
        CHECK(m, strcmp(q, in_place ? "record" : "mcopy record") == 0,
              "%s: the caller's stream holds \"%s\"", what, q);
        CHECK(m, fake_cuda_gates(m->stream) == gates, "%s: a gate on the "
              "caller's stream", what);
        CHECK(m, after == before + !in_place && (in_place || s == m->stream),
              "%s: %d copies, the last on %p, not the caller's %p", what,
              after - before, s, m->stream);
        fake_cuda_enqueue_copy(m->stream, seen, out, sizeof(seen));
        st = tutti_request_test(r);
        CHECK(m, st == TUTTI_INPROGRESS, "%s: %s before the stream's work "
              "ran", what, tutti_status_name(st));
        CHECK(m, seen[0] == -7 && (in_place || recv[0] != send[0]),
              "%s: work ran before the pump", what);
        fake_cuda_pump();
        st = tutti_request_test(r);
        CHECK(m, st == TUTTI_OK, "%s: %s after the stream's work ran", what,
              tutti_status_name(st));
        fake_cuda_lazy(0);
        if (st == TUTTI_INPROGRESS)
            st = tutti_request_wait(r);
        tutti_request_free(r);
        CHECK(m, memcmp(out, send, sizeof(seen)) == 0 &&
                     memcmp(seen, send, sizeof(seen)) == 0,
              "%s: result %d.., consumer %d.., input %d..", what, out[0],
              seen[0], send[0]);
    }
    dev_free(send);
    dev_free(recv);
}

static void test_device_fast_path(void **state)
{
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0xdf, 1, NULL, TUTTI_ORDER_TASK, device_fast_body,
                NULL, m);
}

/* The first execution of an instance (resolved after tutti_execute
 * returns, even in a group of one) is held; m->arg the implementation. */
static void device_first_body(cm_t *m, tutti_group_t *g)
{
    int32_t *send = dev_alloc(COUNT * 4), *recv = dev_alloc(COUNT * 4);
    tutti_instance_params_t p;
    fill(send);
    test_params(&p, 0xd1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = m->arg;
    held_once(m, g, &p, send, recv, "first");
    dev_free(send);
    dev_free(recv);
}

static void test_device_first_execution_held(void **state)
{
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0xd1, 1, NULL, TUTTI_ORDER_TASK, device_first_body,
                "TestDeviceCopy", m);
}

/* TestDeviceLate, resolved: run queues nothing, so the core holds the
 * caller's stream and progress queues on the instance's stream, the same
 * for each execution. */
static void device_late_body(cm_t *m, tutti_group_t *g)
{
    int32_t *send = dev_alloc(COUNT * 4), *recv = dev_alloc(COUNT * 4);
    tutti_instance_params_t p;
    fill(send);
    test_params(&p, 0xd2, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = "TestDeviceLate";
    held_once(m, g, &p, send, recv, "first");
    uint64_t own = m->out[0];
    for (int i = 0; i < 2 && !m->fail[0]; i++) {
        send[i] += 100;
        held_once(m, g, &p, send, recv, i ? "third" : "second");
        CHECK(m, m->out[0] == own, "the copies went on two streams");
    }
    dev_free(send);
    dev_free(recv);
}

static void test_device_late_work_on_the_instances_stream(void **state)
{
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0xd1a, 1, NULL, TUTTI_ORDER_TASK, device_first_body,
                "TestDeviceLate", m);
    run_members(*state, 0xd2, 1, NULL, TUTTI_ORDER_TASK, device_late_body,
                NULL, m);
}

/* avg, pre_scale and post_scale by kernels on the stream, against the
 * host's functions (avg in a group of one divides by 1). */
static const coll_case_t scale_cases[] = {
    {"avg f32 scaled", TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, TUTTI_OP_AVG, 0,
     0.3, 1.7},
    {"avg f32 scaled in place", TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32,
     TUTTI_OP_AVG, 1, 0.3, 1.7},
    {"avg i32", TUTTI_COLL_ALLREDUCE, TUTTI_INT32, TUTTI_OP_AVG, 0, 1, 1},
    {"avg i32 in place", TUTTI_COLL_ALLREDUCE, TUTTI_INT32, TUTTI_OP_AVG, 1,
     1, 1},
};

static void device_scale_body(cm_t *m, tutti_group_t *g)
{
    char *send = dev_alloc(COUNT * 4), *recv = dev_alloc(COUNT * 4);
    unsigned char in[COUNT * 4], want[COUNT * 4];
    tutti_instance_params_t p;
    for (size_t c = 0;
         c < sizeof(scale_cases) / sizeof(scale_cases[0]) && !m->fail[0];
         c++) {
        const coll_case_t *k = &scale_cases[c];
        for (int i = 0; i < COUNT; i++) {
            if (k->dtype == TUTTI_FLOAT32)
                ((float *)in)[i] = (float)(i - 2) * 1.1f + 0.37f;
            else
                ((int32_t *)in)[i] = 7 * i - 13;
        }
        memcpy(want, in, sizeof(in));
        if (k->pre_scale != 1)
            tutti__scale(k->dtype, want, want, COUNT, k->pre_scale);
        tutti__divide(k->dtype, want, COUNT, 1);
        if (k->post_scale != 1)
            tutti__scale(k->dtype, want, want, COUNT, k->post_scale);
        test_params(&p, 0x5c + c, k->coll, k->dtype, COUNT);
        p.algorithm = "TestDeviceCopy";
        p.op = k->op;
        p.pre_scale = k->pre_scale;
        p.post_scale = k->post_scale;
        /* The first execution held, the second on the caller's stream. */
        for (int run = 0; run < 2; run++) {
            char *out = k->in_place ? send : recv;
            memcpy(send, in, sizeof(in));
            if (!k->in_place)
                memset(recv, 0xee, sizeof(in));
            tutti_status_t st = exec_wait(m, g, &p, send, out);
            CHECK(m, st == TUTTI_OK, "%s: %s", k->what, tutti_last_error());
            CHECK(m, memcmp(out, want, sizeof(want)) == 0, "%s, execution "
                  "%d: the result differs from the host's", k->what, run + 1);
            CHECK(m, k->in_place || memcmp(send, in, sizeof(in)) == 0,
                  "%s: the input changed", k->what);
            if (!stream_done(m, k->what))
                break;
        }
    }
    dev_free(send);
    dev_free(recv);
}

static void test_device_scaling_as_the_host(void **state)
{
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0xd5, 1, NULL, TUTTI_ORDER_TASK, device_scale_body,
                NULL, m);
    /* Its first scale kernel runs while its own gate is closed: loaded
     * with the others at set_device, it needs no load then. */
    char why[300] = "";
    if (fake_cuda_violations(why, sizeof(why)) != 0)
        fail_msg("%s", why);
}

/* A resolved device instance on a captured stream: its work goes into
 * the graph (the double counts it and runs nothing) and the request
 * completes at once.  An unresolved one cannot be queued there. */
static void device_capture_body(cm_t *m, tutti_group_t *g)
{
    int32_t *send = dev_alloc(COUNT * 4), *recv = dev_alloc(COUNT * 4);
    tutti_instance_params_t p;
    tutti_request_t *r;
    fill(send);
    test_params(&p, 0xca9, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = "TestDeviceCopy";
    tutti_status_t st = exec_wait(m, g, &p, send, recv);
    CHECK(m, st == TUTTI_OK, "resolving: %s", tutti_last_error());
    if (!stream_done(m, "resolving"))
        goto out;
    memset(recv, 0xee, COUNT * 4);
    fake_cuda_lazy(1);
    fake_cuda_set_capturing(m->stream, 1);
    st = tutti_execute(g, &p, send, recv, &r);
    CHECK(m, st == TUTTI_OK, "captured: %s", tutti_last_error());
    if (st == TUTTI_OK) {
        st = tutti_request_test(r);
        CHECK(m, st == TUTTI_OK, "captured: %s at once, expected TUTTI_OK",
              tutti_status_name(st));
        if (st == TUTTI_INPROGRESS) {
            fake_cuda_lazy(0);
            fake_cuda_set_capturing(m->stream, 0);
            st = tutti_request_wait(r);
        }
        tutti_request_free(r);
    }
    CHECK(m, fake_cuda_captured(m->stream) == 1 &&
                 fake_cuda_queued(m->stream) == 0,
          "captured: %zu operations captured, %zu queued; expected the "
          "copy captured", fake_cuda_captured(m->stream),
          fake_cuda_queued(m->stream));
    /* Unresolved: refused before anything is queued or captured. */
    p.instance_key = 0xcaa;
    st = tutti_execute(g, &p, send, recv, &r);
    CHECK(m, st == TUTTI_ERR_UNSUPPORTED &&
                 strstr(tutti_last_error(), "captured") != NULL,
          "captured, unresolved: %s: %s", tutti_status_name(st),
          tutti_last_error());
    if (st == TUTTI_OK) {
        tutti_request_wait(r);
        tutti_request_free(r);
    }
    CHECK(m, fake_cuda_captured(m->stream) == 1,
          "the refused call captured %zu operations",
          fake_cuda_captured(m->stream) - 1);
    fake_cuda_set_capturing(m->stream, 0);
    fake_cuda_lazy(0);
    fake_cuda_pump();
    CHECK(m, fake_cuda_queued(m->stream) == 0 && (uint32_t)recv[0] ==
          0xeeeeeeeeu, "the captured work ran (recv %d)", recv[0]);
out:
    dev_free(send);
    dev_free(recv);
}

static void test_captured_stream_on_the_device_path(void **state)
{
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0xca9, 1, NULL, TUTTI_ORDER_TASK,
                device_capture_body, NULL, m);
}

/* A staging buffer outgrown while a gate holds a caller's stream on its
 * device (its own instance's or another's) stays until the last gate
 * there opens: freeing pinned or device memory may wait for the device,
 * which waits for the gate.  With every gate open it goes at once, and an
 * instance destroyed while another's gate is closed leaves its memory
 * until then too. */
static void test_stage_frees_after_the_gate(void **state)
{
    const tutti__cuda_ops_t *ops;
    tutti__dstage_t *s = NULL, *other = NULL;
    void *caller = NULL, *ev = NULL, *ev2 = NULL, *dev = NULL;
    uint32_t seq = 0, seq2 = 0;
    char why[256];
    (void)state;
    fake_cuda_reset(1, NULL);
    ops = fake_cuda_ops();
    assert_int_equal(ops->set_device(0), 0);
    assert_int_equal(tutti__dstage_create(ops, 0, &s), TUTTI_OK);
    assert_int_equal(tutti__dstage_create(ops, 0, &other), TUTTI_OK);
    assert_int_equal(tutti__dstage_staging(s, 16, 16), TUTTI_OK);
    assert_int_equal(tutti__dstage_staging(other, 16, 16), TUTTI_OK);
    assert_int_equal(ops->stream_create(&caller), 0);
    assert_int_equal(ops->event_create(&ev), 0);
    assert_int_equal(ops->event_create(&ev2), 0);
    int live = fake_cuda_live();
    assert_int_equal(tutti__dstage_reserve(s, 4096, 16), TUTTI_OK);
    assert_int_equal(fake_cuda_live(), live); /* no gate: freed at once */
    assert_int_equal(tutti__dstage_closed(0), 0);

    /* Its own gate closed. */
    assert_int_equal(tutti__dstage_hold(s, caller, ev, &seq), TUTTI_OK);
    assert_int_equal(fake_cuda_gates(caller), 1);
    assert_int_equal(tutti__dstage_closed(0), 1);
    assert_int_equal(tutti__dstage_reserve(s, 8192, 32), TUTTI_OK);
    assert_int_equal(fake_cuda_live(), live + 2); /* both outgrown, kept */
    tutti__dstage_release(s, seq);
    tutti__dstage_release(s, seq); /* twice: counted once */
    assert_int_equal(tutti__dstage_closed(0), 0);
    assert_int_equal(fake_cuda_live(), live);

    /* Another instance's gate closed on the device: this one's outgrown
     * buffers, a device buffer and, destroyed, all of it wait. */
    assert_int_equal(tutti__dstage_hold(other, caller, ev2, &seq2),
                     TUTTI_OK);
    assert_int_equal(tutti__dstage_reserve(s, 16384, 64), TUTTI_OK);
    assert_int_equal(ops->dev_alloc(64, &dev), 0);
    tutti__dfree(ops, 0, dev, 0);
    assert_int_equal(fake_cuda_live(), live + 3);
    int before = fake_cuda_live();
    /* Its stream and events go (no wait for the device in that); its
     * gate word and two buffers are kept. */
    tutti__dstage_destroy(s);
    assert_int_equal(fake_cuda_live(), before - 3);
    assert_int_equal(fake_cuda_violations(why, sizeof(why)), 0);
    tutti__dstage_release(other, seq2);
    assert_int_equal(tutti__dstage_closed(0), 0);
    assert_int_equal(fake_cuda_live(), before - 9); /* and those six */
    assert_int_equal(fake_cuda_violations(why, sizeof(why)), 0);
    fake_cuda_pump();
    tutti__dstage_destroy(other);
    ops->event_destroy(ev);
    ops->event_destroy(ev2);
    ops->stream_destroy(caller);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_fast_path),
        cmocka_unit_test(test_device_first_execution_held),
        cmocka_unit_test(test_device_late_work_on_the_instances_stream),
        cmocka_unit_test(test_device_scaling_as_the_host),
        cmocka_unit_test(test_captured_stream_on_the_device_path),
        cmocka_unit_test(test_stage_frees_after_the_gate),
    };
    return cmocka_run_group_tests_name("cuda_device", tests, cuda_setup,
                                       cuda_teardown);
}
