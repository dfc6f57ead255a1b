/*
 * The plain NCCL baseline for tutti-perf --device cuda: ncclAllReduce
 * (float32, sum) in a communicator of one on GPU 0, on a non-blocking
 * stream, timed as tutti-perf times: on the host around each call and the
 * wait for its result (here cudaStreamSynchronize), after warm-up calls.
 * Prints NCCL's version, then "size time_us" at 8 B, 1 MiB and 64 MiB.
 * Usage: nccl_baseline [ITERS [WARMUP]] (tutti-perf's defaults: 20, 5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

static const size_t sizes[] = {8, (size_t)1 << 20, (size_t)64 << 20};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CUDA_OK(call)                                                          \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "nccl_baseline: %s: %s\n", #call,                 \
                    cudaGetErrorString(e_));                                   \
            return 1;                                                          \
        }                                                                      \
    } while (0)
#define NCCL_OK(call)                                                          \
    do {                                                                       \
        ncclResult_t r_ = (call);                                              \
        if (r_ != ncclSuccess) {                                               \
            fprintf(stderr, "nccl_baseline: %s: %s\n", #call,                 \
                    ncclGetErrorString(r_));                                   \
            return 1;                                                          \
        }                                                                      \
    } while (0)

/* @p n calls of @p count floats, each waited for; seconds per call. */
static int run(ncclComm_t comm, cudaStream_t s, void *in, void *out,
               size_t count, int n, double *per_call_out)
{
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        NCCL_OK(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, comm, s));
        CUDA_OK(cudaStreamSynchronize(s));
    }
    *per_call_out = n > 0 ? (now_s() - t0) / n : 0;
    return 0;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    int warmup = argc > 2 ? atoi(argv[2]) : 5;
    size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
    ncclUniqueId id;
    ncclComm_t comm;
    cudaStream_t s;
    void *in, *out;
    int v;
    double t;

    if (iters < 1 || warmup < 0) {
        fprintf(stderr, "usage: nccl_baseline [ITERS [WARMUP]]\n");
        return 2;
    }
    NCCL_OK(ncclGetVersion(&v));
    printf("# nccl_baseline: NCCL %d.%d.%d, ncclAllReduce float32 sum, "
           "1 rank, %d iterations (+%d warm-up)\n", v / 10000, v / 100 % 100,
           v % 100, iters, warmup);
    printf("#%11s %11s\n", "size", "time_us");
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&in, max));
    CUDA_OK(cudaMalloc(&out, max));
    CUDA_OK(cudaMemset(in, 0, max));
    NCCL_OK(ncclGetUniqueId(&id));
    NCCL_OK(ncclCommInitRank(&comm, 1, id, 0));
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t count = sizes[i] / sizeof(float);
        if (run(comm, s, in, out, count, warmup, &t) != 0 ||
            run(comm, s, in, out, count, iters, &t) != 0)
            return 1;
        printf("%12zu %11.2f\n", sizes[i], t * 1e6);
    }
    ncclCommDestroy(comm);
    cudaFree(in);
    cudaFree(out);
    cudaStreamDestroy(s);
    return 0;
}
