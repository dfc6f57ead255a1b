/*
 * Every collective x data type x op (op for the reductions only) on a CUDA
 * group, out of place and in place, at two counts, each result checked
 * exactly on the host against tools/pattern.c.  Run alone (a group of
 * one) or under tutti-run -n N (N processes, each on GPU local rank mod
 * the GPUs).  Each case's output is copied back on the caller's stream,
 * queued right after the call and before its wait, into pinned memory
 * (cudaMallocHost: a copy to pageable memory would block on the stream
 * the call holds, tutti.h), so every case also checks that work queued
 * after a call sees its result.  Prints each failure, a tally of the
 * implementations that ran (rank 0) and
 * "gpu_coll: rank R: N passed, N failed"; exit status 0 if none failed.
 *
 * Usage: gpu_coll [--smoke | --quick]
 *   --smoke  one allreduce (float32, sum, 1031 elements), out of place and
 *            in place: 2 cases
 *   --quick  every collective, float32 and int32, sum and max for the
 *            reductions, 1031 elements (for the memory checker)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <tutti/tutti.h>

#include "pattern.h"

static const size_t counts[] = {1, 1031};

/* Which cases run (--smoke, --quick, or all). */
enum { ALL, QUICK, SMOKE };
static int mode = ALL;

typedef struct {
    tutti_context_t *ctx;
    tutti_group_t *group;
    cudaStream_t stream;
    int rank, size;
    int *perm;
    /* Which implementations ran, and how often (rank 0 prints it). */
    char impls[32][64];
    int impl_runs[32];
    int num_impls;
} gpu_t;

#define CUDA_OK(call, what)                                                    \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "gpu_coll: rank %d: %s: %s: %s\n", g->rank,       \
                    (what), cudaGetErrorName(e_), cudaGetErrorString(e_));     \
            goto out;                                                          \
        }                                                                      \
    } while (0)

static void tally(gpu_t *g, const char *impl)
{
    for (int i = 0; i < g->num_impls; i++) {
        if (strcmp(g->impls[i], impl) == 0) {
            g->impl_runs[i]++;
            return;
        }
    }
    if (g->num_impls < 32) {
        snprintf(g->impls[g->num_impls], sizeof(g->impls[0]), "%s", impl);
        g->impl_runs[g->num_impls++] = 1;
    }
}

/* One case: 0 if every output element is right, else 1 (after saying
 * which and why). */
static int run_case(gpu_t *g, const tutti_pattern_t *pat, int inplace,
                    uint64_t key)
{
    size_t es = tutti_dtype_size(pat->dtype);
    size_t in_n = inplace ? tutti_pattern_inplace_count(pat, g->rank)
                          : tutti_pattern_in_count(pat, g->rank);
    size_t out_n = inplace ? in_n : tutti_pattern_out_count(pat, g->rank);
    size_t off_in = inplace ? tutti_pattern_in_offset(pat, g->rank) : 0;
    size_t off_out = inplace ? tutti_pattern_out_offset(pat, g->rank) : 0;
    /* At least one element each, so that no pointer is NULL; exactly the
     * size otherwise, so that memcheck sees any access past the end. */
    size_t in_len = (in_n ? in_n : 1) * es, out_len = (out_n ? out_n : 1) * es;
    char *hin = NULL, *hout = NULL;
    void *din = NULL, *dout = NULL;
    tutti_request_t *req = NULL;
    tutti_request_info_t info;
    tutti_instance_params_t p;
    tutti_status_t st;
    size_t wrong = 0, first = 0;
    int rc = 1;
    char what[160];

    snprintf(what, sizeof(what), "%s %s %s count %zu%s",
             tutti_collective_name(pat->coll), tutti_dtype_name(pat->dtype),
             tutti_op_name(pat->op), pat->count,
             inplace ? " in place" : "");
    CUDA_OK(cudaMallocHost((void **)&hin, in_len), "cudaMallocHost");
    CUDA_OK(cudaMallocHost((void **)&hout, out_len), "cudaMallocHost");
    /* The output holds a value no result has: unwritten counts as wrong. */
    memset(inplace ? hin : hout, 0xa5, inplace ? in_len : out_len);
    tutti_pattern_fill(pat, g->rank, hin + off_in * es);
    CUDA_OK(cudaMalloc(&din, in_len), "cudaMalloc");
    if (!inplace)
        CUDA_OK(cudaMalloc(&dout, out_len), "cudaMalloc");
    else
        dout = din;
    /* Queued, not waited for: the call reads its input after them. */
    CUDA_OK(cudaMemcpyAsync(din, hin, in_len, cudaMemcpyHostToDevice,
                            g->stream), "cudaMemcpyAsync in");
    if (!inplace)
        CUDA_OK(cudaMemcpyAsync(dout, hout, out_len, cudaMemcpyHostToDevice,
                                g->stream), "cudaMemcpyAsync out");
    tutti_instance_params_init(&p);
    p.instance_key = key;
    p.collective = pat->coll;
    p.dtype = pat->dtype;
    p.op = pat->op;
    p.root = pat->root;
    p.count = pat->count;
    p.permutation = g->perm;
    p.stream = g->stream;
    st = tutti_execute(g->group, &p, din, dout, &req);
    if (st != TUTTI_OK) {
        fprintf(stderr, "FAIL %s: tutti_execute: %s: %s\n", what,
                tutti_strerror(st), tutti_last_error());
        goto out;
    }
    CUDA_OK(cudaMemcpyAsync(hout, dout, out_len, cudaMemcpyDeviceToHost,
                            g->stream), "cudaMemcpyAsync back");
    st = tutti_request_wait(req);
    tutti_request_info(req, &info);
    tally(g, info.algorithm[0] ? info.algorithm : "-");
    if (st != TUTTI_OK) {
        fprintf(stderr, "FAIL %s: %s: %s: %s\n", what, info.algorithm,
                tutti_strerror(st), tutti_last_error());
        goto out;
    }
    CUDA_OK(cudaStreamSynchronize(g->stream), "cudaStreamSynchronize");
    wrong = tutti_pattern_check(pat, g->rank, hout + off_out * es, &first);
    if (wrong != 0) {
        fprintf(stderr, "FAIL %s: rank %d: %zu wrong, first at %zu: %g, "
                "expected %g (%s)\n", what, g->rank, wrong, first,
                tutti_pattern_get(hout + off_out * es, pat->dtype, first),
                tutti_pattern_expected(pat, g->rank, first), info.algorithm);
        goto out;
    }
    rc = 0;
out:
    /* Frees wait for the device: only once the request ended. */
    tutti_request_free(req);
    if (dout != din)
        cudaFree(dout);
    cudaFree(din);
    cudaFreeHost(hin);
    cudaFreeHost(hout);
    return rc;
}

