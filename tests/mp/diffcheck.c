/*
 * diffcheck: a randomized differential client of the public API.  Every
 * member of a group runs the same seeded sequence of calls (all
 * collectives, fixed and per-rank counts, every implementation by name and
 * through selection, the blocking helpers, barriers, re-executed
 * instances), each member choosing alone whether it runs in place, and
 * checks every output element against an exact sequential reference
 * (diffcheck_ref.c), the guard bytes around every buffer, inputs and unused
 * buffers unchanged, the status (ERR_TOO_SMALL naming the short ranks) and
 * tutti_request_info().
 *
 *   diffcheck [--seed S] [--calls N] [--first K] [--only K1,K2,...]
 *             [--devices D] [--max-count N] [--max-bytes B] [--timeout S]
 *             [--phase N] [--max-failures N] [--no-mixed] [--verbose]
 *
 * Start it under tutti-run, mpirun, or alone; each task runs D members
 * (threads), the group is every task's.  Calls k = first .. first+N-1 run
 * (or only those listed).  After each call the members agree, over a
 * group of their own, whether anyone failed; if so every member leaves the
 * data group and joins a fresh one, so one failure does not hide the next.
 * Every --phase calls there is a barrier and a fresh group too.  The run
 * stops after --max-failures failed calls.
 *
 * Each member prints "diffcheck: rank R: seed S: C calls, E elements
 * checked, W wrong, F failures" and a line per failed call naming the
 * seed, the call, every member's choices and the first wrong element, with
 * the options that replay it.  Exit 0 only if every member of this task
 * has W = 0 and F = 0.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "diffcheck.h"
#include "members.h"

#define GUARD 64
#define CTRL_KEY 0x64696666ULL        /* "diff" */
#define DATA_KEY 0x6469666600000000ULL
#define MAX_REPORTS 40                /* failure lines printed per member */

typedef struct {
    uint64_t seed;
    long first, calls;
    long *only;
    long nonly;
    int devices;
    size_t max_count, max_bytes;
    double timeout;
    int phase, max_failures, mixed, verbose;
    int memory;              /* MEM_* */
} options_t;

/* --memory: where a member's send and receive buffers come from. */
enum {
    MEM_HEAP,       /* aligned_alloc */
    MEM_REGISTERED, /* tutti_mem_alloc: peers read them in place */
    MEM_MIXED       /* either, chosen per member and call from the seed */
};

/* A growing buffer with GUARD bytes before and after the data. */
typedef struct {
    unsigned char *base;
    size_t cap;
    int registered;          /* base is tutti_mem_alloc's */
} arena_t;

typedef struct {
    tutti_context_t *ctx;
    const options_t *opt;
    const dc_impl_t *impls;
    int nimpls, device;
    tutti_group_t *ctrl, *data;
    long epoch;
    int rank, n;
    dc_plan_env_t env;
    arena_t a, b, w;
    arena_t ra, rb;          /* a and b in registered memory */
    long calls, wrong, failures, reports;
    long long elements;
    int ok;
} member_t;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- output ---------------------------------------------------------- */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&out_lock);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

/* One line about call @p c on member @p m: what it was and what went wrong,
 * with the options that replay it. */
