/*
 * The differential client's sequence of calls: call k is a pure function of
 * the seed, the group size, the implementations and k, so every member
 * plans the same call and knows every other member's choices.
 *
 * Coverage: the calls run through a list of slots (each implementation x
 * each collective it runs, with fixed and per-rank counts; selection for
 * each collective; each blocking helper; barrier; re-executions of an
 * earlier instance), shuffled anew every round, so a run of one round
 * touches each once.  Within a slot, the dtype, op, scales, count, root,
 * permutation and the per-member choices are drawn from the call's stream.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diffcheck.h"

#define TAG_CALL 0x43414c4cULL
#define TAG_ROUND 0x524f554eULL
#define TAG_DATA 0x44415441ULL
#define TAG_IP 0x49500000ULL
#define TAG_NULL 0x4e554c4cULL
#define MAX_SLOTS 1024
#define REUSE_WINDOW 24

typedef struct {
    dc_api_t api;
    int coll;
    int impl;
    int per_rank;
    int reuse;
} slot_t;

static int gathers(int coll)
{
    return coll == TUTTI_COLL_ALLGATHER || coll == TUTTI_COLL_ALLTOALL;
}

static int per_rank_coll(int coll)
{
    return coll == TUTTI_COLL_ALLGATHER ||
           coll == TUTTI_COLL_REDUCE_SCATTER || coll == TUTTI_COLL_ALLTOALL;
}

static void add(slot_t *s, int *k, dc_api_t api, int coll, int impl,
                int per_rank, int reuse)
{
    if (*k < MAX_SLOTS)
        s[(*k)++] = (slot_t){api, coll, impl, per_rank, reuse};
}

static int build_slots(const dc_plan_env_t *env, slot_t *s)
{
    int k = 0;
    for (int i = 0; i < env->nimpls; i++)
        for (int c = 0; c < TUTTI_COLL_COUNT; c++)
            if (env->impls[i].colls & TUTTI_COLL_BIT(c))
                add(s, &k, DC_API_EXEC, c, i, 0, 0);
    for (int i = 0; i < env->nimpls; i++)
        for (int c = 0; c < TUTTI_COLL_COUNT; c++)
            if (per_rank_coll(c) && (env->impls[i].per_rank &
                                     env->impls[i].colls & TUTTI_COLL_BIT(c)))
                add(s, &k, DC_API_EXEC, c, i, 1, 0);
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        add(s, &k, DC_API_EXEC, c, -1, 0, 0);
        if (per_rank_coll(c))
            add(s, &k, DC_API_EXEC, c, -1, 1, 0);
        if (c != TUTTI_COLL_PERMUTE)
            add(s, &k, DC_API_HELPER, c, -1, 0, 0);
    }
    add(s, &k, DC_API_HELPER, TUTTI_COLL_ALLGATHER, -1, 1, 0); /* allgatherv */
    add(s, &k, DC_API_BARRIER, TUTTI_COLL_ALLREDUCE, -1, 0, 0);
    for (int r = k / 4; r > 0; r--)
        add(s, &k, DC_API_EXEC, 0, -1, 0, 1);
    return k;
}

/* Thresholds of the library, bytes (see the README and the sources): the
 * float16/bfloat16 reduction block (512 elements), the selection rules'
 * boundaries (4K, 64K), shm's slot (64K) and single copy (64K, bounce
 * 128K), tcp's staging (64K) and striping (256K per socket, 2 sockets),
 * the tree's chunk (256K, 8 lanes: 2M), RingReduceScatter's chunk and
 * shm's ring of 16 slots (1M). */
static const struct {
    size_t bytes;
    int weight;
} thresholds[] = {
    {1024, 3}, {4096, 4}, {65536, 4}, {131072, 2}, {262144, 2},
    {524288, 1}, {1048576, 1}, {2097152, 1},
};
#define NUM_THRESHOLDS (sizeof(thresholds) / sizeof(thresholds[0]))

