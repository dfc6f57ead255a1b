/*
 * Stream ordering of one allreduce (float32, sum) on a CUDA group: a slow
 * producer kernel (spins about 50 ms, then writes the input) is queued on
 * the caller's stream before the call, and a consumer kernel that copies
 * the result to another buffer after it.  The copy must equal the exact
 * result, and tutti_execute must return without waiting for the producer.
 * Run alone (NCCL's path) or under tutti-run -n N (the staged path when
 * the members share a GPU).  Exit status 0 when both hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <tutti/tutti.h>

#include "gpu_common.h"

#define COUNT (1u << 20)
#define SPIN_MS 50

static double now_ms(void)
{
    return gpu_now_s() * 1e3;
}

/* Spins @p cycles clocks, then writes rank + 1 + i % 7. */
__global__ void produce(float *in, unsigned n, int rank, long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x)
        in[i] = (float)(rank + 1 + i % 7);
}

__global__ void consume(float *dst, const float *src, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x)
        dst[i] = src[i];
}

static int cuda_failed(cudaError_t e, const char *what)
{
    return gpu_cuda_failed("gpu_order", e, what);
}

/* One execution of the instance on @p stream, waited for. */
static tutti_status_t run(tutti_group_t *g, const tutti_instance_params_t *p,
                          const float *in, float *out, double *exec_ms_out)
{
    tutti_request_t *r;
    double t0 = now_ms();
    tutti_status_t st = tutti_execute(g, p, in, out, &r);
    *exec_ms_out = now_ms() - t0;
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_free(r);
    return st;
}

int main(void)
{
    tutti_context_t *ctx = NULL;
    tutti_group_t *g = NULL;
    tutti_instance_params_t p;
    tutti_request_t *r = NULL;
    tutti_status_t st;
    cudaStream_t s = NULL;
    float *in = NULL, *out = NULL, *copy = NULL, *host = NULL;
    int dev, rank, n, khz = 0, rc = 1;
    double exec_ms, t0;
    size_t wrong = 0, first = 0;

    if ((st = tutti_context_create(NULL, &ctx)) != TUTTI_OK) {
        fprintf(stderr, "gpu_order: %s\n", tutti_last_error());
        return 1;
    }
    if (gpu_join("gpu_order", ctx, 0x6770756f72646572ULL /* "gpuorder" */,
                 tutti_context_num_tasks(ctx), TUTTI_ORDER_TOPOLOGY, &dev,
                 &g) != 0 ||
        cuda_failed(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev),
                    "cudaDeviceGetAttribute") ||
        cuda_failed(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags") ||
        cuda_failed(cudaMalloc(&in, COUNT * sizeof(float)), "cudaMalloc") ||
        cuda_failed(cudaMalloc(&out, COUNT * sizeof(float)), "cudaMalloc") ||
        cuda_failed(cudaMalloc(&copy, COUNT * sizeof(float)), "cudaMalloc"))
        goto out;
    if ((host = (float *)malloc(COUNT * sizeof(float))) == NULL)
        goto out;
    rank = tutti_group_rank(g);
    n = tutti_group_size(g);
    gpu_allreduce_params(&p, COUNT, s);
    /* A first execution sets the instance up (NCCL's communicator, the
     * staging buffers), so that the timed one measures the call alone. */
    produce<<<64, 256, 0, s>>>(in, COUNT, rank, 0);
    if ((st = run(g, &p, in, out, &exec_ms)) != TUTTI_OK) {
        fprintf(stderr, "gpu_order: first execution: %s: %s\n",
                tutti_strerror(st), tutti_last_error());
        goto out;
    }
    if (cuda_failed(cudaStreamSynchronize(s), "cudaStreamSynchronize") ||
        cuda_failed(cudaMemsetAsync(in, 0, COUNT * sizeof(float), s),
                    "cudaMemsetAsync") ||
        cuda_failed(cudaMemsetAsync(out, 0, COUNT * sizeof(float), s),
                    "cudaMemsetAsync") ||
        cuda_failed(cudaMemsetAsync(copy, 0, COUNT * sizeof(float), s),
                    "cudaMemsetAsync"))
        goto out;
    produce<<<64, 256, 0, s>>>(in, COUNT, rank, (long long)khz * SPIN_MS);
    t0 = now_ms();
    st = tutti_execute(g, &p, in, out, &r);
    exec_ms = now_ms() - t0;
    if (st != TUTTI_OK) {
        fprintf(stderr, "gpu_order: tutti_execute: %s: %s\n",
                tutti_strerror(st), tutti_last_error());
        goto out;
    }
    consume<<<64, 256, 0, s>>>(copy, out, COUNT);
    if (cuda_failed(cudaGetLastError(), "consume<<<>>>"))
        goto out;
    st = tutti_request_wait(r);
    if (st != TUTTI_OK) {
        fprintf(stderr, "gpu_order: the ordered execution: %s: %s\n",
                tutti_strerror(st), tutti_last_error());
        goto out;
    }
    if (cuda_failed(cudaMemcpyAsync(host, copy, COUNT * sizeof(float),
                                    cudaMemcpyDeviceToHost, s),
                    "cudaMemcpyAsync") ||
        cuda_failed(cudaStreamSynchronize(s), "cudaStreamSynchronize"))
        goto out;
    for (unsigned i = 0; i < COUNT; i++) {
        float want = (float)(n * (n + 1) / 2 + n * (int)(i % 7));
        if (host[i] != want && wrong++ == 0)
            first = i;
    }
    printf("gpu_order: rank %d of %d: tutti_execute returned in %.2f ms "
           "(the producer spins %d ms); %zu of %u wrong", rank, n, exec_ms,
           SPIN_MS, wrong, COUNT);
    if (wrong)
        printf(", first at %zu: %g, expected %g", first, host[first],
               (double)(n * (n + 1) / 2 + n * (int)(first % 7)));
    printf("\n");
    /* Returning after the producer means the caller's thread waited for
     * the stream, which the contract rules out. */
    if (exec_ms >= SPIN_MS * 0.8)
        printf("gpu_order: rank %d: FAIL: tutti_execute waited for the "
               "stream (%.2f ms)\n", rank, exec_ms);
    rc = wrong != 0 || exec_ms >= SPIN_MS * 0.8;
out:
    tutti_request_free(r);
    tutti_group_leave(g);
    cudaFree(in);
    cudaFree(out);
    cudaFree(copy);
    if (s != NULL)
        cudaStreamDestroy(s);
    free(host);
    tutti_context_destroy(ctx);
    return rc;
}
