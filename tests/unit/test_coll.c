/*
 * What each collective accepts and computes, in one process (groups of 1 to
 * 5 threads): the argument errors a user can cause, each with its status
 * and a detail naming the culprit; op avg on integer types (truncating
 * toward zero) and floats; pre_scale and post_scale on the float types for
 * allreduce, reduce and reduce_scatter through every implementation; the
 * checks of later executions on the warm path, and zero-byte ones that
 * complete as they are issued; and the accuracy of allreduce sums of
 * random floats against float64.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tutti/plugin.h> /* TUTTI_NAME_MAX */
#include <tutti/tutti.h>

#include "../../tools/pattern.h"
#include "matrix.h"
#include "members.h"
#include "test_util.h"

/* ---- groups of threads -------------------------------------------------- */

typedef struct member member_t;
typedef void (*body_fn_t)(member_t *m);

struct member {
    tutti_context_t *ctx;
    uint64_t key;
    int n, index;
    tutti_group_t *g;
    body_fn_t body;
    const void *arg;
    tutti_status_t join_status;
    int failures;
    char msg[512]; /* the first failure */
};

/* Records a failure of member @p m (no CMocka calls off the main thread). */
static void member_fail(member_t *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void member_fail(member_t *m, const char *fmt, ...)
{
    va_list ap;
    if (m->failures++ == 0) {
        va_start(ap, fmt);
        vsnprintf(m->msg, sizeof(m->msg), fmt, ap);
        va_end(ap);
    }
}

static void *member_main(void *arg)
{
    member_t *m = arg;
    m->join_status = test_join(m->ctx, m->key, m->n, m->index, 60, &m->g);
    if (m->join_status != TUTTI_OK)
        return NULL;
    m->body(m);
    tutti_group_leave(m->g);
    return NULL;
}

/* Runs @p body on every member of a fresh group of @p n threads. */
static void run_group(tutti_context_t *ctx, int n, body_fn_t body,
                      const void *arg)
{
    static uint64_t next_key = 1;
    member_t m[8];
    uint64_t key = next_key++;
    for (int i = 0; i < n; i++)
        m[i] = (member_t){ctx, key, n, i, NULL, body, arg, 0, 0, ""};
    assert_int_equal(test_threads(n, member_main, m, sizeof(m[0])), 0);
    for (int i = 0; i < n; i++) {
        assert_int_equal(m[i].join_status, TUTTI_OK);
        if (m[i].failures)
            fail_msg("group of %d, member %d: %d failures; first: %s", n, i,
                     m[i].failures, m[i].msg);
    }
}

/* The implementations of @p coll in this build, from the registry. */
static int impls_of(tutti_context_t *ctx, tutti_collective_t coll,
                    const char **names, int max)
{
    tutti_impl_info_t info;
    int k = 0;
    for (size_t i = 0; k < max && tutti_info_impl(ctx, i, &info) == TUTTI_OK;
         i++)
        if ((info.collectives & TUTTI_COLL_BIT(coll)) &&
            (info.device_types & TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)))
            names[k++] = info.name;
    if (k == 0)
        fail_msg("no implementation of %s in this build",
                 tutti_collective_name(coll));
    return k;
}

/* ---- argument errors ---------------------------------------------------- */

/* Asserts @p st is @p want and the last error names @p named. */
#define expect_error(st, want, named)                                          \
    do {                                                                       \
        tutti_status_t st_ = (st);                                             \
        if (st_ != (want) || strstr(tutti_last_error(), (named)) == NULL)      \
            fail_msg("%s: got %s (%s), want %s naming '%s'", #st,             \
                     tutti_status_name(st_), tutti_last_error(),              \
                     tutti_status_name(want), (named));                        \
    } while (0)

static tutti_group_t *join_alone(tutti_context_t *ctx, uint64_t key)
{
    tutti_group_t *g;
    assert_int_equal(test_join(ctx, key, 1, 0, 0, &g), TUTTI_OK);
    return g;
}

/* One call on a group of one and what it must give: the instance, its
 * buffers ("buf", "out" or "NULL") and the status, with the detail naming
 * @c named. */
typedef struct {
    uint64_t key;
    tutti_collective_t coll;
    tutti_dtype_t dtype;
    size_t count;
    int root;
    const int *perm;
    double pre, post;
    const char *send, *recv;
    tutti_status_t want;
    const char *named;
} arg_case_t;