static void report(member_t *m, const dc_call_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(member_t *m, const dc_call_t *c, const char *fmt, ...)
{
    char what[4096], why[1024], replay[64];
    va_list ap;
    if (++m->reports > MAX_REPORTS)
        return;
    dc_describe(&m->env, c, what, sizeof(what));
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (c->origin != c->index)
        snprintf(replay, sizeof(replay), "--only %ld,%ld", c->origin,
                 c->index);
    else
        snprintf(replay, sizeof(replay), "--only %ld", c->index);
    say("diffcheck: rank %d: FAIL seed %llu call %ld: %s: %s (replay: "
        "--seed %llu %s)\n", m->rank, (unsigned long long)m->opt->seed,
        c->index, what, why, (unsigned long long)m->opt->seed, replay);
    if (m->reports == MAX_REPORTS)
        say("diffcheck: rank %d: further failures are counted, not "
            "printed\n", m->rank);
}

/* ---- buffers ------------------------------------------------------------- */

/* Room for @p bytes between two guards; the data pointer, or NULL. */
static unsigned char *arena_get(arena_t *a, size_t bytes)
{
    size_t want = bytes + 2 * GUARD;
    if (want > a->cap) {
        a->cap = (want + 4095) / 4096 * 4096;
        if (a->registered) {
            void *p = NULL;
            tutti_mem_free(a->base);
            if (tutti_mem_alloc(a->cap, &p) != TUTTI_OK)
                p = NULL;
            a->base = p;
        } else {
            free(a->base);
            a->base = aligned_alloc(64, a->cap);
        }
        if (a->base == NULL) {
            a->cap = 0;
            return NULL;
        }
    }
    return a->base + GUARD;
}

static void arena_free(arena_t *a)
{
    if (a->registered)
        tutti_mem_free(a->base);
    else
        free(a->base);
    a->base = NULL;
    a->cap = 0;
}

/* Whether member @p r's buffers of call @p k are registered memory. */
static int uses_registered(const member_t *m, long k, int r)
{
    if (m->opt->memory != MEM_MIXED)
        return m->opt->memory == MEM_REGISTERED;
    return (dc_hash3(m->opt->seed ^ 0x6d656dULL, (uint64_t)k,
                     (uint64_t)r) & 1) != 0;
}

/* Poisons a buffer of @p len bytes and both its guards. */
static void poison_all(unsigned char *data, size_t len, uint64_t seed)
{
    dc_poison(data - GUARD, len + 2 * GUARD, seed);
}

/* Offset (in data bytes, negative: before it) of the first byte of the
 * guards or of data bytes [from, to) that is not the poison, or 0 with
 * *ok set. */
static int poison_intact(const unsigned char *data, size_t len, size_t from,
                         size_t to, uint64_t seed, long *bad_out)
{
    size_t at = dc_poison_check(data - GUARD, 0, GUARD, seed);
    if (at == SIZE_MAX)
        at = dc_poison_check(data - GUARD, GUARD + len, 2 * GUARD + len,
                             seed);
    if (at == SIZE_MAX && from < to)
        at = dc_poison_check(data - GUARD, GUARD + from, GUARD + to, seed);
    if (at == SIZE_MAX)
        return 1;
    *bad_out = (long)at - GUARD;
    return 0;
}

/* ---- groups -------------------------------------------------------------- */

static tutti_status_t join(member_t *m, uint64_t key, double timeout,
                           tutti_group_t **g_out)
{
    tutti_status_t st = test_join(
        m->ctx, key, tutti_context_num_tasks(m->ctx) * m->opt->devices,
        m->device, timeout, g_out);
    if (st != TUTTI_OK)
        say("diffcheck: task %d device %d: FAIL join group 0x%llx: %s: %s\n",
            tutti_context_task(m->ctx), m->device, (unsigned long long)key,
            tutti_status_name(st), tutti_last_error());
    return st;
}

/* A fresh data group (after a failure, and every phase). */
static int rejoin(member_t *m)
{
    tutti_group_leave(m->data);
    m->data = NULL;
    m->epoch++;
    return join(m, DATA_KEY + (uint64_t)m->epoch, m->opt->timeout,
                &m->data) == TUTTI_OK;
}

/* The members agree on @p state (0 fine, 1 a call failed somewhere and the
 * data group must be replaced, 2 stop) and on the call; returns the
 * group's worst state and whether anyone saw a wrong element in *bad. */
static int agree(member_t *m, long k, int state, int bad, int *bad_out)
{
    uint64_t v[4] = {(uint64_t)state, (uint64_t)bad, (uint64_t)k,
                     ~(uint64_t)k};
    tutti_instance_params_t p;
    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_UINT64, 4);
    p.op = TUTTI_OP_MAX;
    tutti_status_t st = test_exec_wait(m->ctrl, &p, v, v);
    if (st != TUTTI_OK) {
        say("diffcheck: rank %d: FAIL seed %llu call %ld: the members could "
            "not agree after it: %s: %s\n", m->rank,
            (unsigned long long)m->opt->seed, k, tutti_status_name(st),
            tutti_last_error());
        m->failures++;
        return 2;
    }
    if (v[2] != (uint64_t)k || v[3] != ~(uint64_t)k) {
        say("diffcheck: rank %d: FAIL seed %llu call %ld: members are at "
            "different calls\n", m->rank, (unsigned long long)m->opt->seed,
            k);
        m->failures++;
        return 2;
    }
    *bad_out = v[1] != 0;
    return (int)v[0];
}