static size_t threshold_bytes(dc_rng_t *rng)
{
    int total = 0;
    for (size_t i = 0; i < NUM_THRESHOLDS; i++)
        total += thresholds[i].weight;
    int pick = (int)dc_rng_below(rng, (uint64_t)total);
    for (size_t i = 0; i < NUM_THRESHOLDS; i++) {
        if (pick < thresholds[i].weight)
            return thresholds[i].bytes;
        pick -= thresholds[i].weight;
    }
    return thresholds[0].bytes;
}

/* Elements next to a threshold: T/es - 1, T/es or T/es + 1. */
static size_t near_threshold(dc_rng_t *rng, size_t es, size_t mult)
{
    size_t c = threshold_bytes(rng) / es * mult;
    int d = (int)dc_rng_below(rng, 3) - 1;
    return d < 0 ? c - 1 : c + (size_t)d;
}

/* Buffers of a fixed-count call hold this many times count elements. */
static size_t buffer_mult(int coll, int n)
{
    switch (coll) {
    case TUTTI_COLL_ALLGATHER:
    case TUTTI_COLL_GATHER:
    case TUTTI_COLL_REDUCE_SCATTER:
    case TUTTI_COLL_ALLTOALL:
        return (size_t)n;
    default:
        return 1;
    }
}

static int fits(const dc_plan_env_t *env, size_t count, size_t es,
                size_t mult)
{
    return count <= env->max_count &&
           count * es * mult <= env->max_bytes;
}

static size_t pick_count(const dc_plan_env_t *env, dc_rng_t *rng, int coll,
                         size_t es)
{
    size_t n = (size_t)env->n, mult = buffer_mult(coll, env->n), c;
    uint64_t p = dc_rng_below(rng, 100);
    if (p < 8)
        return 0;
    if (p < 16)
        return 1;
    if (p < 26)
        return 3 + 2 * dc_rng_below(rng, 30);
    if (p < 36) {
        size_t near[5] = {n > 1 ? 1 + dc_rng_below(rng, n - 1) : 1, n, n + 1,
                          2 * n - 1, 2 * n + 1};
        return near[dc_rng_below(rng, 5)];
    }
    if (p >= 60) {
        /* A third of them: n segments of a threshold (ring segments). */
        c = near_threshold(rng, es, dc_rng_below(rng, 3) == 0 ? n : 1);
        if (fits(env, c, es, mult))
            return c;
    }
    return 2 + dc_rng_below(rng, 4999);
}

/* A per-rank entry: mostly small, zero often. */
static size_t small_entry(dc_rng_t *rng, int tiny)
{
    if (dc_rng_below(rng, 10) < 3)
        return 0;
    return tiny ? 1 + dc_rng_below(rng, 8) : 1 + dc_rng_below(rng, 3000);
}

static void per_rank_counts(const dc_plan_env_t *env, dc_rng_t *rng,
                            dc_call_t *c)
{
    int n = env->n;
    size_t es = tutti_dtype_size(c->dtype);
    size_t entries = c->coll == TUTTI_COLL_ALLTOALL ? (size_t)n * (size_t)n
                                                    : (size_t)n;
    uint64_t mode = dc_rng_below(rng, 100);
    for (size_t i = 0; i < entries; i++)
        c->counts[i] = small_entry(rng, mode < 45);
    if (mode >= 85) {
        /* One entry next to a threshold, if the buffers allow it. */
        size_t big = near_threshold(rng, es, 1);
        size_t total = big * es * (size_t)n;
        if (big <= env->max_count && total <= env->max_bytes)
            c->counts[dc_rng_below(rng, entries)] = big;
    }
}

/* Members' recvbuf for per-rank allgather and alltoall. */
static size_t need_of(const dc_call_t *c, int r)
{
    size_t need = 0;
    for (int q = 0; q < c->n; q++)
        need += c->coll == TUTTI_COLL_ALLGATHER
                    ? c->counts[q]
                    : c->counts[(size_t)q * (size_t)c->n + (size_t)r];
    return need;
}

