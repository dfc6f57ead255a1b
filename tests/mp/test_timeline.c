/*
 * TUTTI_TIMELINE through the real launcher: tutti-perf on 4 processes
 * writes one Chrome trace per task, and every file is read back with a
 * strict JSON reader: valid JSON, the task's process and its rank's track
 * named, the executions tutti-perf runs counted exactly, the algorithms'
 * phases in order inside their executions with the bytes of their
 * transfers, every transfer inside its execution on the member's tracks,
 * every track nested as the viewers require, nothing dropped or left
 * unfinished.  Also the file name without %t, and a path that cannot be
 * written.
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

#include "test_json.h"
#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"
#define MERGE TUTTI_TEST_SRCDIR "/tools/tutti-timeline-merge"

#define TASKS 4
#define ITERS 3
#define WARMUPS 1
#define MIN_BYTES 8
#define MAX_BYTES 65536 /* -e 64K, -f 2 (the default step) */
#define LANE_TID 1000000
#define HELPER_KEYS (1ULL << 63) /* the blocking helpers' keys */

/* An X event as the checks need it. */
typedef struct {
    int tid;
    const char *cat, *name;
    uint64_t ts, end;          /* ns */
    uint64_t instance, step;
    long long bytes;
    long long sent, received;  /* a phase's */
} ev_t;

static int sizes(void)
{
    int n = 0;
    for (long s = MIN_BYTES; s <= MAX_BYTES; s *= 2)
        n++;
    return n;
}

/* "0x1f" of args key @p key, or fails. */
static uint64_t hex_arg(const test_json_t *args, const char *key)
{
    const char *s = test_json_str(args, key);
    if (s == NULL || strncmp(s, "0x", 2) != 0)
        fail_msg("args.%s: expected a string 0x...", key);
    return strtoull(s + 2, NULL, 16);
}

static long long int_arg(const test_json_t *args, const char *key)
{
    long long v = 0;
    if (test_json_int(test_json_get(args, key), &v) != 0)
        fail_msg("args.%s: expected a whole number", key);
    return v;
}

/* The trace at @p path (free with test_json_free()); fails naming the
 * place if it is not valid JSON. */
static test_json_t *read_trace(const char *path)
{
    char err[256];
    char *text = test_json_slurp(path);
    if (text == NULL)
        fail_msg("%s: cannot be read", path);
    test_json_t *root = test_json_parse(text, err, sizeof(err));
    free(text);
    if (root == NULL)
        fail_msg("%s: not valid JSON: %s", path, err);
    assert_int_equal(root->type, TEST_JSON_OBJECT);
    return root;
}

static int by_start(const void *a, const void *b)
{
    const ev_t *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* parents first */
}

/* Perfetto draws a track's complete events only where they nest: sorted
 * by start, each one ends within every one still open when it starts. */
static void check_nesting(ev_t *ev, size_t n)
{
    uint64_t stack[64];
    int depth = 0, tid = -1;
    qsort(ev, n, sizeof(*ev), by_start);
    for (size_t i = 0; i < n; i++) {
        if (ev[i].tid != tid) {
            tid = ev[i].tid;
            depth = 0;
        }
        while (depth > 0 && stack[depth - 1] <= ev[i].ts)
            depth--;
        if (depth > 0 && ev[i].end > stack[depth - 1])
            fail_msg("track %d: %s at %llu ns overlaps an event open then "
                     "without nesting in it", tid, ev[i].name,
                     (unsigned long long)ev[i].ts);
        assert_true(depth < 64);
        stack[depth++] = ev[i].end;
    }
}

/* The execution of (@p instance, @p step) on track @p tid, or NULL. */
static const ev_t *exec_of(const ev_t *ev, size_t n, int tid,
                           uint64_t instance, uint64_t step)
{
    for (size_t i = 0; i < n; i++)
        if (ev[i].tid == tid && strcmp(ev[i].cat, "execution") == 0 &&
            ev[i].instance == instance && ev[i].step == step)
            return &ev[i];
    return NULL;
}

