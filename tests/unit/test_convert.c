/*
 * Unit tests for the float16 and bfloat16 conversions (base/reduce.h),
 * checked exhaustively over all 65536 bit patterns, against values
 * computed from the bit fields, and at every rounding midpoint.
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

/* ---- float16 conversions ------------------------------------------------ */

/* Converts the 16-bit pattern @p bits of a type with @p mant_bits mantissa
 * bits (@p name, in the failure) to *@p f_out with @p to_float: a number
 * must come out exact, sign of zero included.  0 if the pattern is a NaN,
 * left to the caller, else 1. */
static int converts_exactly(const char *name, uint32_t bits, int mant_bits,
                            float (*to_float)(uint16_t), float *f_out)
{
    float f = to_float((uint16_t)bits);
    double v = fp16_value((uint16_t)bits, mant_bits);

    *f_out = f;
    if (isnan(v))
        return 0;
    if ((double)f != v || !signbit(f) != !signbit(v))
        fail_msg("%s 0x%04x: got %a, expected %a", name, bits, (double)f, v);
    return 1;
}

static void test_half_to_float_exhaustive(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        float f;

        if (converts_exactly("half", h, HALF_MANT, tutti__half_to_float, &f))
            continue;
        /* Quieted, sign and payload kept. */
        uint32_t u = bits_from_float(f);
        assert_true(isnan(f));
        assert_int_equal(u >> 31, h >> 15);
        assert_int_equal((u >> 13) & 0x3ffu, (h & 0x3ffu) | 0x200u);
    }
}

static void test_half_round_trip_exhaustive(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        uint16_t back = tutti__float_to_half(tutti__half_to_float((uint16_t)h));

        if (half_is_nan((uint16_t)h))
            assert_true(half_is_nan(back));
        else
            assert_int_equal(back, h);
    }
}

/* Checks float -> half rounding of the midpoint between every pair of
 * adjacent non-negative halves, and of the floats just either side.  The
 * pair (0x7bff, "0x7c00") uses 2^16 for inf: above 65520 rounds to inf. */
static void test_half_rounds_to_nearest_even(void **state)
{
    (void)state;
    for (uint16_t h = 0; h < 0x7c00u; h++) {
        double lo = fp16_value(h, HALF_MANT);
        double hi =
            h == 0x7bffu ? 65536.0 : fp16_value((uint16_t)(h + 1), HALF_MANT);
        float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
        uint32_t mb = bits_from_float(mid);
        uint16_t even = (h & 1u) ? (uint16_t)(h + 1) : h;

        assert_true((double)mid == (lo + hi) / 2);
        assert_int_equal(tutti__float_to_half(mid), even);
        assert_int_equal(tutti__float_to_half(float_from_bits(mb - 1)), h);
        assert_int_equal(tutti__float_to_half(float_from_bits(mb + 1)), h + 1);
        assert_int_equal(tutti__float_to_half(-mid), even | 0x8000u);
    }
}

static void test_half_special_values(void **state)
{
    (void)state;
    /* A float and its half. */
    static const struct {
        float f;
        uint16_t h;
    } cases[] = {
        /* Overflow: 65520 and up round to inf. */
        {65504.0f, 0x7bff}, {65519.996f, 0x7bff}, {65520.0f, 0x7c00},
        {1e10f, 0x7c00}, {-1e10f, 0xfc00}, {FLT_MAX, 0x7c00},
        {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
        /* Subnormals: 2^-24 is the smallest; 2^-25 ties to 0. */
        {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {0x1.000002p-25f, 0x0001},
        {0x3p-25f, 0x0002}, {-0x1p-24f, 0x8001},
        {0x1p-14f - 0x1p-24f, 0x03ff}, {0x1p-14f, 0x0400},
        {1e-40f, 0x0000}, /* f32 subnormal */
        {-1e-40f, 0x8000}, {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00},
        {-2.0f, 0xc000},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(tutti__float_to_half(cases[i].f), cases[i].h);
    /* NaNs stay NaN, quiet, with their sign. */
    assert_int_equal(tutti__float_to_half(NAN) & 0x7e00u, 0x7e00u);
    assert_int_equal(tutti__float_to_half(-NAN), 0xfe00u);
    assert_true(
        half_is_nan(tutti__float_to_half(float_from_bits(0x7f800001u))));
    assert_true(tutti__half_to_float(0x3555) == (float)0x1.554p-2);
    assert_true(tutti__half_to_float(0x0001) == 0x1p-24f);
    assert_true(tutti__half_to_float(0xfc00) == -INFINITY);
}

/* ---- bfloat16 conversions ----------------------------------------------- */

static void test_bf16_exhaustive(void **state)
{
    (void)state;
    for (uint32_t b = 0; b <= 0xffffu; b++) {
        float f;
        int number = converts_exactly("bf16", b, BF16_MANT,
                                      tutti__bf16_to_float, &f);
        uint16_t back = tutti__float_to_bf16(f);

        if (number) {
            assert_int_equal(back, b);
            continue;
        }
        assert_true(isnan(f));
        assert_true(bf16_is_nan(back));
        assert_int_equal(back >> 15, b >> 15);
    }
}

/* Every float whose low 16 bits are 0x8000 is a midpoint between adjacent
 * bfloat16 values; it rounds to the even one, its neighbours to the nearer.
 * 0x7f7f8000 lies between the largest bfloat16 and inf: it rounds to inf. */
static void test_bf16_rounds_to_nearest_even(void **state)
{
    (void)state;
    for (uint32_t b = 0; b < 0x7f80u; b++) {
        uint32_t mid = (b << 16) | 0x8000u;
        uint16_t even = (b & 1u) ? (uint16_t)(b + 1) : (uint16_t)b;

        assert_int_equal(tutti__float_to_bf16(float_from_bits(mid)), even);
        assert_int_equal(tutti__float_to_bf16(float_from_bits(mid - 1)), b);
        assert_int_equal(tutti__float_to_bf16(float_from_bits(mid + 1)), b + 1);
        assert_int_equal(
            tutti__float_to_bf16(float_from_bits(mid | 0x80000000u)),
            even | 0x8000u);
    }
    assert_int_equal(tutti__float_to_bf16(FLT_MAX), 0x7f80);
    assert_int_equal(tutti__float_to_bf16(-FLT_MAX), 0xff80);
    assert_int_equal(tutti__float_to_bf16(1e-40f), 0x0001); /* 0x000116c2 */
    assert_true(
        bf16_is_nan(tutti__float_to_bf16(float_from_bits(0x7f800001u))));
    assert_true(
        bf16_is_nan(tutti__float_to_bf16(float_from_bits(0xffffffffu))));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_to_float_exhaustive),
        cmocka_unit_test(test_half_round_trip_exhaustive),
        cmocka_unit_test(test_half_rounds_to_nearest_even),
        cmocka_unit_test(test_half_special_values),
        cmocka_unit_test(test_bf16_exhaustive),
        cmocka_unit_test(test_bf16_rounds_to_nearest_even),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
