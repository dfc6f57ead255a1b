/*
 * One task of the launcher tests (tests/mp/test_bootstrap.c), started by
 * mpirun, or by the test itself with only Slurm's or PMI's variables set.
 *
 *   launch_worker
 *
 * Creates a context from the environment alone, joins a group of every
 * task, runs allreduce (float32 sum, int64 max) at counts 0, 1, 7, 4099 and
 * 1 Mi + 3, then a broadcast (float64, counts 1 and 65537) from every root,
 * and compares every element with the exact result.  Prints one line:
 *
 *   launch_worker: task T of N (local L of M) from SOURCE, job JOB: OK
 *
 * or "...: FAILED: <what>" and exits 1 (on stderr, with the status, where
 * the context cannot be created).  With TUTTI_TEST_STORE_DIR set, the
 * context meets the others through a store of files in that directory
 * (tests/common/file_store.h), the task and count from TUTTI_RANK and
 * TUTTI_SIZE, and the line says "(local -1 of -1) from a store".
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "job/bootstrap.h"
#include "file_store.h"
#include "members.h"

static const size_t counts[] = {0, 1, 7, 4099, (1u << 20) + 3};
static const size_t bcast_counts[] = {1, 65537};

static char failure[512];

static int fail(const char *what, size_t count, size_t i, double got,
                double want)
{
    if (failure[0] == '\0')
        snprintf(failure, sizeof(failure), "%s count %zu: element %zu is %.17g, "
                 "expected %.17g", what, count, i, got, want);
    return 0;
}

static int call_failed(const char *what, size_t count, tutti_status_t st)
{
    if (failure[0] == '\0')
        snprintf(failure, sizeof(failure), "%s count %zu: %s: %s", what, count,
                 tutti_strerror(st), tutti_last_error());
    return 0;
}

/* A value of rank @p r at element @p i: spread over the whole int64 range. */
static int64_t i64_value(int r, size_t i)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)r * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (int64_t)x;
}

/* One allreduce of the test: its type and op; fill sets element i of a
 * rank's input and output, exact says whether element i of the output is
 * right (recording the first failure if not). */
typedef struct {
    const char *what;
    tutti_dtype_t dtype;
    tutti_op_t op;
    void (*fill)(void *in, void *out, size_t i, int rank);
    int (*exact)(const void *out, size_t i, int size, size_t count);
} allreduce_t;

static void f32_fill(void *in, void *out, size_t i, int rank)
{
    ((float *)in)[i] = (float)((rank + 1) * (int)(1 + i % 251));
    ((float *)out)[i] = -1.0f;
}

/* Every partial sum is an integer below 2^24: exact in any order. */
static int f32_exact(const void *out, size_t i, int size, size_t count)
{
    float got = ((const float *)out)[i];
    float want = (float)(size * (size + 1) / 2 * (int)(1 + i % 251));
    return got == want || fail("allreduce float32 sum", count, i, got, want);
}

static void i64_fill(void *in, void *out, size_t i, int rank)
{
    ((int64_t *)in)[i] = i64_value(rank, i);
    ((int64_t *)out)[i] = 0;
}

static int i64_exact(const void *out, size_t i, int size, size_t count)
{
    int64_t got = ((const int64_t *)out)[i], want = i64_value(0, i);
    for (int r = 1; r < size; r++)
        if (i64_value(r, i) > want)
            want = i64_value(r, i);
    if (got != want && failure[0] == '\0')
        snprintf(failure, sizeof(failure), "allreduce int64 max count %zu: "
                 "element %zu is %" PRId64 ", expected %" PRId64, count, i,
                 got, want);
    return got == want;
}

static const allreduce_t allreduces[] = {
    {"allreduce float32 sum", TUTTI_FLOAT32, TUTTI_OP_SUM, f32_fill,
     f32_exact},
    {"allreduce int64 max", TUTTI_INT64, TUTTI_OP_MAX, i64_fill, i64_exact},
};

