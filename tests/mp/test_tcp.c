/*
 * The tcp transport through the real launcher, on this host: the
 * correctness matrix on 2, 3 and 4 processes, tutti-perf's checks,
 * strangers knocking on every port a job listens on, a garbled frame
 * from a joined peer (TUTTI_TCP_TEST_GARBLE, a test-only hook), and the
 * settings reaching the module (tcp.family, tcp.ports and tcp.connections,
 * from the debug lines of each endpoint: "listening on ADDRESS", "joined
 * with P peer(s) by N socket(s)"); the rendezvous against another local
 * user (uid 65534 pre-creating its directory and files), a fake
 * rendezvous that captures a rank's handshake (no secret in it), and a
 * SIGKILLed tutti-run (its rendezvous file removed).
 */
#define _GNU_SOURCE /* memmem, setresuid */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_perf.h"
#include "test_util.h"
#include "../../transports/tcp/tcp_int.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/coll_worker"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"
#define ENV "TUTTI_TRANSPORTS=tcp TUTTI_TIMEOUT=60 "

static void expect_clean(const char *out, int n)
{
    for (int r = 0; r < n; r++) {
        char want[64];
        int checks = -1, failures = -1;
        snprintf(want, sizeof(want), "coll_worker: rank %d: ", r);
        const char *line = strstr(out, want);
        if (line == NULL)
            fail_msg("no line for rank %d in:\n%s", r, out);
        assert_int_equal(sscanf(line + strlen(want), "%d checks, %d failures",
                                &checks, &failures), 2);
        if (failures != 0 || checks < 2)
            fail_msg("rank %d: %d checks, %d failures:\n%s", r, checks,
                     failures, out);
    }
}

static void matrix_on(int n)
{
    char cmd[512], out[16384];
    snprintf(cmd, sizeof(cmd), ENV "%s --timeout 300 -n %d %s", RUN, n,
             WORKER);
    test_run_ok(cmd, 0, out, sizeof(out));
    expect_clean(out, n);
}

static void test_matrix_2(void **state) { (void)state; matrix_on(2); }
static void test_matrix_3(void **state) { (void)state; matrix_on(3); }
static void test_matrix_4(void **state) { (void)state; matrix_on(4); }

/* Groups over tcp share the process's progress engine: joining 6 groups
 * adds no thread (one per endpoint, before, added 6), and every group's
 * sums are exact. */
static void test_groups_share_engine(void **state)
{
    char out[8192];
    (void)state;
    int rc = test_run(ENV RUN " --timeout 120 -n 2 " TUTTI_TEST_BUILDDIR
                      "/tests/mp/groups_worker 6", 1, out, sizeof(out));
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    for (int r = 0; r < 2; r++) {
        char want[64];
        int before, with;
        snprintf(want, sizeof(want), "groups_worker: rank %d: threads ", r);
        const char *line = strstr(out, want);
        if (line == NULL ||
            sscanf(line + strlen(want), "%d before, %d with", &before,
                   &with) != 2)
            fail_msg("no thread count of rank %d in:\n%s", r, out);
        if (with != before)
            fail_msg("rank %d: %d threads before its 6 groups, %d with "
                     "them:\n%s", r, before, with, out);
    }
}

/* allreduce float32 sum and int64 max over 0 .. 1 Mi + 3 elements. */
static void test_perf(void **state)
{
    static const char *const args[] = {
        "-b 0 -e 8M -f 64 -n 3 -w 1 -d float32",
        "-b 4 -e 4M -f 16 -n 3 -w 1 -d int64 -o max",
        "-c broadcast -b 8 -e 4M -f 64 -n 2 -w 1 -d float32 -r 1",
        "-c allgather -b 8 -e 1M -f 64 -n 2 -w 1 -d int64",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
        char cmd[512], out[16384];
        snprintf(cmd, sizeof(cmd), ENV "%s -n 3 %s %s", RUN, PERF, args[i]);
        test_run_ok(cmd, 0, out, sizeof(out));
        if (test_perf_rows_exact(out) < 2)
            fail_msg("%s: too few rows:\n%s", cmd, out);
    }
}

/* ---- strangers ------------------------------------------------------------- */

