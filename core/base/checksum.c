/* The data checksum: CRC32C lanes by vector, instruction or table
 * (checksum.h). */
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/checksum.h"

#define POLY 0x82f63b78u /* CRC32C, reflected */

static uint32_t table[256];

static uint32_t soft_u8(uint32_t c, uint8_t b)
{
    return table[(c ^ b) & 0xffu] ^ (c >> 8);
}

static uint32_t soft_u64(uint32_t c, uint64_t w)
{
    for (int i = 0; i < 8; i++, w >>= 8)
        c = soft_u8(c, (uint8_t)w);
    return c;
}

static uint64_t load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* One implementation: n whole 32-byte blocks summed, or copied to d and
 * summed; then the fold of the lanes, the tail and the length. */
typedef struct {
    void (*blocks)(uint32_t lane[4], const unsigned char *p, size_t n);
    void (*copy)(uint32_t lane[4], unsigned char *d, const unsigned char *p,
                 size_t n);
    uint32_t (*final)(const tutti__csum_t *s);
} impl_t;

static void soft_blocks(uint32_t lane[4], const unsigned char *p, size_t n)
{
    for (; n > 0; n--, p += 32) {
        for (int k = 0; k < 4; k++)
            lane[k] = soft_u64(lane[k], load64(p + 8 * k));
    }
}

/* The table is far slower than memory: a second pass costs nothing. */
static void soft_copy(uint32_t lane[4], unsigned char *d,
                      const unsigned char *p, size_t n)
{
    memcpy(d, p, 32 * n);
    soft_blocks(lane, d, n);
}

static uint32_t soft_final(const tutti__csum_t *s)
{
    uint32_t c = s->lane[0];
    for (size_t i = 0; i < s->have; i++)
        c = soft_u8(c, s->carry[i]);
    c = soft_u64(c, s->lane[1]);
    c = soft_u64(c, s->lane[2]);
    c = soft_u64(c, s->lane[3]);
    c = soft_u64(c, s->len);
    return ~c;
}

#if defined(__x86_64__)
#define CRC32_TARGET __attribute__((target("sse4.2")))

/* Four independent chains keep the instruction's pipeline full: one chain
 * waits three cycles for each result. */
CRC32_TARGET static void hw_blocks(uint32_t lane[4], const unsigned char *p,
                                   size_t n)
{
    uint64_t a = lane[0], b = lane[1], c = lane[2], d = lane[3];
    for (; n > 0; n--, p += 32) {
        a = __builtin_ia32_crc32di(a, load64(p));
        b = __builtin_ia32_crc32di(b, load64(p + 8));
        c = __builtin_ia32_crc32di(c, load64(p + 16));
        d = __builtin_ia32_crc32di(d, load64(p + 24));
    }
    lane[0] = (uint32_t)a;
    lane[1] = (uint32_t)b;
    lane[2] = (uint32_t)c;
    lane[3] = (uint32_t)d;
}

/* The instruction takes one word a cycle, a quarter of what loads and
 * stores could move: storing the words it sums costs nothing more, where
 * memcpy() then a second pass would read them twice. */
CRC32_TARGET static void hw_copy(uint32_t lane[4], unsigned char *d,
                                 const unsigned char *p, size_t n)
{
    uint64_t a = lane[0], b = lane[1], c = lane[2], e = lane[3];
    for (; n > 0; n--, p += 32, d += 32) {
        uint64_t w[4];
        memcpy(w, p, sizeof(w));
        memcpy(d, w, sizeof(w));
        a = __builtin_ia32_crc32di(a, w[0]);
        b = __builtin_ia32_crc32di(b, w[1]);
        c = __builtin_ia32_crc32di(c, w[2]);
        e = __builtin_ia32_crc32di(e, w[3]);
    }
    lane[0] = (uint32_t)a;
    lane[1] = (uint32_t)b;
    lane[2] = (uint32_t)c;
    lane[3] = (uint32_t)e;
}

/* As soft_final(): the instruction on 8 bytes is the table on each. */
CRC32_TARGET static uint32_t hw_final(const tutti__csum_t *s)
{
    uint64_t c = s->lane[0];
    size_t i = 0;
    for (; i + 8 <= s->have; i += 8)
        c = __builtin_ia32_crc32di(c, load64(s->carry + i));
    for (; i < s->have; i++)
        c = __builtin_ia32_crc32qi((uint32_t)c, s->carry[i]);
    c = __builtin_ia32_crc32di(c, s->lane[1]);
    c = __builtin_ia32_crc32di(c, s->lane[2]);
    c = __builtin_ia32_crc32di(c, s->lane[3]);
    c = __builtin_ia32_crc32di(c, s->len);
    return ~(uint32_t)c;
}