#define F32 TUTTI_FLOAT32
#define BAD TUTTI_ERR_INVALID_ARG
#define PER_RANK TUTTI_COUNT_PER_RANK
static const int perm_out[1] = {1};
static const arg_case_t arg_cases[] = {
    {1, TUTTI_COLL_ALLREDUCE, F32, 4, 0, NULL, 0, 0, "NULL", "out", BAD,
     "NULL sendbuf for 4 elements"},
    {1, TUTTI_COLL_ALLREDUCE, F32, 4, 0, NULL, 0, 0, "buf", "NULL", BAD,
     "NULL recvbuf for 4 elements"},
    /* A count of 0 needs no buffers. */
    {1, TUTTI_COLL_ALLREDUCE, F32, 0, 0, NULL, 0, 0, "NULL", "NULL",
     TUTTI_OK, ""},
    {2, TUTTI_COLL_BROADCAST, F32, 4, 1, NULL, 0, 0, "buf", "buf", BAD,
     "broadcast root 1 outside the group's ranks 0..0"},
    {3, TUTTI_COLL_REDUCE, F32, 4, -1, NULL, 0, 0, "buf", "out", BAD,
     "reduce root -1 outside"},
    {4, TUTTI_COLL_GATHER, F32, 4, 7, NULL, 0, 0, "buf", "out", BAD,
     "gather root 7 outside"},
    {5, TUTTI_COLL_PERMUTE, F32, 4, 0, NULL, 0, 0, "buf", "out", BAD,
     "permute needs a permutation of 1 entries"},
    {5, TUTTI_COLL_PERMUTE, F32, 4, 0, perm_out, 0, 0, "buf", "out", BAD,
     "permutation[0] = 1: expected each of 0..0 once"},
    {6, TUTTI_COLL_ALLREDUCE, F32, PER_RANK, 0, NULL, 0, 0, "buf", "out",
     BAD, "allreduce has no per-rank counts"},
    {7, TUTTI_COLL_BROADCAST, F32, PER_RANK, 0, NULL, 0, 0, "buf", "out",
     BAD, "broadcast has no per-rank counts"},
    {8, TUTTI_COLL_REDUCE_SCATTER, F32, PER_RANK, 0, NULL, 0, 0, "buf",
     "out", BAD, "reduce_scatter with per-rank counts needs counts"},
    {9, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 4, 0, NULL, 2, 0, "buf", "out",
     BAD, "scaling applies to floating types, not int32"},
    {10, TUTTI_COLL_REDUCE_SCATTER, TUTTI_UINT8, 4, 0, NULL, 0, 0.5, "buf",
     "out", BAD, "not uint8"},
    {12, TUTTI_COLL_ALLREDUCE, (tutti_dtype_t)TUTTI_DTYPE_COUNT, 4, 0, NULL,
     0, 0, "buf", "out", BAD, "dtype 10 is not a tutti_dtype_t"},
};
#undef F32
#undef BAD
#undef PER_RANK

static void test_argument_errors(void **state)
{
    tutti_group_t *g = join_alone(*state, 9001);
    tutti_instance_params_t p;
    float buf[16] = {0}, out[16];

    for (size_t i = 0; i < sizeof(arg_cases) / sizeof(arg_cases[0]); i++) {
        const arg_case_t *c = &arg_cases[i];
        void *const bufs[] = {buf, out, NULL};
        const char *const names[] = {"buf", "out", "NULL"};
        void *send = NULL, *recv = NULL;
        char call[64];
        for (int b = 0; b < 3; b++) {
            if (strcmp(c->send, names[b]) == 0)
                send = bufs[b];
            if (strcmp(c->recv, names[b]) == 0)
                recv = bufs[b];
        }
        test_params(&p, c->key, c->coll, c->dtype, c->count);
        p.root = c->root;
        p.permutation = c->perm;
        p.pre_scale = c->pre;
        p.post_scale = c->post;
        tutti_status_t st = test_exec_wait(g, &p, send, recv);
        snprintf(call, sizeof(call), "test_exec_wait(g, &p, %s, %s)",
                 c->send, c->recv);
        if (st != c->want || strstr(tutti_last_error(), c->named) == NULL)
            fail_msg("%s: got %s (%s), want %s naming '%s'", call,
                     tutti_status_name(st), tutti_last_error(),
                     tutti_status_name(c->want), c->named);
    }
    tutti_group_leave(g);
}