/* The phases of every execution: on the rank's track inside it, in the
 * order each algorithm has them (RingAllreduce: reduce-scatter then
 * allgather; RecursiveDoublingAllreduce on 4 ranks, a power of two: the
 * exchanges alone), their bytes those of its transfers. */
static void check_phases(const char *path, const ev_t *ev, size_t n,
                         int main_tid)
{
    int phases_seen = 0;
    for (size_t i = 0; i < n; i++) {
        const ev_t *x = &ev[i];
        const char *names[8];
        int k = 0;
        long long sent = 0, received = 0, sends = 0, recvs = 0;
        if (strcmp(x->cat, "execution") != 0)
            continue;
        for (size_t j = 0; j < n; j++) {
            const ev_t *y = &ev[j];
            if (y->instance != x->instance || y->step != x->step)
                continue;
            if (strcmp(y->cat, "transfer") == 0) {
                sends += strcmp(y->name, "send") == 0 ? y->bytes : 0;
                recvs += strcmp(y->name, "recv") == 0 ? y->bytes : 0;
            }
            if (strcmp(y->cat, "phase") != 0)
                continue;
            if (y->tid != main_tid || y->ts < x->ts || y->end > x->end)
                fail_msg("%s: phase %s of instance 0x%llx step %llu is not "
                         "inside its execution on the rank's track", path,
                         y->name, (unsigned long long)y->instance,
                         (unsigned long long)y->step);
            assert_true(k < 8);
            names[k++] = y->name; /* the file has them in order */
            sent += y->sent;
            received += y->received;
        }
        if (k == 0)
            fail_msg("%s: %s of instance 0x%llx step %llu has no phase",
                     path, x->name, (unsigned long long)x->instance,
                     (unsigned long long)x->step);
        phases_seen += k;
        if (strcmp(x->name, "RingAllreduce") == 0) {
            assert_int_equal(k, 2);
            assert_string_equal(names[0], "reduce-scatter");
            assert_string_equal(names[1], "allgather");
        } else if (strcmp(x->name, "RecursiveDoublingAllreduce") == 0) {
            assert_int_equal(k, 1);
            assert_string_equal(names[0], "exchange");
        } else {
            fail_msg("%s: an execution of %s: expected RingAllreduce or "
                     "RecursiveDoublingAllreduce", path, x->name);
        }
        if (sent != sends || received != recvs)
            fail_msg("%s: instance 0x%llx step %llu: phases sent %lld and "
                     "received %lld bytes, its transfers %lld and %lld",
                     path, (unsigned long long)x->instance,
                     (unsigned long long)x->step, sent, received, sends,
                     recvs);
    }
    assert_true(phases_seen > 0);
}

/* Everything the file of @p task must say; the rank its track names is
 * marked in @p ranks_seen. */
