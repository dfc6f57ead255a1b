/*
 * Unit tests for the reduction kernels (tutti__reduce) and the scaling and
 * division of op avg and pre/post scales (tutti__scale, tutti__divide);
 * the float16 and bfloat16 conversions are test_convert.c's.
 *
 * Every dtype x op is compared with a plain scalar reference, for several
 * counts, with dst separate or aliasing a, b or both, at shifted (unaligned)
 * addresses, and with guard bytes around every buffer.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/reduce.h"
#include "fp16_fields.h"
#include "test_util.h"

/* Largest count tested, plus room to shift every buffer by 3 elements. */
#define MAX_COUNT 4099
#define BUF_ELEMS (MAX_COUNT + 4)
#define BUF_BYTES (BUF_ELEMS * 8)

static const size_t counts[] = {0, 1, 3, 17, 1000, MAX_COUNT};

typedef enum { KIND_SINT, KIND_UINT, KIND_FLOAT } kind_t;

typedef struct {
    const char *name;
    size_t size;
    kind_t kind;
} dtype_info_t;

static const dtype_info_t dtype_info[TUTTI_DTYPE_COUNT] = {
    [TUTTI_INT8] = {"int8", 1, KIND_SINT},
    [TUTTI_UINT8] = {"uint8", 1, KIND_UINT},
    [TUTTI_INT32] = {"int32", 4, KIND_SINT},
    [TUTTI_UINT32] = {"uint32", 4, KIND_UINT},
    [TUTTI_INT64] = {"int64", 8, KIND_SINT},
    [TUTTI_UINT64] = {"uint64", 8, KIND_UINT},
    [TUTTI_FLOAT16] = {"float16", 2, KIND_FLOAT},
    [TUTTI_BFLOAT16] = {"bfloat16", 2, KIND_FLOAT},
    [TUTTI_FLOAT32] = {"float32", 4, KIND_FLOAT},
    [TUTTI_FLOAT64] = {"float64", 8, KIND_FLOAT},
};

static const char *const op_names[TUTTI_OP_COUNT] = {
    [TUTTI_OP_SUM] = "sum",
    [TUTTI_OP_PROD] = "prod",
    [TUTTI_OP_MIN] = "min",
    [TUTTI_OP_MAX] = "max",
};

/* Where dst points: its own buffer, a, b, or a == b == dst. */
typedef enum { DST_SEPARATE, DST_IS_A, DST_IS_B, DST_IS_BOTH } layout_t;
static const char *const layout_names[] = {"separate", "dst==a", "dst==b",
                                           "dst==a==b"};

/* Element offsets of a, b and a separate dst: aligned, all shifted by one
 * element, and shifted by different amounts. */
static const size_t shifts[][3] = {{0, 0, 0}, {1, 1, 1}, {1, 2, 3}};

typedef struct {
    tutti_dtype_t dtype;
    uint64_t rng;
    unsigned char *buf[3]; /* a, b, separate dst */
    unsigned char *before[3];
    unsigned char *expect;
} fixture_t;

/* ---- helpers --------------------------------------------------------- */

static uint64_t load_bits(const unsigned char *p, size_t size)
{
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;

    switch (size) {
    case 1:
        memcpy(&v8, p, 1);
        return v8;
    case 2:
        memcpy(&v16, p, 2);
        return v16;
    case 4:
        memcpy(&v32, p, 4);
        return v32;
    default:
        memcpy(&v64, p, 8);
        return v64;
    }
}

