/*
 * One task of the point-to-point tests (tests/mp/test_p2p), started by
 * tutti-run:
 *
 *   p2p_worker [--devices D]
 *
 * Joins a group of every task x D devices (one thread per device) and
 * runs, checking every byte that arrives against what its sender wrote:
 *   ring     each rank sends to the next and receives from the one
 *            before, at 0, 1, odd, 64 KiB + 3 and 8 MiB + 24 bytes of
 *            several dtypes, with tutti_request_info's recv_total;
 *   tags     rank 0 sends tags 100 and 101 (256 KiB each); rank 1
 *            receives 101 first, then 100;
 *   order    five messages of one tag from rank 0 to the last rank arrive
 *            in the order sent;
 *   late     rank 1 posts its receive 50 ms after rank 0's blocking send;
 *   mixed    a receive posted, an allreduce run, then the send;
 *   refused  a message to itself, to a rank outside the group, from any
 *            source (-1), of a dtype outside the enum, with a NULL
 *            buffer or request_out;
 *   timeout  (group of 2 s) rank 0 waits for a message rank 1 never
 *            sends: TUTTI_ERR_TIMEOUT naming rank 1;
 *   length   rank 0 sends 8 bytes, rank 1 expects 16: TUTTI_ERR_TRUNCATED
 *            naming both lengths.
 * Prints "p2p_worker: rank R: C checks, F failures" per member, and a
 * line for each failure; exit 0 when no member failed.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tutti/tutti.h>

#include "members.h"

typedef struct {
    tutti_context_t *ctx;
    int device, devices;
    int rank, size;
    int checks, failures;
} member_t;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void check(member_t *m, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void check(member_t *m, int ok, const char *fmt, ...)
{
    m->checks++;
    if (ok)
        return;
    m->failures++;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_lock);
    printf("p2p_worker: rank %d: FAILED: ", m->rank);
    vprintf(fmt, ap);
    printf(" (last error: %s)\n", tutti_last_error());
    pthread_mutex_unlock(&out_lock);
    va_end(ap);
}

/* The bytes rank @p src sends in case @p c. */
static void pattern(unsigned char *buf, size_t len, int src, int c)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(src * 37 + c * 11 + i * 7 + (i >> 9));
}

/* Whether @p buf holds what rank @p src sent in case @p c. */
static int holds(const unsigned char *buf, size_t len, int src, int c)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (unsigned char)(src * 37 + c * 11 + i * 7 + (i >> 9)))
            return 0;
    return 1;
}

static void ring(member_t *m, tutti_group_t *g)
{
    static const struct {
        size_t count;
        tutti_dtype_t dtype;
    } cases[] = {{0, TUTTI_FLOAT32}, {1, TUTTI_INT8}, {7, TUTTI_BFLOAT16},
                 {13, TUTTI_FLOAT64}, {16385, TUTTI_FLOAT32},
                 {(1u << 20) + 3, TUTTI_INT64}};
    int next = (m->rank + 1) % m->size, prev = (m->rank + m->size - 1) %
                                               m->size;
    for (int c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++) {
        size_t len = cases[c].count * tutti_dtype_size(cases[c].dtype);
        unsigned char *out = malloc(len + 1), *in = malloc(len + 1);
        tutti_request_t *r[2] = {NULL, NULL};
        pattern(out, len, m->rank, c);
        memset(in, 0xee, len + 1);
        tutti_status_t st =
            tutti_irecv(g, in, cases[c].count, cases[c].dtype, prev,
                        (uint32_t)c, &r[0]);
        if (st == TUTTI_OK)
            st = tutti_isend(g, out, cases[c].count, cases[c].dtype, next,
                             (uint32_t)c, &r[1]);
        if (st == TUTTI_OK)
            st = tutti_request_wait_all(r, 2);
        check(m, st == TUTTI_OK, "ring: %zu x %s: %s", cases[c].count,
              tutti_dtype_name(cases[c].dtype), tutti_status_name(st));
        check(m, holds(in, len, prev, c) && in[len] == 0xee,
              "ring: %zu x %s: wrong bytes from rank %d", cases[c].count,
              tutti_dtype_name(cases[c].dtype), prev);
        if (r[0] != NULL) {
            tutti_request_info_t info;
            tutti_request_info(r[0], &info);
            char want[64];
            snprintf(want, sizeof(want), "recv from rank %d tag %d", prev,
                     c);
            check(m, info.recv_total == cases[c].count &&
                         strcmp(info.algorithm, want) == 0,
                  "ring: recv_total %zu, expected %zu; algorithm '%s', "
                  "expected '%s'", info.recv_total, cases[c].count,
                  info.algorithm, want);
        }
        tutti_request_free(r[0]);
        tutti_request_free(r[1]);
        free(out);
        free(in);
    }
}

