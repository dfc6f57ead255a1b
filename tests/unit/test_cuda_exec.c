/*
 * The core's CUDA execution path on a machine without a GPU: CUDA groups
 * of member threads run under a double of the CUDA operations table
 * (tests/common/fake_cuda.c) that simulates devices in host memory and
 * runs each stream's queue in order.  Staged collectives against a host
 * computation, the gate on the caller's stream, pointer checks, captured
 * streams, PCI bus ids and topology order, per-group module state
 * (tests/modules/mod_group.c), ordered launches, supports() in
 * selection, an abort in flight; and, without the double, the join's
 * refusal naming why.  The device path: test_cuda_device.c.
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
#include "fake_cuda.h"
#include "members.h"
#include "cuda_members.h"
#include "test_util.h"


/* ---- collectives, staged, against a host computation ------------------ */

static const coll_case_t cases[] = {
    {"allreduce sum f32", TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, TUTTI_OP_SUM,
     0, 1, 1},
    {"allreduce sum i32 in place", TUTTI_COLL_ALLREDUCE, TUTTI_INT32,
     TUTTI_OP_SUM, 1, 1, 1},
    {"allreduce avg f32 scaled", TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32,
     TUTTI_OP_AVG, 0, 0.5, 0.25},
    {"allreduce avg f32 scaled in place", TUTTI_COLL_ALLREDUCE,
     TUTTI_FLOAT32, TUTTI_OP_AVG, 1, 0.5, 0.25},
    {"broadcast i32 in place", TUTTI_COLL_BROADCAST, TUTTI_INT32,
     TUTTI_OP_SUM, 1, 1, 1},
    {"allgather f32 in place", TUTTI_COLL_ALLGATHER, TUTTI_FLOAT32,
     TUTTI_OP_SUM, 1, 1, 1},
    {"reduce_scatter sum i32", TUTTI_COLL_REDUCE_SCATTER, TUTTI_INT32,
     TUTTI_OP_SUM, 0, 1, 1},
    {"alltoall f32", TUTTI_COLL_ALLTOALL, TUTTI_FLOAT32, TUTTI_OP_SUM, 0, 1,
     1},
    {"gather i32", TUTTI_COLL_GATHER, TUTTI_INT32, TUTTI_OP_SUM, 0, 1, 1},
    {"permute f32", TUTTI_COLL_PERMUTE, TUTTI_FLOAT32, TUTTI_OP_SUM, 0, 1, 1},
};
#define NUM_CASES (sizeof(cases) / sizeof(cases[0]))

/* Element i of rank r's input: small values, exact in float32 and in
 * every sum here, so the order of a sum does not matter. */
static double value(int r, size_t i)
{
    return (r + 1) * 4.0 + (double)i * 0.5;
}

static void put(tutti_dtype_t dt, void *buf, size_t i, double v)
{
    if (dt == TUTTI_INT32)
        ((int32_t *)buf)[i] = (int32_t)(v * 2);
    else
        ((float *)buf)[i] = (float)v;
}

/* Rank r's input of @p n_in elements (scaled by pre_scale). */
static void input(const coll_case_t *c, int r, size_t n_in, void *buf,
                  int scaled)
{
    for (size_t i = 0; i < n_in; i++)
        put(c->dtype, buf, i, value(r, i) * (scaled ? c->pre_scale : 1));
}

