/*
 * Data integrity (`verify: checksum`) through the real launcher, over shm
 * and over tcp: a byte flipped in flight by the test hook
 * (TUTTI_TEST_CORRUPT=R:N, after the sender's checksum) fails the
 * allreduce on the receiving rank with a line naming the sender, the key,
 * the chunk's bytes and both sums; without verify the same flip gives a
 * wrong sum silently (so it is the option that catches it); with verify
 * and no flip every result is exact.  Sizes cover chunks through the
 * slots or frames and, on shm, messages by single copy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/verify_worker"
#define INFO TUTTI_TEST_BUILDDIR "/tools/tutti-info"
/* 64 KiB (halves through the slots or frames), 1 MiB, 16 MiB */
#define COUNTS "16384 262144 4194304"
/* Byte 5000 of the first message rank 1 receives of more than 5000 bytes
 * (the control plane's frames, 4096 bytes, are never touched). */
#define CORRUPT "TUTTI_TEST_CORRUPT=1:5000 "

static int run(const char *tp, const char *env, const char *counts,
               char *out, size_t len)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "TUTTI_TRANSPORTS=%s TUTTI_TIMEOUT=30 %s%s "
             "--timeout 120 -n 2 %s %s", tp, env, RUN, WORKER, counts);
    return test_run(cmd, 1, out, len);
}

static void expect_exact(const char *tp, const char *env)
{
    char out[16384], want[64];
    int rc = run(tp, env, COUNTS, out, sizeof(out));
    if (rc != 0)
        fail_msg("%s: exit %d:\n%s", tp, rc, out);
    for (int r = 0; r < 2; r++) {
        snprintf(want, sizeof(want), "rank %d: exact: 4194304", r);
        if (strstr(out, want) == NULL)
            fail_msg("%s: no '%s' in:\n%s", tp, want, out);
    }
}

/* Verify on, a byte flipped: rank 1 fails naming rank 0, the chunk and
 * both sums. */
static void expect_caught(const char *tp, const char *counts)
{
    char out[16384];
    int rc = run(tp, CORRUPT "TUTTI_VERIFY=checksum ", counts, out,
                 sizeof(out));
    assert_int_not_equal(rc, 0);
    const char *line = strstr(out, "verify_worker: rank 1: failed: ");
    if (line == NULL)
        fail_msg("%s: rank 1 did not fail:\n%s", tp, out);
    const char *end = strchr(line, '\n');
    char text[2048];
    snprintf(text, sizeof(text), "%.*s",
             (int)(end ? (size_t)(end - line) : strlen(line)), line);
    static const char *const need[] = {
        "ERR_PEER", "rank 0", "failed its checksum", "instance 0x",
        "step ", "tag ", "bytes ", "sent 0x", "received 0x"};
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
        if (strstr(text, need[i]) == NULL)
            fail_msg("%s: no '%s' in rank 1's line:\n%s\nwhole output:\n%s",
                     tp, need[i], text, out);
    }
    /* The chunk's range holds the flipped byte: "bytes A-B of N". */
    unsigned long long a, b, n;
    const char *bytes = strstr(text, "bytes ");
    assert_int_equal(sscanf(bytes, "bytes %llu-%llu of %llu", &a, &b, &n), 3);
    if (!(a <= 5000 && 5000 <= b && b < n))
        fail_msg("%s: range %llu-%llu of %llu misses byte 5000:\n%s", tp, a,
                 b, n, text);
    assert_null(strstr(out, ": wrong: "));
}

/* Verify off, the same flip: the sum is wrong and nobody says why. */
static void expect_silent(const char *tp)
{
    char out[16384];
    int rc = run(tp, CORRUPT, "16384", out, sizeof(out));
    assert_int_not_equal(rc, 0);
    /* Rank 1 reduced the flipped byte into what both ranks end with;
     * whichever exits first, the launcher stops the other. */
    if (strstr(out, ": wrong: 16384: element 1250 ") == NULL)
        fail_msg("%s: the sum is not wrong without verify:\n%s", tp, out);
    assert_null(strstr(out, "checksum")); /* (a peer's exit may fail the
                                              other: not the point) */
}

