/*
 * The data checksum of `verify: checksum` (internal): four CRC32C lanes
 * over interleaved 8-byte words, folded into 32 bits with the length.  The
 * SSE4.2 instruction computes it where the CPU has one (chosen once, at
 * load), a table elsewhere; both give the same value, so ends on different
 * CPUs agree.  Any change of one byte changes the sum.  Compiled into the
 * core and into the tcp module (which does not link the core).
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

/** Whether the instruction computes it (1) or the table (0); @p soft
 *  nonzero makes every later sum use the table (tests compare the two). */
int tutti__csum_hw(void);
void tutti__csum_force_soft(int soft);

#endif
