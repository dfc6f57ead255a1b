/*
 * The fused copy and checksum (tutti__csum_copy, core/base/checksum.c): by
 * every implementation this CPU has, it copies exactly the bytes asked
 * (none around them) and gives the table's sum of them, at any length and
 * any alignment of either end, whole or in pieces mixed with
 * tutti__csum_update().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/checksum.h"

#define MAX_LEN 65537
#define GUARD 64 /* bytes checked untouched on each side of the copy */

static const size_t lens[] = {0,   1,   7,    8,    63,   64,   255,  256,  511,
                              512, 513, 1000, 4095, 4096, 4127, 8191, 65537};

static unsigned char *src, *dst, *want;

static int setup(void **state)
{
    (void)state;
    src = malloc(MAX_LEN + 8);
    dst = malloc(MAX_LEN + 8 + 2 * GUARD);
    want = malloc(MAX_LEN + 8 + 2 * GUARD);
    if (src == NULL || dst == NULL || want == NULL)
        return -1;
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < MAX_LEN + 8; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        src[i] = (unsigned char)x;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tutti__csum_force(TUTTI_CSUM_VECTOR); /* back to the fastest */
    free(src);
    free(dst);
    free(want);
    return 0;
}

/* The table's sum of len bytes at p: the reference every one must give. */
static uint32_t table_sum(const unsigned char *p, size_t len)
{
    tutti__csum_impl_t was = tutti__csum_impl();
    tutti__csum_force(TUTTI_CSUM_TABLE);
    uint32_t sum = tutti__csum(p, len);
    tutti__csum_force(was);
    return sum;
}

/* Fills the destination with a pattern the copy must leave around it. */
static void fill_dst(void)
{
    for (size_t i = 0; i < MAX_LEN + 8 + 2 * GUARD; i++)
        dst[i] = (unsigned char)(0xa5 ^ i);
    memcpy(want, dst, MAX_LEN + 8 + 2 * GUARD);
}

static void check_copy(const char *impl, size_t len, size_t so, size_t dof,
                       uint32_t got, uint32_t ref)
{
    memcpy(want + GUARD + dof, src + so, len);
    if (got != ref)
        fail_msg("%s: %zu bytes, src +%zu, dst +%zu: sum 0x%08x, table "
                 "0x%08x",
                 impl, len, so, dof, got, ref);
    if (memcmp(dst, want, MAX_LEN + 8 + 2 * GUARD) != 0)
        fail_msg("%s: %zu bytes, src +%zu, dst +%zu: the bytes copied "
                 "differ",
                 impl, len, so, dof);
}

static void copy_whole(tutti__csum_impl_t impl, const char *name)
{
    if (tutti__csum_force(impl) != impl)
        skip(); /* this CPU lacks it: it is never used here */
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (size_t so = 0; so < 8; so++) {
            uint32_t ref = table_sum(src + so, lens[i]);
            assert_int_equal(tutti__csum(src + so, lens[i]), ref);
            for (size_t dof = 0; dof < 8; dof++) {
                fill_dst();
                tutti__csum_t s;
                tutti__csum_init(&s);
                tutti__csum_copy(&s, dst + GUARD + dof, src + so, lens[i]);
                check_copy(name, lens[i], so, dof, tutti__csum_final(&s), ref);
            }
        }
    }
}

/* Pieces of every size through the carry, copies and plain updates
 * alternating, as a receiver that copies some fragments and reduces
 * others. */
static void copy_pieces(tutti__csum_impl_t impl, const char *name)
{
    static const size_t steps[] = {1, 3, 8, 31, 32, 33, 100, 513, 4097};
    if (tutti__csum_force(impl) != impl)
        skip();
    uint32_t ref = table_sum(src + 3, MAX_LEN);
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        fill_dst();
        tutti__csum_t s;
        tutti__csum_init(&s);
        for (size_t off = 0, n = 0; off < MAX_LEN; off += n) {
            n = MAX_LEN - off < steps[k] ? MAX_LEN - off : steps[k];
            unsigned char *d = dst + GUARD + 5 + off;
            if ((off / steps[k]) % 3 == 2) {
                memcpy(d, src + 3 + off, n);
                tutti__csum_update(&s, d, n);
            } else {
                tutti__csum_copy(&s, d, src + 3 + off, n);
            }
        }
        check_copy(name, MAX_LEN, 3, 5, tutti__csum_final(&s), ref);
    }
}

static void test_whole_table(void **state)
{
    (void)state;
    copy_whole(TUTTI_CSUM_TABLE, "table");
}

static void test_whole_crc32(void **state)
{
    (void)state;
    copy_whole(TUTTI_CSUM_CRC32, "crc32");
}

static void test_whole_vector(void **state)
{
    (void)state;
    copy_whole(TUTTI_CSUM_VECTOR, "vector");
}

static void test_pieces_table(void **state)
{
    (void)state;
    copy_pieces(TUTTI_CSUM_TABLE, "table");
}

static void test_pieces_crc32(void **state)
{
    (void)state;
    copy_pieces(TUTTI_CSUM_CRC32, "crc32");
}

static void test_pieces_vector(void **state)
{
    (void)state;
    copy_pieces(TUTTI_CSUM_VECTOR, "vector");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_table),
        cmocka_unit_test(test_whole_crc32),
        cmocka_unit_test(test_whole_vector),
        cmocka_unit_test(test_pieces_table),
        cmocka_unit_test(test_pieces_crc32),
        cmocka_unit_test(test_pieces_vector),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