static void test_shm_exact(void **state)
{
    (void)state;
    expect_exact("shm", "TUTTI_VERIFY=checksum ");
}

static void test_tcp_exact(void **state)
{
    (void)state;
    expect_exact("tcp", "TUTTI_VERIFY=checksum ");
}

static void test_shm_caught(void **state)
{
    (void)state;
    expect_caught("shm", "16384");
}

/* 4 MiB messages: by single copy where this host lets a process read
 * another's memory, else through the slots; caught either way. */
static void test_shm_caught_large(void **state)
{
    (void)state;
    expect_caught("shm", "1048576");
}

static void test_tcp_caught(void **state)
{
    (void)state;
    expect_caught("tcp", "16384");
}

static void test_shm_silent(void **state)
{
    (void)state;
    expect_silent("shm");
}

static void test_tcp_silent(void **state)
{
    (void)state;
    expect_silent("tcp");
}

/* Verify on, 32 small allreduces at once, both ways over tcp: several
 * frames (4 B to past the read-ahead buffer of 4 KiB) back to back on a
 * socket, some before their receive; every element exact. */
static void test_tcp_small_inflight_exact(void **state)
{
    static const char *const counts[] = {"1", "2", "31", "1000", "1011",
                                         "1024", "1100"};
    char out[16384], want[64];
    (void)state;
    int rc = run("tcp", "TUTTI_VERIFY=checksum ",
                 "--inflight 32 1 2 31 1000 1011 1024 1100", out,
                 sizeof(out));
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
            snprintf(want, sizeof(want), "rank %d: exact: %s\n", r,
                     counts[i]);
            if (strstr(out, want) == NULL)
                fail_msg("no '%s' in:\n%s", want, out);
        }
    }
}

/* The key from a config file, and tutti-info's listing of it. */
static void test_config_key(void **state)
{
    (void)state;
    /* The shipped file's rules, and the key. */
    char env[512], out[16384], yaml[65536];
    FILE *f = fopen(TUTTI_TEST_SRCDIR "/conf/tutti.yaml", "r");
    assert_non_null(f);
    size_t n = fread(yaml, 1, sizeof(yaml) - 32, f);
    fclose(f);
    yaml[n] = '\0';
    char *key = strstr(yaml, "\nverify: off\n"), *text = malloc(n + 32);
    assert_non_null(key);
    assert_non_null(text);
    snprintf(text, n + 32, "%.*s\nverify: checksum\n%s", (int)(key - yaml),
             yaml, key + strlen("\nverify: off\n"));
    test_tmp_t t;
    test_tmp_make(&t, "verify", "tutti.yaml", text);
    free(text);
    const char *path = t.path;
    snprintf(env, sizeof(env), CORRUPT "TUTTI_CONFIG=%s ", path);
    int rc = run("shm", env, "16384", out, sizeof(out));
    char cmd[512], info[16384];
    snprintf(cmd, sizeof(cmd), "TUTTI_CONFIG=%s %s --settings", path, INFO);
    int irc = test_run(cmd, 1, info, sizeof(info));
    test_rmtree(t.dir);
    assert_int_not_equal(rc, 0);
    if (strstr(out, "failed its checksum") == NULL)
        fail_msg("verify: checksum from the file did not check:\n%s", out);
    assert_int_equal(irc, 0);
    const char *row = strstr(info, "verify");
    if (row == NULL || strstr(row, "checksum") == NULL ||
        strstr(row, "TUTTI_VERIFY") == NULL)
        fail_msg("tutti-info --settings lacks verify's row:\n%s", info);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shm_exact),
        cmocka_unit_test(test_shm_caught),
        cmocka_unit_test(test_shm_caught_large),
        cmocka_unit_test(test_shm_silent),
        cmocka_unit_test(test_tcp_exact),
        cmocka_unit_test(test_tcp_caught),
        cmocka_unit_test(test_tcp_silent),
        cmocka_unit_test(test_tcp_small_inflight_exact),
        cmocka_unit_test(test_config_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