/* A later execution of an instance must repeat its pre_scale. */
static void test_later_execution_other_scale(void **state)
{
    tutti_group_t *g = join_alone(*state, 9002);
    tutti_instance_params_t p;
    float buf[4] = {1, 2, 3, 4};

    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 4);
    p.pre_scale = 2;
    assert_int_equal(test_exec_wait(g, &p, buf, buf), TUTTI_OK);
    assert_true(buf[3] == 8.0f);
    p.pre_scale = 4;
    expect_error(test_exec_wait(g, &p, buf, buf), TUTTI_ERR_MISMATCH,
                 "first executed with pre_scale 2, post_scale 0 and now with "
                 "4, 0");
    p.pre_scale = 2;
    p.post_scale = 0.5;
    expect_error(test_exec_wait(g, &p, buf, buf), TUTTI_ERR_MISMATCH,
                 "post_scale 0 and now with 2, 0.5");
    tutti_group_leave(g);
}

/* Later executions that repeat a checked one's fixed fields take the warm
 * path (execute.c: one comparison instead of the full checks); a call
 * that differs in any of them still gets the full checks, refused with
 * the same detail, and what may change from call to call still may. */
static void test_warm_calls_checked(void **state)
{
    tutti_group_t *g = join_alone(*state, 9003);
    tutti_instance_params_t p;
    float buf[8] = {1, 2, 3, 4}, out[8];
    const char *names[16];
    char name[TUTTI_NAME_MAX], want[TUTTI_NAME_MAX + 32];
    int k = impls_of(*state, TUTTI_COLL_ALLREDUCE, names, 16);

    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 4);
    snprintf(name, sizeof(name), "%s", names[0]);
    p.algorithm = name;
    for (int i = 0; i < 3; i++)
        assert_int_equal(test_exec_wait(g, &p, buf, out), TUTTI_OK);
    /* The buffers its elements need, on every call. */
    expect_error(test_exec_wait(g, &p, NULL, out), TUTTI_ERR_INVALID_ARG,
                 "NULL sendbuf for 4 elements");
    expect_error(test_exec_wait(g, &p, buf, NULL), TUTTI_ERR_INVALID_ARG,
                 "NULL recvbuf for 4 elements");
    /* A fixed field changed. */
    p.count = 5;
    expect_error(test_exec_wait(g, &p, buf, out), TUTTI_ERR_MISMATCH,
                 "first executed with count 4 and now with 5");
    p.count = 4;
    p.op = TUTTI_OP_MAX;
    expect_error(test_exec_wait(g, &p, buf, out), TUTTI_ERR_MISMATCH,
                 "first executed with op");
    p.op = TUTTI_OP_SUM;
    /* The same pointer, naming another implementation now: its text is
     * compared, not only the pointer. */
    if (k > 1) {
        snprintf(name, sizeof(name), "%s", names[1]);
        snprintf(want, sizeof(want), "this call asks for %s", names[1]);
        expect_error(test_exec_wait(g, &p, buf, out), TUTTI_ERR_MISMATCH,
                     want);
        snprintf(name, sizeof(name), "%s", names[0]);
    }
    /* A field allreduce does not read (root) may change: the full checks
     * pass it, and later calls are compared with it. */
    p.root = 3;
    assert_int_equal(test_exec_wait(g, &p, buf, out), TUTTI_OK);
    assert_int_equal(test_exec_wait(g, &p, buf, out), TUTTI_OK);
    p.root = 0;
    /* Per call: priority, time limit, an explicit step. */
    p.priority = 5;
    p.timeout = 30;
    p.step = 1000;
    tutti_request_t *r;
    tutti_request_info_t info;
    assert_int_equal(tutti_execute(g, &p, buf, out, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_OK);
    tutti_request_info(r, &info);
    assert_int_equal(info.step, 1000);
    tutti_request_free(r);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == buf[i]);
    tutti_group_leave(g);
}

static void note_done(tutti_request_t *r, tutti_status_t st, void *arg)
{
    (void)r;
    *(tutti_status_t *)arg = st;
}

