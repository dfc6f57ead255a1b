/*
 * The ucx transport through the real launcher, on this host, over UCX's
 * tcp (UCX_TLS=tcp) and its shared memory (UCX_TLS=sm,self): the
 * correctness matrix (tests/mp/coll_worker) on 2 to 4 processes; which
 * transport served which peers (the debug lines: ucx for the data group,
 * tcp for the control plane, which ucx never carries); checksums on every
 * message (verify: checksum); verify: mac falling to tcp; a stranger
 * posing as a member (TUTTI_UCX_TEST_STRANGER, a test-only hook: its
 * message, under the key and length of a real one, must be dropped, and
 * the results stay exact); a member killed mid-allreduce, named by the
 * others within 5 s, nothing left running or in /dev/shm; an abort that
 * reaches every task; tutti-info's lines of what UCX finds; settings UCX
 * refuses, named, also where one member alone cannot start UCX (its peers
 * fail at once, naming it).  Stalls: tests/mp/test_stall.c; hosts apart:
 * tests/mp/test_netns.c; every collective and type exactly:
 * tests/mp/test_diffcheck.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define INFO TUTTI_TEST_BUILDDIR "/tools/tutti-info"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/coll_worker"
#define TCP "TUTTI_TRANSPORTS=ucx UCX_TLS=tcp TUTTI_TIMEOUT=60 "
#define SM "TUTTI_TRANSPORTS=ucx UCX_TLS=sm,self TUTTI_TIMEOUT=60 "

static char out[1 << 16];

/* Every rank's "N checks, 0 failures" line. */
static void expect_clean(const char *cmd, int n)
{
    for (int r = 0; r < n; r++) {
        char want[64];
        int checks = -1, failures = -1;
        snprintf(want, sizeof(want), "coll_worker: rank %d: ", r);
        const char *line = strstr(out, want);
        if (line == NULL || sscanf(line + strlen(want), "%d checks, %d "
                                   "failures", &checks, &failures) != 2 ||
            failures != 0 || checks < 100) {
            test_show(cmd, out);
            fail_msg("rank %d: %d checks, %d failures", r, checks, failures);
        }
    }
}

/* The matrix on @p n processes under @p env; with @p log, its debug
 * lines go there. */
static void matrix(const char *env, int n, const char *log)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s %s%s --timeout 300 -n %d %s%s%s", env,
             log ? "TUTTI_LOG_LEVEL=debug " : "", RUN, n, WORKER,
             log ? " 2>" : "", log ? log : "");
    int rc = test_run(cmd, 0, out, sizeof(out));
    if (rc != 0) {
        test_show(cmd, out);
        fail_msg("%s exited %d", cmd, rc);
    }
    expect_clean(cmd, n);
}

static void test_matrix_tcp_2(void **s) { (void)s; matrix(TCP, 2, NULL); }
static void test_matrix_tcp_3(void **s) { (void)s; matrix(TCP, 3, NULL); }
static void test_matrix_sm_3(void **s) { (void)s; matrix(SM, 3, NULL); }
static void test_matrix_sm_4(void **s) { (void)s; matrix(SM, 4, NULL); }

static void log_path(char *path, size_t len, const char *what)
{
    snprintf(path, len, "/tmp/tutti-ucx-%s-%ld.log", what, (long)getpid());
}

/* The data group's peers over ucx, the control plane's over tcp, and the
 * module's own line; where @p tls is sm, a path without peer error
 * handling is said. */
static void test_who_serves(void **s)
{
    char log[96];
    (void)s;
    log_path(log, sizeof(log), "serves");
    matrix(TCP, 3, log);
    for (int r = 0; r < 3; r++) {
        char want[128];
        /* The matrix's first group: key 42 * 4096. */
        snprintf(want, sizeof(want), "group 0x2a000 rank %d: ucx to 2 "
                 "peer(s)", r);
        test_expect_in_file(log, want);
        snprintf(want, sizeof(want), "rank %d of group 0x2a000: joined "
                 "with 2 peer(s) over UCX 1.", r);
        test_expect_in_file(log, want);
    }
    test_expect_in_file(log, "tcp to 2 peer(s)");
    unlink(log);
}

static void test_verify_checksum(void **s)
{
    (void)s;
    matrix(TCP "TUTTI_VERIFY=checksum", 3, NULL);
    matrix(SM "TUTTI_VERIFY=checksum", 3, NULL);
}

