/*
 * The timeline's file in one process (exec/timeline.c): names per task, a
 * full buffer that drops and counts, a flush on failure that writes what
 * is in flight as unfinished and leaves the file valid JSON, tracks of
 * members of one task, a group of two members in one process whose
 * events are written while they are still joined (a second after the last
 * write) with the algorithm's phases, the setting's key, variable and
 * listing, and a symbolic link at its file's name (or log_file's)
 * refused; and the flight recorder's clock readings.
 */
#define _GNU_SOURCE /* open_memstream */
#include <pthread.h>
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

#include <tutti/tutti.h>

#include "base/log.h"
#include "base/paths.h"
#include "config/config.h"
#include "exec/flight.h"
#include "exec/timeline.h"
#include "members.h"
#include "test_json.h"
#include "test_util.h"

/* Waits until the coarse clock has moved past @p t (it ticks every few
 * ms); 1 when it did within a second. */
static int coarse_after(double t)
{
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 1000 && tutti__now_coarse() <= t; i++)
        nanosleep(&ms, NULL);
    return tutti__now_coarse() > t;
}

/* The flight recorder, the timeline's sibling (exec/flight.h): a launch
 * recorded right after its own issue takes the issue's clock reading;
 * after tutti__flight_unstamp() or another launch, a launch reads the
 * clock again, and so does every finish.  The clock is let move between
 * the calls, so a reading taken again differs from the issue's. */
static void test_flight_launch_times(void **state)
{
    tutti__flight_t f;
    (void)state;
    memset(&f, 0, sizeof(f));
#define ENTRY(seq) (&f.e[(seq) % TUTTI_FLIGHT_ENTRIES])
    uint64_t a = tutti__flight_issue(&f, 1, 0, "impl", 8);
    assert_true(coarse_after(ENTRY(a)->issued));
    tutti__flight_launch(&f, a);
    assert_true(ENTRY(a)->launched == ENTRY(a)->issued);
    tutti__flight_finish(&f, a, TUTTI_OK);
    assert_true(ENTRY(a)->finished > ENTRY(a)->issued);
    assert_int_equal(ENTRY(a)->state, TUTTI_FLIGHT_DONE);
    /* The issuing call ended (or a callback ran) before the launch. */
    uint64_t b = tutti__flight_issue(&f, 2, 0, "impl", 8);
    tutti__flight_unstamp(&f);
    assert_true(coarse_after(ENTRY(b)->issued));
    tutti__flight_launch(&f, b);
    assert_true(ENTRY(b)->launched > ENTRY(b)->issued);
    /* Another launch came first: its run may have taken time. */
    uint64_t c = tutti__flight_issue(&f, 3, 0, "impl", 8);
    uint64_t d = tutti__flight_issue(&f, 4, 0, "impl", 8);
    assert_true(coarse_after(ENTRY(d)->issued));
    tutti__flight_launch(&f, c);
    tutti__flight_launch(&f, d);
    assert_true(ENTRY(c)->launched > ENTRY(c)->issued);
    assert_true(ENTRY(d)->launched > ENTRY(d)->issued);
    /* An entry overwritten since is left alone. */
    for (int i = 0; i < TUTTI_FLIGHT_ENTRIES; i++)
        tutti__flight_issue(&f, 5, 0, "impl", 8);
    tutti__flight_unstamp(&f);
    tutti__flight_finish(&f, a, TUTTI_ERR_PEER);
    assert_int_equal(ENTRY(a)->state, TUTTI_FLIGHT_WAITING);
#undef ENTRY
}

