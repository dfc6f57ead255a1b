/*
 * The shm transport between real processes (through tutti-run, or started
 * by hand): results exact below and above the single-copy threshold with
 * single copy on (asserted used, or skipped with the reason where this
 * host does not permit it), forced off (asserted unused) and refused by
 * the kernel (two copies, said once with the errno text); no segment left
 * after a normal exit, tutti_abort or kill -9 of a rank, without
 * tutti-run's final sweep having to remove any; stale segments of a job id
 * removed by the next start of that job; shm.slots and shm.slot_size
 * reaching the module (the debug line each endpoint writes at connect:
 * "channels of S slots of B bytes"); registered memory (tutti_mem_alloc,
 * through tutti-perf --memory) read in place by every collective, with
 * verify on, with registered and heap members mixed, and shm.registered
 * off (asserted unused).
 *
 * Which path moved the data comes from the debug line each channel
 * endpoint writes at teardown ("received N message(s) by single copy (R of
 * them from registered memory) and M of 65536+ bytes through the slots"), and the shm module's info line
 * when a probe fails ("no single copy from rank R (pid P):
 * process_vm_readv: <errno text>").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_perf.h"
#include "test_util.h"
#include "../../transports/shm/shm_seg.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/coll_worker"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"
#define NO_VM_READV TUTTI_TEST_BUILDDIR "/tests/mp/.libs/no_vm_readv.so"
/* The shim goes first; a sanitizer build's runtime then is not the first
 * library, which ASan refuses unless told that this is intended. */
#define PRELOAD_NO_VM_READV                                                    \
    "TUTTI_SHM_SINGLE_COPY=auto ASAN_OPTIONS=verify_asan_link_order=0 "         \
    "LD_PRELOAD=" NO_VM_READV

/* tutti-run's line when its final sweep had to remove segments. */
#define SWEEP_LINE "tutti-run: removed"
#define SC_LINE "message(s) by single copy ("
#define NO_SC_LINE "no single copy from rank "

/* Nothing of job @p job is left in /dev/shm. */
static void expect_no_segments(const char *job)
{
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "tutti-%s-", job);
    assert_int_equal(test_shm_names_with(prefix), 0);
}

/* Totals of the channels' teardown lines in log @p path. */
typedef struct {
    long long sc_in, ring_large_in, sc_out, endpoints;
    long long map_in, map_out; /* of sc_in and sc_out: registered */
    char no_sc[512];    /* the probe's failure line, if any */
} paths_t;

static void read_paths(const char *path, paths_t *p)
{
    char line[4096];
    FILE *f = fopen(path, "r");
    memset(p, 0, sizeof(*p));
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *at = strstr(line, "received ");
        long long a, b, c, d, e;
        if (at != NULL && strstr(at, SC_LINE) != NULL &&
            sscanf(at, "received %lld message(s) by single copy (%lld of "
                   "them from registered memory) and %lld of %*d+ bytes "
                   "through the slots; sent %lld by single copy (%lld "
                   "registered)", &a, &d, &b, &c, &e) == 5) {
            p->sc_in += a;
            p->ring_large_in += b;
            p->sc_out += c;
            p->map_in += d;
            p->map_out += e;
            p->endpoints++;
        }
        if ((at = strstr(line, NO_SC_LINE)) != NULL && p->no_sc[0] == '\0')
            snprintf(p->no_sc, sizeof(p->no_sc), "%s", at);
    }
    fclose(f);
}

/* Every row of tutti-perf's table in @p out says #wrong 0; returns rows. */
static int expect_exact_rows(const char *out, const char *coll)
{
    char copy[16384];
    int rows = 0;
    snprintf(copy, sizeof(copy), "%s", out);
    for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
        test_perf_row_t r;
        if (l[0] == '#' || strncmp(l, "tutti", 5) == 0 ||
            !test_perf_row(l, &r))
            continue;
        if (r.coll[0] != '\0')
            assert_string_equal(r.coll, coll);
        if (r.wrong != 0)
            fail_msg("%lld elements wrong at %lld bytes:\n%s", r.wrong, r.size,
                     out);
        rows++;
    }
    return rows;
}