/* Zero-byte executions: every member agreed on count 0 when the instance
 * resolved, so nothing moves, and a later execution completes within
 * tutti_execute (its callback runs as it is set), with NULL buffers; its
 * step is counted all the same. */
static void test_zero_byte_warm_calls(void **state)
{
    tutti_group_t *g = join_alone(*state, 9004);
    tutti_instance_params_t p;

    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 0);
    assert_int_equal(test_exec_wait(g, &p, NULL, NULL), TUTTI_OK);
    for (uint64_t i = 1; i < 5; i++) {
        tutti_request_t *r;
        tutti_request_info_t info;
        tutti_status_t done = TUTTI_INPROGRESS;
        assert_int_equal(tutti_execute(g, &p, NULL, NULL, &r), TUTTI_OK);
        tutti_request_set_callback(r, note_done, &done);
        assert_int_equal(done, TUTTI_OK);
        tutti_request_info(r, &info);
        assert_int_equal(info.step, i);
        assert_int_not_equal(info.launch_order, 0);
        assert_int_equal(tutti_request_wait(r), TUTTI_OK);
        tutti_request_free(r);
    }
    tutti_group_leave(g);
}

/* A later execution of permute with another @p perm: refused, naming
 * the first permutation (@p what says which, in the failure). */
static void expect_other_permutation(member_t *m, tutti_instance_params_t *p,
                                     const int *perm, const int32_t *in,
                                     int32_t *out, const char *what)
{
    p->permutation = perm;
    tutti_status_t st = test_exec_wait(m->g, p, in, out);
    if (st != TUTTI_ERR_MISMATCH ||
        strstr(tutti_last_error(), "first executed with another permutation") ==
            NULL)
        member_fail(m, "%s: %s: %s", what, tutti_status_name(st),
                    tutti_last_error());
}

/* Both members run permute [1, 0]; then member 0 asks for [0, 1]. */
static void other_permutation(member_t *m)
{
    static const int swap[2] = {1, 0}, same[2] = {0, 1};
    tutti_instance_params_t p;
    int32_t in[3] = {m->index, m->index, m->index}, out[3] = {-1, -1, -1};

    test_params(&p, 1, TUTTI_COLL_PERMUTE, TUTTI_INT32, 3);
    p.permutation = swap;
    tutti_status_t st = test_exec_wait(m->g, &p, in, out);
    if (st != TUTTI_OK || out[2] != 1 - m->index)
        member_fail(m, "permute [1,0]: %s, got %d: %s", tutti_status_name(st),
                    out[2], tutti_last_error());
    if (m->index != 0)
        return;
    expect_other_permutation(m, &p, same, in, out, "later permutation [0,1]");
    /* Later calls are checked against the first, not in full: a missing
     * permutation must still be refused, not read. */
    expect_other_permutation(m, &p, NULL, in, out, "later permutation NULL");
}

/* As above, but member 0's second call comes before the instance is
 * resolved (member 1 has not executed it yet): the first permutation is
 * still the one compared. */
static void other_permutation_unresolved(member_t *m)
{
    static const int swap[2] = {1, 0}, same[2] = {0, 1};
    tutti_instance_params_t p;
    tutti_request_t *r = NULL;
    int32_t in[3] = {m->index, m->index, m->index}, out[3] = {-1, -1, -1};

    test_params(&p, 2, TUTTI_COLL_PERMUTE, TUTTI_INT32, 3);
    p.permutation = swap;
    if (m->index == 1) {
        tutti_status_t st = test_exec_wait(m->g, &p, in, out);
        if (st != TUTTI_OK || out[2] != 0)
            member_fail(m, "permute [1,0]: %s, got %d: %s",
                        tutti_status_name(st), out[2], tutti_last_error());
        return;
    }
    tutti_status_t st = tutti_execute(m->g, &p, in, out, &r);
    if (st != TUTTI_OK) {
        member_fail(m, "permute [1,0]: %s: %s", tutti_status_name(st),
                    tutti_last_error());
        return;
    }
    p.permutation = same;
    tutti_request_t *r2 = NULL;
    st = tutti_execute(m->g, &p, in, out, &r2);
    if (st != TUTTI_ERR_MISMATCH ||
        strstr(tutti_last_error(), "first executed with another permutation") ==
            NULL)
        member_fail(m, "unresolved, later permutation [0,1]: %s: %s",
                    tutti_status_name(st), tutti_last_error());
    st = tutti_request_wait(r);
    if (st != TUTTI_OK || out[2] != 1)
        member_fail(m, "permute [1,0] after the refusal: %s, got %d",
                    tutti_status_name(st), out[2]);
    tutti_request_free(r);
}