static void test_path_per_task(void **state)
{
    char buf[128];
    (void)state;
    tutti__task_path("/tmp/t.%t.json", 3, ".json", buf, sizeof(buf));
    assert_string_equal(buf, "/tmp/t.3.json");
    tutti__task_path("run-%t/x%t", 12, ".json", buf, sizeof(buf));
    assert_string_equal(buf, "run-12/x12");
    tutti__task_path("trace.json", 0, ".json", buf, sizeof(buf));
    assert_string_equal(buf, "trace.0.json");
    tutti__task_path("trace", 7, ".json", buf, sizeof(buf));
    assert_string_equal(buf, "trace.7");
    tutti__task_path("%%t%", 1, ".json", buf, sizeof(buf));
    assert_string_equal(buf, "%1%");
    /* Cut to the buffer, terminated. */
    tutti__task_path("abcdef%t", 123456, ".json", buf, 8);
    assert_string_equal(buf, "abcdef1");
    /* log_file's form: no extension kept, every %t. */
    tutti__task_path("job.json", 3, NULL, buf, sizeof(buf));
    assert_string_equal(buf, "job.json.3");
    tutti__task_path("run-%t/job.%t.log", 4, NULL, buf, sizeof(buf));
    assert_string_equal(buf, "run-4/job.4.log");
}

/* The file at @p path, read whole (free with test_json_free()): fails
 * unless it is valid JSON. */
static test_json_t *read_json(const char *path)
{
    char err[256], *text = test_json_slurp(path);
    assert_non_null(text);
    test_json_t *root = test_json_parse(text, err, sizeof(err));
    free(text);
    if (root == NULL)
        fail_msg("%s: %s", path, err);
    return root;
}

/* Events of phase @p ph in @p root; *last_out the last of them. */
static size_t count_ph(const test_json_t *root, const char *ph,
                       const test_json_t **last_out)
{
    const test_json_t *evs = test_json_get(root, "traceEvents");
    size_t n = 0;
    assert_non_null(evs);
    for (size_t i = 0; i < evs->n; i++) {
        if (strcmp(test_json_str(&evs->items[i], "ph"), ph) == 0) {
            n++;
            if (last_out != NULL)
                *last_out = &evs->items[i];
        }
    }
    return n;
}

static long long other(const test_json_t *root, const char *key)
{
    long long v = -1;
    assert_int_equal(test_json_int(test_json_get(test_json_get(root,
                                                                "otherData"),
                                                  key), &v), 0);
    return v;
}

/* A directory of the test's own in @p t, and in it the file of task
 * @p task for @p name (a pattern), opened; its name in @p path. */
static tutti__timeline_file_t *open_in_tmp(test_tmp_t *t, const char *name,
                                           int task, char *path, size_t len)
{
    tutti__timeline_file_t *f = NULL;
    char pattern[160];
    test_tmp_make(t, "timeline", "x", NULL);
    snprintf(pattern, sizeof(pattern), "%s/%s", t->dir, name);
    assert_int_equal(tutti__timeline_open(pattern, task, &f), TUTTI_OK);
    tutti__task_path(pattern, task, ".json", path, len);
    return f;
}

static void test_full_buffer_drops_and_counts(void **state)
{
    test_tmp_t t;
    tutti__timeline_t *m;
    test_json_t *root;
    const test_json_t *mark = NULL;
    char path[160];
    (void)state;
    tutti__timeline_file_t *f = open_in_tmp(&t, "full.%t.json", 5, path,
                                            sizeof(path));
    assert_int_equal(tutti__timeline_member(f, 0x42, 2, "task:5/cpu:0", &m),
                     TUTTI_OK);
    for (uint32_t i = 0; i < TUTTI__TIMELINE_EVENTS + 10; i++) {
        uint64_t seq = tutti__timeline_resolve_begin(m, i);
        assert_int_equal(seq == 0, i >= TUTTI__TIMELINE_EVENTS);
        tutti__timeline_resolve_end(m, seq, TUTTI_OK, "SomeAllreduce");
    }
    tutti__timeline_leave(m);
    tutti__timeline_close(f);
    assert_non_null(strstr(path, "/full.5.json"));
    root = read_json(path);
    assert_int_equal(other(root, "dropped"), 10);
    assert_int_equal(other(root, "events"), TUTTI__TIMELINE_EVENTS);
    assert_int_equal(count_ph(root, "X", NULL), TUTTI__TIMELINE_EVENTS);
    /* A mark on the member's track says so where one looks. */
    assert_int_equal(count_ph(root, "i", &mark), 1);
    assert_string_equal(test_json_str(mark, "name"),
                        "timeline full: 10 events dropped");
    long long v = 0;
    assert_int_equal(test_json_int(test_json_get(mark, "tid"), &v), 0);
    assert_int_equal(v, 3); /* rank 2's track */
    test_json_free(root);
    test_rmtree(t.dir);
}

