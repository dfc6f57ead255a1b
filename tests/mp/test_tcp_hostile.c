/*
 * A member that holds the job's secret and then sends what no member
 * sends (tests/mp/hostile_peer.c, task 1 of a job of 3 whose other tasks
 * run tutti-perf over tcp): a fragment that says its message is larger
 * than the receive it continues, the same against a message held aside,
 * a 1 TiB message ahead of its receive, a GROUP table of the wrong size
 * and a SUM_DONE from task 1, a registration whose host name has no end.
 * Each is refused with a line naming rank or task 1, the others end with
 * an error naming task 1 within the time limit, nothing dies of a signal
 * (under the sanitizers, an out-of-bounds write would).
 *
 * Then a stranger between two members (tests/mp/relay_connect.c sends
 * task 0's connections to task 1's control-plane port through a relay in
 * this process): passing the bytes on unchanged, the job runs through it
 * with exact results; flipping one byte of the first control frame after
 * the handshake, task 1 refuses that frame as failing its MAC, naming
 * task 0, and the job fails rather than act on it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcp_ep.h"
#include "test_perf.h"
#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"
#define HOSTILE TUTTI_TEST_BUILDDIR "/tests/mp/hostile_peer"
#define RELAY_SO TUTTI_TEST_BUILDDIR "/tests/mp/.libs/relay_connect.so"

static char out[1 << 18];

/* Runs the job with task 1 playing @p mode; the job must fail, not die
 * of a signal nor hang, and its output hold @p want and name task 1 in
 * the others' errors. */
static void hostile(const char *mode, const char *want)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "TUTTI_TRANSPORTS=tcp TUTTI_TIMEOUT=8 "
             "TUTTI_LOG_LEVEL=warn %s --timeout 60 -n 3 sh -c 'if [ "
             "\"$TUTTI_RANK\" = 1 ]; then exec %s %s; else exec %s -b 8 "
             "-e 8 -n 2 -w 0; fi'", RUN, HOSTILE, mode, PERF);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc == 0)
        fail_msg("%s: the job succeeded with a hostile task 1:\n%.6000s",
                 mode, out);
    if (rc >= 124)
        fail_msg("%s: the job hung or died of a signal (%d):\n%.6000s",
                 mode, rc, out);
    if (strstr(out, "ERROR: AddressSanitizer") != NULL ||
        strstr(out, "runtime error:") != NULL)
        fail_msg("%s: a sanitizer found an error:\n%.6000s", mode, out);
    if (strstr(out, want) == NULL)
        fail_msg("%s: no line with \"%s\":\n%.6000s", mode, want, out);
    if (strstr(out, "hostile_peer: sent") == NULL &&
        strcmp(mode, "host") != 0)
        fail_msg("%s: task 1 did not get to send:\n%.6000s", mode, out);
    if (strstr(out, "task 1") == NULL && strstr(out, "rank 1") == NULL)
        fail_msg("%s: no error names task 1:\n%.6000s", mode, out);
}

static void test_oversize_fragment_active(void **state)
{
    (void)state;
    hostile("active", "says its message has 1048576 bytes; it continues "
                      "a fragment of a message of 4096 bytes");
    assert_non_null(strstr(out, "peer rank 1 (task 1, "));
}

static void test_oversize_fragment_held_aside(void **state)
{
    (void)state;
    hostile("unexpected", "says its message has 1048576 bytes; it "
                          "continues a fragment of a message held aside "
                          "of 16 bytes");
}

static void test_huge_unexpected(void **state)
{
    (void)state;
    hostile("huge", "a message of 1099511627776 bytes came before its "
                    "receive");
    assert_non_null(strstr(out, "over tcp.unexpected (2147483648 bytes)"));
}

static void test_group_from_task_1(void **state)
{
    (void)state;
    hostile("group", "from task 1 dropped");
    assert_non_null(strstr(out, "GROUP"));
}