/* ---- one call -------------------------------------------------------- */

typedef struct {
    tutti_request_t *req;     /* freed once its info is checked */
    tutti_status_t exec_st, st;
    tutti_request_info_t info;
    int have_info;
    char detail[1024];
    size_t ag_counts[DC_MAX_N], ag_total; /* tutti_allgatherv's outputs */
} result_t;

static tutti_status_t run_helper(member_t *m, const dc_call_t *c,
                                 const dc_layout_t *L, const void *send,
                                 void *recv, result_t *res)
{
    tutti_group_t *g = m->data;
    switch (c->coll) {
    case TUTTI_COLL_ALLREDUCE:
        return tutti_allreduce(g, send, recv, c->count, c->dtype, c->op);
    case TUTTI_COLL_BROADCAST:
        return tutti_broadcast(g, recv, c->count, c->dtype, c->root);
    case TUTTI_COLL_REDUCE:
        return tutti_reduce(g, send, recv, c->count, c->dtype, c->op,
                            c->root);
    case TUTTI_COLL_ALLGATHER:
        if (c->per_rank)
            return tutti_allgatherv(g, send, L->in_n, recv, L->cap, c->dtype,
                                    res->ag_counts, &res->ag_total);
        return tutti_allgather(g, send, recv, c->count, c->dtype);
    case TUTTI_COLL_GATHER:
        return tutti_gather(g, send, recv, c->count, c->dtype, c->root);
    case TUTTI_COLL_REDUCE_SCATTER:
        return tutti_reduce_scatter(g, send, recv, c->count, c->dtype, c->op);
    default:
        return tutti_alltoall(g, send, recv, c->count, c->dtype);
    }
}

static void run_exec(member_t *m, const dc_call_t *c, const dc_layout_t *L,
                     const void *send, void *recv, result_t *res)
{
    tutti_instance_params_t p;
    tutti_request_t *r;
    test_params(&p, c->key, c->coll, c->dtype,
                c->per_rank ? TUTTI_COUNT_PER_RANK : c->count);
    p.op = c->op;
    p.root = c->root;
    p.algorithm = c->impl >= 0 ? m->impls[c->impl].name : NULL;
    p.pre_scale = c->pre;
    p.post_scale = c->post;
    if (c->coll == TUTTI_COLL_PERMUTE)
        p.permutation = c->perm;
    if (c->per_rank) {
        if (c->coll == TUTTI_COLL_REDUCE_SCATTER)
            p.counts = c->counts;
        if (c->coll == TUTTI_COLL_ALLTOALL)
            p.counts = c->counts + (size_t)m->rank * (size_t)m->n;
        p.send_count = L->in_n;
        p.recv_capacity = L->cap;
    }
    res->exec_st = tutti_execute(m->data, &p, send, recv, &r);
    res->st = res->exec_st;
    if (res->exec_st != TUTTI_OK) {
        snprintf(res->detail, sizeof(res->detail), "%s", tutti_last_error());
        return;
    }
    res->st = tutti_request_wait(r);
    if (res->st != TUTTI_OK)
        snprintf(res->detail, sizeof(res->detail), "%s", tutti_last_error());
    /* Its strings and counts are borrowed for the request's life: the
     * request is freed after they are checked. */
    tutti_request_info(r, &res->info);
    res->have_info = 1;
    res->req = r;
}

