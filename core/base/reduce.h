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

float tutti__half_to_float(uint16_t h);
uint16_t tutti__float_to_half(float f);
float tutti__bf16_to_float(uint16_t b);
uint16_t tutti__float_to_bf16(float f);

#endif
