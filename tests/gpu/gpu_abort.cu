/*
 * Abort with a stalled stream, on 2 processes (tutti-run -n 2, the staged
 * path): rank 0 queues, before its allreduce, a kernel that spins until a
 * flag in host-mapped memory is set, so its stream never reaches the call;
 * rank 1 makes the same call and calls tutti_abort() after 1 s.  Both
 * requests must fail with TUTTI_ERR_ABORTED within a few seconds, the
 * error naming the abort's reason, and rank 0's stream must be let go once
 * its kernel ends.  Exit status 0 when all of that holds.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <tutti/tutti.h>

#include "gpu_common.h"

#define COUNT (1u << 16)
#define REASON "gpu_abort: rank 1 gives up after 1 s"
#define DEADLINE_S 5.0 /* after the abort */

static double now_s(void)
{
    return gpu_now_s();
}

/* Holds the stream until the host sets *flag. */
__global__ void stall(volatile unsigned *flag)
{
    while (*flag == 0)
        ;
}

static int cuda_failed(cudaError_t e, const char *what)
{
    return gpu_cuda_failed("gpu_abort", e, what);
}

int main(void)
{
    tutti_context_t *ctx = NULL;
    tutti_group_t *g = NULL;
    tutti_instance_params_t p;
    tutti_request_t *r = NULL;
    tutti_status_t st;
    cudaStream_t s = NULL;
    float *in = NULL, *out = NULL;
    unsigned *flag = NULL, *dflag = NULL;
    int dev, rank = -1, rc = 1;
    double t0, t_abort, t_end;
    char detail[1024];

    alarm(60); /* a hang fails the test rather than the whole run */
    if ((st = tutti_context_create(NULL, &ctx)) != TUTTI_OK) {
        fprintf(stderr, "gpu_abort: %s\n", tutti_last_error());
        return 1;
    }
    if (tutti_context_num_tasks(ctx) != 2) {
        fprintf(stderr, "gpu_abort: run under tutti-run -n 2\n");
        goto out;
    }
    if (gpu_join("gpu_abort", ctx, 0x677075616272ULL /* "gpuabr" */, 2,
                 TUTTI_ORDER_TASK, &dev, &g) != 0 ||
        cuda_failed(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags") ||
        cuda_failed(cudaHostAlloc((void **)&flag, sizeof(*flag),
                                  cudaHostAllocMapped), "cudaHostAlloc") ||
        cuda_failed(cudaHostGetDevicePointer((void **)&dflag, flag, 0),
                    "cudaHostGetDevicePointer") ||
        cuda_failed(cudaMalloc(&in, COUNT * sizeof(float)), "cudaMalloc") ||
        cuda_failed(cudaMalloc(&out, COUNT * sizeof(float)), "cudaMalloc") ||
        cuda_failed(cudaMemset(in, 0, COUNT * sizeof(float)), "cudaMemset"))
        goto out;
    *flag = 0;
    rank = tutti_group_rank(g);
    gpu_allreduce_params(&p, COUNT, s);
    /* A first execution sets the instance up: the abort below meets the
     * data path, not the set-up. */
    if ((st = tutti_execute(g, &p, in, out, &r)) != TUTTI_OK ||
        (st = tutti_request_wait(r)) != TUTTI_OK) {
        fprintf(stderr, "gpu_abort: rank %d: first execution: %s: %s\n",
                rank, tutti_strerror(st), tutti_last_error());
        goto out;
    }
    tutti_request_free(r);
    r = NULL;
    if (rank == 0)
        stall<<<1, 1, 0, s>>>(dflag);
    t0 = now_s();
    if ((st = tutti_execute(g, &p, in, out, &r)) != TUTTI_OK) {
        fprintf(stderr, "gpu_abort: rank %d: tutti_execute: %s: %s\n", rank,
                tutti_strerror(st), tutti_last_error());
        goto out;
    }
    if (rank == 1) {
        /* Progress for 1 s (the peer's data never comes), then abort. */
        while (now_s() - t0 < 1.0 &&
               (st = tutti_request_test(r)) == TUTTI_INPROGRESS)
            usleep(1000);
        if (st != TUTTI_INPROGRESS) {
            fprintf(stderr, "gpu_abort: rank 1: the call ended before the "
                    "abort: %s: %s\n", tutti_strerror(st),
                    tutti_last_error());
            goto out;
        }
        tutti_abort(ctx, REASON);
    }
    t_abort = t0 + 1.0;
    st = tutti_request_wait(r);
    t_end = now_s();
    snprintf(detail, sizeof(detail), "%s", tutti_last_error());
    printf("gpu_abort: rank %d%s: %s after %.2f s: %s\n", rank,
           rank == 0 ? " (stream stalled)" : " (aborts)",
           tutti_status_name(st), t_end - t0, detail);
    rc = 0;
    if (st != TUTTI_ERR_ABORTED) {
        printf("gpu_abort: rank %d: FAIL: expected ERR_ABORTED\n", rank);
        rc = 1;
    }
    if (t_end - t_abort > DEADLINE_S) {
        printf("gpu_abort: rank %d: FAIL: ended %.2f s after the abort, "
               "expected within %.0f s\n", rank, t_end - t_abort, DEADLINE_S);
        rc = 1;
    }
    if (strstr(detail, REASON) == NULL) {
        printf("gpu_abort: rank %d: FAIL: the error does not give the "
               "reason '%s'\n", rank, REASON);
        rc = 1;
    }
    /* The stalled kernel ends; the stream must then drain (the core holds
     * nothing of it after the abort). */
    *flag = 1;
    for (t0 = now_s(); cudaStreamQuery(s) == cudaErrorNotReady;
         usleep(1000)) {
        if (now_s() - t0 > DEADLINE_S) {
            printf("gpu_abort: rank %d: FAIL: the stream is still held %.0f "
                   "s after its kernel was let go\n", rank, DEADLINE_S);
            fflush(stdout);
            _exit(1); /* destroying the stream would wait for it */
        }
    }
out:
    if (flag != NULL)
        *flag = 1;
    tutti_request_free(r);
    tutti_group_leave(g);
    cudaFree(in);
    cudaFree(out);
    if (s != NULL)
        cudaStreamDestroy(s);
    cudaFreeHost(flag);
    tutti_context_destroy(ctx);
    return rc;
}