static void store_bits(unsigned char *p, size_t size, uint64_t v)
{
    uint8_t v8 = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;

    switch (size) {
    case 1:
        memcpy(p, &v8, 1);
        break;
    case 2:
        memcpy(p, &v16, 2);
        break;
    case 4:
        memcpy(p, &v32, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

/* Sign-extend the low @p size bytes of @p v. */
static int64_t sign_extend(uint64_t v, size_t size)
{
    uint64_t sign = UINT64_C(1) << (size * 8 - 1);

    if (size < 8 && (v & sign) != 0)
        v |= ~((sign << 1) - 1);
    return (int64_t)v;
}

static double load_float(tutti_dtype_t dtype, const unsigned char *p)
{
    float f;
    double d;

    switch (dtype) {
    case TUTTI_FLOAT16:
        return tutti__half_to_float((uint16_t)load_bits(p, 2));
    case TUTTI_BFLOAT16:
        return tutti__bf16_to_float((uint16_t)load_bits(p, 2));
    case TUTTI_FLOAT32:
        memcpy(&f, p, sizeof(f));
        return f;
    default:
        memcpy(&d, p, sizeof(d));
        return d;
    }
}

static void store_float(tutti_dtype_t dtype, unsigned char *p, double v)
{
    float f = (float)v;

    switch (dtype) {
    case TUTTI_FLOAT16:
        store_bits(p, 2, tutti__float_to_half(f));
        break;
    case TUTTI_BFLOAT16:
        store_bits(p, 2, tutti__float_to_bf16(f));
        break;
    case TUTTI_FLOAT32:
        memcpy(p, &f, sizeof(f));
        break;
    default:
        memcpy(p, &v, sizeof(v));
        break;
    }
}

/* ---- scalar reference --------------------------------------------------- */

/*
 * Integers: sum and prod modulo 2^64, truncated to the width (the low bits
 * of a sum or product depend only on the low bits of the operands); min and
 * max compared as signed or unsigned 64-bit values.
 */
static uint64_t ref_int(const dtype_info_t *ti, tutti_op_t op, uint64_t x,
                        uint64_t y)
{
    int64_t sx = sign_extend(x, ti->size), sy = sign_extend(y, ti->size);
    int less = ti->kind == KIND_SINT ? sx < sy : x < y;

    switch (op) {
    case TUTTI_OP_SUM:
        return x + y;
    case TUTTI_OP_PROD:
        return x * y;
    case TUTTI_OP_MIN:
        return less ? x : y;
    default:
        return less || x == y ? y : x;
    }
}

/*
 * Floats: computed in double, then rounded to the type.  Sums and products
 * of two float32, float16 or bfloat16 values are exact in double or rounded
 * with p' >= 2p + 2, so the result equals one correct rounding.  min/max: NaN
 * if either input is NaN, b when the inputs compare equal.
 */
static double ref_float(tutti_op_t op, double x, double y)
{
    if (op == TUTTI_OP_SUM)
        return x + y;
    if (op == TUTTI_OP_PROD)
        return x * y;
    if (isnan(x) || isnan(y))
        return NAN;
    if (op == TUTTI_OP_MIN)
        return x < y ? x : y;
    return x > y ? x : y;
}

static void ref_reduce(tutti_dtype_t dtype, tutti_op_t op, unsigned char *out,
                       const unsigned char *a, const unsigned char *b,
                       size_t count)
{
    const dtype_info_t *ti = &dtype_info[dtype];
    size_t sz = ti->size;

    for (size_t i = 0; i < count; i++) {
        if (ti->kind == KIND_FLOAT) {
            double r = ref_float(op, load_float(dtype, a + i * sz),
                                 load_float(dtype, b + i * sz));
            store_float(dtype, out + i * sz, r);
        } else {
            store_bits(out + i * sz, sz,
                       ref_int(ti, op, load_bits(a + i * sz, sz),
                               load_bits(b + i * sz, sz)));
        }
    }
}

/* Equal bits, or both NaN (which NaN is not specified). */
static int elem_equal(tutti_dtype_t dtype, const unsigned char *x,
                      const unsigned char *y)
{
    size_t sz = dtype_info[dtype].size;

    if (memcmp(x, y, sz) == 0)
        return 1;
    return dtype_info[dtype].kind == KIND_FLOAT &&
           isnan(load_float(dtype, x)) && isnan(load_float(dtype, y));
}

/* ---- random inputs ------------------------------------------------------ */

static void random_int(fixture_t *f, unsigned char *p)
{
    static const uint64_t edges[] = {0,
                                     1,
                                     UINT64_MAX,
                                     UINT64_C(0x7f),
                                     UINT64_C(0x80),
                                     UINT64_C(0x7fffffff),
                                     UINT64_C(0x80000000),
                                     UINT64_C(0x7fffffffffffffff),
                                     UINT64_C(0x8000000000000000)};
    uint64_t r = test_splitmix(&f->rng);
    size_t sz = dtype_info[f->dtype].size;

    if (r % 8 == 0)
        store_bits(p, sz, edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))]);
    else
        store_bits(p, sz, test_splitmix(&f->rng));
}

/* float32/float64: raw bit patterns (NaN, inf, subnormals, extremes) mixed
 * with moderate values so that sums and products are not all inf or NaN. */
