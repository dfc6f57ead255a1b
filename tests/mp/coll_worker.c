/*
 * One task of the multi-process tests, started by tutti-run.
 *
 *   coll_worker [--devices D] [--disagree FIELD]
 *
 * Joins a group of every task x D devices (one thread per device).  By
 * default each member runs the correctness matrix and prints
 * "coll_worker: rank R: C checks, F failures".  With --disagree, the member
 * of rank 1 (or task 1's devices, for join fields) asks for something else
 * (FIELD: collective, dtype, count, op, root, group_size, device_type) and
 * every member must fail with TUTTI_ERR_MISMATCH naming FIELD; it prints
 * "coll_worker: task T device D: refused: <detail>".
 * Exit 0 when every member did what was expected.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "check_common.h"

typedef struct {
    tutti_context_t *ctx;
    int device, devices;
    const char *disagree;
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
    tutti_request_t *r;
    tutti_instance_params_init(&p);
    p.instance_key = 77;
    p.collective = TUTTI_COLL_BROADCAST;
    p.dtype = TUTTI_FLOAT64;
    p.count = 8;
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
    tutti_status_t st = tutti_execute(g, &p, buf, buf, &r);
    if (st == TUTTI_OK) {
        st = tutti_request_wait(r);
        tutti_request_free(r);
    }
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
    if (m->disagree) {
        m->ok = run_disagreement(m, g);
    } else {
        tutti_check_result_t res = tutti_check_matrix(g, stderr);
        pthread_mutex_lock(&out_lock);
        printf("coll_worker: rank %d: %d checks, %d failures\n",
               tutti_group_rank(g), res.checks, res.failures);
        pthread_mutex_unlock(&out_lock);
        m->ok = res.failures == 0 && res.checks > 0;
    }
    tutti_group_leave(g);
    return NULL;
}

int main(int argc, char **argv)
{
    tutti_context_t *ctx;
    member_t m[16];
    pthread_t t[16];
    int devices = 1, ok = 1;
    const char *disagree = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc)
            devices = atoi(argv[++i]);
        else if (strcmp(argv[i], "--disagree") == 0 && i + 1 < argc)
            disagree = argv[++i];
        else {
            fprintf(stderr, "usage: coll_worker [--devices D] "
                    "[--disagree FIELD]\n");
            return 2;
        }
    }
    if (devices < 1 || devices > 16)
        return 2;
    tutti_status_t st = tutti_context_create(NULL, &ctx);
    if (st != TUTTI_OK) {
        fprintf(stderr, "coll_worker: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return 1;
    }
    for (int d = 0; d < devices; d++) {
        m[d] = (member_t){ctx, d, devices, disagree, 0};
        pthread_create(&t[d], NULL, member_main, &m[d]);
    }
    for (int d = 0; d < devices; d++) {
        pthread_join(t[d], NULL);
        ok &= m[d].ok;
    }
    tutti_context_destroy(ctx);
    return ok ? 0 : 1;
}