/* "rank R" followed by something other than a digit. */
static int names_rank(const char *text, int r)
{
    char want[32];
    snprintf(want, sizeof(want), "rank %d", r);
    for (const char *p = strstr(text, want); p; p = strstr(p + 1, want)) {
        char next = p[strlen(want)];
        if (next < '0' || next > '9')
            return 1;
    }
    return 0;
}

static const char *outcome_name(dc_outcome_t o)
{
    switch (o) {
    case DC_OUT_QUERY: return "OK (sizes only)";
    case DC_OUT_TOO_SMALL: return "ERR_TOO_SMALL";
    default: return "OK";
    }
}

/* Status, the detail and the request's info; 0 if something is off (the
 * data group is then replaced). */
static int check_status(member_t *m, const dc_call_t *c, const dc_layout_t *L,
                        const result_t *res)
{
    tutti_status_t want = TUTTI_OK;
    if (L->outcome == DC_OUT_TOO_SMALL)
        want = TUTTI_ERR_TOO_SMALL;
    if (res->st != want) {
        report(m, c, "%s, want %s: %s", tutti_status_name(res->st),
               outcome_name(L->outcome),
               res->detail[0] ? res->detail : tutti_last_error());
        return 0;
    }
    if (L->outcome == DC_OUT_TOO_SMALL) {
        for (int i = 0; i < L->nshort && i < 8; i++)
            if (!names_rank(res->detail, L->short_ranks[i])) {
                report(m, c, "ERR_TOO_SMALL's detail does not name rank %d: "
                       "%s", L->short_ranks[i], res->detail);
                return 0;
            }
    }
    return 1;
}

/* What tutti_request_info (or tutti_allgatherv) said; 0 if wrong. */
static int check_info(member_t *m, const dc_call_t *c, const dc_layout_t *L,
                      const result_t *res)
{
    const tutti_request_info_t *in = &res->info;
    if (c->api == DC_API_HELPER && c->per_rank) {
        for (int q = 0; q < m->n; q++)
            if (res->ag_counts[q] != L->recv_counts[q]) {
                report(m, c, "tutti_allgatherv: recv_counts[%d] = %zu, want "
                       "%zu", q, res->ag_counts[q], L->recv_counts[q]);
                return 0;
            }
        if (res->ag_total != L->recv_total) {
            report(m, c, "tutti_allgatherv: recv_total %zu, want %zu",
                   res->ag_total, L->recv_total);
            return 0;
        }
        return 1;
    }
    if (!res->have_info)
        return 1;
    const char *named = c->impl >= 0 ? m->impls[c->impl].name : NULL;
    if (in->algorithm == NULL || in->algorithm[0] == '\0' ||
        (named && strcmp(in->algorithm, named) != 0)) {
        report(m, c, "request info: algorithm '%s'%s%s", in->algorithm
               ? in->algorithm : "(null)", named ? ", want " : "",
               named ? named : "");
        return 0;
    }
    if (in->instance_key != c->key) {
        report(m, c, "request info: instance key %llu",
               (unsigned long long)in->instance_key);
        return 0;
    }
    if (L->check_total && in->recv_total != L->recv_total) {
        report(m, c, "request info: recv_total %zu, want %zu", in->recv_total,
               L->recv_total);
        return 0;
    }
    if (!c->per_rank && in->recv_counts != NULL) {
        report(m, c, "request info: recv_counts set for fixed counts");
        return 0;
    }
    if (c->per_rank) {
        if (in->recv_counts == NULL) {
            report(m, c, "request info: no recv_counts");
            return 0;
        }
        for (int q = 0; q < m->n; q++)
            if (in->recv_counts[q] != L->recv_counts[q]) {
                report(m, c, "request info: recv_counts[%d] = %zu, want %zu",
                       q, in->recv_counts[q], L->recv_counts[q]);
                return 0;
            }
    }
    return 1;
}

/* Compares @p n elements at @p got with the expectation in m->w; returns
 * the wrong ones (reported). */