static void random_wide_float(fixture_t *f, unsigned char *p)
{
    uint64_t r = test_splitmix(&f->rng);
    size_t sz = dtype_info[f->dtype].size;

    if (r % 4 == 0) {
        store_bits(p, sz, test_splitmix(&f->rng));
    } else {
        double mant = (double)(int32_t)(r >> 32) / 2147483648.0;
        store_float(f->dtype, p, mant * pow2((int)((r >> 8) % 64) - 32));
    }
}

static void random_elem(fixture_t *f, unsigned char *p)
{
    if (dtype_info[f->dtype].kind != KIND_FLOAT)
        random_int(f, p);
    else if (dtype_info[f->dtype].size == 2)
        store_bits(p, 2, test_splitmix(&f->rng)); /* every pattern is useful */
    else
        random_wide_float(f, p);
}

/* ---- fixture ------------------------------------------------------------ */

static int setup(void **state)
{
    fixture_t *f = test_calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    f->dtype = *state != NULL ? *(const tutti_dtype_t *)*state : TUTTI_INT8;
    f->rng = 0x7475747469u + (uint64_t)f->dtype;
    for (int i = 0; i < 3; i++) {
        f->buf[i] = test_malloc(BUF_BYTES);
        f->before[i] = test_malloc(BUF_BYTES);
    }
    f->expect = test_malloc(BUF_BYTES);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;

    for (int i = 0; i < 3; i++) {
        test_free(f->buf[i]);
        test_free(f->before[i]);
    }
    test_free(f->expect);
    test_free(f);
    return 0;
}

/* ---- reduce vs reference ------------------------------------------------ */

/* Fill the three buffers (guards included) with random elements, and keep
 * a copy of each in f->before. */
static void fill_buffers(fixture_t *f)
{
    size_t sz = dtype_info[f->dtype].size;

    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < BUF_BYTES / sz; i++)
            random_elem(f, f->buf[k] + i * sz);
        memcpy(f->before[k], f->buf[k], BUF_BYTES);
    }
}

/* Bytes the call may write: dst's buffer, from byte @p from, @p len bytes.
 * Everything else in the three buffers must be as it was. */
static void check_untouched(fixture_t *f, int dst_buf, size_t from, size_t len,
                            const char *what)
{
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < BUF_BYTES; i++)
            if ((k != dst_buf || i < from || i >= from + len) &&
                f->buf[k][i] != f->before[k][i])
                fail_msg("%s: byte %zu of buffer %d written outside dst", what,
                         i, k);
}

/* The @p count elements of @p dtype at @p dst (in buffer @p dst_buf) are
 * those of f->expect, and nothing else in the three buffers changed. */
static void expect_result(fixture_t *f, tutti_dtype_t dtype,
                          const unsigned char *dst, int dst_buf, size_t count,
                          const char *what)
{
    size_t sz = dtype_info[dtype].size;

    for (size_t i = 0; i < count; i++)
        if (!elem_equal(dtype, dst + i * sz, f->expect + i * sz))
            fail_msg("%s: element %zu is 0x%llx, expected 0x%llx", what, i,
                     (unsigned long long)load_bits(dst + i * sz, sz),
                     (unsigned long long)load_bits(f->expect + i * sz, sz));
    check_untouched(f, dst_buf, (size_t)(dst - f->buf[dst_buf]), count * sz,
                    what);
}

static void check_one(fixture_t *f, tutti_op_t op, size_t count,
                      layout_t layout, const size_t *shift)
{
    tutti_dtype_t dtype = f->dtype;
    size_t sz = dtype_info[dtype].size;
    unsigned char *a = f->buf[0] + shift[0] * sz;
    unsigned char *b = layout == DST_IS_BOTH ? a : f->buf[1] + shift[1] * sz;
    unsigned char *dst = f->buf[2] + shift[2] * sz;
    int dst_buf = 2;
    char what[128];

    if (layout == DST_IS_A || layout == DST_IS_BOTH) {
        dst = a;
        dst_buf = 0;
    } else if (layout == DST_IS_B) {
        dst = b;
        dst_buf = 1;
    }

    snprintf(what, sizeof(what), "%s %s count %zu %s shift %zu/%zu/%zu",
             dtype_info[dtype].name, op_names[op], count, layout_names[layout],
             shift[0], shift[1], shift[2]);
    fill_buffers(f);
    ref_reduce(dtype, op, f->expect, a, b, count);

    tutti__reduce(dtype, op, dst, a, b, count);

    expect_result(f, dtype, dst, dst_buf, count, what);
}

