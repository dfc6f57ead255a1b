/*
 * Several hosts on one machine: each "host" is a network namespace (its own
 * interfaces, addresses and ports) entered with its own UTS namespace (its
 * own hostname), so the resolver sees distinct hosts and tcp must carry
 * every byte between them over a private veth link.  Every task is started
 * by hand with the TUTTI_* variables a launcher would set, runs
 * tests/mp/launch_worker (allreduce and broadcast, checked exactly) and logs
 * at debug, from which the test reads which transport served which peers.
 *
 *   2 hosts x 2 tasks, TUTTI_TRANSPORTS=shm,tcp: shm within a host, tcp
 *     between them; the control plane over tcp (local size 2 of 4).
 *   The same with no transport setting at all (the default list, any
 *     interface): the defaults must fit a job that spans hosts.
 *   3 hosts x 1 task, TUTTI_TRANSPORTS=tcp: the hosts on a bridge.
 *   Where the ucx module was built: 2 hosts x 2 tasks with
 *     TUTTI_TRANSPORTS=shm,ucx,tcp (UCX's tcp on the test link): ucx
 *     between the hosts, and the differential client over it.
 *   2 hosts x 2 tasks meeting through a store of files
 *     (TUTTI_TEST_STORE_DIR): no job id, secret or rendezvous variable;
 *     the store says which tasks share a host (shm between them) and
 *     where task 0's rendezvous listens (a port the system picked).
 *
 *   Hierarchical collectives: tests/mp/diffcheck (every implementation
 *     by name and through selection, every output element checked
 *     exactly) on 2 hosts x 2 tasks with ranks in host order, on 2 hosts
 *     whose ranks alternate, on 2 hosts x 1 task of 2 members, and on 3
 *     hosts x 1 task; each Hierarchical* implementation must log the grid
 *     it saw (2 hosts x 2, or 3 hosts x 1).
 *   tutti-tune --links on 2 hosts x 2 tasks: both link classes timed.
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), `ip` (iproute2) and `unshare`
 * (util-linux); skipped, saying which command failed, where these are
 * missing.  The namespaces (and with them the links) are deleted at the
 * end, also when a case fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"
#include "tutti-build.h"

#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/launch_worker"
#define NS_PREFIX "tuttit"    /* namespaces: tuttit<pid>h<host> */
#define CTRL_KEY "0xc0c0c0c0c0c0c0c0" /* the control plane's group */
#define RDV_PORT 29400 /* free: nothing else lives in a fresh namespace */
#define MAX_HOSTS 3
#define MAX_TASKS 4

typedef struct {
    int nhosts, ntasks;
    char ns[MAX_HOSTS][32];      /* namespace of each host */
    int ns_made[MAX_HOSTS];
    char ifname[MAX_HOSTS][16];  /* the interface tcp uses on each host */
    char addr[MAX_HOSTS][20];    /* its address */
    char dir[64];                /* logs and outputs of the tasks */
    char job[48];
    int store;                   /* meet through a store of files */
    const char *diff_tp;         /* run_diffcheck's transports, NULL:
                                    shm,tcp */
    const char *argv[16];        /* the worker and its arguments, NULL
                                    ended; none: launch_worker */
    pid_t pid[MAX_TASKS];
    int passed;
} net_t;

static int net_case; /* tells the interface names of two cases apart */