static void capacities(dc_rng_t *rng, dc_call_t *c)
{
    int n = c->n;
    uint64_t mode = dc_rng_below(rng, 100);
    for (int r = 0; r < n; r++) {
        int kind = dc_rng_below(rng, 2) ? DC_CAP_ROOMY : DC_CAP_EXACT;
        if (mode >= 55 && mode < 70)
            kind = DC_CAP_QUERY;
        else if (mode >= 70 && mode < 85 && dc_rng_below(rng, 10) < 4)
            kind = DC_CAP_QUERY;
        else if (mode >= 85 && dc_rng_below(rng, 10) == 0)
            kind = DC_CAP_QUERY;
        c->cap_kind[r] = (unsigned char)kind;
    }
    if (mode >= 85) {
        int shorts = 1 + (int)dc_rng_below(rng, 2);
        for (int i = 0; i < shorts; i++)
            c->cap_kind[dc_rng_below(rng, (uint64_t)n)] = DC_CAP_SHORT;
    }
    for (int r = 0; r < n; r++) {
        size_t need = need_of(c, r);
        if (c->cap_kind[r] == DC_CAP_SHORT && need == 0)
            c->cap_kind[r] = DC_CAP_EXACT;
        switch (c->cap_kind[r]) {
        case DC_CAP_ROOMY:
            c->cap[r] = need + 1 + dc_rng_below(rng, 64);
            break;
        case DC_CAP_SHORT:
            c->cap[r] = need - 1 - dc_rng_below(rng, need);
            break;
        case DC_CAP_QUERY:
            c->cap[r] = 0;
            break;
        default:
            c->cap[r] = need;
            break;
        }
        /* A buffer that holds its input in place holds what it receives. */
        if (c->cap_kind[r] == DC_CAP_QUERY || c->cap_kind[r] == DC_CAP_SHORT)
            c->in_place[r] = 0;
    }
}

static const double scale_list[] = {0, 1, -2, 0.5, 4, -0.25, 2, -1};
#define NUM_SCALES (sizeof(scale_list) / sizeof(scale_list[0]))

static int log2_abs(double f)
{
    int e = 0;
    for (double a = f < 0 ? -f : f; a > 1.5; a /= 2)
        e++;
    for (double a = f < 0 ? -f : f; a < 0.75 && a > 0; a *= 2)
        e++;
    return e;
}

/* The fixed parameters of a new instance. */
static void plan_fixed(const dc_plan_env_t *env, dc_rng_t *rng,
                       const slot_t *s, dc_call_t *c)
{
    int n = env->n;
    c->api = s->api;
    c->coll = (tutti_collective_t)s->coll;
    c->per_rank = s->per_rank;
    c->impl = s->impl;
    c->dtype = (tutti_dtype_t)dc_rng_below(rng, TUTTI_DTYPE_COUNT);
    c->op = TUTTI_OP_SUM;
    if (tutti_collective_reduces(c->coll))
        c->op = (tutti_op_t)dc_rng_below(rng, TUTTI_OP_COUNT);
    if (c->api == DC_API_EXEC && tutti_collective_reduces(c->coll) &&
        tutti_dtype_is_float(c->dtype) && dc_rng_below(rng, 2)) {
        c->pre = scale_list[dc_rng_below(rng, NUM_SCALES)];
        c->post = scale_list[dc_rng_below(rng, NUM_SCALES)];
        /* float16 products: n scaled inputs and the result stay normal */
        if (c->dtype == TUTTI_FLOAT16 && c->op == TUTTI_OP_PROD &&
            n * log2_abs(c->pre) + log2_abs(c->post) > 14)
            c->pre = 0;
    }
    c->count = pick_count(env, rng, s->coll, tutti_dtype_size(c->dtype));
    c->root = (int)dc_rng_below(rng, (uint64_t)n);
    for (int r = 0; r < n; r++)
        c->perm[r] = r;
    for (int r = n - 1; r > 0; r--) {
        int j = (int)dc_rng_below(rng, (uint64_t)r + 1), t = c->perm[r];
        c->perm[r] = c->perm[j];
        c->perm[j] = t;
    }
    c->key = (uint64_t)c->index + 1;
    if (c->api == DC_API_BARRIER) {
        c->dtype = TUTTI_UINT8;
        c->op = TUTTI_OP_MAX;
        c->count = 1;
    }
}