static void test_matches_reference(void **state)
{
    fixture_t *f = *state;

    /* avg is sum in the kernels: the core divides after the reduction. */
    for (int op = 0; op <= TUTTI_OP_MAX; op++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int layout = DST_SEPARATE; layout <= DST_IS_BOTH; layout++)
                for (size_t s = 0; s < sizeof(shifts) / sizeof(shifts[0]); s++)
                    check_one(f, (tutti_op_t)op, counts[c], (layout_t)layout,
                              shifts[s]);
}

/* ---- integer wraparound and extremes ------------------------------------ */

typedef struct {
    tutti_dtype_t dtype;
    tutti_op_t op;
    uint64_t a, b, expect; /* low bytes used; negatives as two's complement */
} int_case_t;

static const int_case_t int_cases[] = {
    {TUTTI_INT8, TUTTI_OP_SUM, 127, 1, (uint64_t)-128},
    {TUTTI_INT8, TUTTI_OP_SUM, (uint64_t)-128, (uint64_t)-1, 127},
    {TUTTI_INT8, TUTTI_OP_PROD, 16, 8, (uint64_t)-128},
    {TUTTI_INT8, TUTTI_OP_PROD, (uint64_t)-128, (uint64_t)-1, (uint64_t)-128},
    {TUTTI_INT8, TUTTI_OP_MIN, (uint64_t)-128, 127, (uint64_t)-128},
    {TUTTI_INT8, TUTTI_OP_MAX, (uint64_t)-1, 1, 1},
    {TUTTI_UINT8, TUTTI_OP_SUM, 255, 1, 0},
    {TUTTI_UINT8, TUTTI_OP_PROD, 16, 16, 0},
    {TUTTI_UINT8, TUTTI_OP_PROD, 255, 255, 1},
    {TUTTI_UINT8, TUTTI_OP_MAX, 255, 1, 255},
    {TUTTI_INT32, TUTTI_OP_SUM, INT32_MAX, 1, (uint64_t)INT32_MIN},
    {TUTTI_INT32, TUTTI_OP_PROD, 65536, 32768, (uint64_t)INT32_MIN},
    {TUTTI_INT32, TUTTI_OP_PROD, (uint64_t)INT32_MIN, (uint64_t)-1,
     (uint64_t)INT32_MIN},
    {TUTTI_INT32, TUTTI_OP_MIN, (uint64_t)INT32_MIN, INT32_MAX,
     (uint64_t)INT32_MIN},
    {TUTTI_UINT32, TUTTI_OP_SUM, UINT32_MAX, 1, 0},
    {TUTTI_UINT32, TUTTI_OP_PROD, 65536, 65536, 0},
    {TUTTI_UINT32, TUTTI_OP_MIN, UINT32_MAX, 0, 0},
    {TUTTI_UINT32, TUTTI_OP_MAX, UINT32_MAX, 0x80000000u, UINT32_MAX},
    {TUTTI_INT64, TUTTI_OP_SUM, INT64_MAX, 1, (uint64_t)INT64_MIN},
    {TUTTI_INT64, TUTTI_OP_SUM, (uint64_t)INT64_MIN, (uint64_t)-1, INT64_MAX},
    {TUTTI_INT64, TUTTI_OP_PROD, (uint64_t)INT64_MIN, (uint64_t)-1,
     (uint64_t)INT64_MIN},
    {TUTTI_INT64, TUTTI_OP_MIN, (uint64_t)INT64_MIN, INT64_MAX,
     (uint64_t)INT64_MIN},
    {TUTTI_INT64, TUTTI_OP_MAX, (uint64_t)-1, 0, 0},
    {TUTTI_UINT64, TUTTI_OP_SUM, UINT64_MAX, 1, 0},
    {TUTTI_UINT64, TUTTI_OP_PROD, UINT64_MAX, UINT64_MAX, 1},
    {TUTTI_UINT64, TUTTI_OP_PROD, UINT64_C(1) << 32, UINT64_C(1) << 32, 0},
    {TUTTI_UINT64, TUTTI_OP_MIN, UINT64_MAX, UINT64_C(0x8000000000000000),
     UINT64_C(0x8000000000000000)},
    {TUTTI_UINT64, TUTTI_OP_MAX, UINT64_MAX, 1, UINT64_MAX},
};

/* Run @p a op @p b over @p count copies (vector body and tail) and check
 * every result against @p expect with elem_equal(). */