/* What rank @p rank of @p n gets, computed on the host. */
static void expected(const coll_case_t *c, int rank, int n, void *out)
{
    size_t es = tutti_dtype_size(c->dtype), cnt = COUNT;
    unsigned char in[MAX_MEMBERS][MAX_MEMBERS * COUNT * 4];
    for (int r = 0; r < n; r++)
        input(c, r, (size_t)n * cnt, in[r], 1);
    switch (c->coll) {
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_REDUCE_SCATTER: {
        size_t off = c->coll == TUTTI_COLL_ALLREDUCE ? 0 : (size_t)rank * cnt;
        memcpy(out, in[0] + off * es, cnt * es);
        for (int r = 1; r < n; r++)
            tutti__reduce(c->dtype, TUTTI_OP_SUM, out, out, in[r] + off * es,
                          cnt);
        if (c->op == TUTTI_OP_AVG)
            tutti__divide(c->dtype, out, cnt, n);
        if (c->post_scale != 1)
            tutti__scale(c->dtype, out, out, cnt, c->post_scale);
        break;
    }
    case TUTTI_COLL_BROADCAST:
        memcpy(out, in[n - 1], cnt * es);
        break;
    case TUTTI_COLL_ALLGATHER:
    case TUTTI_COLL_GATHER:
        for (int r = 0; r < n; r++)
            memcpy((char *)out + (size_t)r * cnt * es, in[r], cnt * es);
        break;
    case TUTTI_COLL_ALLTOALL:
        for (int r = 0; r < n; r++)
            memcpy((char *)out + (size_t)r * cnt * es,
                   in[r] + (size_t)rank * cnt * es, cnt * es);
        break;
    default: /* permute: from the rank that names this one */
        memcpy(out, in[(rank + n - 1) % n], cnt * es);
        break;
    }
}

static void run_case(cm_t *m, tutti_group_t *g, const coll_case_t *c,
                     uint64_t key)
{
    int n = tutti_group_size(g), rank = m->rank, perm[MAX_MEMBERS];
    size_t es = tutti_dtype_size(c->dtype), cnt = COUNT;
    size_t n_in = cnt, n_out = cnt, in_off = 0;
    switch (c->coll) {
    case TUTTI_COLL_ALLGATHER:
    case TUTTI_COLL_GATHER:
        n_out = (size_t)n * cnt;
        in_off = c->in_place ? (size_t)rank * cnt : 0;
        break;
    case TUTTI_COLL_REDUCE_SCATTER:
        n_in = (size_t)n * cnt;
        break;
    case TUTTI_COLL_ALLTOALL:
        n_in = n_out = (size_t)n * cnt;
        break;
    default:
        break;
    }
    size_t len = (n_in > n_out ? n_in : n_out) * es;
    unsigned char host[MAX_MEMBERS * COUNT * 4], want[MAX_MEMBERS * COUNT * 4];
    char *send = dev_alloc(len), *recv = c->in_place ? send : dev_alloc(len);
    CHECK(m, send && recv, "%s: no fake device memory", c->what);
    if (!send || !recv)
        return;
    input(c, rank, n_in, host, 0);
    memcpy(send + in_off * es, host, n_in * es);
    tutti_instance_params_t p;
    test_params(&p, key, c->coll, c->dtype, cnt);
    p.op = c->op;
    p.pre_scale = c->pre_scale;
    p.post_scale = c->post_scale;
    p.root = c->coll == TUTTI_COLL_BROADCAST ? n - 1 : 0;
    for (int r = 0; r < n; r++)
        perm[r] = (r + 1) % n;
    if (c->coll == TUTTI_COLL_PERMUTE)
        p.permutation = perm;
    int gets = c->coll != TUTTI_COLL_GATHER || rank == 0;
    tutti_status_t st = exec_wait(m, g, &p, send + in_off * es,
                                  c->in_place ? send
                                  : gets      ? recv
                                              : NULL);
    CHECK(m, st == TUTTI_OK, "%s: %s: %s", c->what, tutti_status_name(st),
          tutti_last_error());
    if (st == TUTTI_OK && gets) {
        expected(c, rank, n, want);
        CHECK(m, memcmp(recv, want, n_out * es) == 0,
              "%s: the result differs from the host's", c->what);
    }
    dev_free(send);
    if (!c->in_place)
        dev_free(recv);
}

static void all_cases(cm_t *m, tutti_group_t *g)
{
    for (size_t i = 0; i < NUM_CASES; i++)
        run_case(m, g, &cases[i], 100 + i);
    /* A second execution of one instance reuses its stage. */
    run_case(m, g, &cases[0], 100);
}

static void test_collectives_group_of_one(void **state)
{
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0xc1, 1, NULL, TUTTI_ORDER_TASK, all_cases, NULL, m);
}

static void test_collectives_group_of_three(void **state)
{
    cm_t m[3];
    fake_cuda_reset(3, NULL);
    run_members(*state, 0xc3, 3, NULL, TUTTI_ORDER_TASK, all_cases, NULL, m);
}