/* Runs tutti-perf on @p n processes for @p coll over @p sizes (its -b -e
 * -f options) with @p env set, debug log appended to @p log; checks the
 * results and that the library left nothing for tutti-run to sweep. */
static void perf_exact(const char *env, int n, const char *coll,
                       const char *dtype, const char *sizes, const char *log,
                       int want_rows)
{
    char cmd[1024], out[16384], job[64];
    snprintf(job, sizeof(job), "shmt%d-%ld", n, (long)getpid());
    snprintf(cmd, sizeof(cmd), "%s TUTTI_LOG_LEVEL=debug %s --timeout 120 "
             "--job-id %s -n %d %s -c %s -d %s %s -n 2 -w 1 2>>%s", env, RUN,
             job, n, PERF, coll, dtype, sizes, log);
    test_run_ok(cmd, 0, out, sizeof(out));
    assert_int_equal(expect_exact_rows(out, coll), want_rows);
    if (test_file_has(log, SWEEP_LINE))
        fail_msg("tutti-run had to remove segments of job %s (%s)", job, log);
    expect_no_segments(job);
}

/* allreduce and broadcast on @p n processes at sizes below and above the
 * threshold (64 KiB per message): an odd sweep and 1 MiB + 3. */
static void run_sizes(const char *env, int n, const char *log)
{
    perf_exact(env, n, "allreduce", "int32", "-b 1000 -e 2M -f 37", log, 3);
    perf_exact(env, n, "allreduce", "int8", "-b 1048579 -e 1048579", log, 1);
    perf_exact(env, n, "broadcast", "uint8", "-b 999 -e 2M -f 37", log, 3);
    perf_exact(env, n, "broadcast", "uint8", "-b 1048579 -e 1048579", log, 1);
}

/* run_sizes() on @p n processes with shm.single_copy @p mode, the debug
 * log in /tmp/tutti-shm-<name><n>-<pid>.log (its path to @p log); the
 * paths the data took to @p p. */
static void sizes_with(const char *mode, const char *name, int n, char *log,
                       size_t len, paths_t *p)
{
    char env[64];
    snprintf(log, len, "/tmp/tutti-shm-%s%d-%ld.log", name, n, (long)getpid());
    unlink(log);
    snprintf(env, sizeof(env), "TUTTI_SHM_SINGLE_COPY=%s", mode);
    run_sizes(env, n, log);
    read_paths(log, p);
}

static void single_copy_on(int n)
{
    char log[96];
    paths_t p;
    sizes_with("auto", "on", n, log, sizeof(log), &p);
    if (n > sysconf(_SC_NPROCESSORS_ONLN)) { /* more members than CPUs */
        assert_int_equal(p.sc_in, 0);
        if (!test_file_has(log, "single copy off: this host runs more "
                                "members of the group than it has "
                                "processors"))
            fail_msg("no 'single copy off: this host runs more members' "
                     "line in %s", log);
        unlink(log);
        return;
    }
    if (p.no_sc[0] != '\0') {
        unlink(log);
        print_message("single copy is not permitted here: %s", p.no_sc);
        skip();
    }
    print_message("%d processes: %lld messages by single copy, %lld large "
                  "ones through the slots (%lld endpoints)\n", n, p.sc_in,
                  p.ring_large_in, p.endpoints);
    assert_true(p.endpoints > 0);
    assert_true(p.sc_in > 0);
    assert_int_equal(p.sc_in, p.sc_out);
    /* Only whole blocks go by single copy (allreduce's finished segments);
     * reduced segments and broadcast's pipeline chunks keep to the slots. */
    assert_true(p.ring_large_in > 0);
    unlink(log);
}

