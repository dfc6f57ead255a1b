/* The data checksum: CRC32C lanes by instruction or by table (checksum.h). */
#include <string.h>

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

static void soft_blocks(uint32_t lane[4], const unsigned char *p, size_t n)
{
    for (; n > 0; n--, p += 32) {
        for (int k = 0; k < 4; k++)
            lane[k] = soft_u64(lane[k], load64(p + 8 * k));
    }
}

#if defined(__x86_64__)
/* Four independent chains keep the instruction's pipeline full: one chain
 * waits three cycles for each result. */
__attribute__((target("sse4.2"))) static void hw_blocks(uint32_t lane[4],
                                                         const unsigned char *p,
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
#endif

static void (*blocks)(uint32_t lane[4], const unsigned char *p, size_t n) =
    soft_blocks;
static int have_hw;

__attribute__((constructor)) static void sum_pick(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
        table[i] = c;
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        blocks = hw_blocks;
        have_hw = 1;
    }
#endif
}

int tutti__csum_hw(void)
{
    return blocks != soft_blocks;
}

void tutti__csum_force_soft(int soft)
{
#if defined(__x86_64__)
    blocks = soft || !have_hw ? soft_blocks : hw_blocks;
#else
    (void)soft;
#endif
}

void tutti__csum_init(tutti__csum_t *s)
{
    for (int k = 0; k < 4; k++)
        s->lane[k] = ~(uint32_t)k;
    s->len = 0;
    s->have = 0;
}

void tutti__csum_update(tutti__csum_t *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    s->len += len;
    if (s->have > 0) {
        size_t take = sizeof(s->carry) - s->have;
        if (take > len)
            take = len;
        memcpy(s->carry + s->have, p, take);
        s->have += take;
        p += take;
        len -= take;
        if (s->have < sizeof(s->carry))
            return;
        blocks(s->lane, s->carry, 1);
        s->have = 0;
    }
    if (len >= 32)
        blocks(s->lane, p, len / 32);
    p += len - len % 32;
    memcpy(s->carry, p, len % 32);
    s->have = len % 32;
}

/* The tail and the fold are a few bytes: the table does them everywhere. */
uint32_t tutti__csum_final(const tutti__csum_t *s)
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

uint32_t tutti__csum(const void *data, size_t len)
{
    tutti__csum_t s;
    tutti__csum_init(&s);
    tutti__csum_update(&s, data, len);
    return tutti__csum_final(&s);
}
