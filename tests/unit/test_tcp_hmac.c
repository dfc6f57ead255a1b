/*
 * The tcp transport's cryptography as it uses it: HMAC-SHA256
 * (transports/tcp/tcp_hmac.h) against RFC 4231's test cases 1-4, 6 and
 * 7, and the frame tags (tcp_mac.c): both ends of a connection derive
 * the same session key and accept each other's frames in order, while a
 * frame altered by one bit, replayed, taken out of order, sent back to
 * its sender, or tagged under another handshake's key fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../transports/tcp/tcp_hmac.h"
#include "../../transports/tcp/tcp_mac.h"

static void hex(const unsigned char *d, char *out)
{
    for (int i = 0; i < TCP_SHA256_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
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

/* The tag of @p msg as the next frame of @p m. */
static void tag_of(tcp_mac_t *m, const char *msg, unsigned char t[TCP_TAG])
{
    tcp_mac_of(m, msg, strlen(msg), t);
}

/* Whether @p msg with tag @p t is the next frame @p m expects. */
static int accepts(tcp_mac_t *m, const char *msg, const unsigned char *t)
{
    tcp_mac_begin(m);
    tcp_mac_update(m, msg, strlen(msg));
    return tcp_mac_check(m, t);
}

static void test_frame_tags(void **state)
{
    tcp_cred_t cred = {.secret_len = 32, .job_id = "job"};
    tcp_hs_t hs;
    tcp_chal_t ch;
    tcp_proof_t pr;
    unsigned char k1[TCP_KEY], k2[TCP_KEY], t1[TCP_TAG], t2[TCP_TAG];
    tcp_mac_t o_out, o_in, a_out, a_in, x_out, x_in;
    (void)state;
    assert_int_equal(tcp_mac_lib_init(), 0);
    memset(cred.secret, 0x5c, sizeof(cred.secret));
    memset(&hs, 1, sizeof(hs));
    memset(&ch, 2, sizeof(ch));
    memset(&pr, 3, sizeof(pr));
    tcp_session_key(&hs, &ch, &pr, &cred, k1);
    tcp_session_key(&hs, &ch, &pr, &cred, k2);
    assert_memory_equal(k1, k2, TCP_KEY); /* both ends alike */
    tcp_mac_setup(&o_out, &o_in, k1, TCP_DIR_OPENER);
    tcp_mac_setup(&a_out, &a_in, k2, TCP_DIR_ACCEPTER);

    tag_of(&o_out, "frame 0", t1); /* in order: accepted */
    assert_true(accepts(&a_in, "frame 0", t1));
    tag_of(&o_out, "frame 1", t2);
    assert_false(accepts(&a_in, "frame 0", t1)); /* replayed */
    /* (A failed check fails the peer: each case below starts afresh.) */
    tcp_mac_setup(&a_out, &a_in, k2, TCP_DIR_ACCEPTER);
    tcp_mac_setup(&o_out, &o_in, k1, TCP_DIR_OPENER);
    tag_of(&o_out, "frame 0", t1);
    tag_of(&o_out, "frame 1", t2);
    assert_false(accepts(&a_in, "frame 1", t2)); /* out of order */
    tcp_mac_setup(&a_out, &a_in, k2, TCP_DIR_ACCEPTER);
    assert_false(accepts(&a_in, "frame 1", t1)); /* altered text */
    tcp_mac_setup(&a_out, &a_in, k2, TCP_DIR_ACCEPTER);
    t1[5] ^= 1;
    assert_false(accepts(&a_in, "frame 0", t1)); /* altered tag */
    t1[5] ^= 1;
    tcp_mac_setup(&a_out, &a_in, k2, TCP_DIR_ACCEPTER);
    assert_true(accepts(&a_in, "frame 0", t1));
    /* Reflected: the opener's own frame sent back to it. */
    tcp_mac_setup(&o_out, &o_in, k1, TCP_DIR_OPENER);
    assert_false(accepts(&o_in, "frame 0", t1));
    /* Another handshake (one nonce differs): another key. */
    ch.nonce[0] ^= 1;
    tcp_session_key(&hs, &ch, &pr, &cred, k2);
    assert_memory_not_equal(k1, k2, TCP_KEY);
    tcp_mac_setup(&x_out, &x_in, k2, TCP_DIR_ACCEPTER);
    assert_false(accepts(&x_in, "frame 0", t1));
    /* A different secret: another key. */
    ch.nonce[0] ^= 1;
    cred.secret[0] ^= 1;
    tcp_session_key(&hs, &ch, &pr, &cred, k2);
    assert_memory_not_equal(k1, k2, TCP_KEY);
    (void)x_out;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_tags),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_equal_ct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