static void single_copy_off(int n)
{
    char log[96];
    paths_t p;
    sizes_with("off", "off", n, log, sizeof(log), &p);
    print_message("%d processes, single copy off: %lld large messages "
                  "through the slots (%lld endpoints)\n", n, p.ring_large_in,
                  p.endpoints);
    assert_true(p.endpoints > 0);
    assert_int_equal(p.sc_in, 0);
    assert_int_equal(p.sc_out, 0);
    assert_true(p.ring_large_in > 0);
    if (!test_file_has(log, "single copy off (shm.single_copy)"))
        fail_msg("no 'single copy off (shm.single_copy)' in %s", log);
    unlink(log);
}

/* Registered memory (tutti_mem_alloc through tutti-perf --memory) on
 * @p n processes with single copy off, @p memory "registered" or "mixed",
 * @p env added: every collective exact at sizes around shm's 16 KiB
 * threshold and above; the paths to @p p. */
static void registered_sizes(const char *env, const char *memory, int n,
                             paths_t *p)
{
    static const char *const colls[] = {"allreduce", "broadcast",
                                        "allgather", "reduce_scatter",
                                        "alltoall"};
    char log[96], e[160], sizes[96];
    snprintf(log, sizeof(log), "/tmp/tutti-shm-reg%d-%ld.log", n,
             (long)getpid());
    unlink(log);
    snprintf(e, sizeof(e), "TUTTI_SHM_SINGLE_COPY=off %s", env);
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        snprintf(sizes, sizeof(sizes), "--memory %s -b 4000 -e 4M -f 32",
                 memory);
        perf_exact(e, n, colls[i], "int32", sizes, log, 3);
        snprintf(sizes, sizeof(sizes), "--memory %s -b 1048579 -e 1048579",
                 memory);
        perf_exact(e, n, colls[i], "uint8", sizes, log, 1);
    }
    read_paths(log, p);
    print_message("%d processes, %s memory%s%s: %lld messages read in "
                  "place, %lld large ones through the slots\n", n, memory,
                  env[0] ? ", " : "", env, p->map_in, p->ring_large_in);
    assert_true(p->endpoints > 0);
    unlink(log);
}

static void registered(int n)
{
    paths_t p;
    registered_sizes("", "registered", n, &p);
    assert_true(p.map_in > 0);
    assert_int_equal(p.map_in, p.map_out);
    assert_int_equal(p.map_in, p.sc_in); /* nothing by process_vm_readv */
    /* From 3 members, RingReduceScatter out of place forwards partials
     * from scratch of its own, which is not registered: only those keep
     * to the slots. */
    if (n == 2)
        assert_int_equal(p.ring_large_in, 0);
}

static void test_registered_2(void **s) { (void)s; registered(2); }
static void test_registered_3(void **s) { (void)s; registered(3); }

/* verify: checksum: a reduced message from a mapping goes through the
 * bounce block and is summed there; still exact. */
static void test_registered_verify(void **state)
{
    paths_t p;
    (void)state;
    registered_sizes("TUTTI_VERIFY=checksum", "registered", 3, &p);
    assert_true(p.map_in > 0);
    assert_int_equal(p.map_in, p.map_out);
}

/* Even ranks registered, odd ones heap: each send goes its own way. */
static void test_registered_mixed(void **state)
{
    paths_t p;
    (void)state;
    registered_sizes("", "mixed", 3, &p);
    assert_true(p.map_in > 0);
    assert_int_equal(p.map_in, p.map_out);
    assert_true(p.ring_large_in > 0);
}

/* shm.registered off: registered memory moves through the slots. */
static void test_registered_off(void **state)
{
    paths_t p;
    (void)state;
    registered_sizes("TUTTI_SHM_REGISTERED=off", "registered", 2, &p);
    assert_int_equal(p.map_in, 0);
    assert_int_equal(p.map_out, 0);
    assert_true(p.ring_large_in > 0);
}

static void test_single_copy_on_2(void **s) { (void)s; single_copy_on(2); }
static void test_single_copy_on_3(void **s) { (void)s; single_copy_on(3); }
static void test_single_copy_off_2(void **s) { (void)s; single_copy_off(2); }
static void test_single_copy_off_3(void **s) { (void)s; single_copy_off(3); }