static void test_flush_writes_unfinished_and_stays_valid(void **state)
{
    test_tmp_t t;
    tutti__timeline_t *m;
    test_json_t *root;
    const test_json_t *x = NULL;
    char path[160];
    (void)state;
    tutti__timeline_file_t *f = open_in_tmp(&t, "flush.json", 1, path,
                                            sizeof(path));
    /* Whole JSON from the start. */
    root = read_json(path);
    assert_int_equal(count_ph(root, "X", NULL), 0);
    test_json_free(root);

    assert_int_equal(tutti__timeline_member(f, 7, 0, "task:1/cpu:0", &m),
                     TUTTI_OK);
    uint64_t open = tutti__timeline_resolve_begin(m, 0x99);
    assert_int_not_equal(open, 0);
    tutti__timeline_flush(m); /* its group failed */
    root = read_json(path);
    assert_int_equal(count_ph(root, "X", &x), 1);
    const test_json_t *args = test_json_get(x, "args");
    assert_non_null(test_json_get(args, "unfinished"));
    assert_string_equal(test_json_str(args, "instance"), "0x99");
    test_json_free(root);

    /* Written already: its end is not recorded twice. */
    tutti__timeline_resolve_end(m, open, TUTTI_OK, "X");
    uint64_t later = tutti__timeline_resolve_begin(m, 0x100);
    tutti__timeline_resolve_end(m, later, TUTTI_ERR_MISMATCH, NULL);
    tutti__timeline_leave(m);
    root = read_json(path);
    assert_int_equal(count_ph(root, "X", &x), 2);
    args = test_json_get(x, "args");
    assert_string_equal(test_json_str(args, "instance"), "0x100");
    assert_string_equal(test_json_str(args, "status"),
                        tutti_status_name(TUTTI_ERR_MISMATCH));
    assert_null(test_json_get(args, "unfinished"));
    test_json_free(root);

    tutti__timeline_close(f);
    root = read_json(path);
    assert_int_equal(other(root, "events"), 2);
    assert_int_equal(other(root, "dropped"), 0);
    test_json_free(root);
    test_rmtree(t.dir);
}

/* Members still joined at close are written then. */
static void test_close_writes_members_not_left(void **state)
{
    test_tmp_t t;
    tutti__timeline_t *a, *b;
    test_json_t *root;
    char path[160];
    (void)state;
    tutti__timeline_file_t *f = open_in_tmp(&t, "c%t.json", 0, path,
                                            sizeof(path));
    assert_int_equal(tutti__timeline_member(f, 1, 0, "task:0/cpu:0", &a),
                     TUTTI_OK);
    /* Another group's member with the same rank, on another device: a
     * track of its own. */
    assert_int_equal(tutti__timeline_member(f, 2, 0, "task:0/cuda:0", &b),
                     TUTTI_OK);
    tutti__timeline_join(a, tutti__timeline_now(), 2, 2);
    tutti__timeline_join(b, tutti__timeline_now(), 2, 2);
    tutti__timeline_close(f);
    root = read_json(path);
    assert_int_equal(count_ph(root, "X", NULL), 2);
    const test_json_t *evs = test_json_get(root, "traceEvents");
    int tids[2] = {-1, -1}, k = 0;
    for (size_t i = 0; i < evs->n; i++) {
        long long v = 0;
        if (strcmp(test_json_str(&evs->items[i], "ph"), "X") != 0)
            continue;
        assert_int_equal(test_json_int(test_json_get(&evs->items[i], "tid"),
                                       &v), 0);
        tids[k++] = (int)v;
    }
    assert_int_not_equal(tids[0], tids[1]);
    assert_true(tids[0] == 1 || tids[1] == 1); /* rank 0's */
    test_json_free(root);
    /* Left after the file closed: nothing more is written. */
    tutti__timeline_leave(a);
    tutti__timeline_leave(b);
    test_rmtree(t.dir);
}

