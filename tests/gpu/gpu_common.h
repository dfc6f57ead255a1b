/*
 * What the CUDA programs of tests/gpu share (gpu_order.cu, gpu_abort.cu):
 * a clock, CUDA errors said on stderr, and joining a CUDA group on the
 * GPU of this rank (its local rank, else its task, modulo the devices).
 */
#ifndef TUTTI_TESTS_GPU_COMMON_H
#define TUTTI_TESTS_GPU_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <tutti/tutti.h>

static inline double gpu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 0 for cudaSuccess; else 1, said on stderr after @p who and @p what. */
static inline int gpu_cuda_failed(const char *who, cudaError_t e,
                                  const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "%s: %s: %s: %s\n", who, what, cudaGetErrorName(e),
            cudaGetErrorString(e));
    return 1;
}

/* Makes this rank's GPU current (into @p dev_out) and joins CUDA group
 * @p key of @p size members on it; 0, or 1 said on stderr. */
static inline int gpu_join(const char *who, tutti_context_t *ctx,
                           uint64_t key, int size, tutti_device_order_t order,
                           int *dev_out, tutti_group_t **g_out)
{
    const char *lr = getenv("TUTTI_LOCAL_RANK");
    int ndev = 0;
    tutti_group_params_t gp;
    tutti_status_t st;
    if (gpu_cuda_failed(who, cudaGetDeviceCount(&ndev), "cudaGetDeviceCount"))
        return 1;
    *dev_out = (lr != NULL ? atoi(lr) : tutti_context_task(ctx)) % ndev;
    if (gpu_cuda_failed(who, cudaSetDevice(*dev_out), "cudaSetDevice"))
        return 1;
    tutti_group_params_init(&gp);
    gp.group_key = key;
    gp.group_size = size;
    gp.device_type = TUTTI_DEVICE_CUDA;
    gp.device_index = *dev_out;
    gp.device_order = order;
    if ((st = tutti_group_join(ctx, &gp, g_out)) != TUTTI_OK) {
        fprintf(stderr, "%s: joining: %s: %s\n", who, tutti_strerror(st),
                tutti_last_error());
        return 1;
    }
    return 0;
}

/* An allreduce of @p count float32 sums on @p stream, instance 1. */
static inline void gpu_allreduce_params(tutti_instance_params_t *p,
                                        size_t count, cudaStream_t stream)
{
    tutti_instance_params_init(p);
    p->instance_key = 1;
    p->collective = TUTTI_COLL_ALLREDUCE;
    p->dtype = TUTTI_FLOAT32;
    p->op = TUTTI_OP_SUM;
    p->count = count;
    p->stream = stream;
}

#endif