/* Runs a command (stderr joined), formatted; its exit status. */
static int sh(char *out, size_t len, const char *fmt, ...)
{
    char cmd[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return test_run(cmd, 1, out, len);
}

/* Runs a command that sets the network up; skips the test if it fails. */
static void must(const char *fmt, ...)
{
    char cmd[768], out[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 0) {
        test_skip("test_netns: cannot simulate hosts: '%s' exited %d "
                      "(needs root, CAP_NET_ADMIN, iproute2 and util-linux): "
                      "%s\n", cmd, rc, out);
    }
}

/* Deletes namespaces left by runs of this test that were killed. */
static void sweep_stale(void)
{
    char out[8192];
    if (sh(out, sizeof(out), "ip netns list") != 0)
        return;
    for (char *l = strtok(out, "\n"); l != NULL; l = strtok(NULL, "\n")) {
        char name[64], junk[64];
        long pid;
        if (sscanf(l, "%63s", name) != 1 ||
            sscanf(name, NS_PREFIX "%ld%63s", &pid, junk) != 2 || pid <= 0 ||
            pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char o[256];
            sh(o, sizeof(o), "ip netns del %s", name);
        }
    }
}

/* Hosts 0 .. nhosts-1 as namespaces on one subnet 10.213.X.0/24; host h has
 * address .h+1.  Two hosts: one veth pair.  More: host 0 holds a bridge
 * (its address) to which a veth from every other host is attached. */
static void net_up(net_t *n, int nhosts)
{
    char out[1024];
    int id = (int)getpid(), x = 1 + id % 250;

    if (sh(out, sizeof(out), "ip -V") != 0) {
        test_skip("test_netns: no usable 'ip' command (iproute2): %s\n",
                      out);
    }
    if (sh(out, sizeof(out), "unshare --uts true") != 0) {
        test_skip("test_netns: 'unshare --uts true' failed (needs "
                      "util-linux and CAP_SYS_ADMIN): %s\n", out);
    }
    sweep_stale();
    net_case++;
    n->nhosts = nhosts;
    for (int h = 0; h < nhosts; h++) {
        snprintf(n->ns[h], sizeof(n->ns[h]), NS_PREFIX "%dh%d", id, h);
        must("ip netns add %s", n->ns[h]);
        n->ns_made[h] = 1;
        must("ip -n %s link set lo up", n->ns[h]);
        snprintf(n->addr[h], sizeof(n->addr[h]), "10.213.%d.%d", x, h + 1);
    }
    /* Interface names are per namespace: short fixed ones do. */
    if (nhosts == 2) {
        snprintf(n->ifname[0], sizeof(n->ifname[0]), "tv%da", net_case);
        snprintf(n->ifname[1], sizeof(n->ifname[1]), "tv%db", net_case);
        must("ip link add %s netns %s type veth peer name %s netns %s",
             n->ifname[0], n->ns[0], n->ifname[1], n->ns[1]);
    } else {
        snprintf(n->ifname[0], sizeof(n->ifname[0]), "tbr%d", net_case);
        must("ip -n %s link add %s type bridge", n->ns[0], n->ifname[0]);
        for (int h = 1; h < nhosts; h++) {
            char port[16];
            snprintf(port, sizeof(port), "tp%dh%d", net_case, h);
            snprintf(n->ifname[h], sizeof(n->ifname[h]), "tv%dh%d", net_case,
                     h);
            must("ip link add %s netns %s type veth peer name %s netns %s",
                 port, n->ns[0], n->ifname[h], n->ns[h]);
            must("ip -n %s link set %s master %s up", n->ns[0], port,
                 n->ifname[0]);
        }
    }
    for (int h = 0; h < nhosts; h++) {
        must("ip -n %s addr add %s/24 dev %s", n->ns[h], n->addr[h],
             n->ifname[h]);
        must("ip -n %s link set %s up", n->ns[h], n->ifname[h]);
    }
}

/* Bytes received on host @p h's interface, or -1. */
static long long rx_bytes(const net_t *n, int h)
{
    char out[256];
    if (sh(out, sizeof(out), "ip netns exec %s cat "
           "/sys/class/net/%s/statistics/rx_bytes", n->ns[h], n->ifname[h]) !=
        0)
        return -1;
    return atoll(out);
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, len - 1, f) : 0;
    if (f)
        fclose(f);
    buf[k] = '\0';
}

/* Starts task @p t of @p ntasks on host @p h (local rank @p lt of @p lsize),
 * its stdout to dir/out.T, its stderr (debug log) to dir/log.T. */
