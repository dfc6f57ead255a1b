/*
 * One task of the multi-process tests, started by tutti-run.
 *
 *   coll_worker [--devices D] [--disagree FIELD] [--selection-only COLLS]
 *
 * Joins a group of every task x D devices (one thread per device).  By
 * default each member runs the correctness matrix (check_common.h; all of
 * it with TUTTI_CHECK_FULL=1) and prints "coll_worker: rank R: C checks,
 * F failures, S sampled out".  --selection-only runs only the matrix's
 * pass through selection, for the comma-separated collectives COLLS.
 * With --disagree, the member of rank 1 (or task 1's devices, for join
 * fields) asks for something else (FIELD: collective, dtype, count, op,
 * root, group_size, device_type) and every member must fail with TUTTI_ERR_MISMATCH naming FIELD; it prints
 * "coll_worker: task T device D: refused: <detail>".
 *
 *   coll_worker --abort    task 0 aborts after 0.5 s while the others wait
 *                          in an allreduce; every task must see the reason,
 *                          then destroy its context, make a new one and
 *                          run an allreduce in it
 *   coll_worker --join     only join a group of every task and print
 *                          "joined" or "refused: <detail>"; exit 0
 *   coll_worker --named IMPL  joins a group of every task, runs two
 *                          allreduces of int32 (two instances) with
 *                          implementation IMPL and checks their sums; prints
 *                          "coll_worker: task T: named IMPL: ok" or why not
 *   coll_worker --stall COLL DIR
 *                          a group of every task with a 2 s time limit runs
 *                          COLL (64 MiB a rank) once, then task 1 stops
 *                          itself (SIGSTOP) and the others run it again:
 *                          each fails with TUTTI_ERR_TIMEOUT, or completes
 *                          if its part needs nothing of rank 1; each prints
 *                          "coll_worker: task T: stalled: <error>" and
 *                          touches DIR/done-T; task 1's child kills it once
 *                          every other task is done (or after 20 s)
 *   coll_worker --victim   large allreduces in a loop; task 1 kills itself
 *                          (SIGKILL) in the middle of one; the others must
 *                          fail naming task 1; they print the seconds it
 *                          took and exit 3
 * Exit 0 when every member did what was expected.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tutti/tutti.h>

#include "matrix.h"
#include "members.h"

typedef struct {
    tutti_context_t *ctx;
    int device, devices;
    const char *disagree;
    uint32_t selection_only; /* collectives, or 0: the whole matrix */
    int ok;
} member_t;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* With --disagree: what this member asks for, and whether the refusal
 * names the field. */
static int run_disagreement(member_t *m, tutti_group_t *g)
{
    const char *f = m->disagree;
    int odd = tutti_group_rank(g) == 1;
    double buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tutti_instance_params_t p;
    test_params(&p, 77, TUTTI_COLL_BROADCAST, TUTTI_FLOAT64, 8);
    p.root = 0;
    if (strcmp(f, "collective") == 0 && odd)
        p.collective = TUTTI_COLL_ALLREDUCE;
    if (strcmp(f, "dtype") == 0 && odd)
        p.dtype = TUTTI_INT64;
    if (strcmp(f, "count") == 0 && odd)
        p.count = 7;
    if (strcmp(f, "op") == 0) {
        p.collective = TUTTI_COLL_ALLREDUCE;
        p.op = odd ? TUTTI_OP_MAX : TUTTI_OP_SUM;
    }
    if (strcmp(f, "root") == 0 && odd)
        p.root = 1;
    tutti_status_t st = test_exec_wait(g, &p, buf, buf);
    pthread_mutex_lock(&out_lock);
    printf("coll_worker: task %d device %d: %s: %s\n",
           tutti_context_task(m->ctx), m->device,
           st == TUTTI_ERR_MISMATCH ? "refused" : tutti_status_name(st),
           tutti_last_error());
    pthread_mutex_unlock(&out_lock);
    return st == TUTTI_ERR_MISMATCH && strstr(tutti_last_error(), f) != NULL;
}