static size_t compare_out(member_t *m, const dc_call_t *c, const char *what,
                          const unsigned char *got, const unsigned char *want,
                          size_t n, int by_value)
{
    size_t first = 0, wrong;
    char g[64], w[64];
    wrong = dc_compare(c->dtype, by_value, got, want, n, &first);
    m->elements += (long long)n;
    if (wrong > 0) {
        dc_format(c->dtype, got, first, g, sizeof(g));
        dc_format(c->dtype, want, first, w, sizeof(w));
        report(m, c, "%s: %zu of %zu elements wrong; first at %zu: got %s, "
               "want %s", what, wrong, n, first, g, w);
    }
    return wrong;
}

/* Buffer @p data of @p len_el elements, poisoned with @p seed and then,
 * if @p has_input, given this member's input at @p in_off: its guards and
 * every element outside [skip_from, skip_to) are as they were; 0 if not. */
static int unchanged(member_t *m, const dc_call_t *c, const char *what,
                     const unsigned char *data, size_t len_el, uint64_t seed,
                     int has_input, size_t in_off, size_t in_n,
                     size_t skip_from, size_t skip_to)
{
    size_t es = tutti_dtype_size(c->dtype), in_end = in_off + in_n;
    size_t cut[6] = {0, in_off, in_end, skip_from, skip_to, len_el};
    unsigned char *w = NULL;
    long bad = 0;
    if (!has_input)
        in_end = in_off = 0;
    if (!poison_intact(data, len_el * es, 0, 0, seed, &bad)) {
        report(m, c, "%s: the guard bytes changed (byte %ld of a %zu-byte "
               "buffer)", what, bad, len_el * es);
        return 0;
    }
    /* The intervals between the cuts: input, poison or skipped. */
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++)
            if (cut[j] < cut[i]) {
                size_t t = cut[i];
                cut[i] = cut[j];
                cut[j] = t;
            }
    for (int i = 0; i + 1 < 6; i++) {
        size_t a = cut[i], b = cut[i + 1] < len_el ? cut[i + 1] : len_el;
        if (a >= b || (a >= skip_from && b <= skip_to))
            continue;
        m->elements += (long long)(b - a);
        if (!(a >= in_off && b <= in_end)) {
            if (!poison_intact(data, len_el * es, a * es, b * es, seed,
                               &bad)) {
                report(m, c, "%s: written where it must not be (byte %ld of "
                       "a %zu-byte buffer)", what, bad, len_el * es);
                return 0;
            }
            continue;
        }
        if (w == NULL) {
            if ((w = arena_get(&m->w, in_n * es)) == NULL) {
                report(m, c, "no memory for %zu elements", in_n);
                return 0;
            }
            dc_fill_input(c, m->rank, w, in_n);
        }
        size_t first = 0;
        if (dc_compare(c->dtype, 0, data + a * es, w + (a - in_off) * es,
                       b - a, &first)) {
            char g[64], e[64];
            dc_format(c->dtype, data + a * es, first, g, sizeof(g));
            dc_format(c->dtype, w + (a - in_off) * es, first, e, sizeof(e));
            report(m, c, "%s: its input changed; first at element %zu: %s, "
                   "was %s", what, a + first, g, e);
            return 0;
        }
    }
    return 1;
}

/*
 * Runs call @p c as this member and checks everything; returns 0 when fine,
 * 1 when a call failed (the data group is then replaced), and counts wrong
 * elements and failures.
 */