static void test_forged_sum(void **state)
{
    (void)state;
    hostile("sum", "from task 1 dropped");
    assert_non_null(strstr(out, "SUM_DONE"));
}

static void test_unterminated_host(void **state)
{
    (void)state;
    hostile("host", "registration of rank 1 of group 0xc0c0c0c0c0c0c0c0: "
                    "a host name without its end");
}

/* ---- a relay between task 0 and task 1 ------------------------------------ */

/* One relayed connection: task 0's end, task 1's, and where the bytes
 * from task 0 are: the handshake's opening and proof, then frames. */
typedef struct {
    int a, b;
    size_t at;               /* bytes from task 0 passed on */
    size_t frame_at;         /* where the current frame began */
    frame_t h;
} pair_t;

/* A connection to @p port on ::1, else 127.0.0.1; -1 if neither. */
static int connect_loopback(int port)
{
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    memset(&a6, 0, sizeof(a6));
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons((uint16_t)port);
    a6.sin6_addr = in6addr_loopback;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a4, 0, sizeof(a4));
    a4.sin_family = AF_INET;
    a4.sin_port = htons((uint16_t)port);
    a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a4, sizeof(a4)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Task 0's bytes @p buf[0..n) at stream offset p->at: flips byte 8 of the
 * body of the first frame with a body of 16 bytes or more, once. */
static void tamper(pair_t *p, unsigned char *buf, size_t n, int *flipped)
{
    const size_t hs = sizeof(tcp_hs_t) + sizeof(tcp_proof_t);
    for (size_t i = 0; i < n; i++, p->at++) {
        if (p->at < hs)
            continue;
        if (p->at == hs)
            p->frame_at = hs;
        size_t in = p->at - p->frame_at;
        if (in < sizeof(frame_t)) {
            ((unsigned char *)&p->h)[in] = buf[i];
            continue;
        }
        if (in == sizeof(frame_t) + 8 && p->h.frag_len >= 16 && !*flipped) {
            buf[i] ^= 0x01;
            *flipped = 1;
        }
        if (in + 1 == sizeof(frame_t) + p->h.frag_len)
            p->frame_at = p->at + 1;
    }
    if (p->at >= hs && p->at - p->frame_at == sizeof(frame_t) &&
        p->h.frag_len == 0)
        p->frame_at = p->at; /* a frame with no body ended */
}

/* The relay: takes connections on @p lfd, opens one to @p port for each
 * (and says so on @p note), passes bytes both ways (flipping one where
 * @p flip), until killed. */
static void relay(int lfd, int port, int flip, int note)
{
    pair_t pairs[16];
    int npairs = 0, flipped = 0;
    unsigned char buf[1 << 16];
    for (;;) {
        struct pollfd pf[1 + 2 * 16];
        pf[0] = (struct pollfd){lfd, POLLIN, 0};
        for (int i = 0; i < npairs; i++) {
            pf[1 + 2 * i] = (struct pollfd){pairs[i].a, POLLIN, 0};
            pf[2 + 2 * i] = (struct pollfd){pairs[i].b, POLLIN, 0};
        }
        if (poll(pf, (nfds_t)(1 + 2 * npairs), 1000) < 0)
            continue;
        if ((pf[0].revents & POLLIN) && npairs < 16) {
            int a = accept(lfd, NULL, NULL);
            int b = a >= 0 ? connect_loopback(port) : -1;
            if (b >= 0) {
                memset(&pairs[npairs], 0, sizeof(pairs[npairs]));
                pairs[npairs].a = a;
                pairs[npairs].b = b;
                npairs++;
                (void)!write(note, "+", 1);
            } else if (a >= 0) {
                close(a);
            }
        }
        for (int i = 0; i < npairs; i++) {
            for (int side = 0; side < 2; side++) {
                if (!(pf[1 + 2 * i + side].revents & (POLLIN | POLLHUP)))
                    continue;
                int from = side ? pairs[i].b : pairs[i].a;
                int to = side ? pairs[i].a : pairs[i].b;
                ssize_t n = read(from, buf, sizeof(buf));
                if (n <= 0) {
                    shutdown(to, SHUT_WR);
                    continue;
                }
                if (side == 0 && flip)
                    tamper(&pairs[i], buf, (size_t)n, &flipped);
                for (ssize_t w = 0; w < n;) {
                    ssize_t k = write(to, buf + w, (size_t)(n - w));
                    if (k <= 0)
                        break;
                    w += k;
                }
            }
        }
    }
}