/* Allreduce @p a of @p count elements, every element checked. */
static int allreduce_exact(tutti_group_t *g, const allreduce_t *a, int rank,
                           int size, size_t count)
{
    void *in = malloc((count + 1) * sizeof(int64_t));
    void *out = malloc((count + 1) * sizeof(int64_t));
    int ok = in != NULL && out != NULL;
    tutti_status_t st;

    for (size_t i = 0; ok && i < count; i++)
        a->fill(in, out, i, rank);
    if (ok && (st = tutti_allreduce(g, in, out, count, a->dtype, a->op)) !=
                  TUTTI_OK)
        ok = call_failed(a->what, count, st);
    for (size_t i = 0; ok && i < count; i++)
        ok = a->exact(out, i, size, count);
    free(in);
    free(out);
    return ok;
}

static int broadcast_from(tutti_group_t *g, int rank, int root, size_t count)
{
    double *buf = malloc(count * sizeof(double));
    int ok = buf != NULL;
    tutti_status_t st;

    for (size_t i = 0; ok && i < count; i++)
        buf[i] = rank == root ? root * 1e6 + (double)i : -1.0;
    if (ok && (st = tutti_broadcast(g, buf, count, TUTTI_FLOAT64, root)) !=
                  TUTTI_OK)
        ok = call_failed("broadcast", count, st);
    for (size_t i = 0; ok && i < count; i++)
        if (buf[i] != root * 1e6 + (double)i)
            ok = fail("broadcast", count, i, buf[i], root * 1e6 + (double)i);
    free(buf);
    return ok;
}

int main(void)
{
    tutti__bootstrap_t b;
    tutti_context_t *ctx;
    tutti_group_t *g;
    tutti_status_t st;
    char who[64];
    int ok = 1;

    const char *store_dir = getenv("TUTTI_TEST_STORE_DIR");
    if (store_dir != NULL) {
        /* Met through a store of files there, the task and count from
         * TUTTI_RANK and TUTTI_SIZE: what it learns is the context's. */
        /* Read until the context goes: not on this block's stack. */
        static tutti_store_t store;
        tutti_store_init(&store);
        store.user = (void *)store_dir;
        store.set = file_store_set;
        store.get = file_store_get;
        tutti_context_params_t cp;
        tutti_context_params_init(&cp);
        cp.task = atoi(getenv("TUTTI_RANK") ? getenv("TUTTI_RANK") : "-1");
        cp.num_tasks = atoi(getenv("TUTTI_SIZE") ? getenv("TUTTI_SIZE")
                                                 : "-1");
        cp.store = &store;
        memset(&b, 0, sizeof(b));
        b.local_task = b.local_num_tasks = -1;
        b.source = "a store";
        if ((st = tutti_context_create(&cp, &ctx)) != TUTTI_OK) {
            printf("launch_worker: task %d: context: FAILED: %s\n", cp.task,
                   tutti_last_error());
            return 1;
        }
    } else {
        /* What the context will learn, to say where it came from. */
        if ((st = tutti__bootstrap(NULL, &b)) != TUTTI_OK) {
            printf("launch_worker: bootstrap: FAILED: %s\n",
                   tutti_last_error());
            return 1;
        }
        snprintf(who, sizeof(who), "launch_worker: task %d: context: FAILED",
                 b.task);
        if ((ctx = test_context_from_env(who, tutti_strerror)) == NULL)
            return 1;
    }
    int rank = tutti_context_task(ctx), size = tutti_context_num_tasks(ctx);

    if ((st = test_join(ctx, 1, size, 0, 60, &g)) != TUTTI_OK) {
        printf("launch_worker: task %d: join: FAILED: %s\n", rank,
               tutti_last_error());
        tutti_context_destroy(ctx);
        return 1;
    }
    for (size_t c = 0; ok && c < sizeof(counts) / sizeof(counts[0]); c++)
        for (size_t a = 0; ok && a < 2; a++)
            ok = allreduce_exact(g, &allreduces[a], rank, size, counts[c]);
    for (size_t c = 0; ok && c < sizeof(bcast_counts) / sizeof(bcast_counts[0]);
         c++)
        for (int root = 0; ok && root < size; root++)
            ok = broadcast_from(g, rank, root, bcast_counts[c]);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);

    printf("launch_worker: task %d of %d (local %d of %d) from %s, job %s: "
           "%s%s\n", rank, size, b.local_task, b.local_num_tasks, b.source,
           b.job_id, ok ? "OK" : "FAILED: ", ok ? "" : failure);
    return ok ? 0 : 1;
}