static void check_splat(fixture_t *f, tutti_dtype_t dtype, tutti_op_t op,
                        const unsigned char *a, const unsigned char *b,
                        const unsigned char *expect)
{
    enum { N = 67 };
    size_t sz = dtype_info[dtype].size;

    for (size_t i = 0; i < N; i++) {
        memcpy(f->buf[0] + i * sz, a, sz);
        memcpy(f->buf[1] + i * sz, b, sz);
    }
    tutti__reduce(dtype, op, f->buf[2], f->buf[0], f->buf[1], N);
    for (size_t i = 0; i < N; i++)
        if (!elem_equal(dtype, f->buf[2] + i * sz, expect))
            fail_msg("%s %s 0x%llx, 0x%llx: element %zu is 0x%llx, expected "
                     "0x%llx",
                     dtype_info[dtype].name, op_names[op],
                     (unsigned long long)load_bits(a, sz),
                     (unsigned long long)load_bits(b, sz), i,
                     (unsigned long long)load_bits(f->buf[2] + i * sz, sz),
                     (unsigned long long)load_bits(expect, sz));
}

static void test_integer_wraparound(void **state)
{
    fixture_t *f = *state;

    for (size_t i = 0; i < sizeof(int_cases) / sizeof(int_cases[0]); i++) {
        const int_case_t *c = &int_cases[i];
        size_t sz = dtype_info[c->dtype].size;
        unsigned char a[8], b[8], expect[8];

        store_bits(a, sz, c->a);
        store_bits(b, sz, c->b);
        store_bits(expect, sz, c->expect);
        check_splat(f, c->dtype, c->op, a, b, expect);
    }
}

/* ---- float min/max and special values ----------------------------------- */

static void test_float_min_max_nan(void **state)
{
    static const tutti_dtype_t dtypes[] = {TUTTI_FLOAT16, TUTTI_BFLOAT16,
                                           TUTTI_FLOAT32, TUTTI_FLOAT64};
    /* {a, b, min, max}; NaN in either input gives NaN. */
    static const double cases[][4] = {
        {NAN, 1.0, NAN, NAN},
        {1.0, NAN, NAN, NAN},
        {NAN, NAN, NAN, NAN},
        {-INFINITY, NAN, NAN, NAN},
        {NAN, INFINITY, NAN, NAN},
        {-INFINITY, 1.0, -INFINITY, 1.0},
        {INFINITY, -2.0, -2.0, INFINITY},
        {-0.5, 0.25, -0.5, 0.25},
        {3.0, 3.0, 3.0, 3.0},
    };
    fixture_t *f = *state;

    for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            unsigned char a[8], b[8], lo[8], hi[8];

            store_float(dtypes[d], a, cases[i][0]);
            store_float(dtypes[d], b, cases[i][1]);
            store_float(dtypes[d], lo, cases[i][2]);
            store_float(dtypes[d], hi, cases[i][3]);
            check_splat(f, dtypes[d], TUTTI_OP_MIN, a, b, lo);
            check_splat(f, dtypes[d], TUTTI_OP_MAX, a, b, hi);
        }
    }
}

static void test_invalid_dtype_or_op_does_nothing(void **state)
{
    fixture_t *f = *state;

    memset(f->buf[0], 1, BUF_BYTES);
    memset(f->buf[1], 2, BUF_BYTES);
    memset(f->buf[2], 3, BUF_BYTES);
    memcpy(f->before[2], f->buf[2], BUF_BYTES);
    tutti__reduce(TUTTI_DTYPE_COUNT, TUTTI_OP_SUM, f->buf[2], f->buf[0],
                  f->buf[1], 16);
    tutti__reduce((tutti_dtype_t)-1, TUTTI_OP_SUM, f->buf[2], f->buf[0],
                  f->buf[1], 16);
    tutti__reduce(TUTTI_FLOAT32, TUTTI_OP_COUNT, f->buf[2], f->buf[0],
                  f->buf[1], 16);
    tutti__reduce(TUTTI_INT32, (tutti_op_t)-1, f->buf[2], f->buf[0], f->buf[1],
                  16);
    assert_memory_equal(f->buf[2], f->before[2], BUF_BYTES);
}

/* ---- accuracy against float64 ------------------------------------------- */

/* A random float16 (@p half) or bfloat16 with exponent field < @p max_exp:
 * sign and mantissa bits random, so subnormals and zeros included. */