/* The job with task 0's connections to task 1's control-plane port
 * (the first of task 1's port range) relayed; its exit status, its output
 * in out. */
static int relayed_job(int flip)
{
    struct sockaddr_in6 a;
    socklen_t al = sizeof(a);
    int base = 21000 + (int)(getpid() % 20000);
    int lfd = socket(AF_INET6, SOCK_STREAM, 0), off = 0;
    char cmd[1400];

    assert_true(lfd >= 0);
    setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    memset(&a, 0, sizeof(a));
    a.sin6_family = AF_INET6;
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 16), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    int note[2];
    assert_int_equal(pipe(note), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(note[0]);
        relay(lfd, base, flip, note[1]);
        _exit(0);
    }
    close(note[1]);
    close(lfd);
    snprintf(cmd, sizeof(cmd), "TUTTI_TRANSPORTS=tcp TUTTI_TIMEOUT=8 "
             "TUTTI_LOG_LEVEL=warn %s --timeout 60 -n 3 sh -c 'case "
             "$TUTTI_RANK in 0) export ASAN_OPTIONS=verify_asan_link_order=0 "
             "LD_PRELOAD=%s TUTTI_TEST_RELAY=%d:%d;; 1) export "
             "TUTTI_TCP_PORTS=%d-%d;; esac; exec %s -b 8 -e 64K -f 64 -n 2 "
             "-w 1'", RUN, RELAY_SO, base, ntohs(a.sin6_port), base,
             base + 20, PERF);
    int rc = test_run(cmd, 1, out, sizeof(out));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char seen[64];
    ssize_t relayed = read(note[0], seen, sizeof(seen));
    close(note[0]);
    if (relayed < 2) /* tcp.connections sockets, 2 by default */
        fail_msg("the relay carried %zd connection(s), expected 2:\n"
                 "%.6000s", relayed, out);
    if (rc >= 124)
        fail_msg("the relayed job hung or died of a signal (%d):\n%.6000s",
                 rc, out);
    return rc;
}

static void test_relay_passes(void **state)
{
    (void)state;
    int rc = relayed_job(0);
    if (rc != 0)
        fail_msg("the job failed through a relay that changes nothing "
                 "(%d):\n%.6000s", rc, out);
    assert_int_equal(test_perf_rows_exact(out), 3); /* 8, 512, 32K */
}

static void test_relay_altered_frame_refused(void **state)
{
    (void)state;
    int rc = relayed_job(1);
    if (rc == 0)
        fail_msg("the job succeeded with a control frame altered on the "
                 "way:\n%.6000s", out);
    if (strstr(out, "peer rank 0 (task 0, ") == NULL ||
        strstr(out, "failed its MAC: altered on the way") == NULL ||
        strstr(out, "instance 0xc7c7c7c7c7c7c7c7") == NULL)
        fail_msg("task 1 did not refuse task 0's altered control frame "
                 "by its MAC:\n%.6000s", out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oversize_fragment_active),
        cmocka_unit_test(test_oversize_fragment_held_aside),
        cmocka_unit_test(test_huge_unexpected),
        cmocka_unit_test(test_group_from_task_1),
        cmocka_unit_test(test_forged_sum),
        cmocka_unit_test(test_unterminated_host),
        cmocka_unit_test(test_relay_passes),
        cmocka_unit_test(test_relay_altered_frame_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