/* The name of the track of tid @p tid in @p root, or NULL. */
static const char *track_name(const test_json_t *root, long long tid)
{
    const test_json_t *evs = test_json_get(root, "traceEvents");
    for (size_t i = 0; i < evs->n; i++) {
        const test_json_t *e = &evs->items[i];
        long long v = -1;
        if (strcmp(test_json_str(e, "name"), "thread_name") == 0 &&
            test_json_int(test_json_get(e, "tid"), &v) == 0 && v == tid)
            return test_json_str(test_json_get(e, "args"), "name");
    }
    return NULL;
}

/* Two members of one task on one device at once (two groups) get tracks
 * of their own; one that joins again after leaving gets its track back. */
static void test_tracks_of_one_device(void **state)
{
    test_tmp_t t;
    tutti__timeline_t *a, *b, *again;
    test_json_t *root;
    char path[160];
    (void)state;
    tutti__timeline_file_t *f = open_in_tmp(&t, "d%t.json", 0, path,
                                            sizeof(path));
    assert_int_equal(tutti__timeline_member(f, 0x10, 0, "task:0/cpu:0", &a),
                     TUTTI_OK);
    assert_int_equal(tutti__timeline_member(f, 0x20, 0, "task:0/cpu:0", &b),
                     TUTTI_OK);
    tutti__timeline_join(a, tutti__timeline_now(), 1, 1);
    tutti__timeline_join(b, tutti__timeline_now(), 1, 1);
    tutti__timeline_leave(a);
    assert_int_equal(tutti__timeline_member(f, 0x10, 0, "task:0/cpu:0",
                                            &again), TUTTI_OK);
    tutti__timeline_join(again, tutti__timeline_now(), 1, 1);
    tutti__timeline_leave(again);
    tutti__timeline_leave(b);
    tutti__timeline_close(f);
    root = read_json(path);
    assert_int_equal(count_ph(root, "X", NULL), 3);
    assert_string_equal(track_name(root, 1), "rank 0 (task:0/cpu:0)");
    assert_string_equal(track_name(root, 10001),
                        "rank 0 (task:0/cpu:0) group 0x20");
    /* Each track named once, however many writes. */
    const test_json_t *evs = test_json_get(root, "traceEvents");
    int names = 0;
    for (size_t i = 0; i < evs->n; i++)
        names += strcmp(test_json_str(&evs->items[i], "name"),
                        "thread_name") == 0;
    assert_int_equal(names, 2);
    test_json_free(root);
    test_rmtree(t.dir);
}

#define PAIR 2
#define PAIR_COUNT 4096 /* float32: RingAllreduce on 2 members */
#define PAIR_EXECS 3

typedef struct {
    tutti_context_t *ctx;
    const char *path;        /* the task's file */
    pthread_barrier_t *sync;
    int index;
    tutti_status_t st;
    char *while_joined;      /* member 0: the file before anyone left */
} pair_member_t;

static void *pair_main(void *arg)
{
    pair_member_t *m = arg;
    tutti_instance_params_t p;
    tutti_group_t *g;
    static float in[PAIR][PAIR_COUNT], out[PAIR][PAIR_COUNT];

    if ((m->st = test_join(m->ctx, 0x77, PAIR, m->index, 20, &g)) !=
        TUTTI_OK) {
        pthread_barrier_wait(m->sync);
        pthread_barrier_wait(m->sync);
        return NULL;
    }
    test_params(&p, 1, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, PAIR_COUNT);
    p.algorithm = "RingAllreduce";
    for (int i = 0; i < PAIR_EXECS && m->st == TUTTI_OK; i++)
        m->st = test_exec_wait(g, &p, in[m->index], out[m->index]);
    /* A second on, the next execution's end writes the file. */
    usleep(1100 * 1000);
    if (m->st == TUTTI_OK)
        m->st = test_exec_wait(g, &p, in[m->index], out[m->index]);
    pthread_barrier_wait(m->sync);
    if (m->index == 0)
        m->while_joined = test_json_slurp(m->path);
    pthread_barrier_wait(m->sync);
    tutti_group_leave(g);
    return NULL;
}

/* Executions of rank @p rank's track (tid rank + 1) in @p root, and on
 * it the phases, which must be reduce-scatter then allgather each. */
