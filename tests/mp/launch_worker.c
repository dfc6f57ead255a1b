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
 * or "...: FAILED: <what>" and exits 1.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "job/bootstrap.h"

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

static int allreduce_f32(tutti_group_t *g, int rank, int size, size_t count)
{
    float *in = malloc((count + 1) * sizeof(float));
    float *out = malloc((count + 1) * sizeof(float));
    int ok = in != NULL && out != NULL;
    tutti_status_t st;

    for (size_t i = 0; ok && i < count; i++) {
        in[i] = (float)((rank + 1) * (int)(1 + i % 251));
        out[i] = -1.0f;
    }
    if (ok && (st = tutti_allreduce(g, in, out, count, TUTTI_FLOAT32,
                                    TUTTI_OP_SUM)) != TUTTI_OK)
        ok = call_failed("allreduce float32 sum", count, st);
    /* Every partial sum is an integer below 2^24: exact in any order. */
    for (size_t i = 0; ok && i < count; i++) {
        float want = (float)(size * (size + 1) / 2 * (int)(1 + i % 251));
        if (out[i] != want)
            ok = fail("allreduce float32 sum", count, i, out[i], want);
    }
    free(in);
    free(out);
    return ok;
}

static int allreduce_i64(tutti_group_t *g, int rank, int size, size_t count)
{
    int64_t *in = malloc((count + 1) * sizeof(int64_t));
    int64_t *out = malloc((count + 1) * sizeof(int64_t));
    int ok = in != NULL && out != NULL;
    tutti_status_t st;

    for (size_t i = 0; ok && i < count; i++) {
        in[i] = i64_value(rank, i);
        out[i] = 0;
    }
    if (ok && (st = tutti_allreduce(g, in, out, count, TUTTI_INT64,
                                    TUTTI_OP_MAX)) != TUTTI_OK)
        ok = call_failed("allreduce int64 max", count, st);
    for (size_t i = 0; ok && i < count; i++) {
        int64_t want = i64_value(0, i);
        for (int r = 1; r < size; r++)
            if (i64_value(r, i) > want)
                want = i64_value(r, i);
        if (out[i] != want && failure[0] == '\0') {
            snprintf(failure, sizeof(failure), "allreduce int64 max count %zu: "
                     "element %zu is %" PRId64 ", expected %" PRId64, count, i,
                     out[i], want);
            ok = 0;
        }
    }
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
    tutti_group_params_t gp;
    tutti_group_t *g;
    tutti_status_t st;
    int ok = 1;

    /* What the context will learn, to say where it came from. */
    if ((st = tutti__bootstrap(NULL, &b)) != TUTTI_OK) {
        printf("launch_worker: bootstrap: FAILED: %s\n", tutti_last_error());
        return 1;
    }
    if ((st = tutti_context_create(NULL, &ctx)) != TUTTI_OK) {
        printf("launch_worker: task %d: context: FAILED: %s\n", b.task,
               tutti_last_error());
        return 1;
    }
    int rank = tutti_context_task(ctx), size = tutti_context_num_tasks(ctx);

    tutti_group_params_init(&gp);
    gp.group_key = 1;
    gp.group_size = size;
    gp.timeout = 60;
    if ((st = tutti_group_join(ctx, &gp, &g)) != TUTTI_OK) {
        printf("launch_worker: task %d: join: FAILED: %s\n", rank,
               tutti_last_error());
        tutti_context_destroy(ctx);
        return 1;
    }
    for (size_t c = 0; ok && c < sizeof(counts) / sizeof(counts[0]); c++)
        ok = allreduce_f32(g, rank, size, counts[c]) &&
             allreduce_i64(g, rank, size, counts[c]);
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
