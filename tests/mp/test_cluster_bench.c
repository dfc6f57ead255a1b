/*
 * bench/cluster, the simulated cluster (hosts as network namespaces on a
 * bridge, links shaped with tc), run from the source tree against the
 * build tree's tools:
 *
 *   --quick (2 hosts x 2 ranks, 10 Gbit/s, allreduce RingAllreduce and
 *     (selection), two sizes, one round) exits 0 and prints its table:
 *     one row per size and implementation, positive times, the ring's
 *     ratio to itself 1.00;
 *   a longer sweep killed with SIGTERM while its tasks run exits 143;
 *   --model at 2 hosts x 2 ranks, 10 Gbit/s, allreduce RingAllreduce,
 *     RecursiveDoublingAllreduce, HierarchicalLeaderAllreduce and
 *     HierarchicalAllreduce at 8 B and 4 MiB, 3 rounds, exits 0 and its
 *     model.tsv (predicted and measured times per size and
 *     implementation) ranks as measured: at each size, every pair whose
 *     predicted times differ by 2x or more is measured in the same
 *     order (pairs predicted closer are printed as skipped: on 2 shared
 *     CPUs, under a test suite, closer ones swapped now and then), and at
 *     least one pair is compared.
 *
 * After each, nothing of the run is left: no namespace tcb<pid>*, no
 * /dev/shm name of its jobs (tutti-tcb<pid>j*), no process of its jobs
 * (TUTTI_JOB_ID=tcb<pid>j* in the environment) or naming its namespaces.
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), `ip` and `tc` (iproute2),
 * `unshare` and `taskset` (util-linux), `timeout` and python3; skipped,
 * naming the command that failed, where these are missing, and where the
 * script says this machine cannot simulate hosts (its exit status 3).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define CLUSTER TUTTI_TEST_SRCDIR "/bench/cluster"
#define BUILD TUTTI_TEST_BUILDDIR
#define RUN_LIMIT_S 90    /* the quick run takes about 10 s */
#define MODEL_LIMIT_S 300 /* the model run took 22 s on 2 busy CPUs */
#define MODEL_FACTOR 2.0  /* predictions this far apart must rank alike */
#define MODEL_ALGS 4
#define MODEL_SIZES 2

typedef struct {
    char dir[64];    /* the script's outputs (-o) and its log */
    char log[128];   /* its stdout and stderr */
    char prefix[32]; /* tcb<pid>: its namespaces and jobs */
    pid_t pid;
} run_t;

/* Skips the test unless this machine can make namespaces. */
static void require_tools(void)
{
    static const char *const cmds[] = {"ip -V",
                                       "tc -V",
                                       "unshare --uts true",
                                       "command -v timeout",
                                       "taskset -c 0 true",
                                       "python3 -c 'import socket, statistics'",
                                       NULL};
    char out[1024];
    if (geteuid() != 0)
        test_skip("test_cluster_bench: skipped: needs root (ip netns and tc "
                  "need CAP_NET_ADMIN, unshare CAP_SYS_ADMIN)\n");
    for (int i = 0; cmds[i] != NULL; i++)
        if (test_run(cmds[i], 1, out, sizeof(out)) != 0)
            test_skip("test_cluster_bench: skipped: '%s' failed: %s\n", cmds[i],
                      out);
}

/* Starts bench/cluster with @p args (split at spaces), its output to
 * r->log; r->prefix names what it makes. */