/* Where process_vm_readv is refused (the no_vm_readv shim stands in for
 * Yama ptrace_scope or a container without the capability), the probe
 * says why, once per process, and the data takes two copies, exact. */
static void test_single_copy_refused(void **state)
{
    char log[96];
    paths_t p;
    (void)state;
    snprintf(log, sizeof(log), "/tmp/tutti-shm-refused-%ld.log",
             (long)getpid());
    unlink(log);
    perf_exact(PRELOAD_NO_VM_READV, 2,
               "allreduce", "int8",
               "-b 1048579 -e 1048579", log, 1);
    perf_exact(PRELOAD_NO_VM_READV, 2,
               "broadcast", "uint8",
               "-b 1048579 -e 1048579", log, 1);
    read_paths(log, &p);
    if (strstr(p.no_sc, "process_vm_readv: Operation not permitted; large "
                        "messages take two copies") == NULL)
        fail_msg("no probe failure with its errno text in %s", log);
    assert_int_equal(p.sc_in, 0);
    assert_int_equal(p.sc_out, 0);
    assert_true(p.ring_large_in > 0);
    unlink(log);
}

/* A single-copy range whose minimum is above its maximum is refused at
 * connect, naming both settings and their values. */
static void test_single_copy_range_refused(void **state)
{
    char out[8192];
    (void)state;
    int rc = test_run("TUTTI_SHM_SINGLE_COPY_MIN=2M "
                      "TUTTI_SHM_SINGLE_COPY_MAX=1M TUTTI_TIMEOUT=30 " RUN
                      " --timeout 60 -n 2 " PERF " -b 8 -e 8", 1, out,
                      sizeof(out));
    assert_int_not_equal(rc, 0);
    if (strstr(out, "shm.single_copy_min (TUTTI_SHM_SINGLE_COPY_MIN) is "
                    "2097152 bytes, above shm.single_copy_max") == NULL ||
        strstr(out, "expected min <= max") == NULL)
        fail_msg("no refusal naming both settings in:\n%s", out);
}

/* Geometries the shm module states in log @p path ("channels of S slots of
 * B bytes"): the data groups' (@p data) and the control plane's (@p ctrl),
 * each with how many lines said it, and the first line of a group that
 * disagrees with an earlier one of its kind in @p odd. */
typedef struct {
    unsigned slots;
    unsigned long long slot_size;
    int lines;
} geometry_t;

static void read_geometry(const char *path, geometry_t *data, geometry_t *ctrl,
                          char *odd, size_t odd_len)
{
    char line[4096];
    FILE *f = fopen(path, "r");
    memset(data, 0, sizeof(*data));
    memset(ctrl, 0, sizeof(*ctrl));
    odd[0] = '\0';
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *at = strstr(line, ": channels of ");
        geometry_t g = {0, 0, 1};
        if (at == NULL || sscanf(at, ": channels of %u slots of %llu bytes",
                                 &g.slots, &g.slot_size) != 2)
            continue;
        geometry_t *kind = strstr(line, "group 0xc0c0c0c0c0c0c0c0 ") != NULL
                               ? ctrl
                               : data;
        if (kind->lines > 0 && (kind->slots != g.slots ||
                                kind->slot_size != g.slot_size) &&
            odd[0] == '\0')
            snprintf(odd, odd_len, "%s", line);
        kind->slots = g.slots;
        kind->slot_size = g.slot_size;
        kind->lines++;
    }
    fclose(f);
}

/* shm.slots and shm.slot_size reach the module: with TUTTI_SHM_SLOTS=32 and
 * TUTTI_SHM_SLOT_SIZE=16K every data group's channels have 32 slots of 16
 * KiB (the defaults are 16 of 64 KiB), while the control plane keeps the
 * 8 of 4 KiB the core asks for; results exact. */
