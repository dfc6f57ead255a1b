/*
 * The kernels of libtutti_cuda (kernels.cu), as host functions that queue
 * them: the C side of the library (cuda_ops.c) puts them in the operations
 * table.  Hidden: only the table leaves the library.  Each returns 0 or a
 * cudaError_t value, as the table's entries do (see cuda_ops.h).
 */
#ifndef TUTTI_CORE_DEVICE_KERNELS_H
#define TUTTI_CORE_DEVICE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI__CUDA_HIDDEN __attribute__((visibility("hidden")))

/** Loads every kernel of the library on the current device
 *  (cudaFuncGetAttributes on each): a module loaded lazily while a kernel
 *  spins may wait for it, so none is loaded while a gate could be
 *  closed.  0 or the first error (cudaErrorNoKernelImageForDevice where
 *  the library was built for no architecture of the device). */
TUTTI__CUDA_HIDDEN int tutti__cuda_load_kernels(void);
/** Queues the gate kernel (the fallback of tutti__cuda_ops_t.gate) on
 *  @p stream. */
TUTTI__CUDA_HIDDEN int
tutti__cuda_gate(void *stream, const volatile uint32_t *flag, uint32_t target);
/** Queues dst[i] = src[i] * factor (tutti__cuda_ops_t.scale);
 *  cudaErrorInvalidValue for an integer or invalid @p dtype. */
TUTTI__CUDA_HIDDEN int tutti__cuda_scale(tutti_dtype_t dtype, void *dst,
                                         const void *src, size_t count,
                                         double factor, void *stream);
/** Queues buf[i] /= divisor (tutti__cuda_ops_t.divide);
 *  cudaErrorInvalidValue for divisor <= 0, a divisor the integer type
 *  reads as 0, or an invalid @p dtype. */
TUTTI__CUDA_HIDDEN int tutti__cuda_divide(tutti_dtype_t dtype, void *buf,
                                          size_t count, int divisor,
                                          void *stream);

#ifdef __cplusplus
}
#endif

#endif