/* ---- the gate on the caller's stream ----------------------------------- */

/* A sum by TestUnordered; a consumer copy of the result queued on the
 * stream right after the call must wait for the result. */
static void gate_once(cm_t *m, tutti_group_t *g, int32_t *buf,
                      const char *which)
{
    int32_t seen[COUNT], want[COUNT];
    tutti_instance_params_t p;
    tutti_request_t *r;
    for (int i = 0; i < COUNT; i++) {
        buf[i] = i + 1;
        want[i] = (i + 1) * m->size;
        seen[i] = -7;
    }
    test_params(&p, 0x6a7e, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = "TestUnordered";
    p.stream = m->stream;
    tutti_status_t st = tutti_execute(g, &p, buf, buf, &r);
    CHECK(m, st == TUTTI_OK, "%s: %s", which, tutti_last_error());
    if (st != TUTTI_OK)
        return;
    fake_cuda_enqueue_copy(m->stream, seen, buf, sizeof(seen));
    fake_cuda_pump();
    CHECK(m, seen[0] == -7, "%s execution: the consumer queued after the "
          "call ran before the result was in place (saw %d)", which,
          seen[0]);
    st = tutti_request_wait(r);
    tutti_request_free(r);
    CHECK(m, st == TUTTI_OK, "%s: %s", which, tutti_last_error());
    fake_cuda_pump();
    CHECK(m, fake_cuda_queued(m->stream) == 0, "%s: %zu operations left on "
          "the caller's stream", which, fake_cuda_queued(m->stream));
    CHECK(m, memcmp(seen, want, sizeof(want)) == 0, "%s execution: the "
          "consumer saw %d %d.., not the result %d %d..", which, seen[0],
          seen[1], want[0], want[1]);
}

/* The first execution, which resolves the instance: tutti_execute
 * returns before its launch. */
static void gate_first(cm_t *m, tutti_group_t *g)
{
    int32_t *buf = dev_alloc(COUNT * sizeof(int32_t));
    gate_once(m, g, buf, "first");
    dev_free(buf);
}

/* Later executions of a resolved instance launch within tutti_execute. */
static void gate_later(cm_t *m, tutti_group_t *g)
{
    int32_t *buf = dev_alloc(COUNT * sizeof(int32_t));
    tutti_instance_params_t p;
    test_params(&p, 0x6a7e, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = "TestUnordered";
    tutti_status_t st = exec_wait(m, g, &p, buf, buf);
    CHECK(m, st == TUTTI_OK, "resolving: %s", tutti_last_error());
    gate_once(m, g, buf, "second");
    gate_once(m, g, buf, "third");
    dev_free(buf);
}

static void test_gate_holds_the_stream_on_a_first_execution(void **state)
{
    cm_t m[2];
    fake_cuda_reset(2, NULL);
    run_members(*state, 0x6a1, 1, NULL, TUTTI_ORDER_TASK, gate_first, NULL,
                m);
    run_members(*state, 0x6a2, 2, NULL, TUTTI_ORDER_TASK, gate_first, NULL,
                m);
}

static void test_gate_holds_the_stream_on_later_executions(void **state)
{
    cm_t m[2];
    fake_cuda_reset(2, NULL);
    run_members(*state, 0x6a3, 1, NULL, TUTTI_ORDER_TASK, gate_later, NULL,
                m);
    run_members(*state, 0x6a4, 2, NULL, TUTTI_ORDER_TASK, gate_later, NULL,
                m);
}

/* ---- pointer checks, captured streams ----------------------------------- */

static void pointers_body(cm_t *m, tutti_group_t *g)
{
    tutti_instance_params_t p;
    tutti_request_t *r;
    float host[COUNT] = {0};
    float *mine = dev_alloc(sizeof(host)), *other;
    fake_cuda_ops()->set_device(1);
    other = dev_alloc(sizeof(host));
    fake_cuda_ops()->set_device(0);
    test_params(&p, 0x970, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, COUNT);
    p.stream = m->stream;
    tutti_status_t st = tutti_execute(g, &p, host, mine, &r);
    CHECK(m, st == TUTTI_ERR_INVALID_ARG, "host sendbuf: %s",
          tutti_status_name(st));
    CHECK(m, strstr(tutti_last_error(), "sendbuf") &&
                 strstr(tutti_last_error(), "is host memory") &&
                 strstr(tutti_last_error(), "memory of cuda:0"),
          "host sendbuf: %s", tutti_last_error());
    p.instance_key = 0x971;
    st = tutti_execute(g, &p, mine, other, &r);
    CHECK(m, st == TUTTI_ERR_INVALID_ARG, "cuda:1 recvbuf: %s",
          tutti_status_name(st));
    CHECK(m, strstr(tutti_last_error(), "recvbuf") &&
                 strstr(tutti_last_error(), "is memory of cuda:1"),
          "cuda:1 recvbuf: %s", tutti_last_error());
    dev_free(mine);
    dev_free(other);
}

static void test_pointer_kinds_refused(void **state)
{
    cm_t m[1];
    fake_cuda_reset(2, NULL);
    run_members(*state, 0x97, 1, NULL, TUTTI_ORDER_TASK, pointers_body, NULL,
                m);
}

static void capture_body(cm_t *m, tutti_group_t *g)
{
    tutti_instance_params_t p;
    float *buf = dev_alloc(COUNT * sizeof(float));
    test_params(&p, 0xca7, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, COUNT);
    p.algorithm = "TestUnordered";
    fake_cuda_set_capturing(m->stream, 1);
    tutti_status_t st = exec_wait(m, g, &p, buf, buf);
    CHECK(m, st == TUTTI_ERR_UNSUPPORTED, "captured stream: %s",
          tutti_status_name(st));
    CHECK(m, strstr(tutti_last_error(), "captured") != NULL,
          "captured stream: %s", tutti_last_error());
    fake_cuda_set_capturing(m->stream, 0);
    CHECK(m, fake_cuda_queued(m->stream) == 0 &&
                 fake_cuda_captured(m->stream) == 0,
          "the refused call left %zu operations on the stream and captured "
          "%zu", fake_cuda_queued(m->stream), fake_cuda_captured(m->stream));
    dev_free(buf);
}

static void test_captured_stream_refused_when_staged(void **state)
{
    cm_t m[1];
    fake_cuda_reset(1, NULL);
    run_members(*state, 0xca, 1, NULL, TUTTI_ORDER_TASK, capture_body, NULL,
                m);
}

/* ---- PCI bus ids and topology order ------------------------------------- */

static const int topo_bus[3] = {0x3, 0x1, 0x2}; /* device d's bus */

static void pci_body(cm_t *m, tutti_group_t *g)
{
    char want[32];
    int n = tutti_group_size(g);
    for (int r = 0; r < n; r++) {
        /* Task order: rank r is device r; topology: rank r has bus r+1. */
        int bus = m->order == TUTTI_ORDER_TASK ? topo_bus[r] : r + 1;
        snprintf(want, sizeof(want), "0000:%02x:00.0", bus);
        const char *got = tutti_group_pci_bus_id(g, r);
        CHECK(m, got && strcmp(got, want) == 0, "rank %d: bus id %s, "
              "expected %s", r, got ? got : "(null)", want);
    }
    CHECK(m, tutti_group_pci_bus_id(g, n) == NULL, "a rank outside has an id");
    m->out[0] = (uint64_t)m->rank;
}

static void test_pci_bus_ids_and_topology_order(void **state)
{
    cm_t m[3];
    const int devices[3] = {2, 0, 1}; /* threads in neither order */
    fake_cuda_reset(3, topo_bus);
    run_members(*state, 0x9c1, 3, devices, TUTTI_ORDER_TASK, pci_body, NULL,
                m);
    for (int i = 0; i < 3; i++)
        assert_int_equal(m[i].out[0], devices[i]);
    run_members(*state, 0x9c2, 3, devices, TUTTI_ORDER_TOPOLOGY, pci_body,
                NULL, m);
    /* Buses: device 0 on 03, 1 on 01, 2 on 02: ranks 1, 2, 0 by device. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(m[i].out[0], (uint64_t)((devices[i] + 2) % 3));
}

/* ---- per-group module state -------------------------------------------- */

/* One allreduce by TestUnordered (module testgroup). */
static void one_sum(cm_t *m, tutti_group_t *g)
{
    int32_t *buf = dev_alloc(sizeof(int32_t));
    tutti_instance_params_t p;
    *buf = m->rank + 1;
    test_params(&p, 0x57a7e, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 1);
    p.algorithm = "TestUnordered";
    tutti_status_t st = exec_wait(m, g, &p, buf, buf);
    CHECK(m, st == TUTTI_OK, "sum: %s", tutti_last_error());
    CHECK(m, st != TUTTI_OK || *buf == m->size * (m->size + 1) / 2,
          "sum: %d", *buf);
    /* Another instance of the module: no second init_group. */
    p.instance_key = 0x57a7f;
    st = exec_wait(m, g, &p, buf, buf);
    CHECK(m, st == TUTTI_OK, "second instance: %s", tutti_last_error());
    dev_free(buf);
}

/* The lines of the group log that start with @p prefix, into @p lines. */
static int log_lines(const char *prefix, char lines[][128], int max)
{
    FILE *f = fopen(group_log, "r");
    char line[128];
    int n = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, prefix, strlen(prefix)) == 0 && n < max)
            memcpy(lines[n++], line, sizeof(line));
    fclose(f);
    return n;
}

/* The details of "init KEY RANK BYTES" lines for group @p key: each rank
 * once, all the same bytes, which go to @p bytes. */
static void assert_inits(uint64_t key, int n, char *bytes)
{
    char lines[16][128], prefix[64];
    snprintf(prefix, sizeof(prefix), "init %llx ", (unsigned long long)key);
    int got = log_lines(prefix, lines, 16), seen[MAX_MEMBERS] = {0};
    assert_int_equal(got, n);
    for (int i = 0; i < got; i++) {
        int rank = -1;
        char b[64] = "";
        assert_int_equal(sscanf(lines[i] + strlen(prefix), "%d %63s", &rank,
                                b), 2);
        assert_true(rank >= 0 && rank < n);
        seen[rank]++;
        if (i == 0)
            snprintf(bytes, 64, "%s", b);
        assert_string_equal(b, bytes);
    }
    for (int r = 0; r < n; r++)
        assert_int_equal(seen[r], 1);
}

static int count_lines(const char *prefix)
{
    char lines[16][128];
    return log_lines(prefix, lines, 16);
}

static void test_group_state_once_per_group(void **state)
{
    cm_t m[3];
    char first[64], second[64];
    fake_cuda_reset(3, NULL);
    assert_int_equal(truncate(group_log, 0), 0);
    run_members(*state, 0x5e, 3, NULL, TUTTI_ORDER_TASK, one_sum, NULL, m);
    assert_inits(0x5e, 3, first);
    assert_int_equal(count_lines("fini 5e "), 3);
    assert_int_equal(count_lines("abort 5e "), 0);
    /* Formed again under the same key: fresh bytes, once more each. */
    assert_int_equal(truncate(group_log, 0), 0);
    run_members(*state, 0x5e, 3, NULL, TUTTI_ORDER_TASK, one_sum, NULL, m);
    assert_inits(0x5e, 3, second);
    assert_string_not_equal(first, second);
    assert_int_equal(count_lines("fini 5e "), 3);
}

/* ---- ordered launches --------------------------------------------------- */

/* Member of device 0 issues A (priority 0) then B (priority 9); the other
 * member issues B then A a little later, so member 0 learns of B's
 * decision first.  Each execution on a stream of its own: the other
 * member's B-then-A on one stream would hold its A behind its B, which
 * waits for member 0's B.  out[0], out[1]: A's and B's launch order. */
static void ordered_body(cm_t *m, tutti_group_t *g)
{
    const char *impl = m->arg;
    int32_t *a = dev_alloc(sizeof(int32_t)), *b = dev_alloc(sizeof(int32_t));
    tutti_request_t *r[2];
    tutti_instance_params_t p[2];
    *a = 1;
    *b = 10;
    for (int i = 0; i < 2; i++) {
        test_params(&p[i], 0x0a + (uint64_t)i, TUTTI_COLL_ALLREDUCE,
                    TUTTI_INT32, 1);
        p[i].algorithm = impl;
        p[i].priority = i ? 9 : 0;
    }
    p[0].stream = m->stream;
    CHECK(m, fake_cuda_ops()->stream_create(&p[1].stream) == 0, "stream");
    int first = m->device == 0 ? 0 : 1;
    if (m->device != 0)
        usleep(100 * 1000);
    for (int k = 0; k < 2; k++) {
        int i = k ? 1 - first : first;
        tutti_status_t st = tutti_execute(g, &p[i], i ? b : a, i ? b : a,
                                          &r[i]);
        CHECK(m, st == TUTTI_OK, "execute: %s", tutti_last_error());
        if (st != TUTTI_OK)
            return;
    }
    tutti_status_t st = tutti_request_wait_all(r, 2);
    CHECK(m, st == TUTTI_OK, "wait: %s", tutti_last_error());
    for (int i = 0; i < 2; i++) {
        tutti_request_info_t info;
        tutti_request_info(r[i], &info);
        m->out[i] = info.launch_order;
        tutti_request_free(r[i]);
    }
    CHECK(m, *a == 2 && *b == 20, "sums %d %d", *a, *b);
    fake_cuda_ops()->stream_destroy(p[1].stream);
    dev_free(a);
    dev_free(b);
}

static void test_ordered_implementation_launches_in_issue_order(void **state)
{
    cm_t m[2];
    fake_cuda_reset(2, NULL);
    run_members(*state, 0x0d1, 2, NULL, TUTTI_ORDER_TASK, ordered_body,
                "TestOrdered", m);
    /* Member 0: A before B although B came first and ranks higher. */
    assert_true(m[0].out[0] > 0 && m[0].out[1] > 0);
    assert_true(m[0].out[0] < m[0].out[1]);
    run_members(*state, 0x0d2, 2, NULL, TUTTI_ORDER_TASK, ordered_body,
                "TestUnordered", m);
    /* Not ordered: B, resolved first and of higher priority, goes first. */
    assert_true(m[0].out[0] > 0 && m[0].out[1] > 0);
    assert_true(m[0].out[1] < m[0].out[0]);
}

/* ---- supports() in selection ------------------------------------------- */

static void test_supports_declines_and_selection_falls_through(void **state)
{
    test_tmp_t t;
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    char buf[4096];
    const char *impl = NULL;
    (void)state;
    test_tmp_make(&t, "cuda", "t.yaml",
                  "selection:\n"
                  "  - { collective: allreduce, algorithm: TestDeclines }\n"
                  "  - { collective: allreduce, algorithm: TestOrdered }\n");
    test_one_task_params(&cp, t.path, GOOD_DIR, "off");
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_OK);
    tutti_select_query_t q = {TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CUDA,
                              TUTTI_INT8, 64, 2, 1, 0, 0};
    assert_int_equal(tutti_info_explain(ctx, &q, buf, sizeof(buf), &impl),
                     TUTTI_OK);
    assert_non_null(impl);
    assert_string_equal(impl, "TestOrdered");
    if (strstr(buf, "TestDeclines (module testgroup) declines: test "
                    "declines: int8 is not summed here") == NULL)
        fail_msg("explain does not give the reason:\n%s", buf);
    q.dtype = TUTTI_INT32;
    assert_int_equal(tutti_info_explain(ctx, &q, buf, sizeof(buf), &impl),
                     TUTTI_OK);
    assert_string_equal(impl, "TestDeclines");
    tutti_context_destroy(ctx);
    test_rmtree(t.dir);
}

