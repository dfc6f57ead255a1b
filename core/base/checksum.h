/*
 * The data checksum of `verify: checksum` (internal): four CRC32C lanes
 * over interleaved 8-byte words, folded into 32 bits with the length.
 * Carry-less multiplies on 512-bit vectors compute it where the CPU has
 * them, else the SSE4.2 instruction, else a table (chosen once, at load);
 * all give the same value, so ends on different CPUs agree.  Any change of
 * one byte changes the sum.  Compiled into the core and into the tcp
 * module (which does not link the core).
 */
#ifndef TUTTI_CORE_BASE_CHECKSUM_H
#define TUTTI_CORE_BASE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/** A sum being computed over bytes that come in pieces of any length. */
typedef struct {
    uint32_t lane[4];
    uint64_t len;
    unsigned char carry[32];  /* bytes of an unfinished 32-byte block */
    size_t have;
} tutti__csum_t;

void tutti__csum_init(tutti__csum_t *s);
void tutti__csum_update(tutti__csum_t *s, const void *data, size_t len);
uint32_t tutti__csum_final(const tutti__csum_t *s);
/** The sum of @p len bytes at @p data, in one piece. */
uint32_t tutti__csum(const void *data, size_t len);

/**
 * Copies @p len bytes from @p src to @p dst and adds them to @p s in the
 * same pass: the same bytes and the same sum as memcpy() then
 * tutti__csum_update(@p s, @p dst, @p len), for about memcpy()'s time
 * where the vector implementation runs (bench/tutti-csum-copy).  The two
 * ranges must not overlap; either may have any alignment.
 */
void tutti__csum_copy(tutti__csum_t *s, void *dst, const void *src, size_t len);

/** How sums are computed, slowest first; all give the same sums. */
typedef enum {
    TUTTI_CSUM_TABLE = 0, /* a byte table, on any CPU */
    TUTTI_CSUM_CRC32,     /* the SSE4.2 instruction */
    TUTTI_CSUM_VECTOR     /* carry-less multiplies on 512-bit vectors
                           * (AVX-512F and VPCLMULQDQ), then the instruction */
} tutti__csum_impl_t;

/** The implementation in use: the fastest this CPU has unless forced. */
tutti__csum_impl_t tutti__csum_impl(void);
/** Makes every later sum use @p impl, or the fastest this CPU has if it
 *  lacks @p impl; returns the one now in use.  For tests and benchmarks,
 *  which compare them: not safe while another thread sums. */
tutti__csum_impl_t tutti__csum_force(tutti__csum_impl_t impl);

/** Whether an instruction computes it (1) or the table (0); @p soft
 *  nonzero makes every later sum use the table, zero the fastest. */
int tutti__csum_hw(void);
void tutti__csum_force_soft(int soft);

#endif