/* What each member does in this execution. */
static void plan_execution(const dc_plan_env_t *env, dc_rng_t *rng,
                           dc_call_t *c)
{
    int n = env->n;
    uint64_t mode = dc_rng_below(rng, 100);
    /* all out of place, all in place, or each member alone */
    int place = mode < 30 ? 0 : mode < 55 ? 1 : 2;
    if (!env->mixed)
        place = mode < 50 ? 0 : 1;
    for (int r = 0; r < n; r++) {
        uint64_t h = dc_hash3(c->data_seed, TAG_IP, (uint64_t)r);
        c->in_place[r] = (unsigned char)(place == 2 ? (int)(h & 1) : place);
        c->null_buf[r] = (unsigned char)(dc_hash3(c->data_seed, TAG_NULL,
                                                  (uint64_t)r) & 1);
    }
    if (c->api == DC_API_HELPER && c->coll == TUTTI_COLL_BROADCAST)
        for (int r = 0; r < n; r++)
            c->in_place[r] = 1; /* tutti_broadcast has one buffer */
    if (!c->per_rank)
        return;
    per_rank_counts(env, rng, c);
    if (gathers(c->coll))
        capacities(rng, c);
}

static void plan_inner(const dc_plan_env_t *env, long k, dc_call_t *out,
                       int allow_reuse)
{
    slot_t slots[MAX_SLOTS], order_slot;
    dc_rng_t rng, round_rng;

    memset(out, 0, sizeof(*out));
    out->index = out->origin = k;
    out->n = env->n;
    out->data_seed = dc_hash3(env->seed, TAG_DATA, (uint64_t)k);
    int nslots = build_slots(env, slots);
    long round = k / nslots;
    int pos = (int)(k % nslots);
    /* The round's order: Fisher-Yates up to this position only. */
    dc_rng_seed(&round_rng, dc_hash3(env->seed, TAG_ROUND, (uint64_t)round));
    for (int i = 0; i <= pos; i++) {
        int j = i + (int)dc_rng_below(&round_rng, (uint64_t)(nslots - i));
        slot_t t = slots[i];
        slots[i] = slots[j];
        slots[j] = t;
    }
    order_slot = slots[pos];
    dc_rng_seed(&rng, dc_hash3(env->seed, TAG_CALL, (uint64_t)k));

    if (order_slot.reuse && allow_reuse && k > 0) {
        long window = k < REUSE_WINDOW ? k : REUSE_WINDOW;
        long back = (long)dc_rng_below(&rng, (uint64_t)window);
        dc_call_t *first = malloc(sizeof(*first));
        if (first != NULL) {
            plan_inner(env, k - 1 - back, first, 0);
            if (first->api == DC_API_EXEC && first->origin == first->index) {
                /* The first call's instance (its key, parameters and
                 * origin); this call's index and inputs stay its own, and
                 * what each member does is planned anew below. */
                long index = out->index;
                uint64_t data_seed = out->data_seed;
                *out = *first;
                out->index = index;
                out->data_seed = data_seed;
                free(first);
                plan_execution(env, &rng, out);
                return;
            }
            free(first);
        }
    }
    if (order_slot.reuse && !allow_reuse) {
        out->origin = -1; /* not an instance another call may re-execute */
        return;
    }
    if (order_slot.reuse) {
        /* Nothing to re-execute: a new instance through selection. */
        order_slot = (slot_t){DC_API_EXEC,
                              (int)dc_rng_below(&rng, TUTTI_COLL_COUNT), -1,
                              0, 0};
    }
    plan_fixed(env, &rng, &order_slot, out);
    plan_execution(env, &rng, out);
}

void dc_plan_call(const dc_plan_env_t *env, long k, dc_call_t *out)
{
    plan_inner(env, k, out, 1);
}

