/*
 * 16-bit binary floats from their bit fields, for the tests of the
 * reductions and of the conversions (header-only, static inline): float16
 * has 10 mantissa bits, bfloat16 7; the exponent takes the other bits but
 * the sign.
 */
#ifndef TUTTI_TEST_FP16_FIELDS_H
#define TUTTI_TEST_FP16_FIELDS_H

#include <math.h>
#include <stdint.h>

#include "base/reduce.h"

/* The bit casts, as the tests name them (base/reduce.h's). */
#define float_from_bits tutti__f32_from_bits
#define bits_from_float tutti__f32_bits

/* 2^e, exactly, for the exponents of float16 and bfloat16 values. */
static inline double pow2(int e)
{
    double r = 1.0;

    for (; e > 0; e--)
        r *= 2.0;
    for (; e < 0; e++)
        r *= 0.5;
    return r;
}

enum { HALF_MANT = 10, BF16_MANT = 7 };

static inline int fp16_is_nan(uint16_t v, int mant_bits)
{
    uint16_t exp_mask = (uint16_t)(0x7fffu & ~((1u << mant_bits) - 1));

    return (v & exp_mask) == exp_mask && (v & ~exp_mask & 0x7fffu) != 0;
}

/* The value of @p v computed from its fields (NaN for NaNs). */
static inline double fp16_value(uint16_t v, int mant_bits)
{
    int bias = (1 << (14 - mant_bits)) - 1, max_exp = 2 * bias + 1;
    int e = (v & 0x7fff) >> mant_bits, m = v & ((1 << mant_bits) - 1);
    double sign = (v & 0x8000u) ? -1.0 : 1.0;

    if (e == max_exp)
        return m != 0 ? NAN : sign * INFINITY;
    if (e == 0) /* subnormal: m * 2^(1 - bias - mant_bits) */
        return sign * m * pow2(1 - bias - mant_bits);
    return sign * ((1 << mant_bits) + m) * pow2(e - bias - mant_bits);
}

static inline int half_is_nan(uint16_t h)
{
    return fp16_is_nan(h, HALF_MANT);
}

static inline int bf16_is_nan(uint16_t b)
{
    return fp16_is_nan(b, BF16_MANT);
}

#endif