static void check_trace(const char *path, int task, int *ranks_seen)
{
    test_json_t *root;
    char want[64], main_name[96] = "";
    int main_tid = -1, process_named = 0;
    long long v = 0;

    root = read_trace(path);
    const test_json_t *evs = test_json_get(root, "traceEvents");
    const test_json_t *other = test_json_get(root, "otherData");
    assert_non_null(evs);
    assert_int_equal(evs->type, TEST_JSON_ARRAY);
    assert_int_equal(test_json_int(test_json_get(other, "dropped"), &v), 0);
    if (v != 0)
        fail_msg("%s: %lld events dropped", path, v);

    /* Metadata first: the process, the rank's track and its lanes. */
    snprintf(want, sizeof(want), "task %d", task);
    for (size_t i = 0; i < evs->n; i++) {
        const test_json_t *e = &evs->items[i];
        const char *ph = test_json_str(e, "ph"), *name;
        assert_non_null(ph);
        assert_int_equal(test_json_int(test_json_get(e, "pid"), &v), 0);
        assert_int_equal(v, task + 1); /* Perfetto keeps pid 0 */
        if (strcmp(ph, "M") != 0)
            continue;
        name = test_json_str(test_json_get(e, "args"), "name");
        const char *what = test_json_str(e, "name");
        assert_non_null(what);
        if (strcmp(what, "process_name") == 0) {
            assert_string_equal(name, want);
            process_named = 1;
        }
        if (strcmp(what, "thread_name") != 0 || strstr(name, " lane "))
            continue;
        int rank, t, used = 0;
        if (sscanf(name, "rank %d (task:%d/cpu:0)%n", &rank, &t, &used) != 2 ||
            name[used] != '\0')
            fail_msg("%s: track name '%s': expected 'rank R "
                     "(task:T/cpu:0)'", path, name);
        assert_int_equal(t, task);
        assert_int_equal(test_json_int(test_json_get(e, "tid"), &v), 0);
        if (main_tid >= 0 && (v != main_tid || strcmp(name, main_name)))
            fail_msg("%s: a second rank track '%s'", path, name);
        main_tid = (int)v;
        assert_int_equal(main_tid, rank + 1); /* and tid 0 */
        snprintf(main_name, sizeof(main_name), "%s", name);
    }
    assert_true(process_named);
    if (main_tid < 0)
        fail_msg("%s: no rank track named", path);
    assert_in_range(main_tid, 1, TASKS);
    assert_int_equal(ranks_seen[main_tid - 1]++, 0);

    /* The complete events. */
    ev_t *ev = calloc(evs->n, sizeof(*ev));
    size_t n = 0;
    assert_non_null(ev);
    for (size_t i = 0; i < evs->n; i++) {
        const test_json_t *e = &evs->items[i];
        const test_json_t *args = test_json_get(e, "args");
        uint64_t dur = 0;
        if (strcmp(test_json_str(e, "ph"), "X") != 0)
            continue;
        ev_t *x = &ev[n++];
        assert_int_equal(test_json_int(test_json_get(e, "tid"), &v), 0);
        x->tid = (int)v;
        /* The rank's track or one of its lanes. */
        if (x->tid % LANE_TID != main_tid)
            fail_msg("%s: an event on track %d, not rank %d's", path, x->tid,
                     main_tid - 1);
        x->cat = test_json_str(e, "cat");
        x->name = test_json_str(e, "name");
        assert_non_null(x->cat);
        assert_non_null(x->name);
        if (test_json_ns(test_json_get(e, "ts"), &x->ts) != 0 ||
            test_json_ns(test_json_get(e, "dur"), &dur) != 0)
            fail_msg("%s: %s: ts and dur must be microseconds", path,
                     x->name);
        x->end = x->ts + dur;
        assert_non_null(args);
        if (test_json_get(args, "unfinished") != NULL ||
            test_json_get(args, "status") != NULL)
            fail_msg("%s: %s at %llu ns did not end well", path, x->name,
                     (unsigned long long)x->ts);
        if (strcmp(x->cat, "execution") == 0 ||
            strcmp(x->cat, "transfer") == 0) {
            x->instance = hex_arg(args, "instance");
            x->step = (uint64_t)int_arg(args, "step");
            x->bytes = int_arg(args, "bytes");
        }
        if (strcmp(x->cat, "resolution") == 0)
            x->instance = hex_arg(args, "instance");
        if (strcmp(x->cat, "phase") == 0) {
            x->instance = hex_arg(args, "instance");
            x->step = (uint64_t)int_arg(args, "step");
            x->sent = int_arg(args, "sent");
            x->received = int_arg(args, "received");
        }
    }

    /* Per rank: each size runs warm-ups, iterations and one checked run
     * of its own instance; then the blocking helpers: a barrier after the
     * warm-ups and an allreduce of the slowest time per size, and one
     * barrier at the end (tools/tutti-perf.c, bench_size and sweep). */
    int bench = 0, barriers = 0, maxtimes = 0, resolutions = 0, joins = 0;
    int transfers = 0, per_key[64] = {0};
    for (size_t i = 0; i < n; i++) {
        const ev_t *x = &ev[i];
        if (strcmp(x->cat, "resolution") == 0)
            resolutions++;
        if (strcmp(x->cat, "group") == 0)
            joins++;
        if (strcmp(x->cat, "transfer") == 0) {
            const ev_t *in = exec_of(ev, n, main_tid, x->instance, x->step);
            transfers++;
            if (in == NULL || x->ts < in->ts || x->end > in->end)
                fail_msg("%s: %s of instance 0x%llx step %llu at %llu ns is "
                         "not inside its execution on the rank's track",
                         path, x->name, (unsigned long long)x->instance,
                         (unsigned long long)x->step,
                         (unsigned long long)x->ts);
            continue;
        }
        if (strcmp(x->cat, "execution") != 0)
            continue;
        if (x->tid != main_tid)
            fail_msg("%s: an execution on a lane: executions overlap", path);
        if (x->instance < HELPER_KEYS) {
            assert_in_range(x->instance, 1, 63);
            assert_true(x->step < ITERS + WARMUPS + 1);
            /* Instance k is the sweep's k-th size (allreduce: per rank). */
            assert_int_equal(x->bytes,
                             (uint64_t)MIN_BYTES << (x->instance - 1));
            per_key[x->instance]++;
            bench++;
        } else if (x->bytes == 1) { /* tutti_barrier: one uint8 */
            barriers++;
        } else {                    /* the slowest time: one float64 */
            assert_int_equal(x->bytes, 8);
            maxtimes++;
        }
    }
    int s = sizes();
    assert_int_equal(bench, s * (ITERS + WARMUPS + 1));
    for (int k = 1; k <= s; k++)
        assert_int_equal(per_key[k], ITERS + WARMUPS + 1);
    assert_int_equal(barriers, s + 1);
    assert_int_equal(maxtimes, s);
    assert_int_equal(bench + barriers + maxtimes,
                     s * (ITERS + WARMUPS + 1) + 2 * s + 1);
    /* One resolution per instance: the sizes' and the two helpers'. */
    assert_int_equal(resolutions, s + 2);
    assert_int_equal(joins, 1);
    /* Every benchmark execution moved data both ways on 4 ranks. */
    for (int k = 1; k <= s; k++) {
        for (uint64_t step = 0; step < ITERS + WARMUPS + 1; step++) {
            int sends = 0, recvs = 0;
            for (size_t i = 0; i < n; i++) {
                if (ev[i].instance != (uint64_t)k || ev[i].step != step ||
                    strcmp(ev[i].cat, "transfer") != 0)
                    continue;
                sends += strcmp(ev[i].name, "send") == 0;
                recvs += strcmp(ev[i].name, "recv") == 0;
            }
            if (sends == 0 || recvs == 0)
                fail_msg("%s: instance %d step %llu: %d sends, %d receives",
                         path, k, (unsigned long long)step, sends, recvs);
        }
    }
    assert_true(transfers > 0);
    check_phases(path, ev, n, main_tid);
    check_nesting(ev, n);
    free(ev);
    test_json_free(root);
}