static int run_call_in(member_t *m, const dc_call_t *c, result_t *rp)
{
    dc_layout_t L;
    result_t *res = rp;
    size_t es = tutti_dtype_size(c->dtype);
    uint64_t seed_a = dc_hash3(c->data_seed, 0x41, (uint64_t)m->rank);
    uint64_t seed_b = dc_hash3(c->data_seed, 0x42, (uint64_t)m->rank);
    unsigned char *pa = NULL, *pb = NULL;
    int r = m->rank;

    memset(res, 0, sizeof(*res));
    m->calls++;
    dc_layout(c, r, &L);
    if (c->api == DC_API_BARRIER) {
        tutti_status_t st = tutti_barrier(m->data);
        if (st != TUTTI_OK) {
            report(m, c, "%s: %s", tutti_status_name(st), tutti_last_error());
            m->failures++;
            return 1;
        }
        return 0;
    }
    int reg = uses_registered(m, c->index, r);
    if (!L.a_null &&
        (pa = arena_get(reg ? &m->ra : &m->a, L.a_len * es)) == NULL)
        goto no_memory;
    if (!L.in_place && !L.b_null &&
        (pb = arena_get(reg ? &m->rb : &m->b, L.b_len * es)) == NULL)
        goto no_memory;
    if (pa != NULL) {
        poison_all(pa, L.a_len * es, seed_a);
        if (L.a_input)
            dc_fill_input(c, r, pa + (L.in_place ? L.in_off : 0) * es,
                          L.in_n);
    }
    if (pb != NULL)
        poison_all(pb, L.b_len * es, seed_b);
    const void *send = pa;
    void *recv = L.in_place ? pa : pb;
    if (c->api == DC_API_EXEC) {
        run_exec(m, c, &L, send, recv, res);
    } else {
        res->st = run_helper(m, c, &L, send, recv, res);
        if (res->st != TUTTI_OK)
            snprintf(res->detail, sizeof(res->detail), "%s",
                     tutti_last_error());
    }
    int ok = check_status(m, c, &L, res) && check_info(m, c, &L, res);
    if (!ok) {
        m->failures++;
        return 1;
    }
    /* The output. */
    int fine = 1;
    size_t wrong = 0;
    int data = L.outcome == DC_OUT_DATA && L.out_n > 0;
    if (data) {
        unsigned char *w = arena_get(&m->w, L.out_n * es);
        if (w == NULL)
            goto no_memory;
        dc_fill_expected(c, r, w, L.out_n);
        const unsigned char *got = L.in_place ? pa + L.out_off * es : pb;
        wrong = compare_out(m, c, "output", got, w, L.out_n, dc_by_value(c));
    }
    /* Everything else: as it was. */
    if (pa != NULL) {
        size_t from = 0, to = 0;
        if (L.in_place && c->coll == TUTTI_COLL_REDUCE_SCATTER &&
            L.outcome == DC_OUT_DATA) {
            to = L.a_len; /* only block r is defined afterwards */
        } else if (L.in_place && data) {
            from = L.out_off;
            to = L.out_off + L.out_n;
            if (c->per_rank && c->coll == TUTTI_COLL_ALLTOALL &&
                L.in_n > to)
                to = L.in_n; /* the input read, then overwritten */
        }
        fine &= unchanged(m, c, L.in_place ? "the in-place buffer"
                          : "sendbuf", pa, L.a_len, seed_a, L.a_input,
                          L.in_place ? L.in_off : 0, L.in_n, from, to);
    }
    if (pb != NULL)
        fine &= unchanged(m, c, "recvbuf", pb, L.b_len, seed_b, 0, 0, 0, 0,
                          data ? L.out_n : 0);
    m->wrong += (long)wrong;
    if (!fine)
        m->failures++;
    return 0;
no_memory:
    report(m, c, "no memory for the buffers (%zu and %zu elements%s%s)",
           L.a_len, L.b_len, reg ? "; registered: " : "",
           reg ? tutti_last_error() : "");
    m->failures++;
    return 1;
}

static int run_call(member_t *m, const dc_call_t *c)
{
    result_t res;
    int state = run_call_in(m, c, &res);
    tutti_request_free(res.req);
    return state;
}

/* ---- a member ---------------------------------------------------------- */

