/*
 * Warm small-call cost between 2 processes (run under tutti-run -n 2;
 * bench/instr_count.sh builds it and counts its instructions).
 *   warm_calls COLL N MODE     COLL: allreduce | broadcast (8 B float32) |
 *                              zero (an allreduce of 0 elements, NULL
 *                              buffers)
 *                        MODE: sync  - ranks take turns through a shared
 *                                      page, so neither spins for the
 *                                      other inside the library (the
 *                                      instruction count is the library's
 *                                      own work, repeatable)
 *                              free  - plain loop, prints ns per call
 * 1000 warm-up calls first (instance resolved), then N measured calls
 * in measured_calls(): under callgrind --collect-atstart=no only the
 * library calls of those are counted (client requests).
 */
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <tutti/tutti.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else /* timing only (free mode) without valgrind's headers */
#define CALLGRIND_TOGGLE_COLLECT
#endif

static _Atomic long *turn; /* [0]: rank 0 issued i, [1]: rank 1 issued i */
static tutti_group_t *g;
static tutti_instance_params_t p;
static float bufs[2][2] = {{1, 2}, {0, 0}};
static float *in = bufs[0], *out = bufs[1];
static int rank;
static int measuring; /* collect the library calls (callgrind) */

/* Callgrind counts only between these (run with --collect-atstart=no). */
static void lib_in(void)
{
    if (measuring)
        CALLGRIND_TOGGLE_COLLECT;
}

static void fail(const char *what)
{
    fprintf(stderr, "warm_calls rank %d: %s: %s\n", rank, what,
            tutti_last_error());
    exit(1);
}

static void await(int who, long i)
{
    while (atomic_load(&turn[who]) < i)
        sched_yield();
}

__attribute__((noinline)) static void one_call(void)
{
    tutti_request_t *r;
    if (tutti_execute(g, &p, in, out, &r) != TUTTI_OK)
        fail("execute");
    if (tutti_request_wait(r) != TUTTI_OK)
        fail("wait");
    tutti_request_free(r);
}

/* Rank 0 issues, then rank 1; each waits only once the other issued. */
__attribute__((noinline)) static void sync_calls(long from, long n)
{
    for (long i = from; i < from + n; i++) {
        tutti_request_t *r;
        if (rank == 1)
            await(0, i);
        lib_in();
        if (tutti_execute(g, &p, in, out, &r) != TUTTI_OK)
            fail("execute");
        lib_in();
        atomic_store(&turn[rank], i);
        if (rank == 0)
            await(1, i);
        lib_in();
        if (tutti_request_wait(r) != TUTTI_OK)
            fail("wait");
        tutti_request_free(r);
        lib_in();
    }
}

__attribute__((noinline)) static void measured_calls(long from, long n,
                                                     int sync)
{
    if (sync)
        sync_calls(from, n);
    else
        for (long i = 0; i < n; i++) {
            lib_in();
            one_call();
            lib_in();
        }
}

int main(int argc, char **argv)
{
    tutti_context_t *ctx;
    tutti_group_params_t gp;
    if (argc != 4)
        return 2;
    long n = atol(argv[2]);
    int sync = strcmp(argv[3], "sync") == 0;
    char name[128];
    snprintf(name, sizeof(name), "/dev/shm/warm-calls-%s",
             getenv("TUTTI_JOB_ID") ? getenv("TUTTI_JOB_ID") : "none");
    int fd = open(name, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        return 1;
    turn = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (turn == MAP_FAILED)
        return 1;
    if (tutti_context_create(NULL, &ctx) != TUTTI_OK)
        fail("context");
    tutti_group_params_init(&gp);
    gp.group_key = 1;
    gp.group_size = 2;
    if (tutti_group_join(ctx, &gp, &g) != TUTTI_OK)
        fail("join");
    rank = tutti_group_rank(g);
    tutti_instance_params_init(&p);
    p.instance_key = 5;
    p.dtype = TUTTI_FLOAT32;
    p.count = 2;
    if (strcmp(argv[1], "zero") == 0) {
        p.collective = TUTTI_COLL_ALLREDUCE;
        p.count = 0;
    } else if (strcmp(argv[1], "allreduce") == 0) {
        p.collective = TUTTI_COLL_ALLREDUCE;
        p.op = TUTTI_OP_SUM;
    } else {
        p.collective = TUTTI_COLL_BROADCAST;
        p.root = 0;
    }
    if (p.count == 0)
        in = out = NULL;
    sync_calls(1, 1000);
    double t0 = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec * 1e9 + ts.tv_nsec;
    measuring = 1;
    measured_calls(1001, n, sync);
    measuring = 0;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double ns = (ts.tv_sec * 1e9 + ts.tv_nsec - t0) / (double)n;
    tutti_request_t *r;
    tutti_request_info_t info;
    tutti_execute(g, &p, in, out, &r);
    tutti_request_wait(r);
    tutti_request_info(r, &info);
    tutti_request_free(r);
    printf("warm_calls rank %d: %s via %s, %s: %.1f ns per call (%ld "
           "calls)\n",
           rank, argv[1], info.algorithm, argv[3], ns, n);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    if (rank == 0)
        unlink(name);
    return 0;
}
