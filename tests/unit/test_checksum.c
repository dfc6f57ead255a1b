/*
 * The data checksum of `verify: checksum` (core/base/checksum.c): the
 * instruction and the table give the same sums (ends on different CPUs
 * agree), a sum taken in pieces of any length equals the sum taken whole,
 * and a change of any one byte changes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/checksum.h"

#define LEN 4099

static unsigned char data[LEN];

static int setup(void **state)
{
    (void)state;
    uint32_t x = 12345;
    for (size_t i = 0; i < LEN; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    return 0;
}

static void test_table_equals_instruction(void **state)
{
    (void)state;
    if (!tutti__csum_hw())
        skip(); /* no instruction here: nothing to compare */
    for (size_t len = 0; len <= LEN; len += len < 70 ? 1 : 97) {
        uint32_t hw = tutti__csum(data, len);
        tutti__csum_force_soft(1);
        uint32_t sw = tutti__csum(data, len);
        tutti__csum_force_soft(0);
        if (hw != sw)
            fail_msg("%zu bytes: instruction 0x%08x, table 0x%08x", len, hw,
                     sw);
    }
}

static void test_pieces_equal_whole(void **state)
{
    (void)state;
    static const size_t steps[] = {1, 3, 8, 31, 32, 33, 100, 1000};
    uint32_t whole = tutti__csum(data, LEN);
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        tutti__csum_t s;
        tutti__csum_init(&s);
        for (size_t off = 0; off < LEN; off += steps[k])
            tutti__csum_update(&s, data + off,
                               LEN - off < steps[k] ? LEN - off : steps[k]);
        assert_int_equal(tutti__csum_final(&s), whole);
    }
}

static void test_every_byte_counts(void **state)
{
    (void)state;
    static const unsigned char masks[] = {0x01, 0x10, 0x80, 0xff};
    unsigned char buf[300];
    memcpy(buf, data, sizeof(buf));
    uint32_t good = tutti__csum(buf, sizeof(buf));
    for (size_t i = 0; i < sizeof(buf); i++) {
        for (size_t m = 0; m < sizeof(masks); m++) {
            buf[i] ^= masks[m];
            if (tutti__csum(buf, sizeof(buf)) == good)
                fail_msg("byte %zu ^ 0x%02x leaves the sum", i, masks[m]);
            buf[i] ^= masks[m];
        }
    }
    /* The length counts too: trailing zeros are not free. */
    unsigned char zeros[64] = {0};
    assert_int_not_equal(tutti__csum(zeros, 32), tutti__csum(zeros, 64));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_equals_instruction),
        cmocka_unit_test(test_pieces_equal_whole),
        cmocka_unit_test(test_every_byte_counts),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