/* ---- description --------------------------------------------------------- */

static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...)
{
    va_list ap;
    if (at >= len)
        return at;
    va_start(ap, fmt);
    int w = vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
    return w < 0 ? at : at + (size_t)w;
}

static const char *api_name(const dc_call_t *c)
{
    if (c->api == DC_API_BARRIER)
        return "tutti_barrier";
    if (c->api == DC_API_EXEC)
        return "execute";
    return c->per_rank ? "tutti_allgatherv" : "helper";
}

void dc_describe(const dc_plan_env_t *env, const dc_call_t *c, char *buf,
                 size_t len)
{
    int n = c->n;
    size_t at = 0;
    at = put(buf, len, at, "%s %s%s", api_name(c),
             tutti_collective_name(c->coll), c->per_rank ? " per-rank" : "");
    if (c->api == DC_API_BARRIER)
        return;
    if (c->api == DC_API_EXEC)
        at = put(buf, len, at, " impl=%s key=%llu",
                 c->impl >= 0 ? env->impls[c->impl].name : "(selection)",
                 (unsigned long long)c->key);
    at = put(buf, len, at, " dtype=%s", tutti_dtype_name(c->dtype));
    if (tutti_collective_reduces(c->coll))
        at = put(buf, len, at, " op=%s", tutti_op_name(c->op));
    if (c->pre != 0 || c->post != 0)
        at = put(buf, len, at, " pre=%g post=%g", c->pre, c->post);
    if (!c->per_rank)
        at = put(buf, len, at, " count=%zu", c->count);
    if (tutti_collective_rooted(c->coll))
        at = put(buf, len, at, " root=%d", c->root);
    if (c->coll == TUTTI_COLL_PERMUTE) {
        at = put(buf, len, at, " perm=[");
        for (int r = 0; r < n; r++)
            at = put(buf, len, at, "%s%d", r ? "," : "", c->perm[r]);
        at = put(buf, len, at, "]");
    }
    at = put(buf, len, at, " in_place=[");
    for (int r = 0; r < n; r++)
        at = put(buf, len, at, "%s%d", r ? "," : "", c->in_place[r]);
    at = put(buf, len, at, "] null=[");
    for (int r = 0; r < n; r++)
        at = put(buf, len, at, "%s%d", r ? "," : "", c->null_buf[r]);
    at = put(buf, len, at, "]");
    if (c->per_rank) {
        size_t entries = c->coll == TUTTI_COLL_ALLTOALL
                             ? (size_t)n * (size_t)n : (size_t)n;
        at = put(buf, len, at, " counts=[");
        for (size_t i = 0; i < entries && i < 64; i++)
            at = put(buf, len, at, "%s%zu", i ? "," : "", c->counts[i]);
        at = put(buf, len, at, "%s]", entries > 64 ? ",..." : "");
        if (gathers(c->coll)) {
            static const char kinds[] = "ersq";
            at = put(buf, len, at, " caps=[");
            for (int r = 0; r < n; r++)
                at = put(buf, len, at, "%s%c%zu", r ? "," : "",
                         kinds[c->cap_kind[r]], c->cap[r]);
            at = put(buf, len, at, "]");
        }
    }
}

/* ---- a member's layout ------------------------------------------------- */

static size_t sum_to(const size_t *v, int upto)
{
    size_t s = 0;
    for (int i = 0; i < upto; i++)
        s += v[i];
    return s;
}