static int connect_port(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Sends one kind of bad opening to @p port; the silent ones are returned
 * open in @p silent. */
static void knock(int port, const char *job, int *silent, int *nsilent)
{
    tcp_hs_t hs;
    unsigned char junk[sizeof(tcp_hs_t)];
    int fd;

    memset(&hs, 0, sizeof(hs));
    hs.magic = TCP_MAGIC;
    hs.version = TCP_VERSION;
    hs.kind = TCP_KIND_DATA;
    snprintf(hs.job_id, sizeof(hs.job_id), "%s", job);
    memset(hs.nonce, 0x5a, sizeof(hs.nonce));
    if ((fd = connect_port(port)) >= 0) { /* the right job, no secret */
        tcp_chal_t ch;
        tcp_proof_t guess;
        struct timeval tv = {2, 0};
        memset(&guess, 0xa5, sizeof(guess));
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        send(fd, &hs, sizeof(hs), MSG_NOSIGNAL);
        if (recv(fd, &ch, sizeof(ch), MSG_WAITALL) == (ssize_t)sizeof(ch))
            send(fd, &guess, sizeof(guess), MSG_NOSIGNAL);
        close(fd);
    }
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(rand() & 0xff);
    if ((fd = connect_port(port)) >= 0) { /* random bytes */
        send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
        close(fd);
    }
    if ((fd = connect_port(port)) >= 0) { /* truncated handshake */
        send(fd, &hs, sizeof(hs) / 2, MSG_NOSIGNAL);
        close(fd);
    }
    if ((fd = connect_port(port)) >= 0) /* silent */
        silent[(*nsilent)++] = fd;
}

static void test_strangers_refused(void **state)
{
    char cmd[768], log[128], job[64], out[16384];
    int base = 20000 + (int)(getpid() % 20000), silent[64], nsilent = 0;
    int ports = 0;
    FILE *p;
    (void)state;

    snprintf(job, sizeof(job), "tcpstr%ld", (long)getpid());
    snprintf(log, sizeof(log), "/tmp/tutti-test-tcp-%ld.log", (long)getpid());
    snprintf(cmd, sizeof(cmd), ENV "TUTTI_LOG_LEVEL=warn TUTTI_TCP_PORTS=%d-%d "
             "%s --job-id %s -n 3 "
             "%s -b 256K -e 256K -n 25000 -w 1 -d float32 >%s.out 2>%s",
             base, base + 30, RUN, job, PERF, log, log);
    p = popen(cmd, "r");
    assert_non_null(p);
    sleep(1);
    srand((unsigned)getpid());
    for (int port = base; port <= base + 30; port++) {
        int fd = connect_port(port);
        if (fd < 0)
            continue;
        close(fd);
        ports++;
        knock(port, job, silent, &nsilent);
    }
    /* The silent ones are closed after the handshake deadline. */
    sleep((unsigned)TCP_HS_TIMEOUT + 2);
    for (int i = 0; i < nsilent; i++) {
        char c;
        struct timeval tv = {1, 0};
        setsockopt(silent[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        assert_int_equal(recv(silent[i], &c, 1, 0), 0);
        close(silent[i]);
    }
    int rc = pclose(p);
    snprintf(cmd, sizeof(cmd), "%s.out", log);
    FILE *f = fopen(cmd, "r");
    size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    unlink(cmd);
    if (ports < 4) /* rendezvous + a listener per member (control plane and
                      group), at least */
        fail_msg("only %d listening ports found in %d-%d; job output:\n%s",
                 ports, base, base + 30, out);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        fail_msg("the job failed (%d):\n%s", rc, out);
    assert_true(test_perf_rows_exact(out) >= 1); /* -1: wrong rows */
    assert_true(test_file_has(log, "refused connection from 127.0.0.1:"));
    assert_true(test_file_has(log, "secret mismatch"));
    assert_true(test_file_has(log, "bad magic"));
    assert_true(test_file_has(log, "closed after"));
    assert_true(test_file_has(log, "no handshake within the deadline"));
    unlink(log);
}

/* ---- a garbled frame ------------------------------------------------------------ */

/* The matrix's selection pass for allreduce on 2 tasks over tcp, rank 1
 * sending frames spoilt as TUTTI_TCP_TEST_GARBLE=@p garble says (stderr
 * joined into @p out); nothing may die of a signal.  Its exit status. */
static int garbled_run(const char *garble, char *cmd, size_t cmd_len,
                       char *out, size_t len)
{
    snprintf(cmd, cmd_len, "TUTTI_TCP_TEST_GARBLE=%s TUTTI_TRANSPORTS=tcp "
             "TUTTI_TIMEOUT=20 %s --timeout 120 -n 2 %s --selection-only "
             "allreduce", garble, RUN, WORKER);
    int rc = test_run(cmd, 1, out, len);
    if (rc >= 128)
        fail_msg("%s died of a signal (%d):\n%s", cmd, rc, out);
    return rc;
}

static void test_garbled_frame_fails_peer(void **state)
{
    char cmd[512], out[16384];
    (void)state;
    garbled_run("1", cmd, sizeof(cmd), out, sizeof(out));
    if (strstr(out, "peer rank 1") == NULL ||
        strstr(out, "garbled frame") == NULL)
        fail_msg("no error naming rank 1's garbled frame:\n%s", out);
}

/* Rank 1's 3rd frame claims a message over the 1 TiB limit: rank 0
 * refuses it before reading on, and its executions fail naming rank 1. */
static void test_oversized_frame_fails_peer(void **state)
{
    static char out[1 << 18];
    char cmd[512];
    (void)state;
    if (garbled_run("1:oversize", cmd, sizeof(cmd), out, sizeof(out)) == 0)
        fail_msg("%s succeeded although rank 1 sent an oversized frame:\n%s",
                 cmd, out);
    if (strstr(out, "peer rank 1") == NULL ||
        strstr(out, "message length over 1 TiB") == NULL)
        fail_msg("no error naming rank 1's oversized frame:\n%.4000s", out);
}

/* Rank 1 sends a frame's header and closes before its body: rank 0's
 * executions fail naming rank 1 and the truncation, nothing crashes. */
static void test_truncated_frame_fails_peer(void **state)
{
    static char out[1 << 18]; /* every failing execution says why */
    char cmd[512];
    (void)state;
    if (garbled_run("1:truncate", cmd, sizeof(cmd), out, sizeof(out)) == 0)
        fail_msg("%s succeeded although rank 1 cut a frame:\n%s", cmd, out);
    if (strstr(out, "peer rank 1") == NULL ||
        strstr(out, "in the middle of a frame (truncated)") == NULL)
        fail_msg("no error naming rank 1's truncated frame:\n%s", out);
}

/* Runs tutti-perf over tcp with @p settings; every line of the debug log
 * that holds @p mark must satisfy @p ok, handed what follows the mark;
 * results exact.  Returns the lines. */
static int debug_lines(const char *settings, const char *mark,
                       int (*ok)(const char *rest, void *arg), void *arg)
{
    char cmd[768], out[16384], log[96], line[512];
    snprintf(log, sizeof(log), "/tmp/tutti-tcp-listen-%ld.log",
             (long)getpid());
    snprintf(cmd, sizeof(cmd), "%s TUTTI_TRANSPORTS=tcp TUTTI_LOG_LEVEL=debug "
             "%s --timeout 120 -n 2 %s -b 8 -e 1M -f 64 -n 2 -w 1 2>%s",
             settings, RUN, PERF, log);
    test_run_ok(cmd, 0, out, sizeof(out));
    if (strstr(out, "  0  R") == NULL || strstr(out, "  1  R") != NULL)
        fail_msg("wrong results over tcp with %s:\n%s", settings, out);
    FILE *f = fopen(log, "r");
    int n = 0;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *at = strstr(line, mark);
        if (at == NULL)
            continue;
        n++;
        if (!ok(at + strlen(mark), arg))
            fail_msg("%s: %s", settings, line);
    }
    fclose(f);
    unlink(log);
    return n;
}

/* debug_lines() of the "listening on" lines, @p ok handed the address. */
static int listen_lines(const char *settings,
                        int (*ok)(const char *addr, void *arg), void *arg)
{
    return debug_lines(settings, ": listening on ", ok, arg);
}

static int ipv4_in_range(const char *addr, void *arg)
{
    const int *range = arg;
    const char *colon = strrchr(addr, ':');
    int port = colon ? atoi(colon + 1) : -1;
    return addr[0] != '[' && port >= range[0] && port <= range[1];
}

static int ipv6_only(const char *addr, void *arg)
{
    (void)arg;
    return addr[0] == '[';
}

static int any_addr(const char *addr, void *arg)
{
    (void)arg;
    return addr[0] != '\0';
}

/* TUTTI_RENDEZVOUS_FILE: task 0 writes its rendezvous address there (as on
 * a filesystem every host sees) and the others read it; results exact. */
static void test_rendezvous_file(void **state)
{
    char settings[160], path[96];
    FILE *f;
    (void)state;
    snprintf(path, sizeof(path), "/tmp/tutti-tcp-rdv-%ld", (long)getpid());
    unlink(path);
    snprintf(settings, sizeof(settings), "TUTTI_RENDEZVOUS_FILE=%s", path);
    assert_true(listen_lines(settings, any_addr, NULL) >= 4);
    f = fopen(path, "r");
    if (f == NULL)
        fail_msg("task 0 wrote no rendezvous file at %s", path);
    char line[128] = "";
    if (fgets(line, sizeof(line), f) == NULL || strchr(line, ' ') == NULL)
        fail_msg("rendezvous file %s holds '%s': expected 'address port'",
                 path, line);
    fclose(f);
    unlink(path);
}

/* tcp.family and tcp.ports decide where members listen. */
static void test_family_and_ports(void **state)
{
    char settings[128];
    int range[2] = {40000 + (int)(getpid() % 20000), 0};
    (void)state;
    range[1] = range[0] + 40;
    snprintf(settings, sizeof(settings), "TUTTI_TCP_FAMILY=ipv4 "
             "TUTTI_TCP_PORTS=%d-%d", range[0], range[1]);
    assert_true(listen_lines(settings, ipv4_in_range, range) >= 4);
    if (access("/proc/net/if_inet6", R_OK) == 0)
        assert_true(listen_lines("TUTTI_TCP_FAMILY=ipv6", ipv6_only, NULL) >=
                    4);
    else
        print_message("no IPv6 on this host: ipv6 part not run\n");
}

/* "P peer(s) by N socket(s)": N is *arg sockets to each of P >= 1. */
static int sockets_per_peer(const char *rest, void *arg)
{
    unsigned sockets = 0;
    int peers = 0;
    return sscanf(rest, "%d peer(s) by %u socket(s)", &peers, &sockets) ==
               2 &&
           peers >= 1 && sockets == *(const unsigned *)arg * (unsigned)peers;
}

/* tcp.connections reaches the module: with TUTTI_TCP_CONNECTIONS=3 every
 * endpoint, the control plane's and the data group's of each rank, joins 3
 * sockets to each peer (the default is 2); results exact. */
static void test_connections(void **state)
{
    unsigned three = 3;
    (void)state;
    assert_int_equal(debug_lines("TUTTI_TCP_CONNECTIONS=3", ": joined with ",
                                 sockets_per_peer, &three),
                     4);
}

/* The launcher says each task is alone on its host (local size 1): the
 * control plane takes tcp, as it would across hosts, while the data group,
 * whose members the resolver found on one host, takes shm; results exact. */
static void test_control_plane_across_hosts(void **state)
{
    char cmd[768], out[16384], log[96];
    (void)state;
    snprintf(log, sizeof(log), "/tmp/tutti-tcp-split-%ld.log", (long)getpid());
    snprintf(cmd, sizeof(cmd), "TUTTI_TRANSPORTS=shm,tcp TUTTI_LOG_LEVEL=debug "
             "%s --timeout 120 -n 2 sh -c 'TUTTI_LOCAL_SIZE=1 "
             "TUTTI_LOCAL_RANK=0 exec %s -b 8 -e 4M -f 64 -n 2 -w 1' 2>%s",
             RUN, PERF, log);
    test_run_ok(cmd, 0, out, sizeof(out));
    /* Rows: size count type redop root time algbw busbw #wrong impl coll. */
    int rows = 0;
    for (char *l = out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
        nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        long long size, wrong;
        if (l[0] == '#' || sscanf(l, "%lld %*s %*s %*s %*s %*s %*s %*s %lld",
                                  &size, &wrong) != 2)
            continue;
        rows++;
        if (wrong != 0)
            fail_msg("%lld bytes: %lld wrong", size, wrong);
    }
    assert_int_equal(rows, 4); /* 8, 512, 32K, 2M: -e 4M -f 64 */
    for (int r = 0; r < 2; r++) {
        char want[128];
        snprintf(want, sizeof(want), "group 0xc0c0c0c0c0c0c0c0 rank %d: tcp "
                 "to 1 peer(s)", r);
        test_expect_in_file(log, want);
        snprintf(want, sizeof(want), "rank %d: shm to 1 peer(s)", r);
        test_expect_in_file(log, want);
    }
    unlink(log);
}

/* ---- the rendezvous against other users ------------------------------------ */

#define NOBODY 65534

/* A loopback listener that takes connections and never answers: a fake
 * rendezvous.  Its port in *port. */
static int fake_listener(int *port)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 64), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Connections waiting on @p lfd (each closed). */
static int count_knocks(int lfd)
{
    int n = 0, fd;
    while ((fd = accept(lfd, NULL, NULL)) >= 0) {
        close(fd);
        n++;
    }
    return n;
}

/* As uid/gid 65534 in a child: makes each directory of @p dirs (mode
 * @p mode) and writes @p text to each file of @p files; its exit status. */
static int as_nobody(const char *const *dirs, int ndirs, mode_t mode,
                     const char *const *files, int nfiles, const char *text)
{
    int st;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        umask(0);
        if (setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
            setresuid(NOBODY, NOBODY, NOBODY) != 0)
            _exit(3);
        for (int i = 0; i < ndirs; i++)
            if (mkdir(dirs[i], mode) != 0)
                _exit(4);
        for (int i = 0; i < nfiles; i++) {
            int fd = open(files[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || write(fd, text, strlen(text)) < 0 || close(fd))
                _exit(5);
        }
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A directory others may write to, as /tmp is (mode 1777). */
static void sticky_tmpdir(char *dir, size_t len, const char *stem)
{
    assert_int_equal(test_tmpdir(dir, len, stem), 0);
    assert_int_equal(chmod(dir, 01777), 0);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Another local user (65534) got there first.  (1) It owns the directory
 * the job would use (TMPDIR/tutti-0, mode 0777) and files pointing at a
 * listener of its own (there and the old fixed name /tmp/tutti-rdv-JOB):
 * the job fails at once naming the directory and its owner, and nothing
 * connects to that listener.  (2) It owns XDG_RUNTIME_DIR with a file in
 * XDG_RUNTIME_DIR/tutti: the job ignores it (not this user's), runs in
 * its own directory, succeeds, and leaves that user's file as it was. */
static void test_other_user_first(void **state)
{
    char tmp[64], xdgparent[64], dir[128], xdg[160], xdgt[192], file[320];
    char xfile[320], old[128], text[64], job[64], cmd[1024], out[16384];
    char back[64] = "";
    int port, lfd = fake_listener(&port), rc;
    double t0;
    (void)state;
    if (geteuid() != 0) {
        print_message("not root: cannot play another user; skipped\n");
        close(lfd);
        return;
    }
    snprintf(job, sizeof(job), "tcpother%ld", (long)getpid());
    snprintf(text, sizeof(text), "127.0.0.1 %d\n", port);
    sticky_tmpdir(tmp, sizeof(tmp), "tcpother");
    snprintf(dir, sizeof(dir), "%s/tutti-0", tmp);
    snprintf(file, sizeof(file), "%s/rdv-%s", dir, job);
    snprintf(old, sizeof(old), "/tmp/tutti-rdv-%s", job);
    const char *dirs1[] = {dir};
    const char *files1[] = {file, old};
    assert_int_equal(as_nobody(dirs1, 1, 0777, files1, 2, text), 0);

    t0 = mono_now();
    snprintf(cmd, sizeof(cmd), "env -u XDG_RUNTIME_DIR TMPDIR=%s "
             "TUTTI_TRANSPORTS=tcp TUTTI_TIMEOUT=30 %s --timeout 120 "
             "--job-id %s -n 2 %s --selection-only allreduce", tmp, RUN, job,
             WORKER);
    rc = test_run(cmd, 1, out, sizeof(out));
    double took = mono_now() - t0;
    int knocks = count_knocks(lfd);
    unlink(old);
    unlink(file);
    rmdir(dir);
    if (rc == 0 || took > 10.0 || strstr(out, dir) == NULL ||
        strstr(out, "uid 65534") == NULL || knocks != 0)
        fail_msg("with %s owned by uid 65534: expected a failure within "
                 "10 s naming it and its owner, and no connection to that "
                 "user's listener; got status %d after %.1f s, %d "
                 "connection(s):\n%s", dir, rc, took, knocks, out);

    /* (2) XDG_RUNTIME_DIR of another user. */
    sticky_tmpdir(xdgparent, sizeof(xdgparent), "tcpxdg");
    snprintf(xdg, sizeof(xdg), "%s/run", xdgparent);
    snprintf(xdgt, sizeof(xdgt), "%s/tutti", xdg);
    snprintf(xfile, sizeof(xfile), "%s/rdv-%s", xdgt, job);
    const char *dirs2[] = {xdg, xdgt};
    const char *files2[] = {xfile, old};
    assert_int_equal(as_nobody(dirs2, 2, 0700, files2, 2, text), 0);
    snprintf(cmd, sizeof(cmd), "XDG_RUNTIME_DIR=%s TMPDIR=%s "
             "TUTTI_TRANSPORTS=tcp TUTTI_TIMEOUT=30 %s --timeout 120 "
             "--job-id %s -n 2 %s --selection-only allreduce", xdg, tmp, RUN,
             job, WORKER);
    rc = test_run(cmd, 1, out, sizeof(out));
    knocks = count_knocks(lfd);
    close(lfd);
    FILE *f = fopen(xfile, "r");
    if (f != NULL) {
        if (fgets(back, sizeof(back), f) == NULL)
            back[0] = '\0';
        fclose(f);
    }
    unlink(xfile);
    unlink(old);
    rmdir(xdgt);
    rmdir(xdg);
    rmdir(xdgparent);
    test_rmtree(dir);
    rmdir(tmp);
    if (rc != 0 || knocks != 0)
        fail_msg("XDG_RUNTIME_DIR of uid 65534: expected the job to succeed "
                 "in its own directory without connecting to that user's "
                 "listener; got status %d, %d connection(s):\n%s", rc, knocks,
                 out);
    assert_string_equal(back, text);
    expect_clean(out, 2);
}

/* A rank meets a fake rendezvous (TUTTI_RENDEZVOUS_FILE pointing at a
 * listener of this test) that answers its handshake with random bytes:
 * every byte the rank sends is captured, and the secret is not among
 * them; the rank fails naming the peer and "secret mismatch". */
static void test_handshake_hides_secret(void **state)
{
    static const char secret[] = "c0ffee5ecret0123456789abcdef4242";
    char path[96], log[96], text[64], got[4096], out[16384];
    size_t have = 0;
    int port, lfd = fake_listener(&port), fd = -1;
    pid_t pid;
    (void)state;
    snprintf(path, sizeof(path), "/tmp/tutti-tcp-fake-%ld", (long)getpid());
    snprintf(log, sizeof(log), "/tmp/tutti-tcp-fake-%ld.log", (long)getpid());
    snprintf(text, sizeof(text), "127.0.0.1 %d\n", port);
    test_write_file(path, text);
    chmod(path, 0644); /* readers refuse one others may write (umask) */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(o, 2);
        setenv("TUTTI_RENDEZVOUS_FILE", path, 1);
        setenv("TUTTI_JOB_SECRET", secret, 1);
        setenv("TUTTI_JOB_ID", "fakerdv", 1);
        setenv("TUTTI_TRANSPORTS", "tcp", 1);
        setenv("TUTTI_TIMEOUT", "8", 1);
        setenv("TUTTI_RANK", "1", 1);
        setenv("TUTTI_SIZE", "2", 1);
        setenv("TUTTI_LOCAL_RANK", "0", 1);
        setenv("TUTTI_LOCAL_SIZE", "1", 1);
        execl(WORKER, WORKER, "--selection-only", "allreduce", (char *)NULL);
        _exit(127);
    }
    /* Take its connection; answer its opening with garbage; read on until
     * it closes or 5 s pass. */
    double until = mono_now() + 10.0;
    while (fd < 0 && mono_now() < until) {
        fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            usleep(10000);
    }
    if (fd >= 0) {
        struct timeval tv = {0, 200000};
        unsigned char junk[sizeof(tcp_chal_t)];
        int answered = 0;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        until = mono_now() + 5.0;
        while (mono_now() < until && have < sizeof(got)) {
            ssize_t n = recv(fd, got + have, sizeof(got) - have, 0);
            if (n == 0)
                break;
            if (n > 0)
                have += (size_t)n;
            if (!answered && have >= sizeof(tcp_hs_t) - 64) {
                for (size_t i = 0; i < sizeof(junk); i++)
                    junk[i] = (unsigned char)(rand() & 0xff);
                send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
                answered = 1;
            }
        }
        close(fd);
    }
    close(lfd);
    until = mono_now() + 15.0; /* it says why, then exits */
    while (waitpid(pid, NULL, WNOHANG) == 0) {
        if (mono_now() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            break;
        }
        usleep(20000);
    }
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    unlink(log);
    unlink(path);
    if (have == 0)
        fail_msg("the rank never sent its handshake to the fake "
                 "rendezvous; its output:\n%s", out);
    if (memmem(got, have, secret, strlen(secret)) != NULL)
        fail_msg("the secret is in the %zu bytes the rank sent", have);
    if (memmem(got, have, secret, 16) != NULL)
        fail_msg("part of the secret is in the %zu bytes the rank sent",
                 have);
    char peer[64];
    snprintf(peer, sizeof(peer), "127.0.0.1:%d", port);
    if (strstr(out, "secret mismatch") == NULL || strstr(out, peer) == NULL)
        fail_msg("no error naming %s and \"secret mismatch\":\n%s", peer,
                 out);
}

/* A job over tcp whose tutti-run is SIGKILLed leaves no rendezvous file
 * (a watcher removes it); a file left by a dead writer with the job's id
 * is replaced by the next job, which succeeds. */
static void test_killed_run_leaves_no_file(void **state)
{
    char tmp[64], file[192], old[96], job[64], cmd[1024], out[16384];
    pid_t pid, dead;
    const char *seen = NULL;
    double until;
    (void)state;
    sticky_tmpdir(tmp, sizeof(tmp), "tcpkill");
    snprintf(job, sizeof(job), "tcpkill%ld", (long)getpid());
    snprintf(file, sizeof(file), "%s/tutti-%u/rdv-%s", tmp,
             (unsigned)geteuid(), job);
    snprintf(old, sizeof(old), "/tmp/tutti-rdv-%s", job);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        unsetenv("XDG_RUNTIME_DIR");
        setenv("TMPDIR", tmp, 1);
        setenv("TUTTI_TRANSPORTS", "tcp", 1);
        execl(RUN, RUN, "--job-id", job, "-n", "2", PERF, "-b", "256K", "-e",
              "256K", "-n", "1000000", "-w", "1", (char *)NULL);
        _exit(127);
    }
    until = mono_now() + 20.0;
    while (seen == NULL && mono_now() < until) {
        if (access(file, F_OK) == 0)
            seen = file;
        else if (access(old, F_OK) == 0)
            seen = old;
        else
            usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (seen == NULL)
        fail_msg("no rendezvous file appeared within 20 s");
    until = mono_now() + 5.0;
    while (access(seen, F_OK) == 0 && mono_now() < until)
        usleep(20000);
    int left = access(seen, F_OK) == 0;
    unlink(old);
    unlink(file);
    if (left)
        fail_msg("tutti-run was SIGKILLed; %s is still there 5 s later",
                 seen);

    /* A dead writer's file (pid of an ended child) is replaced. */
    if ((dead = fork()) == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char text[96];
    snprintf(text, sizeof(text), "127.0.0.1 1 %ld 12345\n", (long)dead);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    snprintf(cmd, sizeof(cmd), "env -u XDG_RUNTIME_DIR TMPDIR=%s "
             "TUTTI_TRANSPORTS=tcp TUTTI_TIMEOUT=30 %s --timeout 120 "
             "--job-id %s -n 2 %s --selection-only allreduce", tmp, RUN, job,
             WORKER);
    test_run_ok(cmd, 1, out, sizeof(out));
    expect_clean(out, 2);
    int stays = access(file, F_OK) == 0;
    char mine[96];
    snprintf(mine, sizeof(mine), "%s/tutti-%u", tmp, (unsigned)geteuid());
    test_rmtree(mine);
    rmdir(tmp);
    if (stays)
        fail_msg("%s is still there after its job ended", file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix_2),
        cmocka_unit_test(test_matrix_3),
        cmocka_unit_test(test_matrix_4),
        cmocka_unit_test(test_perf),
        cmocka_unit_test(test_groups_share_engine),
        cmocka_unit_test(test_strangers_refused),
        cmocka_unit_test(test_garbled_frame_fails_peer),
        cmocka_unit_test(test_truncated_frame_fails_peer),
        cmocka_unit_test(test_oversized_frame_fails_peer),
        cmocka_unit_test(test_family_and_ports),
        cmocka_unit_test(test_connections),
        cmocka_unit_test(test_rendezvous_file),
        cmocka_unit_test(test_control_plane_across_hosts),
        cmocka_unit_test(test_other_user_first),
        cmocka_unit_test(test_handshake_hides_secret),
        cmocka_unit_test(test_killed_run_leaves_no_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