/* tools/tutti-timeline-merge makes one trace of the tasks' files in
 * @p dir: every event of each, each task still a process named. */
static void check_merged(const char *dir)
{
    char cmd[512], out[4096], path[128];
    test_json_t *root, *one;
    long long total = 0, v = 0;
    int named[TASKS] = {0};
    snprintf(cmd, sizeof(cmd), "%s -o %s/all.json %s/trace.[0-9]*.json",
             MERGE, dir, dir);
    test_run_ok(cmd, 1, out, sizeof(out));
    for (int t = 0; t < TASKS; t++) {
        snprintf(path, sizeof(path), "%s/trace.%d.json", dir, t);
        one = read_trace(path);
        total += (long long)test_json_get(one, "traceEvents")->n;
        test_json_free(one);
    }
    snprintf(path, sizeof(path), "%s/all.json", dir);
    root = read_trace(path);
    const test_json_t *evs = test_json_get(root, "traceEvents");
    assert_int_equal((long long)evs->n, total);
    for (size_t i = 0; i < evs->n; i++) {
        const test_json_t *e = &evs->items[i];
        if (strcmp(test_json_str(e, "name"), "process_name") != 0)
            continue;
        assert_int_equal(test_json_int(test_json_get(e, "pid"), &v), 0);
        assert_in_range(v, 1, TASKS);
        named[v - 1]++;
    }
    for (int t = 0; t < TASKS; t++)
        assert_int_equal(named[t], 1);
    const test_json_t *tasks = test_json_get(test_json_get(root,
                                                           "otherData"),
                                             "tasks");
    assert_non_null(tasks);
    assert_int_equal(tasks->n, TASKS);
    test_json_free(root);
    /* Its --help, and a file that is not a timeline refused. */
    test_run_ok(MERGE " --help", 1, out, sizeof(out));
    assert_non_null(strstr(out, "usage: tutti-timeline-merge [-o OUT] "
                                "FILE..."));
    snprintf(cmd, sizeof(cmd), "%s -o %s/no.json %s", MERGE, dir,
             TUTTI_TEST_SRCDIR "/README.md");
    assert_int_equal(test_run(cmd, 1, out, sizeof(out)), 2);
    snprintf(path, sizeof(path), "%s/no.json", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(cmd, sizeof(cmd), "%s -o %s/none/all.json %s/trace.0.json",
             MERGE, dir, dir);
    assert_int_equal(test_run(cmd, 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "/none/all.json: the directory "));
}

static void test_perf_run_writes_a_trace_per_task(void **state)
{
    char dir[64], cmd[1024], out[16384], path[128];
    int ranks_seen[TASKS] = {0};
    (void)state;
    assert_int_equal(test_tmpdir(dir, sizeof(dir), "timeline"), 0);
    snprintf(cmd, sizeof(cmd), "TUTTI_TIMELINE=%s/trace.%%t.json %s "
             "--timeout 120 -n %d %s -b %d -e %d -n %d -w %d", dir, RUN,
             TASKS, PERF, MIN_BYTES, MAX_BYTES, ITERS, WARMUPS);
    if (test_run(cmd, 1, out, sizeof(out)) != 0) {
        test_show(cmd, out);
        fail_msg("tutti-perf failed (output above)");
    }
    for (int t = 0; t < TASKS; t++) {
        snprintf(path, sizeof(path), "%s/trace.%d.json", dir, t);
        check_trace(path, t, ranks_seen);
    }
    for (int r = 0; r < TASKS; r++)
        assert_int_equal(ranks_seen[r], 1);
    check_merged(dir);
    test_rmtree(dir);
}

/* Without %t the task goes before .json; nothing is written under the
 * name as given. */
static void test_path_without_placeholder(void **state)
{
    char dir[64], cmd[1024], out[8192], path[128];
    test_json_t *root;
    (void)state;
    assert_int_equal(test_tmpdir(dir, sizeof(dir), "timeline"), 0);
    snprintf(cmd, sizeof(cmd), "TUTTI_TIMELINE=%s/run.json %s --timeout 60 "
             "-n 2 %s -b 8 -e 8 -n 1 -w 0", dir, RUN, PERF);
    test_run_ok(cmd, 1, out, sizeof(out));
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof(path), "%s/run.%d.json", dir, t);
        root = read_trace(path);
        test_json_free(root);
    }
    snprintf(path, sizeof(path), "%s/run.json", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    test_rmtree(dir);
}

/* A path that cannot be written fails the context, naming the file and
 * the system's reason. */
static void test_unwritable_path_fails(void **state)
{
    static const char cmd[] = "TUTTI_TIMELINE=/nonexistent-dir/t.%t.json "
                              RUN " --timeout 60 -n 2 " PERF
                              " -b 8 -e 8 -n 1 -w 0";
    char out[8192];
    (void)state;
    int rc = test_run(cmd, 1, out, sizeof(out));
    assert_int_not_equal(rc, 0);
    /* Whichever task fails first stops the others. */
    if (strstr(out, "cannot create timeline file /nonexistent-dir/t.") ==
            NULL ||
        strstr(out, ".json (setting timeline '/nonexistent-dir/t.%t.json'): "
                    "No such file or directory") == NULL) {
        test_show(cmd, out);
        fail_msg("no clear error (output above)");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perf_run_writes_a_trace_per_task),
        cmocka_unit_test(test_path_without_placeholder),
        cmocka_unit_test(test_unwritable_path_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