/* Every blocking helper on 3 members: rank r contributes 10*r + i at
 * element i (alltoall: 100*r + 10*j + i to rank j), results exact. */
static void blocking_helpers(member_t *m)
{
    enum { C = 4, N = 3 };
    int r = m->index;
    int32_t in[N * C], out[N * C], want;
    tutti_status_t st;

    for (int i = 0; i < N * C; i++)
        in[i] = 10 * r + i;
    /* reduce (sum) to root 2: sum over ranks of 10*q + i = 30 + 3i */
    memset(out, 0xff, sizeof(out));
    st = tutti_reduce(m->g, in, out, C, TUTTI_INT32, TUTTI_OP_SUM, 2);
    for (int i = 0; st == TUTTI_OK && r == 2 && i < C; i++)
        if (out[i] != 30 + 3 * i)
            member_fail(m, "tutti_reduce: out[%d] = %d, want %d", i, out[i],
                        30 + 3 * i);
    if (st != TUTTI_OK)
        member_fail(m, "tutti_reduce: %s", tutti_last_error());
    /* allgather and gather to root 1: block q holds 10*q + i */
    st = tutti_allgather(m->g, in, out, C, TUTTI_INT32);
    for (int i = 0; st == TUTTI_OK && i < N * C; i++)
        if (out[i] != 10 * (i / C) + i % C)
            member_fail(m, "tutti_allgather: out[%d] = %d", i, out[i]);
    if (st != TUTTI_OK)
        member_fail(m, "tutti_allgather: %s", tutti_last_error());
    memset(out, 0xff, sizeof(out));
    st = tutti_gather(m->g, in, r == 1 ? out : NULL, C, TUTTI_INT32, 1);
    for (int i = 0; st == TUTTI_OK && r == 1 && i < N * C; i++)
        if (out[i] != 10 * (i / C) + i % C)
            member_fail(m, "tutti_gather: out[%d] = %d", i, out[i]);
    if (st != TUTTI_OK)
        member_fail(m, "tutti_gather: %s", tutti_last_error());
    /* reduce_scatter (max): block r of max over q of 10*q + i = 20 + i */
    st = tutti_reduce_scatter(m->g, in, out, C, TUTTI_INT32, TUTTI_OP_MAX);
    for (int i = 0; st == TUTTI_OK && i < C; i++)
        if (out[i] != 20 + r * C + i)
            member_fail(m, "tutti_reduce_scatter: out[%d] = %d", i, out[i]);
    if (st != TUTTI_OK)
        member_fail(m, "tutti_reduce_scatter: %s", tutti_last_error());
    /* alltoall: block j of rank q's input goes to rank j */
    for (int j = 0; j < N; j++)
        for (int i = 0; i < C; i++)
            in[j * C + i] = 100 * r + 10 * j + i;
    st = tutti_alltoall(m->g, in, out, C, TUTTI_INT32);
    for (int q = 0; st == TUTTI_OK && q < N; q++)
        for (int i = 0; i < C; i++)
            if (out[q * C + i] != (want = 100 * q + 10 * r + i))
                member_fail(m, "tutti_alltoall: out[%d] = %d, want %d",
                            q * C + i, out[q * C + i], want);
    if (st != TUTTI_OK)
        member_fail(m, "tutti_alltoall: %s", tutti_last_error());
    /* allgatherv: rank q gives q + 1 elements of value q; first the sizes
     * alone, then the data */
    size_t counts[N], total = 0;
    int32_t mine[N] = {r, r, r};
    st = tutti_allgatherv(m->g, mine, (size_t)r + 1, NULL, 0, TUTTI_INT32,
                          counts, &total);
    if (st != TUTTI_OK || total != 6 || counts[0] != 1 || counts[2] != 3)
        member_fail(m, "tutti_allgatherv sizes: %s, total %zu: %s",
                    tutti_status_name(st), total, tutti_last_error());
    st = tutti_allgatherv(m->g, mine, (size_t)r + 1, out, 6, TUTTI_INT32,
                          NULL, NULL);
    static const int32_t gathered[6] = {0, 1, 1, 2, 2, 2};
    for (int i = 0; st == TUTTI_OK && i < 6; i++)
        if (out[i] != gathered[i])
            member_fail(m, "tutti_allgatherv: out[%d] = %d", i, out[i]);
    if (st != TUTTI_OK)
        member_fail(m, "tutti_allgatherv: %s", tutti_last_error());
}