static pid_t start_task(const net_t *n, int t, int ntasks, int h, int lt,
                        int lsize, const char *transports, const char *secret)
{
    char path[128], v[160], host[32];
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    snprintf(path, sizeof(path), "%s/out.%d", n->dir, t);
    int fo = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    snprintf(path, sizeof(path), "%s/log.%d", n->dir, t);
    int fe = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
        _exit(126);
    close(fo);
    close(fe);
    unsetenv("TUTTI_RENDEZVOUS_FILE");
    unsetenv("TUTTI_SECRET_FILE");
    unsetenv("TUTTI_TCP_PORTS");
    unsetenv("TUTTI_TCP_FAMILY");
    snprintf(v, sizeof(v), "%d", t);
    setenv("TUTTI_RANK", v, 1);
    snprintf(v, sizeof(v), "%d", ntasks);
    setenv("TUTTI_SIZE", v, 1);
    snprintf(v, sizeof(v), "%d", lt);
    setenv("TUTTI_LOCAL_RANK", v, 1);
    snprintf(v, sizeof(v), "%d", lsize);
    setenv("TUTTI_LOCAL_SIZE", v, 1);
    if (n->store) {
        /* The store alone: no job id, secret, rendezvous or locality. */
        snprintf(v, sizeof(v), "%s/store", n->dir);
        setenv("TUTTI_TEST_STORE_DIR", v, 1);
        unsetenv("TUTTI_JOB_ID");
        unsetenv("TUTTI_JOB_SECRET");
        unsetenv("TUTTI_RENDEZVOUS");
        unsetenv("TUTTI_LOCAL_RANK");
        unsetenv("TUTTI_LOCAL_SIZE");
    } else {
        setenv("TUTTI_JOB_ID", n->job, 1);
        setenv("TUTTI_JOB_SECRET", secret, 1);
        snprintf(v, sizeof(v), "%s:%d", n->addr[0], RDV_PORT);
        setenv("TUTTI_RENDEZVOUS", v, 1);
    }
    /* transports NULL: the defaults, neither a transport list nor the
     * interface tcp listens on. */
    if (transports != NULL) {
        setenv("TUTTI_TCP_IFNAME", n->ifname[h], 1);
        setenv("TUTTI_TRANSPORTS", transports, 1);
        /* ucx: UCX's tcp on the test link alone (its shared memory would
         * cross namespaces, which share this machine's memory). */
        if (strstr(transports, "ucx") != NULL) {
            setenv("UCX_TLS", "tcp", 1);
            setenv("UCX_NET_DEVICES", n->ifname[h], 1);
        }
    } else {
        unsetenv("TUTTI_TCP_IFNAME");
        unsetenv("TUTTI_TRANSPORTS");
    }
    setenv("TUTTI_LOG_LEVEL", "debug", 1);
    setenv("TUTTI_TIMEOUT", "60", 1);
    snprintf(host, sizeof(host), "tutti-netns-host%d", h);
    /* The worker and its arguments (n->argv), or launch_worker. */
    const char *argv[32] = {"timeout", "-k", "5", "120", "ip", "netns",
                            "exec", n->ns[h], "unshare", "--uts", "sh", "-c",
                            "hostname \"$0\" && exec \"$@\"", host};
    int a = 14;
    if (n->argv[0] == NULL)
        argv[a++] = WORKER;
    for (int i = 0; i < 16 && n->argv[i] != NULL && a < 31; i++)
        argv[a++] = n->argv[i];
    argv[a] = NULL;
    execvp("timeout", (char *const *)argv);
    fprintf(stderr, "test_netns: cannot run timeout: %s\n", strerror(errno));
    _exit(127);
}

/* The rest of the line of @p log that starts with @p what, or "". */
static void line_after(const char *log, const char *what, char *out,
                       size_t len)
{
    const char *p = strstr(log, what);
    size_t k = 0;
    if (p != NULL) {
        p += strlen(what);
        while (p[k] != '\0' && p[k] != '\n' && k + 1 < len)
            k++;
        memcpy(out, p, k);
    }
    out[k] = '\0';
}

/* A job's secret (hex, 33 bytes with its end) into @p secret, its id
 * and its directory of logs (with the store's, if it meets through one). */
static void job_begin(net_t *n, char *secret)
{
    char path[160];
    unsigned char rnd[16];
    FILE *ur = fopen("/dev/urandom", "r");
    assert_non_null(ur);
    assert_int_equal(fread(rnd, 1, sizeof(rnd), ur), sizeof(rnd));
    fclose(ur);
    for (int i = 0; i < 16; i++)
        snprintf(secret + 2 * i, 3, "%02x", rnd[i]);
    snprintf(n->job, sizeof(n->job), "netns%ldc%d", (long)getpid(), net_case);
    snprintf(n->dir, sizeof(n->dir), "/tmp/tutti-netns-XXXXXX");
    assert_non_null(mkdtemp(n->dir));
    if (n->store) {
        snprintf(path, sizeof(path), "%s/store", n->dir);
        assert_int_equal(mkdir(path, 0700), 0);
    }
}