static void *member_main(void *arg)
{
    member_t *m = arg;
    const options_t *o = m->opt;
    long count = o->nonly > 0 ? o->nonly : o->calls, failed_calls = 0;
    dc_call_t *c = malloc(sizeof(*c));

    m->rank = -1;
    if (c == NULL || join(m, CTRL_KEY, 3 * o->timeout + 30, &m->ctrl) !=
                         TUTTI_OK) {
        m->failures++;
        free(c);
        return NULL;
    }
    m->rank = tutti_group_rank(m->ctrl);
    m->n = tutti_group_size(m->ctrl);
    if (m->n > DC_MAX_N) {
        say("diffcheck: rank %d: FAIL group of %d: at most %d members\n",
            m->rank, m->n, DC_MAX_N);
        m->failures++;
        goto out_ctrl;
    }
    if (join(m, DATA_KEY, o->timeout, &m->data) != TUTTI_OK) {
        m->failures++;
        goto out_ctrl;
    }
    m->env = (dc_plan_env_t){o->seed, m->n, m->impls, m->nimpls,
                             o->max_count, o->max_bytes, o->mixed,
                             o->phase};
    for (long i = 0; i < count; i++) {
        long k = o->nonly > 0 ? o->only[i] : o->first + i;
        int bad_here = 0, bad = 0;
        long wrong0 = m->wrong, failures0 = m->failures;
        dc_plan_call(&m->env, k, c);
        if (o->verbose && m->rank == 0) {
            char what[4096];
            dc_describe(&m->env, c, what, sizeof(what));
            say("diffcheck: call %ld: %s\n", k, what);
        }
        int state = run_call(m, c);
        bad_here = m->wrong != wrong0 || m->failures != failures0;
        state = agree(m, k, state, bad_here, &bad);
        if (state >= 2)
            break;
        if (bad && ++failed_calls >= o->max_failures) {
            if (m->rank == 0)
                say("diffcheck: stopping after %ld failed calls\n",
                    failed_calls);
            break;
        }
        int phase_end = (i + 1) % o->phase == 0 && i + 1 < count;
        if (phase_end) {
            tutti_status_t st = tutti_barrier(m->data);
            if (st != TUTTI_OK) {
                say("diffcheck: rank %d: FAIL seed %llu: barrier after call "
                    "%ld: %s: %s\n", m->rank, (unsigned long long)o->seed, k,
                    tutti_status_name(st), tutti_last_error());
                m->failures++;
                state = 1;
            }
            if (agree(m, k, state, 0, &bad) >= 2)
                break;
        }
        if ((state == 1 || phase_end) && !rejoin(m)) {
            m->failures++;
            break;
        }
    }
    tutti_group_leave(m->data);
out_ctrl:
    tutti_group_leave(m->ctrl);
    free(c);
    return NULL;
}