static int pair_execs(const test_json_t *root, int rank)
{
    const test_json_t *evs = test_json_get(root, "traceEvents");
    int execs = 0, phases = 0;
    for (size_t i = 0; i < evs->n; i++) {
        const test_json_t *e = &evs->items[i];
        long long tid = -1;
        if (strcmp(test_json_str(e, "ph"), "X") != 0 ||
            test_json_int(test_json_get(e, "tid"), &tid) != 0 ||
            tid != rank + 1)
            continue;
        const char *cat = test_json_str(e, "cat");
        const test_json_t *args = test_json_get(e, "args");
        long long sent = -1, received = -1;
        if (strcmp(cat, "execution") == 0) {
            assert_string_equal(test_json_str(e, "name"), "RingAllreduce");
            execs++;
        }
        if (strcmp(cat, "phase") != 0)
            continue;
        assert_string_equal(test_json_str(e, "name"),
                            phases++ % 2 == 0 ? "reduce-scatter"
                                              : "allgather");
        /* One step each: half the buffer out and in. */
        assert_int_equal(test_json_int(test_json_get(args, "sent"), &sent),
                         0);
        assert_int_equal(test_json_int(test_json_get(args, "received"),
                                       &received), 0);
        assert_int_equal(sent, PAIR_COUNT * 4 / 2);
        assert_int_equal(received, PAIR_COUNT * 4 / 2);
    }
    assert_int_equal(phases, 2 * execs);
    return execs;
}

static void test_pair_in_one_task(void **state)
{
    tutti_context_params_t cp;
    test_tmp_t t;
    test_json_t *root;
    pthread_barrier_t sync;
    pair_member_t m[PAIR];
    char pattern[160], path[160], err[256];
    (void)state;
    test_tmp_make(&t, "timeline", "x", NULL);
    snprintf(pattern, sizeof(pattern), "%s/pair.json", t.dir);
    tutti__task_path(pattern, 0, ".json", path, sizeof(path));
    setenv("TUTTI_TIMELINE", pattern, 1);
    test_one_task_params(&cp, NULL, NULL, "off");
    tutti_context_t *ctx = NULL;
    tutti_status_t st = tutti_context_create(&cp, &ctx);
    unsetenv("TUTTI_TIMELINE");
    if (st != TUTTI_OK)
        fail_msg("context: %s", tutti_last_error());
    assert_int_equal(pthread_barrier_init(&sync, NULL, PAIR), 0);
    for (int i = 0; i < PAIR; i++)
        m[i] = (pair_member_t){.ctx = ctx, .path = path, .sync = &sync,
                               .index = i};
    assert_int_equal(test_threads(PAIR, pair_main, m, sizeof(m[0])), 0);
    pthread_barrier_destroy(&sync);
    for (int i = 0; i < PAIR; i++)
        if (m[i].st != TUTTI_OK)
            fail_msg("member %d: %s", i, tutti_status_name(m[i].st));

    /* Before anyone left: every execution of both, written. */
    assert_non_null(m[0].while_joined);
    root = test_json_parse(m[0].while_joined, err, sizeof(err));
    if (root == NULL)
        fail_msg("%s while joined: %s", path, err);
    free(m[0].while_joined);
    assert_string_equal(track_name(root, 1), "rank 0 (task:0/cpu:0)");
    assert_string_equal(track_name(root, 2), "rank 1 (task:0/cpu:1)");
    assert_int_equal(pair_execs(root, 0), PAIR_EXECS + 1);
    assert_int_equal(pair_execs(root, 1), PAIR_EXECS + 1);
    test_json_free(root);

    tutti_context_destroy(ctx);
    root = read_json(path);
    assert_int_equal(pair_execs(root, 0), PAIR_EXECS + 1);
    assert_int_equal(pair_execs(root, 1), PAIR_EXECS + 1);
    assert_int_equal(other(root, "dropped"), 0);
    test_json_free(root);
    test_rmtree(t.dir);
}

/* One row: the YAML key timeline, TUTTI_TIMELINE over it, listed with
 * its variable. */
