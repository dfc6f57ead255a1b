/*
 * The tcp transport's SHA-256 and HMAC-SHA256 (transports/tcp/tcp_hmac.c)
 * against the standards' vectors: the FIPS 180-4 examples (and the
 * empty and million-'a' messages), RFC 4231's HMAC test cases 1-4, 6
 * and 7, and the hash fed in pieces of every size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../transports/tcp/tcp_hmac.h"

static void hex(const unsigned char *d, char *out)
{
    for (int i = 0; i < TCP_SHA256_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void expect_sha(const void *msg, size_t len, size_t piece,
                       const char *want)
{
    tcp_sha256_t s;
    unsigned char d[TCP_SHA256_LEN];
    char got[2 * TCP_SHA256_LEN + 1];
    tcp_sha256_init(&s);
    for (size_t off = 0; off < len; off += piece)
        tcp_sha256_update(&s, (const char *)msg + off,
                          len - off < piece ? len - off : piece);
    tcp_sha256_final(&s, d);
    hex(d, got);
    assert_string_equal(got, want);
}

static void test_sha256_fips(void **state)
{
    static const char two_blocks[] =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    static char million[1000000];
    (void)state;
    expect_sha("abc", 3, 3, "ba7816bf8f01cfea414140de5dae2223"
                            "b00361a396177a9cb410ff61f20015ad");
    expect_sha("", 0, 1, "e3b0c44298fc1c149afbf4c8996fb924"
                         "27ae41e4649b934ca495991b7852b855");
    for (size_t piece = 1; piece <= sizeof(two_blocks); piece++)
        expect_sha(two_blocks, sizeof(two_blocks) - 1, piece,
                   "248d6a61d20638b8e5c026930c3e6039"
                   "a33ce45964ff2167f6ecedd419db06c1");
    memset(million, 'a', sizeof(million));
    expect_sha(million, sizeof(million), 4096,
               "cdc76e5c9914fb9281a1c7e284d73e67"
               "f1809a48a497200e046d39ccc7112cd0");
}

static void expect_hmac(const void *key, size_t kl, const void *msg,
                        size_t ml, const char *want)
{
    tcp_hmac_t m;
    unsigned char d[TCP_SHA256_LEN];
    char got[2 * TCP_SHA256_LEN + 1];
    tcp_hmac_init(&m, key, kl);
    tcp_hmac_update(&m, msg, ml);
    tcp_hmac_final(&m, d);
    hex(d, got);
    assert_string_equal(got, want);
}

static void test_hmac_rfc4231(void **state)
{
    unsigned char k[131], dd[50];
    static const char t6[] =
        "Test Using Larger Than Block-Size Key - Hash Key First";
    static const char t7[] =
        "This is a test using a larger than block-size key and a larger "
        "than block-size data. The key needs to be hashed before being "
        "used by the HMAC algorithm.";
    (void)state;
    memset(k, 0x0b, 20);
    expect_hmac(k, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b"
                                      "881dc200c9833da726e9376c2e32cff7");
    expect_hmac("Jefe", 4, "what do ya want for nothing?", 28,
                "5bdcc146bf60754e6a042426089575c7"
                "5a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(dd, 0xdd, 50);
    expect_hmac(k, 20, dd, 50, "773ea91e36800e46854db8ebd09181a7"
                               "2959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (unsigned char)(i + 1);
    memset(dd, 0xcd, 50);
    expect_hmac(k, 25, dd, 50, "82558a389a443c0ea4cc819899f2083a"
                               "85f0faa3e578f8077a2e3ff46729665b");
    memset(k, 0xaa, 131);
    expect_hmac(k, 131, t6, sizeof(t6) - 1,
                "60e431591ee0b67f0d8a26aacbf5b77f"
                "8e0bc6213728c5140546040f0ee37f54");
    expect_hmac(k, 131, t7, sizeof(t7) - 1,
                "9b09ffa71b942fcb27635fbcd5b0e944"
                "bfdc63644f0713938a7f51535c3a35e2");
}

static void test_equal_ct(void **state)
{
    (void)state;
    assert_true(tcp_equal_ct("abcd", "abcd", 4));
    assert_false(tcp_equal_ct("abcd", "abce", 4));
    assert_false(tcp_equal_ct("xbcd", "abcd", 4));
    assert_true(tcp_equal_ct("", "", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_fips),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_equal_ct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