static void test_blocking_helpers(void **state)
{
    run_group(*state, 3, blocking_helpers, NULL);
}

static void test_later_execution_other_permutation(void **state)
{
    run_group(*state, 2, other_permutation, NULL);
    run_group(*state, 2, other_permutation_unresolved, NULL);
}

/* ---- avg ----------------------------------------------------------------- */

/* Inputs of rank r (of 3) at 4 elements, and the truncated means: the sums
 * -127, 4, 15, -1 divide to -42, 1, 5, 0 (floor would give -43 and -1). */
static const double avg_signed[3][4] = {
    {-42, 1, 5, -1}, {-42, 1, 5, 0}, {-43, 2, 5, 0}};
static const double avg_signed_want[4] = {-42, 1, 5, 0};
static const double avg_unsigned[3][4] = {
    {250, 1, 5, 0}, {0, 1, 5, 0}, {1, 2, 5, 1}};
static const double avg_unsigned_want[4] = {83, 1, 5, 0};
/* Floats: sums 7, 9, -5, 0.75 over 3. */
static const double avg_float[3][4] = {
    {1, 3, -1, 0.25}, {2, 3, -2, 0.25}, {4, 3, -2, 0.25}};

static void avg_body(member_t *m)
{
    const tutti_collective_t colls[3] = {
        TUTTI_COLL_ALLREDUCE, TUTTI_COLL_REDUCE, TUTTI_COLL_REDUCE_SCATTER};
    const char *const *impls = m->arg;
    uint64_t key = 0;
    for (int c = 0; c < 3; c++) {
        for (int d = 0; d < TUTTI_DTYPE_COUNT; d++) {
            tutti_dtype_t dt = (tutti_dtype_t)d;
            int fl = d >= TUTTI_FLOAT16, uns = d == TUTTI_UINT8 ||
                                                d == TUTTI_UINT32 ||
                                                d == TUTTI_UINT64;
            const double(*in)[4] = fl ? avg_float : uns ? avg_unsigned
                                                        : avg_signed;
            unsigned char send[3 * 4 * 8], recv[4 * 8 + 8];
            tutti_instance_params_t p;
            /* reduce_scatter: 4 elements per block, every block alike. */
            size_t blocks = colls[c] == TUTTI_COLL_REDUCE_SCATTER ? 3 : 1;
            for (size_t b = 0; b < blocks; b++)
                for (int i = 0; i < 4; i++)
                    tutti_pattern_set(send, dt, b * 4 + (size_t)i,
                                      in[m->index][i]);
            memset(recv, 0x5a, sizeof(recv));
            test_params(&p, ++key, colls[c], dt, 4);
            p.op = TUTTI_OP_AVG;
            p.root = 1;
            p.algorithm = impls[c];
            tutti_status_t st = test_exec_wait(m->g, &p, send, recv);
            if (st != TUTTI_OK) {
                member_fail(m, "%s avg %s: %s: %s", impls[c],
                            tutti_dtype_name(dt), tutti_status_name(st),
                            tutti_last_error());
                continue;
            }
            if (colls[c] == TUTTI_COLL_REDUCE && m->index != 1)
                continue;
            for (int i = 0; i < 4; i++) {
                double got = tutti_pattern_get(recv, dt, (size_t)i);
                double want = fl ? (in[0][i] + in[1][i] + in[2][i]) / 3
                                 : uns ? avg_unsigned_want[i]
                                       : avg_signed_want[i];
                /* Floats multiply by 1/3 once, in float32 for the narrow
                 * types: within 2 units of their last place. */
                double tol = d == TUTTI_FLOAT64   ? 0x1p-51
                             : d == TUTTI_FLOAT32 ? 0x1p-22
                             : d == TUTTI_FLOAT16 ? 0x1p-10
                             : d == TUTTI_BFLOAT16 ? 0x1p-7 : 0;
                if (fabs(got - want) > tol * fabs(want))
                    member_fail(m, "%s avg %s element %d: got %.17g, want "
                                "%.17g", impls[c], tutti_dtype_name(dt), i,
                                got, want);
            }
        }
    }
}