/* Waits for the job's n->ntasks tasks: their exit statuses. */
static void job_wait(net_t *n, int *status)
{
    for (int t = 0; t < n->ntasks; t++) {
        int st = 0;
        while (waitpid(n->pid[t], &st, 0) < 0 && errno == EINTR)
            ;
        n->pid[t] = 0;
        status[t] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
}

/* Runs @p ntasks tasks, task t on host t / per_host, and checks every one
 * finished with exact results; @p want_data and @p want_ctrl are what the
 * transport line of each task's data group and control plane must hold. */
static void run_job(net_t *n, int ntasks, int per_host,
                    const char *transports, const char *const *want_data,
                    const char *want_ctrl)
{
    static char out[8192], log[1 << 18];
    char secret[40], path[160];
    int status[MAX_TASKS];
    job_begin(n, secret);

    long long rx0[MAX_HOSTS];
    for (int h = 0; h < n->nhosts; h++)
        rx0[h] = rx_bytes(n, h);
    n->ntasks = ntasks;
    for (int t = 0; t < ntasks; t++) {
        n->pid[t] = start_task(n, t, ntasks, t / per_host, t % per_host,
                               per_host, transports, secret);
        assert_true(n->pid[t] > 0);
    }
    job_wait(n, status);
    for (int t = 0; t < ntasks; t++) {
        char want[160], rest[256];
        snprintf(path, sizeof(path), "%s/out.%d", n->dir, t);
        read_file(path, out, sizeof(out));
        snprintf(path, sizeof(path), "%s/log.%d", n->dir, t);
        read_file(path, log, sizeof(log));
        if (status[t] != 0)
            fail_msg("task %d exited %d (124: timed out); stdout:\n%s\n"
                     "log (%s, first part):\n%.3000s", t, status[t], out,
                     path, log);
        if (n->store)
            snprintf(want, sizeof(want), "launch_worker: task %d of %d "
                     "(local -1 of -1) from ", t, ntasks);
        else
            snprintf(want, sizeof(want), "launch_worker: task %d of %d "
                     "(local %d of %d) from ", t, ntasks, t % per_host,
                     per_host);
        line_after(out, want, rest, sizeof(rest));
        if (rest[0] == '\0' || strstr(rest, ", job ") == NULL ||
            strcmp(rest + strlen(rest) - 4, ": OK") != 0)
            fail_msg("task %d: no '%s... : OK' line:\n%s", t, want, out);
        /* Control plane. */
        snprintf(want, sizeof(want), "group " CTRL_KEY " rank %d: ", t);
        line_after(log, want, rest, sizeof(rest));
        if (strcmp(rest, want_ctrl) != 0)
            fail_msg("task %d: control plane line '%s%s', expected '%s%s' "
                     "(log %s)", t, want, rest, want, want_ctrl, path);
        /* The data group: the other "group 0x... rank t: " line. */
        int found = 0;
        for (const char *p = log; (p = strstr(p, "group 0x")) != NULL; p++) {
            int r;
            char key[40];
            if (sscanf(p, "group %39s rank %d: ", key, &r) != 2 || r != t ||
                strcmp(key, CTRL_KEY) == 0)
                continue;
            const char *colon = strstr(p, ": ");
            line_after(colon, ": ", rest, sizeof(rest));
            /* The transport choice's line ("shm to 1 peer(s), tcp to 2
             * peer(s)"), not shm's own lines about its peers. */
            if (strstr(rest, "peer(s)") == NULL ||
                strstr(rest, " to ") == NULL)
                continue;
            found = 1;
            for (const char *const *w = want_data; *w != NULL; w++)
                if (strstr(rest, *w) == NULL)
                    fail_msg("task %d: data group %s line '%s' lacks '%s' "
                             "(log %s)", t, key, rest, *w, path);
        }
        if (!found)
            fail_msg("task %d: no transport line of the data group in %s", t,
                     path);
    }
    /* The bytes went over the test links: every host received megabytes
     * (allreduce of 1 Mi + 3 elements crosses between hosts). */
    for (int h = 0; h < n->nhosts; h++) {
        long long rx = rx_bytes(n, h);
        if (rx0[h] < 0 || rx - rx0[h] < (1 << 20))
            fail_msg("host %d (%s on %s) received only %lld bytes", h,
                     n->ifname[h], n->ns[h], rx - rx0[h]);
    }
    snprintf(path, sizeof(path), "tutti-%s", n->job);
    assert_int_equal(test_shm_names_with(path), 0);
    n->passed = 1;
}

/* The hierarchical implementations, which must have seen the grid. */
static const char *const hier_impls[] = {
    "HierarchicalAllreduce", "HierarchicalLeaderAllreduce",
    "HierarchicalAllgather", "HierarchicalReduceScatter",
    "HierarchicalAlltoall", NULL};

/* Runs diffcheck (every implementation by name and through selection,
 * each output element checked exactly) as @p ntasks tasks of @p devices
 * members each on n->nhosts hosts, task t on host t / per_host or, with
 * @p round_robin, on host t mod nhosts; checks that every member found no
 * wrong element and no failure (calls seeded by @p seed), and that every
 * hierarchical
 * implementation saw the group as @p grid ("2 hosts x 2"). */
static void run_diffcheck(net_t *n, int ntasks, int round_robin,
                          const char *devices, const char *seed,
                          const char *grid)
{
    static char out[1 << 16], log[1 << 20];
    char secret[40], path[160];
    int status[MAX_TASKS], per_host = ntasks / n->nhosts;
    const char *argv[] = {TUTTI_TEST_BUILDDIR "/tests/mp/diffcheck",
                          "--calls", "400", "--seed", seed,
                          "--devices", devices,
                          "--max-bytes", "262144", NULL};

    assert_true(sizeof(argv) <= sizeof(n->argv));
    memcpy(n->argv, argv, sizeof(argv));
    job_begin(n, secret);
    n->ntasks = ntasks;
    for (int t = 0; t < ntasks; t++) {
        int h = round_robin ? t % n->nhosts : t / per_host;
        int lt = round_robin ? t / n->nhosts : t % per_host;
        n->pid[t] = start_task(n, t, ntasks, h, lt, per_host,
                               n->diff_tp ? n->diff_tp : "shm,tcp", secret);
        assert_true(n->pid[t] > 0);
    }
    job_wait(n, status);
    for (int t = 0; t < ntasks; t++) {
        snprintf(path, sizeof(path), "%s/out.%d", n->dir, t);
        read_file(path, out, sizeof(out));
        snprintf(path, sizeof(path), "%s/log.%d", n->dir, t);
        read_file(path, log, sizeof(log));
        if (status[t] != 0)
            fail_msg("diffcheck task %d exited %d (124: timed out); "
                     "stdout:\n%.6000s", t, status[t], out);
        int members = atoi(devices);
        for (int d = 0; d < members; d++) {
            char want[64];
            snprintf(want, sizeof(want), "diffcheck: rank %d: ",
                     t * members + d);
            const char *p = strstr(out, want);
            if (p == NULL || strstr(p, " 0 wrong, 0 failures") == NULL)
                fail_msg("task %d: no '%s... 0 wrong, 0 failures' line:\n%s",
                         t, want, out);
            if (t == 0 && d == 0)
                print_message("%.*s\n", (int)strcspn(p, "\n"), p);
        }
        for (const char *const *i = hier_impls; *i != NULL; i++) {
            int seen = 0;
            for (const char *p = log; !seen && (p = strstr(p, *i)) != NULL;
                 p++) {
                const char *eol = strchr(p, '\n');
                const char *g = strstr(p, grid);
                seen = g != NULL && (eol == NULL || g < eol);
            }
            if (!seen)
                fail_msg("task %d: %s never ran on '%s' (log %s)", t, *i,
                         grid, path);
        }
    }
    n->passed = 1;
}

static int net_setup(void **state)
{
    net_t *n = calloc(1, sizeof(*n));
    *state = n;
    return n == NULL ? -1 : 0;
}

/* Stops what still runs, deletes the namespaces (their links go with them),
 * the job's /dev/shm names, and the logs unless the case failed. */
static int net_teardown(void **state)
{
    net_t *n = *state;
    char out[1024];
    for (int t = 0; t < n->ntasks; t++) {
        if (n->pid[t] > 0) {
            kill(n->pid[t], SIGTERM); /* timeout passes it on */
            waitpid(n->pid[t], NULL, 0);
        }
    }
    for (int h = 0; h < n->nhosts; h++)
        if (n->ns_made[h] && sh(out, sizeof(out), "ip netns del %s",
                                n->ns[h]) != 0)
            print_message("test_netns: ip netns del %s: %s\n", n->ns[h], out);
    if (n->job[0] != '\0') {
        char prefix[80];
        snprintf(prefix, sizeof(prefix), "tutti-%s", n->job);
        if (test_shm_names_with(prefix) > 0)
            sh(out, sizeof(out), "rm -f /dev/shm/%s-*", prefix);
    }
    if (n->dir[0] != '\0') {
        if (n->passed)
            sh(out, sizeof(out), "rm -rf %s", n->dir);
        else
            print_message("test_netns: outputs and logs kept in %s\n", n->dir);
    }
    free(n);
    return 0;
}

/* 2 hosts x 2 tasks: shm to the host's other task, tcp to the other host;
 * the control plane over tcp to every task. */
static void test_two_hosts_shm_tcp(void **state)
{
    static const char *const data[] = {"shm to 1 peer(s)",
                                       "tcp to 2 peer(s)", NULL};
    net_t *n = *state;
    net_up(n, 2);
    run_job(n, 4, 2, "shm,tcp", data, "tcp to 3 peer(s)");
}

/* The same job with the defaults: no transport list, no interface. */
static void test_two_hosts_defaults(void **state)
{
    static const char *const data[] = {"shm to 1 peer(s)",
                                       "tcp to 2 peer(s)", NULL};
    net_t *n = *state;
    net_up(n, 2);
    run_job(n, 4, 2, NULL, data, "tcp to 3 peer(s)");
}

/* 2 hosts x 2 tasks that meet through a store: the same transports. */
static void test_two_hosts_store(void **state)
{
    static const char *const data[] = {"shm to 1 peer(s)",
                                       "tcp to 2 peer(s)", NULL};
    net_t *n = *state;
    n->store = 1;
    net_up(n, 2);
    run_job(n, 4, 2, "shm,tcp", data, "tcp to 3 peer(s)");
}

#if TUTTI_HAVE_UCX
/* Waits (up to 5 s) until every host's test link has its carrier: UCX
 * takes only running interfaces, and a veth's comes a moment after it is
 * set up (tcp binds to it before). */
static void wait_carrier(const net_t *n)
{
    char out[256];
    for (int h = 0; h < n->nhosts; h++) {
        int up = 0;
        for (int i = 0; i < 100 && !up; i++) {
            up = sh(out, sizeof(out), "ip netns exec %s cat "
                    "/sys/class/net/%s/operstate | grep -qx up", n->ns[h],
                    n->ifname[h]) == 0;
            if (!up)
                usleep(50 * 1000);
        }
        if (!up)
            fail_msg("host %d: %s in %s never came up: %s", h, n->ifname[h],
                     n->ns[h], out);
    }
}

/* 2 hosts x 2 tasks, shm,ucx,tcp: shm within a host, ucx (UCX's tcp on
 * the test link) between them, the control plane over tcp (ucx never
 * carries it); then the differential client, hierarchical collectives
 * included, over the same. */
static void test_two_hosts_ucx(void **state)
{
    static const char *const data[] = {"shm to 1 peer(s)",
                                       "ucx to 2 peer(s)", NULL};
    net_t *n = *state;
    net_up(n, 2);
    wait_carrier(n);
    run_job(n, 4, 2, "shm,ucx,tcp", data, "tcp to 3 peer(s)");
}

static void test_hier_ucx(void **state)
{
    net_t *n = *state;
    n->diff_tp = "shm,ucx,tcp";
    net_up(n, 2);
    wait_carrier(n);
    run_diffcheck(n, 4, 0, "1", "5", "of 2 hosts x 2,");
}
#endif

/* 3 hosts x 1 task on a bridge, tcp only. */
static void test_three_hosts_tcp(void **state)
{
    static const char *const data[] = {"tcp to 2 peer(s)", NULL};
    net_t *n = *state;
    net_up(n, 3);
    run_job(n, 3, 1, "tcp", data, "tcp to 2 peer(s)");
}

/* Hierarchical collectives, exact, over 2 hosts x 2 tasks: ranks in host
 * order, then alternating hosts (a grid whose hosts' ranks are not
 * consecutive), then 2 hosts x 1 task of 2 members (inside a host over
 * the local transport). */
static void test_hier_two_by_two(void **state)
{
    net_t *n = *state;
    net_up(n, 2);
    run_diffcheck(n, 4, 0, "1", "1", "of 2 hosts x 2,");
}

static void test_hier_alternating(void **state)
{
    static char log[1 << 20];
    char path[160];
    net_t *n = *state;
    net_up(n, 2);
    run_diffcheck(n, 4, 1, "1", "2", "of 2 hosts x 2,");
    /* Ranks 0 and 2 share host 0: the flat ring keeps them together
     * (host order 0 2 1 3), so rank 0 sends to 2 and receives from 3. */
    snprintf(path, sizeof(path), "%s/log.0", n->dir);
    read_file(path, log, sizeof(log));
    if (strstr(log, "rank 0: ring 0 sends to 2, receives from 3") == NULL)
        fail_msg("RingAllreduce on alternating hosts: no 'rank 0: ring 0 "
                 "sends to 2, receives from 3' in %s", path);
}

static void test_hier_devices(void **state)
{
    net_t *n = *state;
    net_up(n, 2);
    run_diffcheck(n, 2, 0, "2", "3", "of 2 hosts x 2,");
}

/* One member per host (the phases inside hosts vanish), 3 hosts. */
static void test_hier_one_per_host(void **state)
{
    net_t *n = *state;
    net_up(n, 3);
    run_diffcheck(n, 3, 0, "1", "4", "of 3 hosts x 1,");
}

/* tutti-tune --links on 2 hosts x 2 tasks: rank 0 times rank 1 (its
 * host, shm) and rank 2 (the other host, tcp), each a positive latency
 * and bandwidth, and prints them as --model's options. */
static void test_tune_links(void **state)
{
    static char out[8192];
    char secret[40], path[160];
    int status[MAX_TASKS];
    const char *argv[] = {TUTTI_TEST_BUILDDIR "/tools/tutti-tune", "--links",
                          "-e", "1M", NULL};
    net_t *n = *state;
    net_up(n, 2);
    assert_true(sizeof(argv) <= sizeof(n->argv));
    memcpy(n->argv, argv, sizeof(argv));
    job_begin(n, secret);
    n->ntasks = 4;
    for (int t = 0; t < 4; t++)
        assert_true((n->pid[t] = start_task(n, t, 4, t / 2, t % 2, 2,
                                            "shm,tcp", secret)) > 0);
    job_wait(n, status);
    snprintf(path, sizeof(path), "%s/out.0", n->dir);
    read_file(path, out, sizeof(out));
    for (int t = 0; t < 4; t++)
        if (status[t] != 0)
            fail_msg("tutti-tune --links task %d exited %d; task 0 printed:"
                     "\n%s", t, status[t], out);
    static const char *const want[] = {
        "links: intra: rank 0 (tutti-netns-host0) <-> rank 1 "
        "(tutti-netns-host0): latency ",
        "links: inter: rank 0 (tutti-netns-host0) <-> rank 2 "
        "(tutti-netns-host1): latency "};
    for (int c = 0; c < 2; c++) {
        const char *p = strstr(out, want[c]);
        double lat = 0, bw = 0;
        if (p == NULL ||
            sscanf(p + strlen(want[c]), "%lf us, bandwidth %lf GB/s", &lat,
                   &bw) != 2 || !(lat > 0) || !(bw > 0))
            fail_msg("no '%s<positive> us, bandwidth <positive> GB/s' in:"
                     "\n%s", want[c], out);
    }
    if (strstr(out, "links: tutti-tune --model --intra ") == NULL)
        fail_msg("no line with --model's options in:\n%s", out);
    print_message("%s", out);
    n->passed = 1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_hosts_shm_tcp, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_two_hosts_defaults, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_two_hosts_store, net_setup,
                                        net_teardown),
#if TUTTI_HAVE_UCX
        cmocka_unit_test_setup_teardown(test_two_hosts_ucx, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_hier_ucx, net_setup,
                                        net_teardown),
#endif
        cmocka_unit_test_setup_teardown(test_three_hosts_tcp, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_hier_two_by_two, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_hier_alternating, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_hier_devices, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_hier_one_per_host, net_setup,
                                        net_teardown),
        cmocka_unit_test_setup_teardown(test_tune_links, net_setup,
                                        net_teardown),
    };
    return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