/* Rank 0 sends tags 100 and 101; rank 1 takes 101 first. */
static void tags(member_t *m, tutti_group_t *g)
{
    enum { N = 1 << 18 };
    unsigned char *a = malloc(N), *b = malloc(N);
    tutti_status_t st;
    if (m->rank == 0) {
        tutti_request_t *r[2] = {NULL, NULL};
        pattern(a, N, 0, 100);
        pattern(b, N, 0, 101);
        st = tutti_isend(g, a, N, TUTTI_UINT8, 1, 100, &r[0]);
        if (st == TUTTI_OK)
            st = tutti_isend(g, b, N, TUTTI_UINT8, 1, 101, &r[1]);
        if (st == TUTTI_OK)
            st = tutti_request_wait_all(r, 2);
        check(m, st == TUTTI_OK, "tags: sends: %s", tutti_status_name(st));
        tutti_request_free(r[0]);
        tutti_request_free(r[1]);
    } else if (m->rank == 1) {
        st = tutti_recv(g, b, N, TUTTI_UINT8, 0, 101);
        check(m, st == TUTTI_OK && holds(b, N, 0, 101), "tags: tag 101: %s",
              tutti_status_name(st));
        st = tutti_recv(g, a, N, TUTTI_UINT8, 0, 100);
        check(m, st == TUTTI_OK && holds(a, N, 0, 100), "tags: tag 100: %s",
              tutti_status_name(st));
    }
    free(a);
    free(b);
}

/* Five messages under one tag, of five lengths, arrive in order. */
static void order(member_t *m, tutti_group_t *g)
{
    int32_t buf[5];
    int last = m->size - 1;
    for (int k = 0; k < 5; k++) {
        tutti_status_t st = TUTTI_OK;
        for (int i = 0; i <= k; i++)
            buf[i] = m->rank == 0 ? 1000 * k + i : -1;
        if (m->rank == 0)
            st = tutti_send(g, buf, (size_t)k + 1, TUTTI_INT32, last, 5);
        else if (m->rank == last)
            st = tutti_recv(g, buf, (size_t)k + 1, TUTTI_INT32, 0, 5);
        int ok = st == TUTTI_OK;
        for (int i = 0; i <= k && ok; i++)
            ok = buf[i] == 1000 * k + i || (m->rank != 0 && m->rank != last);
        check(m, ok, "order: message %d: %s", k, tutti_status_name(st));
    }
}

/* The receive is posted after the send completed (buffered). */
static void late(member_t *m, tutti_group_t *g)
{
    enum { N = 1 << 20 };
    unsigned char *buf = malloc(N);
    tutti_status_t st = TUTTI_OK;
    if (m->rank == 0) {
        pattern(buf, N, 0, 6);
        st = tutti_send(g, buf, N, TUTTI_UINT8, 1, 6);
        check(m, st == TUTTI_OK, "late: send: %s", tutti_status_name(st));
    } else if (m->rank == 1) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        memset(buf, 0, N);
        st = tutti_recv(g, buf, N, TUTTI_UINT8, 0, 6);
        check(m, st == TUTTI_OK && holds(buf, N, 0, 6), "late: recv: %s",
              tutti_status_name(st));
    }
    free(buf);
}

/* A receive pending across an allreduce of the same group. */
static void mixed(member_t *m, tutti_group_t *g)
{
    int32_t msg = 7000 + m->rank, got = -1, sum[3] = {m->rank, 1, -m->rank};
    tutti_request_t *r[2] = {NULL, NULL};
    int prev = (m->rank + m->size - 1) % m->size;
    tutti_status_t st = tutti_irecv(g, &got, 1, TUTTI_INT32, prev, 7, &r[0]);
    if (st == TUTTI_OK)
        st = tutti_allreduce(g, sum, sum, 3, TUTTI_INT32, TUTTI_OP_SUM);
    check(m, st == TUTTI_OK && sum[0] == m->size * (m->size - 1) / 2 &&
             sum[1] == m->size && sum[2] == -sum[0],
          "mixed: allreduce: %s", tutti_status_name(st));
    if (st == TUTTI_OK)
        st = tutti_isend(g, &msg, 1, TUTTI_INT32, (m->rank + 1) % m->size, 7,
                         &r[1]);
    if (st == TUTTI_OK)
        st = tutti_request_wait_all(r, 2);
    check(m, st == TUTTI_OK && got == 7000 + prev, "mixed: got %d: %s", got,
          tutti_status_name(st));
    tutti_request_free(r[0]);
    tutti_request_free(r[1]);
}

/* @p st is TUTTI_ERR_INVALID_ARG and the detail names @p what. */
static void refused_as(member_t *m, tutti_status_t st, const char *what)
{
    check(m, st == TUTTI_ERR_INVALID_ARG &&
             strstr(tutti_last_error(), what) != NULL,
          "refused: %s: %s", what, tutti_status_name(st));
}