static void test_avg_truncates_integers(void **state)
{
    const char *impls[3];
    impls_of(*state, TUTTI_COLL_ALLREDUCE, &impls[0], 1);
    impls_of(*state, TUTTI_COLL_REDUCE, &impls[1], 1);
    impls_of(*state, TUTTI_COLL_REDUCE_SCATTER, &impls[2], 1);
    run_group(*state, 3, avg_body, impls);
}

/* ---- scaling ------------------------------------------------------------- */

typedef struct {
    const char *impl;
    tutti_collective_t coll;
} scale_arg_t;

/* pre_scale and post_scale, powers of two: exact in every float type. */
static void scale_body(member_t *m)
{
    static const double pre[] = {0.5, 4, -2, 0, 2, 0.25};
    static const double post[] = {4, 0.25, 0, 0.5, 2, 1};
    static const size_t counts[] = {1, 7, 1027};
    const scale_arg_t *a = m->arg;
    tutti_checker_t c;
    tutti_checker_init(&c, m->g, stderr, 0);
    for (int d = TUTTI_FLOAT16; d <= TUTTI_FLOAT64; d++)
        for (int op = 0; op < TUTTI_OP_COUNT; op++)
            for (size_t s = 0; s < sizeof(pre) / sizeof(pre[0]); s++)
                for (size_t k = 0; k < 3; k++) {
                    tutti_check_case_t kc = {
                        a->coll, (tutti_dtype_t)d, (tutti_op_t)op, counts[k],
                        (int)(s + k) % m->n, (int)(s + k + (size_t)op) % 2,
                        pre[s], post[s], NULL, a->impl};
                    tutti_check_case(&c, &kc);
                }
    tutti_checker_fini(&c);
    if (c.res.checks != 4 * TUTTI_OP_COUNT * 6 * 3)
        member_fail(m, "%s: %d scaled cases ran", a->impl, c.res.checks);
    if (c.res.failures)
        member_fail(m, "%s: %d of %d scaled cases wrong (see the log)",
                    a->impl, c.res.failures, c.res.checks);
}

static void test_scales_on_float_types(void **state)
{
    const tutti_collective_t colls[3] = {
        TUTTI_COLL_ALLREDUCE, TUTTI_COLL_REDUCE, TUTTI_COLL_REDUCE_SCATTER};
    for (int c = 0; c < 3; c++) {
        const char *names[16];
        int k = impls_of(*state, colls[c], names, 16);
        for (int i = 0; i < k; i++)
            for (int n = 1; n <= 4; n++) {
                scale_arg_t a = {names[i], colls[c]};
                run_group(*state, n, scale_body, &a);
            }
    }
}

/* ---- accuracy of float sums ---------------------------------------------- */

/*
 * Allreduce sums of random floats against a float64 reference.  Bound: the
 * n inputs are added in some order by n - 1 additions, each rounded once
 * to the type (float16 and bfloat16 are added in float32 and rounded to
 * the type after every addition: one rounding per step).  With u the
 * unit roundoff (2^-11 float16, 2^-8 bfloat16, 2^-24 float32, 2^-53
 * float64), every partial sum's error is at most u times its magnitude,
 * which is at most S = sum |x_i|, so |result - exact| <= (n-1) u S
 * (first order; we use gamma = (n-1)u / (1 - (n-1)u)).  The reference is
 * itself a float64 sum, off by at most (n-1) 2^-53 S, added to the bound.
 * Inputs lie in [-2^4, 2^4] with at least 2^-4 magnitude or zero, so
 * nothing overflows or falls into the subnormals (where the relative
 * bound would not hold).
 */
#define ACC_COUNT 4099

typedef struct {
    const char *impl;
    tutti_dtype_t dtype;
    double worst; /* largest error / bound seen, by member 0 */
} acc_arg_t;