/*
 * The vector implementation, nearly twice the instruction's speed (the
 * multiplier, not memory, bounds it up to L2-sized buffers).  A CRC is
 * linear: a lane's value is the XOR of its 16-byte pieces' values, each
 * piece first multiplied by x to the number of bits that follow it, modulo
 * the polynomial.  A piece of a lane is two of its words, from consecutive
 * blocks; a 128-bit accumulator holds one, and a step carries it D bits on
 * (onto the piece D bits later, XORed in) by multiplying its two halves
 * carry-less by the 32-bit constants fold_*[] (fold_constants()).  One
 * 512-bit register holds a piece of each of the four lanes, four registers
 * take 256 bytes a step (D = 512 bits) so that the multiplier, whose
 * result comes cycles later, always has work; at the end they are folded
 * into one (D = 128) and the instruction turns each lane's 16 bytes into
 * its value: the CRC32C of a piece is the instruction's, from 0, on it.
 * The lane's value so far is XORed onto its first piece, as the
 * instruction XORs its input value onto the word it takes.
 */
#define VECTOR_TARGET                                                          \
    __attribute__((target("avx512f,pclmul,vpclmulqdq,sse4.2")))

/* At 8 blocks the setup and the final fold cost what the vectors save;
 * from 16 they win (bench/tutti-csum-copy 256 512). */
#define VECTOR_MIN_BLOCKS 16

static uint64_t fold_512[2], fold_128[2];

/* x^n modulo the polynomial, reflected (bit 31 is x^0). */
static uint32_t xpow(unsigned n)
{
    uint32_t c = 0x80000000u;
    while (n-- > 0)
        c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
    return c;
}

/* To carry a piece D bits on: its first half weighs x^64 more than its
 * second; a constant in the low 32 bits of a 64-bit operand stands for
 * itself times x^32, and a product of reflected operands gains a factor x
 * (its 127 bits are read as 128).  Hence x^(D + 64 - 32 - 1) for the
 * first half, x^(D - 32 - 1) for the second. */
static void fold_constants(uint64_t k[2], unsigned d)
{
    k[0] = xpow(d + 31);
    k[1] = xpow(d - 33);
}

VECTOR_TARGET static inline __m512i vec_fold(__m512i x, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), next,
                                     0x96 /* a ^ b ^ c */);
}

/* 64 bytes at p (copied to d if copy): two blocks, words regrouped into a
 * piece of each lane, lane k in the register's k-th 128 bits. */
VECTOR_TARGET static inline __m512i vec_load(unsigned char *d,
                                             const unsigned char *p, int copy)
{
    __m512i w = _mm512_loadu_si512((const void *)p);
    if (copy)
        _mm512_storeu_si512((void *)d, w);
    return _mm512_permutexvar_epi64(_mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0),
                                    w);
}

/* n: a multiple of 8 blocks, 8 or more; d is NULL unless copy.  Inlined
 * into vec_blocks() and vec_copy(), so copy is known at compile time. */
VECTOR_TARGET static inline __attribute__((always_inline)) void
vec_run(uint32_t lane[4], unsigned char *d, const unsigned char *p, size_t n,
        int copy)
{
    const __m512i k512 = _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)fold_512[1], (long long)fold_512[0]));
    const __m512i k128 = _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)fold_128[1], (long long)fold_128[0]));
    __m512i acc[4];
    for (int j = 0; j < 4; j++)
        acc[j] = vec_load(copy ? d + 64 * j : NULL, p + 64 * j, copy);
    acc[0] = _mm512_xor_si512(acc[0], _mm512_set_epi64(0, lane[3], 0, lane[2],
                                                       0, lane[1], 0, lane[0]));
    for (size_t off = 256; off < 32 * n; off += 256) {
        for (int j = 0; j < 4; j++) {
            size_t at = off + 64 * (size_t)j;
            acc[j] = vec_fold(acc[j], k512,
                              vec_load(copy ? d + at : NULL, p + at, copy));
        }
    }
    __m512i x = acc[0];
    for (int j = 1; j < 4; j++)
        x = vec_fold(x, k128, acc[j]);
    uint64_t w[8];
    _mm512_storeu_si512((void *)w, x);
    for (int k = 0; k < 4; k++)
        lane[k] = (uint32_t)__builtin_ia32_crc32di(
            __builtin_ia32_crc32di(0, w[2 * k]), w[2 * k + 1]);
}