static void test_setting(void **state)
{
    tutti__config_t cfg;
    test_tmp_t t;
    char buf[256], *listing = NULL;
    size_t len = 0;
    (void)state;
    test_tmp_make(&t, "timeline", "tutti.yaml",
                  "timeline: /tmp/from-file.%t.json\n");
    tutti__config_init(&cfg);
    assert_string_equal(cfg.timeline, "");
    assert_int_equal(tutti__config_load_file(&cfg, t.path), TUTTI_OK);
    assert_string_equal(cfg.timeline, "/tmp/from-file.%t.json");
    assert_int_equal(cfg.src[TUTTI__SET_TIMELINE], TUTTI_SRC_FILE);
    setenv("TUTTI_TIMELINE", "/tmp/from-env.json", 1);
    assert_int_equal(tutti__config_apply_env(&cfg), TUTTI_OK);
    unsetenv("TUTTI_TIMELINE");
    assert_string_equal(cfg.timeline, "/tmp/from-env.json");
    assert_int_equal(cfg.src[TUTTI__SET_TIMELINE], TUTTI_SRC_ENV);
    assert_string_equal(tutti__config_get_text(&cfg, "timeline", buf,
                                               sizeof(buf)),
                        "/tmp/from-env.json");
    FILE *out = open_memstream(&listing, &len);
    assert_non_null(out);
    tutti__config_print_settings(&cfg, out);
    fclose(out);
    assert_non_null(strstr(listing, "timeline"));
    assert_non_null(strstr(listing, "environment TUTTI_TIMELINE"));
    free(listing);
    tutti__config_free(&cfg);
    test_rmtree(t.dir);
}

/* The files written for the user, the timeline and log_file, are opened
 * without following a symbolic link at their name: one planted there (in
 * /tmp, where anyone may) is refused naming the path, and the file it
 * points to stays as it was; a plain file is still opened. */
static void test_symlink_refused(void **state)
{
    test_tmp_t t;
    tutti__timeline_file_t *f = NULL;
    char link[160], pattern[160], want[512];
    (void)state;
    test_tmp_make(&t, "symlink", "target", "kept\n");
    snprintf(link, sizeof(link), "%s/trace.3.json", t.dir);
    assert_int_equal(symlink(t.path, link), 0);
    snprintf(pattern, sizeof(pattern), "%s/trace.json", t.dir);
    assert_int_equal(tutti__timeline_open(pattern, 3, &f), TUTTI_ERR_IO);
    assert_null(f);
    snprintf(want, sizeof(want), "cannot create timeline file %s (setting "
             "timeline '%s'): a symbolic link is refused", link, pattern);
    assert_string_equal(tutti_last_error(), want);

    snprintf(link, sizeof(link), "%s/job.log.3", t.dir);
    assert_int_equal(symlink(t.path, link), 0);
    snprintf(pattern, sizeof(pattern), "%s/job.log", t.dir);
    tutti__log_set_task(3);
    assert_int_equal(tutti__log_set_file(pattern), TUTTI_ERR_IO);
    snprintf(want, sizeof(want), "log_file (TUTTI_LOG_FILE) %s: a symbolic "
             "link is refused", link);
    assert_string_equal(tutti_last_error(), want);
    char *text = test_json_slurp(t.path);
    assert_string_equal(text, "kept\n");
    free(text);

    /* Where the name is a plain file, or none, both open. */
    snprintf(pattern, sizeof(pattern), "%s/plain.json", t.dir);
    assert_int_equal(tutti__timeline_open(pattern, 3, &f), TUTTI_OK);
    tutti__timeline_close(f);
    snprintf(pattern, sizeof(pattern), "%s/plain.log", t.dir);
    assert_int_equal(tutti__log_set_file(pattern), TUTTI_OK);
    assert_int_equal(tutti__log_set_file(""), TUTTI_OK);
    test_rmtree(t.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_per_task),
        cmocka_unit_test(test_flight_launch_times),
        cmocka_unit_test(test_full_buffer_drops_and_counts),
        cmocka_unit_test(test_flush_writes_unfinished_and_stays_valid),
        cmocka_unit_test(test_close_writes_members_not_left),
        cmocka_unit_test(test_tracks_of_one_device),
        cmocka_unit_test(test_pair_in_one_task),
        cmocka_unit_test(test_setting),
        cmocka_unit_test(test_symlink_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