static void test_slots_and_slot_size(void **state)
{
    char log[96], odd[4096];
    geometry_t data, ctrl;
    (void)state;
    snprintf(log, sizeof(log), "/tmp/tutti-shm-geometry-%ld.log",
             (long)getpid());
    unlink(log);
    perf_exact("TUTTI_SHM_SLOTS=32 TUTTI_SHM_SLOT_SIZE=16K", 3, "allreduce",
               "int32", "-b 1000 -e 2M -f 37", log, 3);
    read_geometry(log, &data, &ctrl, odd, sizeof(odd));
    if (odd[0] != '\0')
        fail_msg("geometries differ within a kind of group: %s(%s)", odd, log);
    if (data.lines < 3)
        fail_msg("%d data group line(s) stating the channels' geometry in %s; "
                 "expected one per rank", data.lines, log);
    assert_int_equal(data.slots, 32);
    assert_int_equal(data.slot_size, 16384);
    assert_int_equal(ctrl.lines, 3);
    assert_int_equal(ctrl.slots, 8);
    assert_int_equal(ctrl.slot_size, 4096);
    unlink(log);
}

/* Runs coll_worker @p mode under tutti-run as job @p job; returns its exit
 * status; the output (stderr joined) in @p out. */
static int worker_job(const char *job, const char *mode, char *out,
                      size_t len)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "TUTTI_LOG_LEVEL=error %s --grace 10 "
             "--timeout 60 --job-id %s -n 3 %s %s", RUN, job, WORKER, mode);
    return test_run(cmd, 1, out, len);
}

/* tutti_abort on task 0: every task fails with the reason and starts over;
 * the library leaves no segment (tutti-run sweeps none). */
static void test_no_segments_after_abort(void **state)
{
    char out[8192], job[64];
    (void)state;
    snprintf(job, sizeof(job), "shmabort-%ld", (long)getpid());
    int rc = worker_job(job, "--abort", out, sizeof(out));
    if (rc != 0)
        fail_msg("exited %d:\n%s", rc, out);
    assert_non_null(strstr(out, "aborted by task 0: operator stop"));
    assert_null(strstr(out, SWEEP_LINE));
    expect_no_segments(job);
}

/* kill -9 of task 1 in a 16 MiB allreduce: its peers fail naming it, and
 * no segment is left for tutti-run to sweep (names go once attached). */
static void test_no_segments_after_kill(void **state)
{
    char out[8192], job[64];
    (void)state;
    snprintf(job, sizeof(job), "shmkill-%ld", (long)getpid());
    int rc = worker_job(job, "--victim", out, sizeof(out));
    if (rc != 128 + 9 || strstr(out, "task 1 (rank 1) is gone") == NULL)
        fail_msg("exited %d, task 1 not named gone:\n%s", rc, out);
    assert_null(strstr(out, SWEEP_LINE));
    expect_no_segments(job);
}

/* Starts coll_worker --join as task @p task of 2 of job @p job, by hand
 * (no tutti-run); returns its pid. */
static pid_t start_task(const char *job, int task)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char t[16];
        snprintf(t, sizeof(t), "%d", task);
        setenv("TUTTI_JOB_ID", job, 1);
        setenv("TUTTI_RANK", t, 1);
        setenv("TUTTI_SIZE", "2", 1);
        setenv("TUTTI_LOG_LEVEL", "off", 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(WORKER, WORKER, "--join", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Segments of /dev/shm whose names start with @p prefix and whose header
 * is written: the shm transport writes its magic last. */
static int complete_segments(const char *prefix)
{
    return test_shm_names_magic(prefix, SEG_MAGIC);
}

/* An empty segment named @p name (shm_open form), as left by a creator
 * that died before writing its header, modified @p age_s seconds ago. */
static void plant_incomplete(const char *name, int age_s)
{
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 8192), 0);
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age_s;
    ts[1] = ts[0];
    assert_int_equal(futimens(fd, ts), 0);
    close(fd);
}

/* A task killed (kill -9) in set-up leaves its segment, and no tutti-run
 * sweeps it; a creator that died before its header leaves an empty one.
 * The next start of that job id removes both, saying so; a recent empty
 * one (its creator may be writing it) and one of another job whose id
 * only starts with this one's stay. */