VECTOR_TARGET static void vec_blocks(uint32_t lane[4], const unsigned char *p,
                                     size_t n)
{
    size_t m = n >= VECTOR_MIN_BLOCKS ? n - n % 8 : 0;
    if (m > 0)
        vec_run(lane, NULL, p, m, 0);
    hw_blocks(lane, p + 32 * m, n - m);
}

VECTOR_TARGET static void vec_copy(uint32_t lane[4], unsigned char *d,
                                   const unsigned char *p, size_t n)
{
    size_t m = n >= VECTOR_MIN_BLOCKS ? n - n % 8 : 0;
    if (m > 0)
        vec_run(lane, d, p, m, 1);
    hw_copy(lane, d + 32 * m, p + 32 * m, n - m);
}
#endif

static const impl_t impls[] = {
    [TUTTI_CSUM_TABLE] = {soft_blocks, soft_copy, soft_final},
#if defined(__x86_64__)
    [TUTTI_CSUM_CRC32] = {hw_blocks, hw_copy, hw_final},
    [TUTTI_CSUM_VECTOR] = {vec_blocks, vec_copy, hw_final},
#endif
};

static const impl_t *use = &impls[TUTTI_CSUM_TABLE];
static tutti__csum_impl_t best = TUTTI_CSUM_TABLE, used = TUTTI_CSUM_TABLE;

__attribute__((constructor)) static void sum_pick(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
        table[i] = c;
    }
#if defined(__x86_64__)
    fold_constants(fold_512, 512);
    fold_constants(fold_128, 128);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        best = TUTTI_CSUM_CRC32;
    if (best == TUTTI_CSUM_CRC32 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("pclmul") &&
        __builtin_cpu_supports("vpclmulqdq"))
        best = TUTTI_CSUM_VECTOR;
#endif
    tutti__csum_force(best);
}

tutti__csum_impl_t tutti__csum_impl(void)
{
    return used;
}

tutti__csum_impl_t tutti__csum_force(tutti__csum_impl_t impl)
{
    used = impl <= best ? impl : best;
    use = &impls[used];
    return used;
}

int tutti__csum_hw(void)
{
    return used != TUTTI_CSUM_TABLE;
}

void tutti__csum_force_soft(int soft)
{
    tutti__csum_force(soft ? TUTTI_CSUM_TABLE : best);
}

void tutti__csum_init(tutti__csum_t *s)
{
    for (int k = 0; k < 4; k++)
        s->lane[k] = ~(uint32_t)k;
    s->len = 0;
    s->have = 0;
}

/* Sums len bytes at p, copying them to d unless d is NULL: whole blocks
 * straight from p, the bytes around them through the carry (and from
 * there to d, so that what is summed is what is written). */
static void feed(tutti__csum_t *s, unsigned char *d, const unsigned char *p,
                 size_t len)
{
    if (len == 0)
        return; /* (NULL, 0) is a valid empty piece: no memcpy() from it */
    s->len += len;
    if (s->have > 0) {
        size_t take = sizeof(s->carry) - s->have;
        if (take > len)
            take = len;
        memcpy(s->carry + s->have, p, take);
        if (d != NULL) {
            memcpy(d, s->carry + s->have, take);
            d += take;
        }
        s->have += take;
        p += take;
        len -= take;
        if (s->have < sizeof(s->carry))
            return;
        use->blocks(s->lane, s->carry, 1);
        s->have = 0;
    }
    size_t whole = len - len % 32;
    if (whole > 0 && d != NULL)
        use->copy(s->lane, d, p, whole / 32);
    else if (whole > 0)
        use->blocks(s->lane, p, whole / 32);
    p += whole;
    memcpy(s->carry, p, len % 32);
    if (d != NULL)
        memcpy(d + whole, s->carry, len % 32);
    s->have = len % 32;
}

void tutti__csum_update(tutti__csum_t *s, const void *data, size_t len)
{
    feed(s, NULL, data, len);
}

void tutti__csum_copy(tutti__csum_t *s, void *dst, const void *src, size_t len)
{
    feed(s, dst, src, len);
}

/* The tail and the fold are a few bytes, but a sum of a few KiB would
 * spend a third of its time on them by table: the instruction does them
 * where it can. */
uint32_t tutti__csum_final(const tutti__csum_t *s)
{
    return use->final(s);
}

uint32_t tutti__csum(const void *data, size_t len)
{
    tutti__csum_t s;
    tutti__csum_init(&s);
    tutti__csum_update(&s, data, len);
    return tutti__csum_final(&s);
}