static void start(run_t *r, const char *args)
{
    char buf[512], *argv[48];
    int k = 0;
    assert_int_equal(test_tmpdir(r->dir, sizeof(r->dir), "clusterbench"), 0);
    snprintf(r->log, sizeof(r->log), "%s/log", r->dir);
    snprintf(buf, sizeof(buf), "%s --build %s -o %s/out %s", CLUSTER, BUILD,
             r->dir, args);
    for (char *t = strtok(buf, " "); t != NULL && k < 47; t = strtok(NULL, " "))
        argv[k++] = t;
    argv[k] = NULL;
    fflush(stdout);
    r->pid = fork();
    assert_true(r->pid >= 0);
    if (r->pid == 0) {
        int fd = open(r->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        fprintf(stderr, "test_cluster_bench: cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    snprintf(r->prefix, sizeof(r->prefix), "tcb%ld", (long)r->pid);
}

/* Its exit status (128 + signal if killed); kills it after @p limit_s. */
static int finish(run_t *r, int limit_s)
{
    int st = 0;
    for (int i = 0; i < limit_s * 10; i++) {
        pid_t w = waitpid(r->pid, &st, WNOHANG);
        if (w == r->pid) {
            r->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(100000);
    }
    kill(r->pid, SIGKILL);
    waitpid(r->pid, &st, 0);
    r->pid = 0;
    return -1;
}

static void show_log(const run_t *r)
{
    static char text[1 << 16];
    FILE *f = fopen(r->log, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    test_show("bench/cluster said:", text);
}

/* Pids of processes whose environment holds TUTTI_JOB_ID=<prefix>j (the
 * tasks, and their timeout and ip parents) or, unless @p tasks_only,
 * whose command line names <prefix> (the helpers too); up to @p max into
 * @p pids; how many. */
static int run_processes(const char *prefix, int tasks_only, pid_t *pids,
                         int max)
{
    char job[48], path[64];
    static char buf[1 << 16];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    snprintf(job, sizeof(job), "TUTTI_JOB_ID=%sj", prefix);
    while (d != NULL && (e = readdir(d)) != NULL && n < max) {
        long pid = strtol(e->d_name, NULL, 10);
        int hit = 0;
        if (pid <= 0 || pid == (long)getpid())
            continue;
        static const char *const files[] = {"environ", "cmdline"};
        for (int i = 0; i < 2 - tasks_only && !hit; i++) {
            snprintf(path, sizeof(path), "/proc/%ld/%s", pid, files[i]);
            FILE *f = fopen(path, "r");
            size_t k = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
            if (f)
                fclose(f);
            for (size_t j = 0; j < k; j++)
                if (buf[j] == '\0')
                    buf[j] = '\n';
            buf[k] = '\0';
            hit = strstr(buf, i == 0 ? job : prefix) != NULL;
        }
        if (hit)
            pids[n++] = (pid_t)pid;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* Nothing of run @p r is left: namespaces, shm names, processes. */
static void assert_clean(const run_t *r)
{
    char out[8192], shm[48];
    pid_t pids[16];
    test_run_ok("ip netns list", 1, out, sizeof(out));
    if (strstr(out, r->prefix) != NULL) {
        show_log(r);
        fail_msg("namespaces of %s left behind:\n%s", r->prefix, out);
    }
    snprintf(shm, sizeof(shm), "tutti-%sj", r->prefix);
    if (test_shm_names_with(shm) != 0) {
        test_run("ls /dev/shm", 1, out, sizeof(out));
        fail_msg("/dev/shm names %s* left behind:\n%s", shm, out);
    }
    /* Killed tasks are reaped by init: give it a moment. */
    int n = 0;
    for (int i = 0; i < 20; i++) {
        n = run_processes(r->prefix, 0, pids, 16);
        if (n == 0)
            break;
        usleep(100000);
    }
    if (n > 0) {
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "ps -o pid,args -p %d", (int)pids[0]);
        test_run(cmd, 1, out, sizeof(out));
        fail_msg("%d process(es) of %s left, the first: %s", n, r->prefix, out);
    }
}

static int run_setup(void **state)
{
    run_t *r = calloc(1, sizeof(*r));
    *state = r;
    return r == NULL ? -1 : 0;
}

/* Stops a run a failed case left going (its trap cleans up), and removes
 * the directory. */
static int run_teardown(void **state)
{
    run_t *r = *state;
    if (r->pid > 0) {
        kill(r->pid, SIGTERM);
        finish(r, 30);
    }
    if (r->dir[0] != '\0') {
        char cmd[96], out[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", r->dir);
        test_run(cmd, 1, out, sizeof(out));
    }
    free(r);
    return 0;
}

/* Skips if the script said this machine cannot simulate hosts. */
static void skip_if_no_hosts(const run_t *r, int rc)
{
    if (rc == 3) {
        show_log(r);
        test_skip("test_cluster_bench: skipped: bench/cluster cannot "
                  "simulate hosts here (exit 3, see its output above)\n");
    }
}

/* The table row of @p alg at @p bytes in @p log: its time, -1 if none. */
static double row_time(const char *log, int bytes, const char *alg,
                       double *ratio_out)
{
    char want[96];
    snprintf(want, sizeof(want), "| 2 | 2 | 10 | allreduce | %d | %s | ", bytes,
             alg);
    const char *p = strstr(log, want);
    double t = -1, bw = -1, ratio = -1;
    if (p == NULL ||
        sscanf(p + strlen(want), "%lf | %lf | %lf |", &t, &bw, &ratio) != 3)
        return -1;
    *ratio_out = ratio;
    return t;
}

/* --quick: exit 0, the four rows, then nothing left. */
static void test_quick(void **state)
{
    static char log[1 << 16];
    run_t *r = *state;
    require_tools();
    start(r, "--quick");
    int rc = finish(r, RUN_LIMIT_S);
    skip_if_no_hosts(r, rc);
    FILE *f = fopen(r->log, "r");
    size_t n = f ? fread(log, 1, sizeof(log) - 1, f) : 0;
    if (f)
        fclose(f);
    log[n] = '\0';
    if (rc != 0) {
        show_log(r);
        fail_msg("bench/cluster --quick exited %d", rc);
    }
    static const char *const algs[] = {"RingAllreduce", "(selection)"};
    static const int sizes[] = {8, 65536};
    for (int s = 0; s < 2; s++)
        for (int a = 0; a < 2; a++) {
            double ratio = -1;
            double t = row_time(log, sizes[s], algs[a], &ratio);
            if (t <= 0 || ratio <= 0) {
                show_log(r);
                fail_msg("no row of %s at %d B with a positive time and "
                         "ratio (time %g, ratio %g)",
                         algs[a], sizes[s], t, ratio);
            }
            if (a == 0 && (ratio < 0.999 || ratio > 1.001))
                fail_msg("the ring's ratio to itself is %g at %d B", ratio,
                         sizes[s]);
        }
    assert_int_equal(test_count_of(log, "| 2 | 2 | 10 | allreduce |"), 4);
    assert_non_null(strstr(log, "tcp stream host0->host1"));
    assert_non_null(strstr(log, "veth round trip host0 -> host1"));
    char path[160];
    snprintf(path, sizeof(path), "%s/out/table.md", r->dir);
    test_expect_in_file(path, "| 2 | 2 | 10 | allreduce | 65536 | "
                              "RingAllreduce |");
    assert_clean(r);
}

/* SIGTERM while the tasks run: exit 143, then nothing left. */
static void test_sigterm(void **state)
{
    run_t *r = *state;
    pid_t pids[16];
    require_tools();
    /* At 1 Gbit/s a 16 MiB allreduce of 2 x 2 tasks takes 0.3 s: each
     * job runs for seconds, the sweep for a minute. */
    start(r, "--quick --rate 1 -e 16M -f 8 --iters 20 --rounds 3");
    int seen = 0;
    for (int i = 0; i < 600 && !seen; i++) {
        int st;
        if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
            r->pid = 0;
            int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            skip_if_no_hosts(r, rc);
            show_log(r);
            fail_msg("bench/cluster exited %d before its tasks ran", rc);
        }
        /* Its 4 tasks are up (each with a timeout parent: 8). */
        seen = run_processes(r->prefix, 1, pids, 16) >= 8;
        if (!seen)
            usleep(100000);
    }
    if (!seen) {
        show_log(r);
        fail_msg("no task of %s appeared within 60 s", r->prefix);
    }
    usleep(500000); /* in the middle of the sweep */
    assert_int_equal(kill(r->pid, SIGTERM), 0);
    int rc = finish(r, 30);
    if (rc != 128 + SIGTERM) {
        show_log(r);
        fail_msg("bench/cluster exited %d on SIGTERM, expected 143", rc);
    }
    assert_true(test_file_has(r->log, "stopped by signal 15"));
    assert_clean(r);
}

static const char *const model_algs[MODEL_ALGS] = {
    "RingAllreduce", "RecursiveDoublingAllreduce",
    "HierarchicalLeaderAllreduce", "HierarchicalAllreduce"};
static const long model_sizes[MODEL_SIZES] = {8, 4L << 20};

/* The 2 x 2, 10 Gbit/s allreduce rows of model.tsv (hosts, per_host,
 * rate, collective, bytes, algorithm, predicted_us, measured_us) into
 * @p pred_out and @p meas_out by [size][algorithm] (entries still -1 are
 * filled; others stay as they are). */
static void read_model_tsv(const char *path,
                           double pred_out[MODEL_SIZES][MODEL_ALGS],
                           double meas_out[MODEL_SIZES][MODEL_ALGS])
{
    char line[512], rate[16], coll[32], alg[128];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        int hosts, per_host;
        long bytes;
        double pred, meas;
        if (sscanf(line,
                   "%d\t%d\t%15[^\t]\t%31[^\t]\t%ld\t%127[^\t]\t"
                   "%lf\t%lf",
                   &hosts, &per_host, rate, coll, &bytes, alg, &pred,
                   &meas) != 8 ||
            hosts != 2 || per_host != 2 || strcmp(rate, "10") != 0 ||
            strcmp(coll, "allreduce") != 0)
            continue;
        for (int s = 0; s < MODEL_SIZES; s++)
            for (int a = 0; a < MODEL_ALGS; a++)
                if (bytes == model_sizes[s] &&
                    strcmp(alg, model_algs[a]) == 0 && pred_out[s][a] < 0) {
                    pred_out[s][a] = pred;
                    meas_out[s][a] = meas;
                }
    }
    fclose(f);
}

/* --model: the model ranks the implementations as they are measured,
 * wherever it tells two apart by MODEL_FACTOR or more. */
static void test_model_ranks(void **state)
{
    double pred[MODEL_SIZES][MODEL_ALGS], meas[MODEL_SIZES][MODEL_ALGS];
    char path[160], first[512] = "";
    int checked = 0, wrong = 0;
    run_t *r = *state;
    require_tools();
    start(r, "--quick --hosts 2 --per-host 2 --rate 10 --collectives "
             "allreduce --algorithms RingAllreduce,RecursiveDoublingAllreduce,"
             "HierarchicalLeaderAllreduce,HierarchicalAllreduce -b 8 -e 4M "
             "-f 524288 --rounds 3 --iters 10 --model");
    time_t t0 = time(NULL);
    int rc = finish(r, MODEL_LIMIT_S);
    skip_if_no_hosts(r, rc);
    if (rc != 0) {
        show_log(r);
        fail_msg("bench/cluster --model exited %d", rc);
    }
    print_message("bench/cluster --model: %ld s\n", (long)(time(NULL) - t0));
    for (int s = 0; s < MODEL_SIZES; s++)
        for (int a = 0; a < MODEL_ALGS; a++)
            pred[s][a] = meas[s][a] = -1;
    snprintf(path, sizeof(path), "%s/out/model.tsv", r->dir);
    read_model_tsv(path, pred, meas);
    for (int s = 0; s < MODEL_SIZES; s++)
        for (int a = 0; a < MODEL_ALGS; a++)
            if (pred[s][a] <= 0 || meas[s][a] <= 0) {
                show_log(r);
                fail_msg("%s: no row of %s at %ld B with positive predicted "
                         "and measured times (%g, %g)",
                         path, model_algs[a], model_sizes[s], pred[s][a],
                         meas[s][a]);
            }
    for (int s = 0; s < MODEL_SIZES; s++)
        for (int i = 0; i < MODEL_ALGS; i++)
            for (int j = i + 1; j < MODEL_ALGS; j++) {
                /* f: predicted faster, l: predicted slower */
                int f = pred[s][i] <= pred[s][j] ? i : j, l = i + j - f;
                double factor = pred[s][l] / pred[s][f];
                if (factor < MODEL_FACTOR) {
                    print_message("skipped %ld B: %s and %s predicted "
                                  "within %.1fx (%.2f and %.2f us; measured "
                                  "%.2f and %.2f us)\n",
                                  model_sizes[s], model_algs[f], model_algs[l],
                                  MODEL_FACTOR, pred[s][f], pred[s][l],
                                  meas[s][f], meas[s][l]);
                    continue;
                }
                int same = meas[s][f] < meas[s][l];
                checked++;
                print_message("%s %ld B: %s faster than %s, predicted %.2f "
                              "< %.2f us (%.2fx), measured %.2f %s %.2f us\n",
                              same ? "agrees" : "DISAGREES", model_sizes[s],
                              model_algs[f], model_algs[l], pred[s][f],
                              pred[s][l], factor, meas[s][f],
                              same ? "<" : ">=", meas[s][l]);
                if (!same && wrong++ == 0)
                    snprintf(first, sizeof(first),
                             "at %ld B the model predicts %s faster than %s "
                             "(%.2f < %.2f us), measured %.2f >= %.2f us",
                             model_sizes[s], model_algs[f], model_algs[l],
                             pred[s][f], pred[s][l], meas[s][f], meas[s][l]);
            }
    if (wrong > 0) {
        show_log(r);
        fail_msg("%d of %d pairs predicted %.1fx apart are measured in the "
                 "other order; the first: %s",
                 wrong, checked, MODEL_FACTOR, first);
    }
    if (checked == 0) {
        show_log(r);
        fail_msg("the model told no pair apart by %.1fx: nothing compared",
                 MODEL_FACTOR);
    }
    assert_clean(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_quick, run_setup, run_teardown),
        cmocka_unit_test_setup_teardown(test_sigterm, run_setup, run_teardown),
        cmocka_unit_test_setup_teardown(test_model_ranks, run_setup,
                                        run_teardown),
    };
    return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