static void *member_main(void *arg)
{
    member_t *m = arg;
    tutti_group_params_t gp;
    tutti_group_t *g;
    tutti_check_env_t env;
    int task = tutti_context_task(m->ctx);
    int join_field = m->disagree && (strcmp(m->disagree, "group_size") == 0 ||
                                     strcmp(m->disagree, "device_type") == 0);

    tutti_group_params_init(&gp);
    gp.group_key = 42;
    gp.group_size = tutti_context_num_tasks(m->ctx) * m->devices;
    gp.device_index = m->device;
    if (join_field && task == 1) {
        if (strcmp(m->disagree, "group_size") == 0)
            gp.group_size++;
        else
            gp.device_type = TUTTI_DEVICE_CUDA;
    }
    if (m->disagree == NULL) {
        tutti_check_env_init(&env, m->ctx);
        env.group_key = 42;
        env.group_size = gp.group_size;
        env.device_index = m->device;
        env.timeout = 120;
        env.selection_only = m->selection_only != 0;
        env.selection_colls = m->selection_only;
        tutti_check_result_t res = tutti_check_matrix(&env);
        pthread_mutex_lock(&out_lock);
        printf("coll_worker: rank %d: %d checks, %d failures, %d sampled "
               "out\n", res.rank, res.checks, res.failures, res.sampled_out);
        pthread_mutex_unlock(&out_lock);
        m->ok = res.failures == 0 && res.checks > 0;
        return NULL;
    }
    tutti_status_t st = tutti_group_join(m->ctx, &gp, &g);
    if (join_field) {
        /* task 1 asked for something else: refused at join, everywhere */
        const char *name = strcmp(m->disagree, "group_size") == 0
                               ? "group size" : "device type";
        pthread_mutex_lock(&out_lock);
        printf("coll_worker: task %d device %d: %s: %s\n", task, m->device,
               st == TUTTI_ERR_MISMATCH ? "refused" : tutti_status_name(st),
               tutti_last_error());
        pthread_mutex_unlock(&out_lock);
        m->ok = st == TUTTI_ERR_MISMATCH &&
                strstr(tutti_last_error(), name) != NULL;
        if (st == TUTTI_OK)
            tutti_group_leave(g);
        return NULL;
    }
    if (st != TUTTI_OK) {
        fprintf(stderr, "coll_worker: join: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return NULL;
    }
    m->ok = run_disagreement(m, g);
    tutti_group_leave(g);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static tutti_group_t *join_all(tutti_context_t *ctx, uint64_t key)
{
    tutti_group_t *g = NULL;
    if (test_join(ctx, key, tutti_context_num_tasks(ctx), 0, 0, &g) !=
        TUTTI_OK)
        fprintf(stderr, "coll_worker: join: %s\n", tutti_last_error());
    return g;
}

/* Task 0 aborts while the others wait; then everyone starts over. */
static int abort_mode(tutti_context_t *ctx)
{
    int task = tutti_context_task(ctx), ok;
    float x = 1, y = 0;
    struct timespec pause = {0, 500 * 1000 * 1000};
    tutti_group_t *g = join_all(ctx, 43);
    if (g == NULL)
        return 1;
    tutti_status_t st;
    if (task == 0) {
        nanosleep(&pause, NULL);
        tutti_abort(ctx, "operator stop");
        st = tutti_allreduce(g, &x, &y, 1, TUTTI_FLOAT32, TUTTI_OP_SUM);
    } else {
        st = tutti_allreduce(g, &x, &y, 1, TUTTI_FLOAT32, TUTTI_OP_SUM);
    }
    ok = st == TUTTI_ERR_ABORTED &&
         strstr(tutti_last_error(), "aborted by task 0: operator stop");
    printf("coll_worker: task %d: %s: %s\n", task,
           ok ? "aborted" : tutti_status_name(st), tutti_last_error());
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    /* A new context works as if nothing happened. */
    if (tutti_context_create(NULL, &ctx) != TUTTI_OK ||
        (g = join_all(ctx, 44)) == NULL)
        return 1;
    x = (float)(task + 1);
    st = tutti_allreduce(g, &x, &y, 1, TUTTI_FLOAT32, TUTTI_OP_SUM);
    int n = tutti_context_num_tasks(ctx);
    int again = st == TUTTI_OK && y == (float)(n * (n + 1) / 2);
    printf("coll_worker: task %d: new context %s\n", task,
           again ? "ok" : tutti_last_error());
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return ok && again ? 0 : 1;
}

/* Join and say how it went (the agreement checks of joining). */
static int join_mode(tutti_context_t *ctx)
{
    tutti_group_t *g;
    tutti_status_t st = test_join(ctx, 46, tutti_context_num_tasks(ctx), 0, 30,
                                  &g);
    if (st == TUTTI_OK) {
        printf("coll_worker: task %d: joined\n", tutti_context_task(ctx));
        tutti_group_leave(g);
    } else {
        printf("coll_worker: task %d: refused: %s: %s\n",
               tutti_context_task(ctx), tutti_status_name(st),
               tutti_last_error());
    }
    tutti_context_destroy(ctx);
    return 0;
}

static int named_mode(tutti_context_t *ctx, const char *impl)
{
    int task = tutti_context_task(ctx), n = tutti_context_num_tasks(ctx);
    tutti_group_t *g = join_all(ctx, 47);
    int ok = g != NULL;
    for (uint64_t key = 1; ok && key <= 2; key++) {
        int32_t in[5], out[5] = {0};
        tutti_instance_params_t p;
        for (int i = 0; i < 5; i++)
            in[i] = (int32_t)(task * 10 + i) * (int32_t)key;
        test_params(&p, key, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 5);
        p.algorithm = impl;
        tutti_status_t st = test_exec_wait(g, &p, in, out);
        if (st != TUTTI_OK) {
            printf("coll_worker: task %d: named %s: %s: %s\n", task, impl,
                   tutti_status_name(st), tutti_last_error());
            ok = 0;
        }
        /* sum over tasks t of (10 t + i) key */
        for (int i = 0; ok && i < 5; i++)
            ok = out[i] == (int32_t)key * (10 * n * (n - 1) / 2 + n * i);
    }
    if (ok)
        printf("coll_worker: task %d: named %s: ok\n", task, impl);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    return ok ? 0 : 1;
}

/* Task 1's child: kills its stopped parent once every other task touched
 * DIR/done-T, or after 20 s. */
static void reap_when_done(const char *dir, int tasks)
{
    pid_t parent = getppid();
    for (int tick = 0; tick < 200; tick++) {
        int done = 0;
        for (int t = 0; t < tasks; t++) {
            char path[512];
            snprintf(path, sizeof(path), "%s/done-%d", dir, t);
            done += t != 1 && access(path, F_OK) == 0;
        }
        if (done == tasks - 1)
            break;
        usleep(100000);
    }
    kill(parent, SIGKILL);
    _exit(0);
}

static int stall_mode(tutti_context_t *ctx, const char *coll_name,
                      const char *dir)
{
    int task = tutti_context_task(ctx), n = tutti_context_num_tasks(ctx);
    /* 64 MiB a rank: more than socket buffers and shm slots can hold, so
     * a sender waits for its stopped receiver. */
    size_t count = 16u << 20;
    tutti_collective_t coll;
    tutti_group_t *g = NULL;
    tutti_instance_params_t p;
    int perm[64];
    if (tutti_collective_parse(coll_name, &coll) != TUTTI_OK || n > 64)
        return 2;
    if (test_join(ctx, 48, n, 0, 2.0, &g) != TUTTI_OK) {
        printf("coll_worker: task %d: join: %s\n", task, tutti_last_error());
        return 1;
    }
    /* Collectives of n blocks move a quarter as much a block. */
    if (coll == TUTTI_COLL_ALLGATHER || coll == TUTTI_COLL_GATHER ||
        coll == TUTTI_COLL_REDUCE_SCATTER || coll == TUTTI_COLL_ALLTOALL)
        count /= 4;
    float *send = calloc(count * (size_t)n, sizeof(float));
    float *recv = calloc(count * (size_t)n, sizeof(float));
    test_params(&p, 9, coll, TUTTI_FLOAT32, count);
    for (int r = 0; r < n; r++)
        perm[r] = (r + 1) % n;
    p.permutation = perm;
    tutti_status_t st = send && recv ? test_exec_wait(g, &p, send, recv)
                                     : TUTTI_ERR_NO_MEMORY;
    if (st != TUTTI_OK) {
        printf("coll_worker: task %d: first %s: %s\n", task, coll_name,
               tutti_last_error());
        return 1;
    }
    if (task == 1) {
        fflush(stdout);
        if (fork() == 0)
            reap_when_done(dir, n);
        raise(SIGSTOP);
        return 1; /* never: its child kills it */
    }
    st = test_exec_wait(g, &p, send, recv);
    printf("coll_worker: task %d: stalled: %s: %s\n", task,
           tutti_status_name(st), tutti_last_error());
    fflush(stdout);
    char path[512];
    snprintf(path, sizeof(path), "%s/done-%d", dir, task);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    /* Ending before the others made their own account would show them a
     * task gone rather than the stalled one. */
    for (int tick = 0; tick < 200; tick++) {
        int done = 0;
        for (int t = 0; t < n; t++) {
            snprintf(path, sizeof(path), "%s/done-%d", dir, t);
            done += t != 1 && access(path, F_OK) == 0;
        }
        if (done == n - 1)
            break;
        usleep(50000);
    }
    free(send);
    free(recv);
    /* A member whose part needs nothing of rank 1 may finish. */
    _exit(st == TUTTI_ERR_TIMEOUT || st == TUTTI_OK ? 0 : 1);
}

/* Task 1 dies in the middle of a large allreduce. */
static int victim_mode(tutti_context_t *ctx)
{
    int task = tutti_context_task(ctx);
    size_t count = 4u << 20; /* 16 MiB of float32 */
    float *buf = calloc(count, sizeof(float));
    tutti_group_t *g = join_all(ctx, 45);
    tutti_instance_params_t p;
    tutti_request_t *r;
    tutti_status_t st = TUTTI_OK;
    double t = 0;
    if (g == NULL || buf == NULL)
        return 1;
    test_params(&p, 5, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, count);
    for (int i = 0; i < 1000 && st == TUTTI_OK; i++) {
        t = now_s();
        if ((st = tutti_execute(g, &p, buf, buf, &r)) != TUTTI_OK)
            break;
        if (task == 1 && i == 2) {
            for (int k = 0; k < 50; k++)
                tutti_request_test(r);
            raise(SIGKILL);
        }
        st = tutti_request_wait(r);
        tutti_request_free(r);
    }
    printf("coll_worker: task %d: failed after %.2f s: %s: %s\n", task,
           now_s() - t, tutti_status_name(st), tutti_last_error());
    fflush(stdout);
    int named = st == TUTTI_ERR_PEER &&
                strstr(tutti_last_error(), "task 1 (rank 1) is gone") != NULL;
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    free(buf);
    return named ? 3 : 1;
}

/* "allreduce,broadcast" -> their TUTTI_COLL_BIT mask. */
static int parse_colls(const char *list, uint32_t *mask_out)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", list);
    *mask_out = 0;
    for (char *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        tutti_collective_t c;
        if (tutti_collective_parse(t, &c) != TUTTI_OK) {
            fprintf(stderr, "coll_worker: unknown collective '%s'\n", t);
            return -1;
        }
        *mask_out |= TUTTI_COLL_BIT(c);
    }
    return 0;
}

int main(int argc, char **argv)
{
    tutti_context_t *ctx;
    member_t m[16];
    int devices = 1, ok = 1;
    const char *disagree = NULL, *mode = NULL, *named = NULL;
    const char *stall = NULL, *stall_dir = NULL;
    uint32_t selection = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc)
            devices = atoi(argv[++i]);
        else if (strcmp(argv[i], "--disagree") == 0 && i + 1 < argc)
            disagree = argv[++i];
        else if (strcmp(argv[i], "--named") == 0 && i + 1 < argc)
            named = argv[++i];
        else if (strcmp(argv[i], "--stall") == 0 && i + 2 < argc) {
            stall = argv[++i];
            stall_dir = argv[++i];
        }
        else if (strcmp(argv[i], "--selection-only") == 0 && i + 1 < argc) {
            if (parse_colls(argv[++i], &selection) != 0)
                return 2;
        } else if (strcmp(argv[i], "--abort") == 0 ||
                 strcmp(argv[i], "--victim") == 0 ||
                 strcmp(argv[i], "--join") == 0)
            mode = argv[i];
        else {
            fprintf(stderr, "usage: coll_worker [--devices D] "
                    "[--disagree FIELD] [--selection-only COLLS] [--abort] "
                    "[--victim] [--join] [--named IMPL] [--stall COLL DIR]\n");
            return 2;
        }
    }
    if (devices < 1 || devices > 16)
        return 2;
    if ((ctx = test_context_from_env("coll_worker", tutti_strerror)) == NULL)
        return 1;
    if (mode != NULL && strcmp(mode, "--join") == 0)
        return join_mode(ctx);
    if (named != NULL)
        return named_mode(ctx, named);
    if (stall != NULL)
        return stall_mode(ctx, stall, stall_dir);
    if (mode != NULL)
        return strcmp(mode, "--abort") == 0 ? abort_mode(ctx)
                                             : victim_mode(ctx);
    for (int d = 0; d < devices; d++)
        m[d] = (member_t){ctx, d, devices, disagree, selection, 0};
    if (test_threads(devices, member_main, m, sizeof(m[0])) != 0)
        ok = 0;
    for (int d = 0; d < devices; d++)
        ok &= m[d].ok;
    tutti_context_destroy(ctx);
    return ok ? 0 : 1;
}