/* ---- an abort while a staged execution is in flight --------------------- */

/* Both run the instance once (resolving it); then member 0 starts it
 * again alone and member 1 aborts the job. */
static void abort_body(cm_t *m, tutti_group_t *g)
{
    int32_t *buf = dev_alloc(COUNT * sizeof(int32_t));
    int32_t seen[COUNT];
    tutti_instance_params_t p;
    tutti_request_t *r;
    for (int i = 0; i < COUNT; i++) {
        buf[i] = i;
        seen[i] = -7;
    }
    test_params(&p, 0xab, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, COUNT);
    p.algorithm = "TestUnordered";
    tutti_status_t st = exec_wait(m, g, &p, buf, buf);
    CHECK(m, st == TUTTI_OK, "first: %s", tutti_last_error());
    if (m->device == 0) {
        st = tutti_execute(g, &p, buf, buf, &r);
        CHECK(m, st == TUTTI_OK, "second: %s", tutti_last_error());
        if (st != TUTTI_OK) {
            atomic_store(m->shared, 1);
            return;
        }
        fake_cuda_enqueue_copy(m->stream, seen, buf, sizeof(seen));
        atomic_store(m->shared, 1);
        st = tutti_request_wait(r);
        CHECK(m, st == TUTTI_ERR_ABORTED, "in flight: %s (%s), expected "
              "TUTTI_ERR_ABORTED", tutti_status_name(st), tutti_last_error());
        tutti_request_free(r);
        fake_cuda_pump();
        CHECK(m, fake_cuda_queued(m->stream) == 0 && seen[0] != -7,
              "the caller's stream is still held after the abort (%zu "
              "operations queued)", fake_cuda_queued(m->stream));
    } else {
        while (!atomic_load(m->shared))
            usleep(1000);
        usleep(50 * 1000);
        tutti_abort(m->ctx, "the test aborts");
    }
    dev_free(buf);
}

