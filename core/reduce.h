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

float tutti__half_to_float(uint16_t h);
uint16_t tutti__float_to_half(float f);
float tutti__bf16_to_float(uint16_t b);
uint16_t tutti__float_to_bf16(float f);

#endif