static uint16_t random_finite_16(fixture_t *f, int half, unsigned max_exp)
{
    unsigned shift = half ? HALF_MANT : BF16_MANT;
    uint16_t exp_mask = half ? 0x7c00u : 0x7f80u;
    uint64_t r = test_splitmix(&f->rng);
    unsigned exp = (unsigned)(r >> 32) % max_exp;

    return (uint16_t)(((uint16_t)r & ~exp_mask) | (exp << shift));
}

/*
 * float16 and bfloat16 sum and prod are rounded once from float32, which
 * for these operations equals one correct rounding of the exact result:
 * |got - exact| <= u * |exact| with u = 2^-11 (float16) or 2^-8 (bfloat16)
 * for normal results, and <= half the smallest subnormal below that.  The
 * exception: a bfloat16 product below 2^-126 is first rounded to a float32
 * subnormal, so it may be off by one whole bfloat16 subnormal (2^-133).
 * Inputs are finite and small enough that nothing overflows.
 */
static void check_accuracy(fixture_t *f, tutti_dtype_t dtype, tutti_op_t op)
{
    int half = dtype == TUTTI_FLOAT16;
    double u = half ? pow2(-11) : pow2(-8);
    double tiny = half                 ? pow2(-25)
                  : op == TUTTI_OP_SUM ? pow2(-134)
                                       : pow2(-133);
    /* Exponent fields below these keep |a op b| < 2^15 or < 2^127. */
    unsigned max_exp = half ? (op == TUTTI_OP_SUM ? 29u : 22u)
                            : (op == TUTTI_OP_SUM ? 253u : 189u);
    uint16_t *a = (uint16_t *)f->buf[0], *b = (uint16_t *)f->buf[1];
    uint16_t *d = (uint16_t *)f->buf[2];

    for (int round = 0; round < 16; round++) {
        for (size_t i = 0; i < MAX_COUNT; i++) {
            a[i] = random_finite_16(f, half, max_exp);
            b[i] = random_finite_16(f, half, max_exp);
        }
        tutti__reduce(dtype, op, d, a, b, MAX_COUNT);
        for (size_t i = 0; i < MAX_COUNT; i++) {
            double x = load_float(dtype, (unsigned char *)&a[i]);
            double y = load_float(dtype, (unsigned char *)&b[i]);
            double exact = op == TUTTI_OP_SUM ? x + y : x * y; /* exact */
            double got = load_float(dtype, (unsigned char *)&d[i]);
            double bound = u * fabs(exact) < tiny ? tiny : u * fabs(exact);

            if (!(fabs(got - exact) <= bound))
                fail_msg("%s %s %a, %a: got %a, exact %a, error above %a",
                         dtype_info[dtype].name, op_names[op], x, y, got, exact,
                         bound);
        }
    }
}

static void test_16bit_accuracy_vs_float64(void **state)
{
    fixture_t *f = *state;

    check_accuracy(f, TUTTI_FLOAT16, TUTTI_OP_SUM);
    check_accuracy(f, TUTTI_FLOAT16, TUTTI_OP_PROD);
    check_accuracy(f, TUTTI_BFLOAT16, TUTTI_OP_SUM);
    check_accuracy(f, TUTTI_BFLOAT16, TUTTI_OP_PROD);
}

/* ---- scale and divide (op avg, pre_scale, post_scale) -------------------- */

/* What tutti__scale must give for one element: float32, float16 and
 * bfloat16 multiply in float32 (the factor rounded to float32 first) and
 * round once to the type; float64 multiplies in float64. */
static void ref_scale(tutti_dtype_t dtype, unsigned char *out,
                      const unsigned char *in, double factor)
{
    if (dtype == TUTTI_FLOAT64) {
        store_float(dtype, out, load_float(dtype, in) * factor);
        return;
    }
    float x = (float)load_float(dtype, in), f = (float)factor;
    store_float(dtype, out, (double)(x * f));
}