static void test_stale_segments_removed_by_next_start(void **state)
{
    char job[64], prefix[96], name[160], other[160], young[160];
    char cmd[1024], out[8192];
    (void)state;
    snprintf(job, sizeof(job), "shmstale-%ld", (long)getpid());
    snprintf(prefix, sizeof(prefix), "tutti-%s-", job);

    pid_t pid = start_task(job, 0);
    /* Killed once a segment is whole (its header written), so the next
     * start finds its owner gone, not a segment still being made. */
    for (int i = 0; i < 200 && complete_segments(prefix) == 0; i++)
        usleep(50000);
    assert_true(complete_segments(prefix) > 0);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    int crashed = test_shm_names_with(prefix);
    assert_true(crashed > 0);

    snprintf(name, sizeof(name), "/tutti-%s-g00000000000000ab-r5", job);
    plant_incomplete(name, 3600);
    snprintf(young, sizeof(young), "/tutti-%s-g00000000000000ab-r6", job);
    plant_incomplete(young, 0);
    snprintf(other, sizeof(other), "/tutti-%s-x-g00000000000000ab-r0", job);
    plant_incomplete(other, 3600);

    /* Task 1 judges the crashed task's segments stale and waits 1.5 s
     * before unlinking them; task 0 starts meanwhile.  Without the host's
     * lock on names, task 0 removed the same names, created its own
     * segment under one of them, and task 1 then unlinked that: the join
     * hung. */
    snprintf(cmd, sizeof(cmd), "TUTTI_JOB_ID=%s TUTTI_SIZE=2 "
             "TUTTI_TIMEOUT=30 TUTTI_LOG_LEVEL=warn sh -c "
             "'(TUTTI_RANK=1 TUTTI_SHM_TEST_SCRUB_DELAY_MS=1500 exec %s "
             "--join) & p=$!; sleep 0.5; TUTTI_RANK=0 %s --join; a=$?; "
             "wait $p; exit $((a | $?))'",
             job, WORKER, WORKER);
    test_run_ok(cmd, 1, out, sizeof(out));
    assert_non_null(strstr(out, "coll_worker: task 0: joined"));
    assert_non_null(strstr(out, "coll_worker: task 1: joined"));
    char want[512];
    snprintf(want, sizeof(want), "removed stale segment /dev/shm%s of job %s: "
             "left incomplete", name, job);
    if (strstr(out, want) == NULL)
        fail_msg("no '%s' in:\n%s", want, out);
    snprintf(want, sizeof(want), "of job %s: its owner, pid %d, is gone",
             job, (int)pid);
    if (strstr(out, want) == NULL)
        fail_msg("no '%s' in:\n%s", want, out);
    /* Only the young one is left of this job (the other job's name starts
     * with this job's prefix too). */
    assert_int_equal(test_shm_names_with(prefix), 2);
    assert_int_equal(shm_unlink(young), 0);
    assert_int_equal(shm_unlink(other), 0);
    expect_no_segments(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_copy_on_2),
        cmocka_unit_test(test_single_copy_on_3),
        cmocka_unit_test(test_single_copy_off_2),
        cmocka_unit_test(test_single_copy_off_3),
        cmocka_unit_test(test_single_copy_refused),
        cmocka_unit_test(test_single_copy_range_refused),
        cmocka_unit_test(test_registered_2),
        cmocka_unit_test(test_registered_3),
        cmocka_unit_test(test_registered_verify),
        cmocka_unit_test(test_registered_mixed),
        cmocka_unit_test(test_registered_off),
        cmocka_unit_test(test_slots_and_slot_size),
        cmocka_unit_test(test_no_segments_after_abort),
        cmocka_unit_test(test_no_segments_after_kill),
        cmocka_unit_test(test_stale_segments_removed_by_next_start),
    };
    return cmocka_run_group_tests_name("shm", tests, NULL, NULL);
}