/* verify: mac is not ucx's to carry: with ucx,tcp listed, tcp serves. */
static void test_verify_mac_falls_to_tcp(void **s)
{
    char log[96], want[96];
    (void)s;
    log_path(log, sizeof(log), "mac");
    matrix("TUTTI_TRANSPORTS=ucx,tcp TUTTI_VERIFY=mac TUTTI_TIMEOUT=60", 2,
           log);
    snprintf(want, sizeof(want), "group 0x2a000 rank 0: tcp to 1 peer(s)");
    test_expect_in_file(log, want);
    assert_int_equal(test_file_has(log, "ucx to 1 peer(s)"), 0);
    unlink(log);
}

/* Rank 1 of every group sends each peer a stranger's message ahead of
 * its first real one, same key and length, other bytes, a token not its
 * own: every peer drops it, and every check still passes. */
static void stranger(const char *env)
{
    char log[96], cmd[256];
    log_path(log, sizeof(log), "stranger");
    snprintf(cmd, sizeof(cmd), "%s TUTTI_UCX_TEST_STRANGER=1", env);
    matrix(cmd, 3, log);
    test_expect_in_file(log, "a message claiming rank 1 dropped: its token "
                             "is not the one that rank traded through the "
                             "control plane");
    unlink(log);
}

static void test_stranger_tcp(void **s) { (void)s; stranger(TCP); }
static void test_stranger_sm(void **s) { (void)s; stranger(SM); }

/* Whether @p text is on the line that starts at @p line. */
static int named_in_line(const char *line, const char *text)
{
    const char *at = strstr(line, text), *eol = strchr(line, '\n');
    return at != NULL && (eol == NULL || at < eol);
}

/* kill -9 of task 1 in a 16 MiB allreduce: tasks 0 and 2 fail within 5 s
 * with TUTTI_ERR_PEER naming rank 1 (the core's health check: "task 1
 * (rank 1) is gone"; or UCX's error on the connection, on a send or a
 * fetch from it, whichever comes first), nothing of the
 * job runs on or stays in /dev/shm (its names, UCX's) or as a SysV
 * segment. */
/* SysV shared memory segments of this machine (UCX's sysv transport makes
 * them; they must go with their processes, killed or not). */
static int sysv_segments(void)
{
    char list[1 << 14];
    test_run("ipcs -m | grep -c '^0x'", 0, list, sizeof(list));
    return atoi(list);
}

static void victim(const char *env)
{
    char cmd[512], job[64], prefix[80];
    int segs = sysv_segments();
    snprintf(job, sizeof(job), "ucxvictim-%ld", (long)getpid());
    snprintf(cmd, sizeof(cmd), "%s %s --grace 10 --timeout 60 --job-id %s "
             "-n 3 %s --victim", env, RUN, job, WORKER);
    int rc = test_run(cmd, 0, out, sizeof(out));
    if (rc != 128 + 9) {
        test_show(cmd, out);
        fail_msg("expected the launcher to end by task 1's SIGKILL (137), "
                 "got %d", rc);
    }
    for (int t = 0; t < 3; t += 2) {
        char want[96];
        double secs = 99;
        snprintf(want, sizeof(want), "coll_worker: task %d: failed after ",
                 t);
        const char *line = strstr(out, want);
        if (line == NULL ||
            sscanf(line + strlen(want), "%lf", &secs) != 1 || secs >= 5 ||
            !named_in_line(line, "ERR_PEER") ||
            (!named_in_line(line, "rank 1 ") &&
             !named_in_line(line, "rank 1)"))) {
            test_show(cmd, out);
            fail_msg("task %d: no 'failed after N s: ERR_PEER' under 5 s "
                     "naming rank 1", t);
        }
    }
    snprintf(prefix, sizeof(prefix), "tutti-%s-", job);
    assert_int_equal(test_shm_names_with(prefix), 0);
    assert_int_equal(test_shm_names_with("ucx"), 0);
    assert_int_equal(sysv_segments(), segs);
    snprintf(cmd, sizeof(cmd), "pgrep -f 'coll_worke[r] --victim' >/dev/null");
    assert_int_not_equal(system(cmd), 0);
}