/* Input element @p i of rank @p r, rounded to @p dtype. */
static double acc_input(tutti_dtype_t dtype, int r, size_t i)
{
    unsigned char tmp[8];
    uint64_t s = (uint64_t)r * 1000003u + i, z = test_splitmix(&s);
    double v = ((double)(z >> 11) / 9007199254740992.0) * 2 - 1; /* [-1,1) */
    v *= pow(2, (double)((int)((z >> 3) % 9) - 4) + 1);
    if (fabs(v) < 0x1p-4)
        v = 0;
    tutti_pattern_set(tmp, dtype, 0, v);
    return tutti_pattern_get(tmp, dtype, 0);
}

static double unit_roundoff(tutti_dtype_t d)
{
    return d == TUTTI_FLOAT16    ? 0x1p-11
           : d == TUTTI_BFLOAT16 ? 0x1p-8
           : d == TUTTI_FLOAT32  ? 0x1p-24
                                 : 0x1p-53;
}

static void accuracy_body(member_t *m)
{
    acc_arg_t *a = (acc_arg_t *)m->arg;
    size_t es = tutti_dtype_size(a->dtype);
    unsigned char *in = malloc(ACC_COUNT * es), *out = malloc(ACC_COUNT * es);
    tutti_instance_params_t p;
    double u = unit_roundoff(a->dtype), worst = 0;
    double nu = (m->n - 1) * u, gamma = nu / (1 - nu);

    for (size_t i = 0; in && i < ACC_COUNT; i++)
        tutti_pattern_set(in, a->dtype, i, acc_input(a->dtype, m->index, i));
    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, a->dtype, ACC_COUNT);
    p.algorithm = a->impl;
    tutti_status_t st = in && out ? test_exec_wait(m->g, &p, in, out)
                                  : TUTTI_ERR_NO_MEMORY;
    if (st != TUTTI_OK) {
        member_fail(m, "%s: %s", tutti_status_name(st), tutti_last_error());
        goto out;
    }
    for (size_t i = 0; i < ACC_COUNT; i++) {
        double exact = 0, abs_sum = 0;
        for (int r = 0; r < m->n; r++) {
            double x = acc_input(a->dtype, r, i);
            exact += x;
            abs_sum += fabs(x);
        }
        double bound = (gamma + (m->n - 1) * 0x1p-53) * abs_sum;
        double err = fabs(tutti_pattern_get(out, a->dtype, i) - exact);
        if (err > bound) {
            member_fail(m, "%s %s n=%d element %zu: got %.17g, float64 sum "
                        "%.17g, error %.3g above the bound %.3g", a->impl,
                        tutti_dtype_name(a->dtype), m->n, i,
                        tutti_pattern_get(out, a->dtype, i), exact, err,
                        bound);
            break;
        }
        if (bound > 0 && err / bound > worst)
            worst = err / bound;
    }
    if (m->index == 0)
        a->worst = worst;
out:
    free(in);
    free(out);
}

static void test_float_sum_accuracy(void **state)
{
    const tutti_dtype_t dts[4] = {TUTTI_FLOAT32, TUTTI_FLOAT64, TUTTI_FLOAT16,
                                  TUTTI_BFLOAT16};
    const char *names[16];
    int k = impls_of(*state, TUTTI_COLL_ALLREDUCE, names, 16);
    for (int i = 0; i < k; i++)
        for (int d = 0; d < 4; d++)
            for (int n = 2; n <= 5; n++) {
                acc_arg_t a = {names[i], dts[d], 0};
                run_group(*state, n, accuracy_body, &a);
                print_message("%s %s n=%d: worst error %.2f of the bound\n",
                              names[i], tutti_dtype_name(dts[d]), n, a.worst);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argument_errors),
        cmocka_unit_test(test_later_execution_other_scale),
        cmocka_unit_test(test_later_execution_other_permutation),
        cmocka_unit_test(test_warm_calls_checked),
        cmocka_unit_test(test_zero_byte_warm_calls),
        cmocka_unit_test(test_blocking_helpers),
        cmocka_unit_test(test_avg_truncates_integers),
        cmocka_unit_test(test_scales_on_float_types),
        cmocka_unit_test(test_float_sum_accuracy),
    };
    return cmocka_run_group_tests_name("coll", tests, test_single_task_setup,
                                       test_context_teardown);
}
