/*
 * The memory-bandwidth floor bench/compare states: one thread per CPU this
 * process may use (each pinned to its CPU), each streaming over arrays of
 * its own far larger than the caches, for copy (b = a) and for a + b -> c;
 * prints the bytes moved per second by all threads together (reads and
 * writes counted), the median of 5 runs of each.  With --line: the floor
 * of the smallest cells instead, one cache line handed between two threads
 * pinned to the first two CPUs (a flag and 8 bytes in one line, written by
 * one and spun on by the other, then back): the one-way time, the median
 * of 5 runs of 100000 round trips.
 *
 *   bench/membw [MiB per array (64)]
 *   bench/membw --line
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 5

typedef struct {
    int cpu;
    size_t n;
    float *a, *b, *c;
    pthread_barrier_t *bar;
    double copy_s[RUNS], add_s[RUNS];
} worker_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
    for (size_t i = 0; i < w->n; i++) {
        w->a[i] = (float)(i & 7);
        w->b[i] = 1.0f;
        w->c[i] = 0.0f;
    }
    for (int r = 0; r < RUNS; r++) {
        pthread_barrier_wait(w->bar);
        double t = now_s();
        memcpy(w->b, w->a, w->n * sizeof(float));
        w->copy_s[r] = now_s() - t;
        pthread_barrier_wait(w->bar);
        t = now_s();
        for (size_t i = 0; i < w->n; i++)
            w->c[i] = w->a[i] + w->b[i];
        w->add_s[r] = now_s() - t;
    }
    return NULL;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

#define LINE_TRIPS 100000

/* One line: a turn counter and a value, as a small message's header
 * carries both. */
typedef struct {
    _Alignas(64) _Atomic uint64_t turn;
    uint64_t value;
} line_t;

typedef struct {
    line_t *line;
    int cpu, side;
    double secs[RUNS];
} pinger_t;

static void *ping(void *arg)
{
    pinger_t *p = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(p->cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
    uint64_t t = 0;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < LINE_TRIPS; i++, t += 2) {
            /* side 0 writes turns t+1, side 1 writes t+2 */
            uint64_t mine = t + 1 + (uint64_t)p->side;
            while (atomic_load_explicit(&p->line->turn,
                                        memory_order_acquire) != mine - 1)
                ;
            p->line->value = mine;
            atomic_store_explicit(&p->line->turn, mine,
                                  memory_order_release);
        }
        p->secs[r] = now_s() - t0;
    }
    return NULL;
}

static int line_floor(void)
{
    cpu_set_t set;
    int cpus[2], n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 1;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    if (n < 2) {
        printf("membw: one-line exchange: needs 2 CPUs, this process has "
               "%d\n", n);
        return 0;
    }
    static line_t line;
    pinger_t p[2] = {{&line, cpus[0], 0, {0}}, {&line, cpus[1], 1, {0}}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, ping, &p[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    double one_way[RUNS];
    for (int r = 0; r < RUNS; r++)
        one_way[r] = p[0].secs[r] / (2.0 * LINE_TRIPS) * 1e9;
    qsort(one_way, RUNS, sizeof(double), cmp);
    printf("membw: one-line exchange between CPUs %d and %d: %.0f ns one "
           "way (median of %d runs of %d round trips)\n", cpus[0], cpus[1],
           one_way[RUNS / 2], RUNS, LINE_TRIPS);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--line") == 0)
        return line_floor();
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    cpu_set_t set;
    int cpus[CPU_SETSIZE], ncpu = 0;
    if (mib == 0 || sched_getaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr, "usage: membw [MiB per array, > 0] | --line\n");
        return 2;
    }
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpus[ncpu++] = c;
    worker_t *w = calloc((size_t)ncpu, sizeof(*w));
    pthread_t *th = calloc((size_t)ncpu, sizeof(*th));
    pthread_barrier_t bar;
    if (w == NULL || th == NULL)
        return 1;
    pthread_barrier_init(&bar, NULL, (unsigned)ncpu);
    for (int i = 0; i < ncpu; i++) {
        w[i].cpu = cpus[i];
        w[i].n = mib << 20 >> 2;
        w[i].a = malloc(w[i].n * sizeof(float));
        w[i].b = malloc(w[i].n * sizeof(float));
        w[i].c = malloc(w[i].n * sizeof(float));
        w[i].bar = &bar;
        if (w[i].a == NULL || w[i].b == NULL || w[i].c == NULL)
            return 1;
    }
    for (int i = 0; i < ncpu; i++)
        pthread_create(&th[i], NULL, work, &w[i]);
    for (int i = 0; i < ncpu; i++)
        pthread_join(th[i], NULL);
    /* Per run, all threads' bytes over the slowest thread's time. */
    double copy[RUNS], add[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double tc = 0, ta = 0;
        for (int i = 0; i < ncpu; i++) {
            tc = w[i].copy_s[r] > tc ? w[i].copy_s[r] : tc;
            ta = w[i].add_s[r] > ta ? w[i].add_s[r] : ta;
        }
        double bytes = (double)ncpu * (double)w[0].n * sizeof(float);
        copy[r] = 2 * bytes / tc / 1e9;
        add[r] = 3 * bytes / ta / 1e9;
    }
    qsort(copy, RUNS, sizeof(double), cmp);
    qsort(add, RUNS, sizeof(double), cmp);
    printf("membw: %d threads, %zu MiB arrays: copy %.1f GB/s, a+b->c %.1f "
           "GB/s (reads and writes, all threads, median of %d)\n", ncpu,
           mib, copy[RUNS / 2], add[RUNS / 2], RUNS);
    for (int i = 0; i < ncpu; i++) {
        free(w[i].a);
        free(w[i].b);
        free(w[i].c);
    }
    free(w);
    free(th);
    return 0;
}