/* ---- options ----------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: diffcheck [--seed S] [--calls N] [--first K] "
            "[--only K1,K2,...]\n"
            "                 [--devices D] [--max-count N] [--max-bytes B] "
            "[--timeout S]\n"
            "                 [--phase N] [--max-failures N] [--no-mixed] "
            "[--verbose]\n"
            "                 [--memory heap|registered|mixed]\n");
}

static int parse_size(const char *text, size_t *out)
{
    uint64_t v;
    if (tutti_size_parse(text, &v) != TUTTI_OK)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_only(char *list, options_t *o)
{
    long n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    o->only = calloc((size_t)n, sizeof(long));
    if (o->only == NULL)
        return -1;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        char *end;
        long k = strtol(t, &end, 10);
        if (*end != '\0' || k < 0)
            return -1;
        o->only[o->nonly++] = k;
    }
    return o->nonly > 0 ? 0 : -1;
}

static int parse_options(int argc, char **argv, options_t *o)
{
    *o = (options_t){1, 0, 200, NULL, 0, 1, (size_t)1 << 21 | 1,
                     (size_t)64 << 20, 60, 64, 10, 1, 0, MEM_HEAP};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "--seed") == 0 && v)
            o->seed = strtoull(v, NULL, 0);
        else if (strcmp(a, "--calls") == 0 && v)
            o->calls = strtol(v, NULL, 10);
        else if (strcmp(a, "--first") == 0 && v)
            o->first = strtol(v, NULL, 10);
        else if (strcmp(a, "--only") == 0 && v) {
            if (parse_only(argv[i + 1], o) != 0)
                return -1;
        } else if (strcmp(a, "--devices") == 0 && v)
            o->devices = atoi(v);
        else if (strcmp(a, "--max-count") == 0 && v) {
            if (parse_size(v, &o->max_count) != 0)
                return -1;
        } else if (strcmp(a, "--max-bytes") == 0 && v) {
            if (parse_size(v, &o->max_bytes) != 0)
                return -1;
        } else if (strcmp(a, "--timeout") == 0 && v)
            o->timeout = atof(v);
        else if (strcmp(a, "--phase") == 0 && v)
            o->phase = atoi(v);
        else if (strcmp(a, "--max-failures") == 0 && v)
            o->max_failures = atoi(v);
        else if (strcmp(a, "--memory") == 0 && v) {
            o->memory = strcmp(v, "registered") == 0 ? MEM_REGISTERED
                        : strcmp(v, "mixed") == 0    ? MEM_MIXED
                        : strcmp(v, "heap") == 0     ? MEM_HEAP
                                                     : -1;
            if (o->memory < 0)
                return -1;
        }
        else {
            takes = 0;
            if (strcmp(a, "--no-mixed") == 0)
                o->mixed = 0;
            else if (strcmp(a, "--verbose") == 0)
                o->verbose = 1;
            else
                return -1;
        }
        i += takes;
    }
    if (o->devices < 1 || o->devices > DC_MAX_N || o->calls < 0 ||
        o->first < 0 || o->timeout <= 0 || o->phase < 1 ||
        o->max_failures < 1)
        return -1;
    return 0;
}

/* Every implementation that runs on CPU memory, as tutti_info_impl lists. */
static int list_impls(tutti_context_t *ctx, dc_impl_t *out)
{
    tutti_impl_info_t info;
    int k = 0;
    for (size_t i = 0; tutti_info_impl(ctx, i, &info) == TUTTI_OK; i++) {
        if (!(info.device_types & TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)) ||
            k == DC_MAX_IMPLS)
            continue;
        snprintf(out[k].name, sizeof(out[k].name), "%s", info.name);
        out[k].colls = info.collectives;
        out[k].per_rank = info.per_rank_collectives;
        k++;
    }
    return k;
}

int main(int argc, char **argv)
{
    options_t o;
    tutti_context_t *ctx;
    static dc_impl_t impls[DC_MAX_IMPLS];
    member_t *m;
    int ok = 1;

    if (parse_options(argc, argv, &o) != 0) {
        usage();
        return 2;
    }
    if ((ctx = test_context_from_env("diffcheck", tutti_status_name)) == NULL)
        return 1;
    int nimpls = list_impls(ctx, impls);
    m = calloc((size_t)o.devices, sizeof(*m));
    if (m == NULL) {
        tutti_context_destroy(ctx);
        return 1;
    }
    for (int d = 0; d < o.devices; d++) {
        m[d].ctx = ctx;
        m[d].opt = &o;
        m[d].impls = impls;
        m[d].nimpls = nimpls;
        m[d].device = d;
        m[d].ra.registered = m[d].rb.registered = 1;
    }
    if (test_threads(o.devices, member_main, m, sizeof(m[0])) != 0)
        ok = 0;
    for (int d = 0; d < o.devices; d++) {
        say("diffcheck: rank %d: seed %llu: %ld calls, %lld elements "
            "checked, %ld wrong, %ld failures\n", m[d].rank,
            (unsigned long long)o.seed, m[d].calls, m[d].elements,
            m[d].wrong, m[d].failures);
        ok &= m[d].wrong == 0 && m[d].failures == 0 && m[d].rank >= 0;
        arena_free(&m[d].a);
        arena_free(&m[d].b);
        arena_free(&m[d].w);
        arena_free(&m[d].ra);
        arena_free(&m[d].rb);
    }
    tutti_context_destroy(ctx);
    free(m);
    free(o.only);
    return ok ? 0 : 1;
}
