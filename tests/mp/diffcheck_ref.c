/*
 * The differential client's sequential reference: counter-based inputs,
 * the exact result of every collective, comparison and poison bytes.  It
 * uses no library code beyond the public header's names (float16 and
 * bfloat16 conversions are its own).
 *
 * Reduction inputs are chosen so the result does not depend on the order of
 * the reduction: integers take any value (sum and prod wrap modulo 2^N, avg
 * is the wrapped sum divided by n with C's truncating division); floats are
 * integers of at most p/n bits times a power of two shared by every rank at
 * that element (p: 11 significant bits for float16, 8 for bfloat16, 24 for
 * float32, 53 for float64), so every partial sum is exact, and products
 * are of signed powers of two kept inside the normal range, so every
 * partial product is exact.  Only avg rounds: sum / n in float32 (float64
 * for float64), then to the type, then times post_scale.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diffcheck.h"

#define TAG_RED 0x52454455ULL  /* reduction inputs */
#define TAG_EXP 0x45585050ULL  /* per-element power of two */
#define TAG_MOVE 0x4d4f5645ULL /* data moved unreduced */

/* ---- hashing ------------------------------------------------------------- */

uint64_t dc_mix(uint64_t h, uint64_t v)
{
    uint64_t z = h + 0x9e3779b97f4a7c15ULL * (v + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t dc_hash3(uint64_t seed, uint64_t a, uint64_t b)
{
    return dc_mix(dc_mix(seed, a), b);
}

void dc_rng_seed(dc_rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = dc_mix(seed, (uint64_t)i);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t dc_rng_next(dc_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t dc_rng_below(dc_rng_t *r, uint64_t n)
{
    return dc_rng_next(r) % n;
}

/* ---- float16 and bfloat16 ------------------------------------------------ */

uint16_t dc_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu;
    uint32_t m = x & 0x7fffffu;
    if (e == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0));
    int ee = (int)e - 127 + 15;
    if (ee >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (ee <= 0) {
        if (ee < -10)
            return (uint16_t)sign;
        uint32_t full = m | 0x800000u, shift = (uint32_t)(14 - ee);
        uint32_t hm = full >> shift, rem = full & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1u)))
            hm++;
        return (uint16_t)(sign | hm);
    }
    uint32_t r = sign | ((uint32_t)ee << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
        r++; /* a carry into the exponent is right, up to infinity */
    return (uint16_t)r;
}

float dc_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu, x;
    float f;
    if (e == 0) {
        f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    if (e == 31)
        x = sign | 0x7f800000u | (m << 13);
    else
        x = sign | ((e + 112) << 23) | (m << 13);
    memcpy(&f, &x, sizeof(f));
    return f;
}

uint16_t dc_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float dc_bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

/* ---- elements ------------------------------------------------------------ */

static size_t esize(tutti_dtype_t t)
{
    return tutti_dtype_size(t);
}

static int is_float(tutti_dtype_t t)
{
    return tutti_dtype_is_float(t);
}

static int is_signed(tutti_dtype_t t)
{
    return t == TUTTI_INT8 || t == TUTTI_INT32 || t == TUTTI_INT64;
}

static uint64_t mask_of(tutti_dtype_t t)
{
    size_t w = esize(t) * 8;
    return w >= 64 ? ~0ULL : (1ULL << w) - 1;
}

static int64_t sign_extend(tutti_dtype_t t, uint64_t v)
{
    unsigned sh = (unsigned)(64 - esize(t) * 8);
    return sh == 0 ? (int64_t)v : (int64_t)(v << sh) >> sh;
}

static void store(void *buf, tutti_dtype_t t, size_t i, uint64_t bits)
{
    switch (esize(t)) {
    case 1: ((uint8_t *)buf)[i] = (uint8_t)bits; break;
    case 2: ((uint16_t *)buf)[i] = (uint16_t)bits; break;
    case 4: ((uint32_t *)buf)[i] = (uint32_t)bits; break;
    default: ((uint64_t *)buf)[i] = bits; break;
    }
}

static uint64_t load(const void *buf, tutti_dtype_t t, size_t i)
{
    switch (esize(t)) {
    case 1: return ((const uint8_t *)buf)[i];
    case 2: return ((const uint16_t *)buf)[i];
    case 4: return ((const uint32_t *)buf)[i];
    default: return ((const uint64_t *)buf)[i];
    }
}

/* Bits of @p v in floating type @p t (v exact in t, except where noted). */
static uint64_t float_bits(tutti_dtype_t t, double v)
{
    float f = (float)v;
    uint32_t u;
    uint64_t d;
    switch (t) {
    case TUTTI_FLOAT16: return dc_float_to_half(f);
    case TUTTI_BFLOAT16: return dc_float_to_bf16(f);
    case TUTTI_FLOAT32: memcpy(&u, &f, sizeof(u)); return u;
    default: memcpy(&d, &v, sizeof(d)); return d;
    }
}

static double float_value(tutti_dtype_t t, uint64_t bits)
{
    uint32_t u = (uint32_t)bits;
    float f;
    double d;
    switch (t) {
    case TUTTI_FLOAT16: return dc_half_to_float((uint16_t)bits);
    case TUTTI_BFLOAT16: return dc_bf16_to_float((uint16_t)bits);
    case TUTTI_FLOAT32: memcpy(&f, &u, sizeof(f)); return f;
    default: memcpy(&d, &bits, sizeof(d)); return d;
    }
}

static double value_of(tutti_dtype_t t, uint64_t bits)
{
    if (is_float(t))
        return float_value(t, bits);
    return is_signed(t) ? (double)sign_extend(t, bits) : (double)bits;
}

/* ---- reduction inputs -------------------------------------------------- */

/* What the inputs of one reduction call look like. */
typedef struct {
    const dc_call_t *c;
    tutti_dtype_t t;
    tutti_op_t op;
    int n;
    uint64_t seed;
    uint64_t bound;   /* floats, not prod: |integer part| <= bound */
    int kmin, kmax;   /* floats, not prod: power of two per element */
    int budget;       /* float prod: exponents in -budget .. budget */
    double pre, post; /* 1 where none */
} gen_t;

static int ilog2_of_scale(double f)
{
    int e;
    frexp(fabs(f), &e);
    return e - 1;
}

static double scale_or_one(double f)
{
    return f == 0.0 ? 1.0 : f;
}

static void gen_init(gen_t *g, const dc_call_t *c)
{
    int p;
    memset(g, 0, sizeof(*g));
    g->c = c;
    g->t = c->dtype;
    g->op = c->op;
    g->n = c->n;
    g->seed = c->data_seed;
    g->pre = scale_or_one(c->pre);
    g->post = scale_or_one(c->post);
    switch (g->t) {
    case TUTTI_FLOAT16: p = 11; break;
    case TUTTI_BFLOAT16: p = 8; break;
    case TUTTI_FLOAT32: p = 24; break;
    default: p = 53; break;
    }
    g->bound = (1ULL << p) / (uint64_t)g->n;
    if (g->bound < 1)
        g->bound = 1;
    g->kmin = -4;
    g->kmax = g->t == TUTTI_FLOAT16 ? 0 : 4;
    /* Products: every partial product and the scaled result stay normal. */
    int range = g->t == TUTTI_FLOAT16 ? 14 : g->t == TUTTI_FLOAT64 ? 1000 : 120;
    int s = abs(ilog2_of_scale(g->pre)), q = abs(ilog2_of_scale(g->post));
    int b = (range - q - g->n * s) / g->n;
    g->budget = b < 0 ? 0 : b > 2 ? 2 : b;
}

/* Rank @p r's input at element @p j of the reduced vector, as bits. */
static uint64_t red_bits(const gen_t *g, int r, size_t j)
{
    uint64_t h = dc_hash3(g->seed ^ TAG_RED, (uint64_t)r, j);
    if (!is_float(g->t))
        return h & mask_of(g->t);
    double v;
    if (g->op == TUTTI_OP_PROD) {
        int span = 2 * g->budget + 1;
        int e = (int)((h >> 1) % (uint64_t)span) - g->budget;
        v = ldexp(h & 1 ? -1.0 : 1.0, e);
    } else {
        int64_t m = (int64_t)(h % (2 * g->bound + 1)) - (int64_t)g->bound;
        if (m == 0 && (g->op == TUTTI_OP_MIN || g->op == TUTTI_OP_MAX))
            m = 1; /* no +0/-0 ties once scaled by a negative factor */
        uint64_t he = dc_hash3(g->seed ^ TAG_EXP, j, 0);
        int k = g->kmin + (int)(he % (uint64_t)(g->kmax - g->kmin + 1));
        v = ldexp((double)m, k);
    }
    return float_bits(g->t, v);
}

/* Element @p j of the reduced vector, as bits of the type. */
static uint64_t red_expected(const gen_t *g, size_t j)
{
    tutti_dtype_t t = g->t;
    int n = g->n;
    if (!is_float(t)) {
        uint64_t m = mask_of(t), acc = red_bits(g, 0, j);
        for (int r = 1; r < n; r++) {
            uint64_t v = red_bits(g, r, j);
            switch (g->op) {
            case TUTTI_OP_PROD: acc = (acc * v) & m; break;
            case TUTTI_OP_MIN:
                if (is_signed(t) ? sign_extend(t, v) < sign_extend(t, acc)
                                 : v < acc)
                    acc = v;
                break;
            case TUTTI_OP_MAX:
                if (is_signed(t) ? sign_extend(t, v) > sign_extend(t, acc)
                                 : v > acc)
                    acc = v;
                break;
            default: acc = (acc + v) & m; break; /* sum, avg */
            }
        }
        if (g->op == TUTTI_OP_AVG) {
            if (is_signed(t))
                acc = (uint64_t)(sign_extend(t, acc) / (int64_t)n) & m;
            else
                acc = acc / (uint64_t)n;
        }
        return acc;
    }
    double acc = float_value(t, red_bits(g, 0, j)) * g->pre;
    for (int r = 1; r < n; r++) {
        double v = float_value(t, red_bits(g, r, j)) * g->pre;
        switch (g->op) {
        case TUTTI_OP_PROD: acc *= v; break;
        case TUTTI_OP_MIN: acc = v < acc ? v : acc; break;
        case TUTTI_OP_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (g->op == TUTTI_OP_AVG) {
        if (t == TUTTI_FLOAT64) {
            acc = acc / (double)n;
        } else {
            float q = (float)acc / (float)n; /* the compute type: float32 */
            acc = float_value(t, float_bits(t, q)); /* rounded to the type */
        }
    }
    return float_bits(t, acc * g->post);
}

/* ---- moved data ---------------------------------------------------------- */

/* Element @p k that rank @p src sends (to rank @p dst where it matters). */
static uint64_t moved(const dc_call_t *c, int src, int dst, size_t k)
{
    uint64_t h = dc_hash3(c->data_seed ^ TAG_MOVE,
                          (uint64_t)src * DC_MAX_N + (uint64_t)dst, k);
    return h & mask_of(c->dtype);
}

/* Elements of block @p b (allgather: rank b's; reduce_scatter: block b). */
static size_t block_len(const dc_call_t *c, int b)
{
    return c->per_rank ? c->counts[b] : c->count;
}

static size_t block_off(const dc_call_t *c, int b)
{
    size_t off = 0;
    for (int q = 0; q < b; q++)
        off += block_len(c, q);
    return off;
}

/* alltoall: elements rank @p s sends rank @p d. */
static size_t a2a_len(const dc_call_t *c, int s, int d)
{
    return c->per_rank ? c->counts[(size_t)s * (size_t)c->n + (size_t)d]
                       : c->count;
}

void dc_fill_input(const dc_call_t *c, int r, void *buf, size_t in_n)
{
    tutti_dtype_t t = c->dtype;
    gen_t g;
    size_t i = 0;
    switch (c->coll) {
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_REDUCE:
    case TUTTI_COLL_REDUCE_SCATTER:
        gen_init(&g, c);
        for (i = 0; i < in_n; i++)
            store(buf, t, i, red_bits(&g, r, i));
        return;
    case TUTTI_COLL_ALLTOALL:
        for (int d = 0; d < c->n; d++)
            for (size_t k = 0; k < a2a_len(c, r, d) && i < in_n; k++, i++)
                store(buf, t, i, moved(c, r, d, k));
        return;
    default: /* broadcast (the root's), allgather, gather, permute */
        for (i = 0; i < in_n; i++)
            store(buf, t, i, moved(c, r, 0, i));
        return;
    }
}

void dc_fill_expected(const dc_call_t *c, int r, void *buf, size_t out_n)
{
    tutti_dtype_t t = c->dtype;
    int n = c->n, s;
    size_t i = 0, off;
    gen_t g;
    switch (c->coll) {
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_REDUCE:
    case TUTTI_COLL_REDUCE_SCATTER:
        gen_init(&g, c);
        off = c->coll == TUTTI_COLL_REDUCE_SCATTER ? block_off(c, r) : 0;
        for (i = 0; i < out_n; i++)
            store(buf, t, i, red_expected(&g, off + i));
        return;
    case TUTTI_COLL_BROADCAST:
        for (i = 0; i < out_n; i++)
            store(buf, t, i, moved(c, c->root, 0, i));
        return;
    case TUTTI_COLL_ALLGATHER:
    case TUTTI_COLL_GATHER:
        for (s = 0; s < n; s++)
            for (size_t k = 0; k < block_len(c, s) && i < out_n; k++, i++)
                store(buf, t, i, moved(c, s, 0, k));
        return;
    case TUTTI_COLL_ALLTOALL:
        for (s = 0; s < n; s++)
            for (size_t k = 0; k < a2a_len(c, s, r) && i < out_n; k++, i++)
                store(buf, t, i, moved(c, s, r, k));
        return;
    default: /* permute */
        for (s = 0; s < n && c->perm[s] != r; s++)
            ;
        for (i = 0; i < out_n; i++)
            store(buf, t, i, moved(c, s, 0, i));
        return;
    }
}

int dc_by_value(const dc_call_t *c)
{
    return tutti_collective_reduces(c->coll) && is_float(c->dtype);
}

size_t dc_compare(tutti_dtype_t dtype, int by_value, const void *got,
                  const void *want, size_t n, size_t *first_out)
{
    size_t wrong = 0;
    if (!by_value && memcmp(got, want, n * esize(dtype)) == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = load(got, dtype, i), b = load(want, dtype, i);
        int same = by_value ? float_value(dtype, a) == float_value(dtype, b)
                            : a == b;
        if (!same && wrong++ == 0)
            *first_out = i;
    }
    return wrong;
}

void dc_format(tutti_dtype_t dtype, const void *buf, size_t i, char *out,
               size_t len)
{
    uint64_t bits = load(buf, dtype, i);
    snprintf(out, len, "0x%0*llx (%.17g)", (int)esize(dtype) * 2,
             (unsigned long long)bits, value_of(dtype, bits));
}

/* ---- poison ------------------------------------------------------------ */

void dc_poison(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = buf;
    size_t w = 0;
    for (; w * 8 + 8 <= len; w++) {
        uint64_t v = dc_mix(seed, w);
        memcpy(p + w * 8, &v, 8);
    }
    if (w * 8 < len) {
        uint64_t v = dc_mix(seed, w);
        memcpy(p + w * 8, &v, len - w * 8);
    }
}

size_t dc_poison_check(const void *buf, size_t from, size_t to,
                       uint64_t seed)
{
    const unsigned char *p = buf;
    size_t i = from;
    while (i < to) {
        size_t w = i / 8;
        uint64_t v = dc_mix(seed, w);
        unsigned char want[8];
        memcpy(want, &v, 8);
        size_t end = (w + 1) * 8 < to ? (w + 1) * 8 : to;
        for (; i < end; i++)
            if (p[i] != want[i % 8])
                return i;
    }
    return SIZE_MAX;
}