static void refused(member_t *m, tutti_group_t *g)
{
    int x = 0;
    tutti_request_t *r = NULL;
    char want[64];
    snprintf(want, sizeof(want), "peer %d: expected another rank", m->rank);
    refused_as(m, tutti_isend(g, &x, 1, TUTTI_INT32, m->rank, 0, &r), want);
    snprintf(want, sizeof(want), "peer %d: expected", m->size);
    refused_as(m, tutti_irecv(g, &x, 1, TUTTI_INT32, m->size, 0, &r), want);
    refused_as(m, tutti_recv(g, &x, 1, TUTTI_INT32, -1, 0),
               "peer -1: expected another rank");
    refused_as(m, tutti_send(g, &x, 1, TUTTI_DTYPE_COUNT, 0, 0),
               "is not a tutti_dtype_t");
    refused_as(m, tutti_send(g, NULL, 5, TUTTI_INT32,
                             (m->rank + 1) % m->size, 0),
               "buf is NULL for 5 elements");
    refused_as(m, tutti_isend(g, &x, 1, TUTTI_INT32, (m->rank + 1) % m->size,
                              0, NULL),
               "request_out is NULL");
    check(m, r == NULL, "refused: a request was made");
}

/* In a group of its own with a 2 s limit: rank 0 waits in vain. */
static void timeout(member_t *m, tutti_group_t *g, tutti_group_t *g1)
{
    int x = 0;
    if (m->rank == 0) {
        tutti_status_t st = tutti_recv(g1, &x, 1, TUTTI_INT32, 1, 3);
        check(m, st == TUTTI_ERR_TIMEOUT &&
                 strstr(tutti_last_error(), "(recv from rank 1 tag 3) "
                        "made no progress") != NULL &&
                 strstr(tutti_last_error(), "waiting for rank 1") != NULL,
              "timeout: %s", tutti_status_name(st));
    }
    tutti_status_t st = tutti_barrier(g);
    check(m, st == TUTTI_OK, "timeout: barrier: %s", tutti_status_name(st));
}

/* In a group of its own: 8 bytes sent, 16 expected. */
static void length(member_t *m, tutti_group_t *g, tutti_group_t *g2)
{
    double x[2] = {1, 2};
    tutti_status_t st = TUTTI_OK;
    if (m->rank == 0)
        st = tutti_send(g2, x, 1, TUTTI_FLOAT64, 1, 2);
    else if (m->rank == 1)
        st = tutti_recv(g2, x, 2, TUTTI_FLOAT64, 0, 2);
    int ok = m->rank == 1 ? st == TUTTI_ERR_TRUNCATED &&
                                strstr(tutti_last_error(),
                                       "has 8 bytes, the receive expects "
                                       "16") != NULL
                          : st == TUTTI_OK;
    check(m, ok, "length: %s", tutti_status_name(st));
    st = tutti_barrier(g);
    check(m, st == TUTTI_OK, "length: barrier: %s", tutti_status_name(st));
}

static void *member_main(void *arg)
{
    member_t *m = arg;
    tutti_group_t *g = NULL, *g1 = NULL, *g2 = NULL;
    int n = tutti_context_num_tasks(m->ctx) * m->devices;
    tutti_status_t st = test_join(m->ctx, 42, n, m->device, 120, &g);
    /* Everyone there before the 2 s group is joined: its limit counts
     * from the join. */
    if (st == TUTTI_OK)
        st = tutti_barrier(g);
    if (st == TUTTI_OK)
        st = test_join(m->ctx, 43, n, m->device, 2.0, &g1);
    if (st == TUTTI_OK)
        st = test_join(m->ctx, 44, n, m->device, 120, &g2);
    if (st != TUTTI_OK) {
        check(m, 0, "join: %s", tutti_status_name(st));
    } else {
        m->rank = tutti_group_rank(g);
        m->size = tutti_group_size(g);
        ring(m, g);
        tags(m, g);
        order(m, g);
        late(m, g);
        mixed(m, g);
        refused(m, g);
        timeout(m, g, g1);
        length(m, g, g2);
    }
    tutti_group_leave(g2);
    tutti_group_leave(g1);
    tutti_group_leave(g);
    pthread_mutex_lock(&out_lock);
    printf("p2p_worker: rank %d: %d checks, %d failures\n", m->rank,
           m->checks, m->failures);
    pthread_mutex_unlock(&out_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int devices = 1;
    if (argc == 3 && strcmp(argv[1], "--devices") == 0)
        devices = atoi(argv[2]);
    if (devices < 1 || devices > TEST_MAX_THREADS) {
        fprintf(stderr, "usage: p2p_worker [--devices D], D 1 to %d\n",
                TEST_MAX_THREADS);
        return 2;
    }
    tutti_context_t *ctx = test_context_from_env("p2p_worker",
                                                 tutti_status_name);
    if (ctx == NULL)
        return 1;
    member_t m[TEST_MAX_THREADS];
    memset(m, 0, sizeof(m));
    for (int i = 0; i < devices; i++)
        m[i] = (member_t){.ctx = ctx, .device = i, .devices = devices};
    int bad = test_threads(devices, member_main, m, sizeof(m[0]));
    for (int i = 0; i < devices; i++)
        bad |= m[i].failures != 0 || m[i].checks == 0;
    tutti_context_destroy(ctx);
    return bad ? 1 : 0;
}
