/*
 * Reduction kernels (internal): the one place every algorithm reduces.
 *
 * dst[i] = a[i] op b[i] for i < count.  dst may be the same pointer as a or
 * b (exact alias); other overlaps are not allowed.  float16 and bfloat16 are
 * computed in float32 and rounded to nearest even.  Integer sum and prod
 * wrap (unsigned arithmetic), never undefined behaviour.
 */
#ifndef TUTTI_CORE_REDUCE_H
#define TUTTI_CORE_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tutti/types.h>

void tutti__reduce(tutti_dtype_t dtype, tutti_op_t op, void *dst,
                   const void *a, const void *b, size_t count);

/** dst[i] = src[i] * factor for a floating @p dtype (dst may be src);
 *  float32, float16 and bfloat16 in float32, float64 in float64.
 *  Returns -1 for an integer type (nothing done). */
int tutti__scale(tutti_dtype_t dtype, void *dst, const void *src,
                 size_t count, double factor);
/** buf[i] /= divisor: integers truncate toward zero (int8 -128/2 = -64);
 *  floating types divide, correctly rounded in float32 (float16, bfloat16,
 *  float32) or float64, so a representable quotient is exact.  For op
 *  avg.  Returns -1 for divisor <= 0 or an invalid type. */
int tutti__divide(tutti_dtype_t dtype, void *buf, size_t count, int divisor);

/* ---- bit casts and 16-bit float conversions --------------------------- */

/*
 * Static inline, not exported: the kernels inline them into their block
 * loops, and the tools and tests that fill and check buffers use the same
 * conversions without an internal symbol of libtutti.
 */

static inline uint32_t tutti__f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float tutti__f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* cond ? x : y on bit masks: a ?: chain would let GCC sink the float
 * arithmetic into a branch, and if-conversion then refuses the loop. */
static inline uint32_t tutti__select_u32(int cond, uint32_t x, uint32_t y)
{
    uint32_t mask = 0u - (uint32_t)cond;
    return (x & mask) | (y & ~mask);
}

/*
 * The conversions are branch-free (every case computed, then selected) so
 * that they vectorize inside the block loops.  NaNs are quieted and keep
 * their sign and top payload bits, as x86 F16C and Arm do.  The float
 * arithmetic never sees a subnormal operand or result except for float32
 * subnormal inputs to tutti__float_to_half, which round to zero either
 * way, so flush-to-zero modes do not change the results.
 */
static inline float tutti__half_to_float(uint16_t h)
{
    const uint32_t exp_mask = 0x7c00u << 13;
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t exp = em & exp_mask;
    /* Normal: rebias the exponent from 15 to 127. */
    uint32_t normal = em + ((127u - 15u) << 23);
    /* Inf and NaN: exponent 31 becomes 255; NaNs get the quiet bit. */
    uint32_t special = (em + ((255u - 31u) << 23)) |
                       tutti__select_u32(em > exp_mask, 0x00400000u, 0u);
    /* Zero and subnormal: (1.m * 2^-14) - 2^-14 == 0.m * 2^-14, exactly. */
    uint32_t sub = tutti__f32_bits(tutti__f32_from_bits(em + (113u << 23)) -
                                   tutti__f32_from_bits(113u << 23));
    uint32_t bits = tutti__select_u32(
        exp == 0, sub, tutti__select_u32(exp == exp_mask, special, normal));
    return tutti__f32_from_bits(bits | sign);
}

static inline uint16_t tutti__float_to_half(float f)
{
    uint32_t u = tutti__f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t x = u & 0x7fffffffu;
    /* x < 2^31: signed compares, which SSE2 and AVX2 have, are enough. */
    int32_t xs = (int32_t)x;
    /* Normal: drop 13 mantissa bits rounding to nearest even, rebias. */
    uint32_t normal =
        (x + 0xfffu + ((x >> 13) & 1u) - ((127u - 15u) << 23)) >> 13;
    /* Below 2^-14: adding 0.5f leaves the value, rounded to nearest even
     * in units of 2^-24, in the low mantissa bits. */
    uint32_t sub = tutti__f32_bits(tutti__f32_from_bits(x) + 0.5f) -
                   tutti__f32_bits(0.5f);
    uint32_t h = tutti__select_u32(xs < (113 << 23), sub, normal);
    /* 65520 is halfway between 65504 (odd) and 2^16: ties go to inf. */
    h = tutti__select_u32(xs >= 0x477ff000, 0x7c00u, h);
    h = tutti__select_u32(xs > 0x7f800000, 0x7e00u | ((x >> 13) & 0x3ffu), h);
    return (uint16_t)(h | sign);
}

static inline float tutti__bf16_to_float(uint16_t b)
{
    return tutti__f32_from_bits((uint32_t)b << 16);
}

static inline uint16_t tutti__float_to_bf16(float f)
{
    uint32_t u = tutti__f32_bits(f);
    /* Round to nearest even; a carry into the exponent is right, up to
     * inf.  A NaN is only quieted: rounding could carry it into inf. */
    uint32_t v = f != f ? u | 0x00400000u : u + 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(v >> 16);
}

#endif