static void fixed_layout(const dc_call_t *c, int r, dc_layout_t *L)
{
    size_t cnt = c->count, n = (size_t)c->n;
    int root = r == c->root;
    L->in_n = cnt;
    L->out_n = cnt;
    switch (c->coll) {
    case TUTTI_COLL_BROADCAST:
        L->in_n = root ? cnt : 0;
        break;
    case TUTTI_COLL_REDUCE:
        L->out_n = root ? cnt : 0;
        break;
    case TUTTI_COLL_ALLGATHER:
    case TUTTI_COLL_GATHER: {
        /* Every rank receives in an allgather, the root alone in a gather. */
        int gets = c->coll == TUTTI_COLL_ALLGATHER || root;
        L->out_n = gets ? n * cnt : 0;
        L->in_off = (size_t)r * cnt;
        L->check_total = gets;
        break;
    }
    case TUTTI_COLL_REDUCE_SCATTER:
        L->in_n = n * cnt;
        L->out_off = (size_t)r * cnt;
        L->check_total = 1;
        break;
    case TUTTI_COLL_ALLTOALL:
        L->in_n = L->out_n = n * cnt;
        L->check_total = 1;
        break;
    default:
        break;
    }
    L->recv_total = L->out_n;
}

static void per_rank_layout(const dc_call_t *c, int r, dc_layout_t *L)
{
    int n = c->n;
    L->check_total = 1;
    switch (c->coll) {
    case TUTTI_COLL_ALLGATHER:
        L->in_n = c->counts[r];
        L->in_off = sum_to(c->counts, r);
        L->need = sum_to(c->counts, n);
        for (int q = 0; q < n; q++)
            L->recv_counts[q] = c->counts[q];
        break;
    case TUTTI_COLL_REDUCE_SCATTER:
        L->in_n = sum_to(c->counts, n);
        L->out_n = c->counts[r];
        L->out_off = sum_to(c->counts, r);
        for (int q = 0; q < n; q++)
            L->recv_counts[q] = c->counts[q];
        L->recv_total = L->out_n;
        return;
    default: /* alltoall */
        L->in_n = sum_to(c->counts + (size_t)r * (size_t)n, n);
        L->need = need_of(c, r);
        for (int q = 0; q < n; q++)
            L->recv_counts[q] = c->counts[(size_t)q * (size_t)n + (size_t)r];
        break;
    }
    L->out_n = L->need;
    L->recv_total = L->need;
    L->cap = c->cap[r];
    L->query = c->cap_kind[r] == DC_CAP_QUERY;
    /* Who is short: a sizes-only member counts with capacity 0. */
    for (int q = 0; q < n; q++) {
        size_t cap = c->cap_kind[q] == DC_CAP_QUERY ? 0 : c->cap[q];
        if (cap < need_of(c, q))
            L->short_ranks[L->nshort++] = q;
    }
    if (L->query)
        L->outcome = DC_OUT_QUERY;
    else if (L->nshort > 0)
        L->outcome = DC_OUT_TOO_SMALL;
}

void dc_layout(const dc_call_t *c, int r, dc_layout_t *L)
{
    memset(L, 0, sizeof(*L));
    L->outcome = DC_OUT_DATA;
    if (c->api == DC_API_BARRIER)
        return;
    if (c->per_rank)
        per_rank_layout(c, r, L);
    else
        fixed_layout(c, r, L);
    L->in_place = c->in_place[r];
    if (L->in_place) {
        size_t in_end = L->in_off + L->in_n, out_end = L->out_off + L->out_n;
        size_t span = in_end > out_end ? in_end : out_end;
        if (c->per_rank && gathers(c->coll) && L->cap > span)
            span = L->cap;
        L->a_len = span;
        L->a_input = L->in_n > 0;
        L->a_output = L->out_n > 0;
        L->b_null = 1;
        return;
    }
    L->a_len = L->in_n;
    L->a_input = 1;
    L->b_len = L->out_n;
    if (c->coll == TUTTI_COLL_BROADCAST && r != c->root) {
        /* Unused: NULL, or a buffer that must stay as it was. */
        L->a_len = c->count;
        L->a_input = 0;
        L->a_null = c->null_buf[r];
    }
    if ((c->coll == TUTTI_COLL_REDUCE || c->coll == TUTTI_COLL_GATHER) &&
        r != c->root) {
        L->b_len = c->coll == TUTTI_COLL_GATHER ? (size_t)c->n * c->count
                                                : c->count;
        L->b_null = c->null_buf[r];
    }
    if (c->per_rank && gathers(c->coll)) {
        L->b_len = L->cap;
        L->b_null = L->query;
    }
}