static void test_killed_tcp(void **s) { (void)s; victim(TCP); }
static void test_killed_sm(void **s) { (void)s; victim(SM); }

/* Task 0 aborts while the others wait in an allreduce over ucx; then a
 * new context works.  (The control plane on shm here: ucx,shm gives the
 * data group to ucx and the plane, which ucx never carries, to shm.) */
static void test_abort(void **s)
{
    char cmd[512];
    (void)s;
    snprintf(cmd, sizeof(cmd), "TUTTI_TRANSPORTS=ucx,shm UCX_TLS=tcp "
             "TUTTI_TIMEOUT=60 %s --timeout 60 -n 3 %s --abort", RUN,
             WORKER);
    test_run_ok(cmd, 0, out, sizeof(out));
    for (int t = 0; t < 3; t++) {
        char want[96];
        snprintf(want, sizeof(want), "coll_worker: task %d: aborted: ", t);
        assert_non_null(strstr(out, want));
        snprintf(want, sizeof(want), "coll_worker: task %d: new context ok",
                 t);
        assert_non_null(strstr(out, want));
    }
}

/* tutti-info: the module, UCX's version, and what it found here (tcp on
 * the loopback device at least, with UCX_TLS unset). */
static void test_info(void **s)
{
    (void)s;
    test_run_ok("env -u UCX_TLS -u UCX_NET_DEVICES " INFO, 0, out,
                sizeof(out));
    if (strstr(out, "  ucx      module ucx ") == NULL ||
        strstr(out, "UCX 1.") == NULL ||
        strstr(out, "transports/devices: ") == NULL ||
        strstr(out, "tcp/lo") == NULL) {
        test_show(INFO, out);
        fail_msg("tutti-info: no ucx line with UCX's version and tcp/lo");
    }
}

/* A device UCX does not have: the error names the setting. */
static void test_bad_devices(void **s)
{
    char cmd[512];
    (void)s;
    snprintf(cmd, sizeof(cmd), TCP "TUTTI_UCX_DEVICES=nosuch0 %s --timeout "
             "60 -n 2 %s", RUN, WORKER);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc == 0 || strstr(out, "ucx") == NULL ||
        (strstr(out, "UCX_NET_DEVICES") == NULL &&
         strstr(out, "ucx.devices") == NULL)) {
        test_show(cmd, out);
        fail_msg("expected a failure naming ucx.devices or UCX_NET_DEVICES");
    }
}

/* Rank 1 alone names a device UCX does not have: it fails saying so,
 * and its peers fail at once naming it, not at the group's timeout. */
static void test_peer_cannot_start(void **s)
{
    char cmd[768];
    (void)s;
    snprintf(cmd, sizeof(cmd), TCP "%s --timeout 60 -n 3 sh -c 'if [ "
             "\"$TUTTI_RANK\" = 1 ]; then export TUTTI_UCX_DEVICES=nosuch0; "
             "fi; exec timeout 20 %s'", RUN, WORKER);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = test_run(cmd, 1, out, sizeof(out));
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (double)(b.tv_sec - a.tv_sec) +
                  (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    if (rc == 0 || secs > 10 ||
        strstr(out, "rank 0: rank 1 could not start UCX") == NULL ||
        strstr(out, "rank 2: rank 1 could not start UCX") == NULL ||
        strstr(out, "UCX cannot start") == NULL) {
        test_show(cmd, out);
        fail_msg("expected rank 1 to fail naming UCX and ranks 0 and 2 to "
                 "fail naming rank 1, within 10 s (took %.1f s)", secs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix_tcp_2),
        cmocka_unit_test(test_matrix_tcp_3),
        cmocka_unit_test(test_matrix_sm_3),
        cmocka_unit_test(test_matrix_sm_4),
        cmocka_unit_test(test_who_serves),
        cmocka_unit_test(test_verify_checksum),
        cmocka_unit_test(test_verify_mac_falls_to_tcp),
        cmocka_unit_test(test_stranger_tcp),
        cmocka_unit_test(test_stranger_sm),
        cmocka_unit_test(test_killed_tcp),
        cmocka_unit_test(test_killed_sm),
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_bad_devices),
        cmocka_unit_test(test_peer_cannot_start),
    };
    return cmocka_run_group_tests_name("ucx", tests, NULL, NULL);
}
