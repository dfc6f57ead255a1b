/*
 * Cost of one execution against the number in flight: one task, a group
 * of 1 or 2 members (threads), N executions of N distinct instances (a
 * one-float allreduce each) issued, then waited for, then freed.  The
 * first round resolves the instances; later rounds reuse them.  Prints,
 * for each N, the mean cost per execution of the first round and of the
 * later ones (the member of rank 0's clock).  Under tutti-run (TUTTI_SIZE
 * set) each process is one member of a group of them all instead.
 *
 *   bench/tutti-inflight [members (1 or 2)] [rounds] [N...]
 *   tutti-run -n P bench/tutti-inflight 1 [rounds] [N...]
 *   (default: 2 members, 5 rounds, N = 10 250 4000 10000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tutti/tutti.h>

#define MAX_N 16

typedef struct {
    tutti_context_t *ctx;
    int index, members, rounds, num_n;
    const long *n;
    double first_us[MAX_N], again_us[MAX_N];
    int failed;
} member_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* One round: N executions issued, then waited for and freed; the mean
 * cost of one, in microseconds, or -1 on failure. */
static double round_us(tutti_group_t *g, uint64_t base, long n,
                       tutti_request_t **req, float *in, float *out)
{
    tutti_instance_params_t p;
    tutti_instance_params_init(&p);
    p.count = 1;
    if (tutti_barrier(g) != TUTTI_OK)
        return -1;
    double t = now_us();
    for (long i = 0; i < n; i++) {
        p.instance_key = base + (uint64_t)i;
        if (tutti_execute(g, &p, &in[i], &out[i], &req[i]) != TUTTI_OK)
            return -1;
    }
    if (tutti_request_wait_all(req, (size_t)n) != TUTTI_OK)
        return -1;
    for (long i = 0; i < n; i++)
        tutti_request_free(req[i]);
    return (now_us() - t) / (double)n;
}

static void *member_main(void *arg)
{
    member_t *m = arg;
    tutti_group_params_t gp;
    tutti_group_t *g;
    tutti_group_params_init(&gp);
    gp.group_key = 77;
    gp.group_size = m->members;
    gp.device_index = m->index;
    if (tutti_group_join(m->ctx, &gp, &g) != TUTTI_OK) {
        fprintf(stderr, "inflight: join: %s\n", tutti_last_error());
        m->failed = 1;
        return NULL;
    }
    for (int k = 0; k < m->num_n && !m->failed; k++) {
        long n = m->n[k];
        tutti_request_t **req = calloc((size_t)n, sizeof(*req));
        float *in = calloc((size_t)n, sizeof(float));
        float *out = calloc((size_t)n, sizeof(float));
        uint64_t base = (uint64_t)(k + 1) << 32;
        double again = 0;
        if (req == NULL || in == NULL || out == NULL)
            m->failed = 1;
        for (int r = 0; r <= m->rounds && !m->failed; r++) {
            double us = round_us(g, base, n, req, in, out);
            if (us < 0) {
                fprintf(stderr, "inflight: N=%ld: %s\n", n,
                        tutti_last_error());
                m->failed = 1;
            } else if (r == 0) {
                m->first_us[k] = us;
            } else {
                again += us;
            }
        }
        m->again_us[k] = again / m->rounds;
        free(req);
        free(in);
        free(out);
    }
    tutti_group_leave(g);
    return NULL;
}

int main(int argc, char **argv)
{
    static const long def_n[] = {10, 250, 4000, 10000};
    long n[MAX_N];
    int num_n = 0;
    int members = argc > 1 ? atoi(argv[1]) : 2;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    for (int i = 3; i < argc && num_n < MAX_N; i++)
        n[num_n++] = atol(argv[i]);
    if (num_n == 0) {
        for (size_t i = 0; i < sizeof(def_n) / sizeof(def_n[0]); i++)
            n[num_n++] = def_n[i];
    }
    if (members < 1 || members > 2 || rounds < 1) {
        fprintf(stderr, "usage: %s [members 1|2] [rounds] [N...]\n", argv[0]);
        return 2;
    }
    /* Under tutti-run: one member per process, the job's size. */
    const char *job_size = getenv("TUTTI_SIZE");
    const char *job_rank = getenv("TUTTI_RANK");
    int procs = job_size ? atoi(job_size) : 0;
    tutti_context_params_t cp;
    tutti_context_params_init(&cp);
    if (procs > 0) {
        members = 1;
    } else {
        cp.task = 0;
        cp.num_tasks = 1;
    }
    tutti_context_t *ctx;
    if (tutti_context_create(&cp, &ctx) != TUTTI_OK) {
        fprintf(stderr, "inflight: %s\n", tutti_last_error());
        return 1;
    }
    member_t m[2];
    pthread_t th[2];
    for (int i = 0; i < members; i++) {
        m[i] = (member_t){.ctx = ctx, .index = i,
                          .members = procs > 0 ? procs : members,
                          .rounds = rounds, .num_n = num_n, .n = n};
        if (pthread_create(&th[i], NULL, member_main, &m[i]) != 0)
            return 1;
    }
    int failed = 0;
    for (int i = 0; i < members; i++) {
        pthread_join(th[i], NULL);
        failed |= m[i].failed;
    }
    tutti_context_destroy(ctx);
    if (failed)
        return 1;
    if (procs > 0 && job_rank != NULL && atoi(job_rank) != 0)
        return 0;
    if (procs > 0)
        printf("%d members, one per process: mean cost of one execution "
               "(us)\n", procs);
    else
        printf("%d member(s), one task: mean cost of one execution (us)\n",
               members);
    printf("%8s %12s %12s\n", "N", "first", "again");
    for (int k = 0; k < num_n; k++)
        printf("%8ld %12.3f %12.3f\n", n[k], m[0].first_us[k],
               m[0].again_us[k]);
    return 0;
}
