/*
 * The CUDA runtime calls of tutti-perf and tutti-info (cuda_tools.h): the
 * CUDA runtime directly, linked only where the build has CUDA.
 */
#include "tutti-build.h"

#include <stdio.h>

#include "cuda_tools.h"

#if TUTTI_HAVE_CUDA
#include <cuda_runtime_api.h>

/* "cudaMalloc: cudaErrorMemoryAllocation: out of memory". */
static int fail(cudaError_t e, const char *call, char *err, size_t len)
{
    snprintf(err, len, "%s: %s: %s", call, cudaGetErrorName(e),
             cudaGetErrorString(e));
    return -1;
}

int tool_cuda_built(void)
{
    return 1;
}

/* 13000 -> "13.0"; 0 -> "none" (no driver installed). */
static void version_text(int v, char *buf, size_t len)
{
    if (v <= 0)
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
}

void tool_cuda_describe(char *buf, size_t len)
{
    int rt = 0, drv = 0, n = 0;
    char rts[16], drvs[16];
    cudaError_t e;

    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    version_text(rt, rts, sizeof(rts));
    version_text(drv, drvs, sizeof(drvs));
    e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0)
        snprintf(buf, len, "runtime %s, driver %s, %d device%s", rts, drvs,
                 n, n == 1 ? "" : "s");
    else if (e == cudaSuccess)
        snprintf(buf, len, "no device (cudaGetDeviceCount found 0); runtime "
                 "%s, driver %s", rts, drvs);
    else
        snprintf(buf, len, "no device (%s: %s); runtime %s, driver %s",
                 cudaGetErrorName(e), cudaGetErrorString(e), rts, drvs);
}

int tool_cuda_count(int *count_out, char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return fail(e, "cudaGetDeviceCount", err, errlen);
    if (n == 0) {
        snprintf(err, errlen, "cudaGetDeviceCount: no device (expected at "
                 "least one)");
        return -1;
    }
    *count_out = n;
    return 0;
}

int tool_cuda_open(int device, void **stream_out, char *err, size_t errlen)
{
    cudaStream_t s;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        char call[48];
        snprintf(call, sizeof(call), "cudaSetDevice(%d)", device);
        return fail(e, call, err, errlen);
    }
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess)
        return fail(e, "cudaStreamCreateWithFlags", err, errlen);
    *stream_out = s;
    return 0;
}

void tool_cuda_close(void *stream)
{
    if (stream != NULL)
        cudaStreamDestroy((cudaStream_t)stream);
}

int tool_cuda_alloc(size_t len, void **dev_out, char *err, size_t errlen)
{
    cudaError_t e = cudaMalloc(dev_out, len);
    if (e != cudaSuccess) {
        char call[64];
        snprintf(call, sizeof(call), "cudaMalloc(%zu)", len);
        return fail(e, call, err, errlen);
    }
    return 0;
}

void tool_cuda_free(void *dev)
{
    if (dev != NULL)
        cudaFree(dev);
}

int tool_cuda_copy(void *dst, const void *src, size_t len, void *stream,
                   char *err, size_t errlen)
{
    cudaStream_t s = (cudaStream_t)stream;
    cudaError_t e = cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault, s);
    if (e != cudaSuccess)
        return fail(e, "cudaMemcpyAsync", err, errlen);
    e = cudaStreamSynchronize(s);
    if (e != cudaSuccess)
        return fail(e, "cudaStreamSynchronize", err, errlen);
    return 0;
}

#else /* !TUTTI_HAVE_CUDA */

static int not_built(char *err, size_t len)
{
    snprintf(err, len, "%s", TOOL_CUDA_NOT_BUILT);
    return -1;
}

int tool_cuda_built(void)
{
    return 0;
}

void tool_cuda_describe(char *buf, size_t len)
{
    snprintf(buf, len, "not built (configure --with-cuda)");
}

int tool_cuda_count(int *count_out, char *err, size_t errlen)
{
    return not_built(err, errlen);
}

int tool_cuda_open(int device, void **stream_out, char *err, size_t errlen)
{
    return not_built(err, errlen);
}

void tool_cuda_close(void *stream)
{
}

int tool_cuda_alloc(size_t len, void **dev_out, char *err, size_t errlen)
{
    return not_built(err, errlen);
}

void tool_cuda_free(void *dev)
{
}

int tool_cuda_copy(void *dst, const void *src, size_t len, void *stream,
                   char *err, size_t errlen)
{
    return not_built(err, errlen);
}

#endif