static void test_scale_matches_reference(void **state)
{
    static const double factors[] = {0.5, 4, -2, 3, 0.1, 1.0 / 3, 1e-3, 0};
    static const tutti_dtype_t floats[] = {TUTTI_FLOAT16, TUTTI_BFLOAT16,
                                           TUTTI_FLOAT32, TUTTI_FLOAT64};
    fixture_t *f = *state;
    char what[96];

    for (size_t t = 0; t < 4; t++) {
        tutti_dtype_t dt = floats[t];
        size_t sz = dtype_info[dt].size;
        f->dtype = dt;
        for (size_t k = 0; k < sizeof(factors) / sizeof(factors[0]); k++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int alias = 0; alias < 2; alias++) {
                    unsigned char *src = f->buf[0] + sz; /* unaligned */
                    unsigned char *dst = alias ? src : f->buf[2] + 3 * sz;
                    int dst_buf = alias ? 0 : 2;
                    snprintf(what, sizeof(what), "scale %s by %g count %zu%s",
                             dtype_info[dt].name, factors[k], counts[c],
                             alias ? " dst==src" : "");
                    fill_buffers(f);
                    for (size_t i = 0; i < counts[c]; i++)
                        ref_scale(dt, f->expect + i * sz, src + i * sz,
                                  factors[k]);
                    assert_int_equal(tutti__scale(dt, dst, src, counts[c],
                                                  factors[k]),
                                     0);
                    expect_result(f, dt, dst, dst_buf, counts[c], what);
                }
    }
}

/* Integers are never scaled: -1 and nothing written. */
static void test_scale_refuses_integers(void **state)
{
    fixture_t *f = *state;
    for (int d = 0; d < TUTTI_FLOAT16; d++) {
        memset(f->buf[0], 7, BUF_BYTES);
        memset(f->buf[2], 9, BUF_BYTES);
        memcpy(f->before[2], f->buf[2], BUF_BYTES);
        assert_int_equal(tutti__scale((tutti_dtype_t)d, f->buf[2], f->buf[0],
                                      16, 2.0),
                         -1);
        assert_int_equal(tutti__scale((tutti_dtype_t)d, f->buf[0], f->buf[0],
                                      16, 2.0),
                         -1);
        assert_memory_equal(f->buf[2], f->before[2], BUF_BYTES);
    }
    assert_int_equal(tutti__scale(TUTTI_DTYPE_COUNT, f->buf[2], f->buf[0], 16,
                                  2.0),
                     -1);
    assert_memory_equal(f->buf[2], f->before[2], BUF_BYTES);
}

typedef struct {
    tutti_dtype_t dtype;
    int64_t value; /* unsigned types: the bits, as uint64_t */
    int divisor;
    int64_t expect;
} divide_case_t;

/* Integers divide truncating toward zero, in the type. */
static const divide_case_t divide_cases[] = {
    {TUTTI_INT8, -128, 2, -64},
    {TUTTI_INT8, -127, 2, -63},
    {TUTTI_INT8, -7, 2, -3},
    {TUTTI_INT8, 127, 3, 42},
    {TUTTI_INT8, -1, 5, 0},
    {TUTTI_UINT8, 255, 2, 127},
    {TUTTI_UINT8, 200, 3, 66},
    {TUTTI_INT32, INT32_MIN, 2, INT32_MIN / 2},
    {TUTTI_INT32, -10, 4, -2},
    {TUTTI_INT32, INT32_MAX, 1, INT32_MAX},
    {TUTTI_UINT32, (int64_t)UINT32_MAX, 5, (int64_t)(UINT32_MAX / 5)},
    {TUTTI_INT64, INT64_MIN, 3, INT64_MIN / 3},
    {TUTTI_INT64, -5, 3, -1},
    {TUTTI_UINT64, -1 /* UINT64_MAX */, 7, (int64_t)(UINT64_MAX / 7)},
};

static void test_divide_integers(void **state)
{
    fixture_t *f = *state;
    for (size_t c = 0; c < sizeof(divide_cases) / sizeof(divide_cases[0]);
         c++) {
        const divide_case_t *dc = &divide_cases[c];
        size_t sz = dtype_info[dc->dtype].size;
        /* 19 copies (vector body and tail) one element in (not vector
         * aligned; buffers are aligned to their element size), with a
         * guard each side. */
        unsigned char *p = f->buf[0] + sz;
        memset(f->buf[0], 0xee, BUF_BYTES);
        for (size_t i = 0; i < 19; i++)
            store_bits(p + i * sz, sz, (uint64_t)dc->value);
        memcpy(f->before[0], f->buf[0], BUF_BYTES);
        assert_int_equal(tutti__divide(dc->dtype, p, 19, dc->divisor), 0);
        for (size_t i = 0; i < 19; i++) {
            uint64_t got = load_bits(p + i * sz, sz);
            uint64_t want = (uint64_t)dc->expect;
            if (sz < 8)
                want &= (UINT64_C(1) << (sz * 8)) - 1;
            if (got != want)
                fail_msg("%s %lld / %d: element %zu is 0x%llx, expected "
                         "0x%llx", dtype_info[dc->dtype].name,
                         (long long)dc->value, dc->divisor, i,
                         (unsigned long long)got, (unsigned long long)want);
        }
        assert_int_equal(f->buf[0][0], 0xee);
        assert_memory_equal(p + 19 * sz, f->before[0] + sz + 19 * sz,
                            BUF_BYTES - sz - 19 * sz);
    }
    /* A divisor below 1 is refused, nothing written. */
    memcpy(f->before[0], f->buf[0], BUF_BYTES);
    assert_int_equal(tutti__divide(TUTTI_INT32, f->buf[0], 4, 0), -1);
    assert_int_equal(tutti__divide(TUTTI_INT32, f->buf[0], 4, -2), -1);
    assert_memory_equal(f->buf[0], f->before[0], BUF_BYTES);
}