static void test_abort_releases_the_callers_stream(void **state)
{
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    cm_t m[2];
    (void)state;
    fake_cuda_reset(2, NULL);
    test_one_task_params(&cp, CONF, GOOD_DIR, "off");
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_OK);
    assert_int_equal(truncate(group_log, 0), 0);
    run_members(ctx, 0xab0, 2, NULL, TUTTI_ORDER_TASK, abort_body, NULL, m);
    tutti_context_destroy(ctx);
    /* The aborted member stopped its module's group state. */
    assert_int_equal(count_lines("abort ab0 0 "), 1);
    assert_int_equal(count_lines("fini ab0 0"), 1);
}

/* ---- without the double ------------------------------------------------- */

static void test_join_without_cuda_fails_naming_why(void **state)
{
    tutti_group_params_t gp;
    tutti_group_t *g = NULL;
    tutti__cuda_use(NULL);
    tutti_group_params_init(&gp);
    gp.group_key = 0xdead;
    gp.group_size = 1;
    gp.device_type = TUTTI_DEVICE_CUDA;
    gp.timeout = 10;
    tutti_status_t st = tutti_group_join(*state, &gp, &g);
    const char *e = tutti_last_error();
    tutti__cuda_use(fake_cuda_ops());
    assert_int_equal(st, TUTTI_ERR_UNSUPPORTED);
    assert_null(g);
    print_message("without the double: %s\n", e);
    assert_non_null(strstr(e, "cuda:0"));
#if TUTTI_HAVE_CUDA
    /* No driver or no device here (the CUDA error's text), or the build
     * has not made libtutti_cuda (the loader's reason). */
    if (strstr(e, "cudaError") == NULL &&
        strstr(e, "cannot load") == NULL)
        fail_msg("no CUDA error text or load failure named: %s", e);
#else
    assert_non_null(strstr(e, "this build has no CUDA"));
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_group_of_one),
        cmocka_unit_test(test_collectives_group_of_three),
        cmocka_unit_test(test_gate_holds_the_stream_on_a_first_execution),
        cmocka_unit_test(test_gate_holds_the_stream_on_later_executions),
        cmocka_unit_test(test_pointer_kinds_refused),
        cmocka_unit_test(test_captured_stream_refused_when_staged),
        cmocka_unit_test(test_pci_bus_ids_and_topology_order),
        cmocka_unit_test(test_group_state_once_per_group),
        cmocka_unit_test(test_ordered_implementation_launches_in_issue_order),
        cmocka_unit_test(test_supports_declines_and_selection_falls_through),
        cmocka_unit_test(test_abort_releases_the_callers_stream),
        cmocka_unit_test(test_join_without_cuda_fails_naming_why),
    };
    return cmocka_run_group_tests_name("cuda_exec", tests, cuda_setup,
                                       cuda_teardown);
}