static int is_reduction(tutti_collective_t c)
{
    return c == TUTTI_COLL_ALLREDUCE || c == TUTTI_COLL_REDUCE ||
           c == TUTTI_COLL_REDUCE_SCATTER;
}

/* Whether the mode runs this case. */
static int selected(tutti_collective_t c, tutti_dtype_t d, tutti_op_t o,
                    size_t count)
{
    int reduces = is_reduction(c);
    switch (mode) {
    case SMOKE:
        return c == TUTTI_COLL_ALLREDUCE && d == TUTTI_FLOAT32 &&
               o == TUTTI_OP_SUM && count > 1;
    case QUICK:
        return (d == TUTTI_FLOAT32 || d == TUTTI_INT32) && count > 1 &&
               (!reduces || o == TUTTI_OP_SUM || o == TUTTI_OP_MAX);
    default:
        return 1;
    }
}

/* Every case; the number that failed. */
static int run_all(gpu_t *g, int *passed_out)
{
    uint64_t key = 1;
    int failed = 0, passed = 0;

    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        for (int d = 0; d < TUTTI_DTYPE_COUNT; d++) {
            int nops = is_reduction((tutti_collective_t)c) ? TUTTI_OP_COUNT : 1;
            for (int o = 0; o < nops; o++) {
                for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]);
                     k++) {
                    if (!selected((tutti_collective_t)c, (tutti_dtype_t)d,
                                  (tutti_op_t)o, counts[k]))
                        continue;
                    tutti_pattern_t pat = {(tutti_collective_t)c,
                                           (tutti_dtype_t)d, (tutti_op_t)o,
                                           g->size, g->size - 1, counts[k],
                                           NULL, g->perm, 0, 0};
                    for (int inplace = 0; inplace < 2; inplace++) {
                        if (run_case(g, &pat, inplace, key++) == 0)
                            passed++;
                        else
                            failed++;
                    }
                }
            }
        }
    }
    *passed_out = passed;
    return failed;
}

int main(int argc, char **argv)
{
    gpu_t g0 = {0}, *g = &g0;
    tutti_group_params_t gp;
    tutti_status_t st;
    const char *lr = getenv("TUTTI_LOCAL_RANK");
    int ndev = 0, dev, passed = 0, failed = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            mode = SMOKE;
        } else if (strcmp(argv[i], "--quick") == 0) {
            mode = QUICK;
        } else {
            fprintf(stderr, "gpu_coll: unknown argument '%s': expected "
                    "--smoke or --quick\n", argv[i]);
            return 2;
        }
    }
    CUDA_OK(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
    if ((st = tutti_context_create(NULL, &g->ctx)) != TUTTI_OK) {
        fprintf(stderr, "gpu_coll: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return 1;
    }
    g->size = tutti_context_num_tasks(g->ctx);
    dev = (lr != NULL ? atoi(lr) : tutti_context_task(g->ctx)) % ndev;
    CUDA_OK(cudaSetDevice(dev), "cudaSetDevice");
    CUDA_OK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
    g->perm = malloc((size_t)g->size * sizeof(int));
    if (g->perm == NULL)
        goto out;
    for (int r = 0; r < g->size; r++)
        g->perm[r] = (r + 1) % g->size;
    tutti_group_params_init(&gp);
    gp.group_key = 0x677075636f6c6cULL; /* "gpucoll" */
    gp.group_size = g->size;
    gp.device_type = TUTTI_DEVICE_CUDA;
    gp.device_index = dev;
    gp.device_order = TUTTI_ORDER_TOPOLOGY;
    if ((st = tutti_group_join(g->ctx, &gp, &g->group)) != TUTTI_OK) {
        fprintf(stderr, "gpu_coll: task %d: joining the CUDA group on GPU "
                "%d: %s: %s\n", tutti_context_task(g->ctx), dev,
                tutti_strerror(st), tutti_last_error());
        goto out;
    }
    g->rank = tutti_group_rank(g->group);
    failed = run_all(g, &passed);
    if (g->rank == 0)
        for (int i = 0; i < g->num_impls; i++)
            printf("gpu_coll: ran %s %d times\n", g->impls[i],
                   g->impl_runs[i]);
    printf("gpu_coll: rank %d (GPU %d, %s): %d passed, %d failed\n", g->rank,
           dev, tutti_group_pci_bus_id(g->group, g->rank), passed, failed);
    tutti_group_leave(g->group);
out:
    if (g->stream != NULL)
        cudaStreamDestroy(g->stream);
    free(g->perm);
    tutti_context_destroy(g->ctx);
    return failed != 0;
}