/* Floats: the quotient correctly rounded in the compute type (float32 for
 * float16, bfloat16 and float32; float64), so exact where representable;
 * a multiplication by 1/divisor is not (21 x fl(1/7) is 2.9999998 in
 * float32). */
static void test_divide_floats(void **state)
{
    static const tutti_dtype_t floats[] = {TUTTI_FLOAT16, TUTTI_BFLOAT16,
                                           TUTTI_FLOAT32, TUTTI_FLOAT64};
    fixture_t *f = *state;
    for (size_t t = 0; t < 4; t++) {
        tutti_dtype_t dt = floats[t];
        size_t sz = dtype_info[dt].size;
        for (int div = 1; div <= 64; div++) {
            for (size_t i = 0; i < MAX_COUNT; i++)
                store_float(dt, f->buf[0] + i * sz,
                            (double)((int)(i % 41) - 20) * 0.75);
            for (size_t i = 0; i < MAX_COUNT; i++) {
                double x = load_float(dt, f->buf[0] + i * sz);
                double q = dt == TUTTI_FLOAT64 ? x / div
                                               : (double)((float)x / (float)div);
                store_float(dt, f->buf[1] + i * sz, q);
            }
            memcpy(f->buf[2], f->buf[0], MAX_COUNT * sz);
            assert_int_equal(tutti__divide(dt, f->buf[2], MAX_COUNT, div), 0);
            assert_memory_equal(f->buf[2], f->buf[1], MAX_COUNT * sz);
            /* Multiples of the divisor come back exact. */
            int top = dt == TUTTI_BFLOAT16 ? 256 / div : 2048 / div;
            for (int k = 0; k < top && k < (int)MAX_COUNT; k++)
                store_float(dt, f->buf[2] + (size_t)k * sz, (double)k * div);
            assert_int_equal(tutti__divide(dt, f->buf[2], (size_t)top, div),
                             0);
            for (int k = 0; k < top; k++)
                if (load_float(dt, f->buf[2] + (size_t)k * sz) != (double)k)
                    fail_msg("%s %d / %d: got %.17g", dtype_info[dt].name,
                             k * div, div,
                             load_float(dt, f->buf[2] + (size_t)k * sz));
        }
    }
}

/* ---- main --------------------------------------------------------------- */

static tutti_dtype_t all_dtypes[TUTTI_DTYPE_COUNT] = {
#define DT_(up, low, size) TUTTI_##up,
    TUTTI_DTYPE_LIST(DT_)
#undef DT_
};

/* A test on the fixture: the buffers, dtype int8 unless the state names
 * another. */
#define FIXTURE_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
#define REF_TEST_(up, low, size)                                               \
    {"test_matches_reference_" #low, test_matches_reference, setup, teardown,  \
     &all_dtypes[TUTTI_##up]},
        TUTTI_DTYPE_LIST(REF_TEST_)
#undef REF_TEST_
        FIXTURE_TEST(test_integer_wraparound),
        FIXTURE_TEST(test_float_min_max_nan),
        FIXTURE_TEST(test_invalid_dtype_or_op_does_nothing),
        FIXTURE_TEST(test_16bit_accuracy_vs_float64),
        FIXTURE_TEST(test_scale_matches_reference),
        FIXTURE_TEST(test_scale_refuses_integers),
        FIXTURE_TEST(test_divide_integers),
        FIXTURE_TEST(test_divide_floats),
    };

    return cmocka_run_group_tests_name("reduce", tests, NULL, NULL);
}
