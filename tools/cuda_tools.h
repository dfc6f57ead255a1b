/*
 * The CUDA runtime calls tutti-perf and tutti-info make, behind plain C
 * that compiles the same with and without CUDA in the build
 * (TUTTI_HAVE_CUDA): without it, each call fails saying so.  Errors are
 * written into the caller's buffer as "<call>: <cudaError name>: <text>".
 */
#ifndef TUTTI_TOOLS_CUDA_TOOLS_H
#define TUTTI_TOOLS_CUDA_TOOLS_H

#include <stddef.h>

/** What the tools say when asked for CUDA in a build without it. */
#define TOOL_CUDA_NOT_BUILT "this build has no CUDA (configure --with-cuda)"

/** 1 if this build has CUDA, else 0. */
int tool_cuda_built(void);

/**
 * One line on CUDA here, without the "cuda: " label, into @p buf:
 * "runtime 13.0, driver 12.8, 1 devices"; "no device (<error name>: <text>);
 * runtime 13.0, driver none" where the runtime finds no device or no
 * driver; or "not built (configure --with-cuda)".  Never fails.
 */
void tool_cuda_describe(char *buf, size_t len);

/**
 * Devices this process can use into @p count_out; 0, or -1 with why in
 * @p err (cudaGetDeviceCount's error, no device at all, or no CUDA in the
 * build).
 */
int tool_cuda_count(int *count_out, char *err, size_t errlen);

/**
 * Makes device @p device current on the calling thread and creates a
 * stream of it that does not synchronize with the legacy default stream
 * (a cudaStream_t, into @p stream_out).  0, or -1 with why in @p err.
 */
int tool_cuda_open(int device, void **stream_out, char *err, size_t errlen);
/** Destroys a stream from tool_cuda_open().  NULL ok. */
void tool_cuda_close(void *stream);

/** @p len bytes of device memory of the current device.  0 or -1. */
int tool_cuda_alloc(size_t len, void **dev_out, char *err, size_t errlen);
/** NULL ok. */
void tool_cuda_free(void *dev);

/**
 * Copies @p len bytes between host and device memory (either way), queued
 * on @p stream after the work already there, and waits for the stream.
 * 0 or -1.
 */
int tool_cuda_copy(void *dst, const void *src, size_t len, void *stream,
                   char *err, size_t errlen);

#endif
