/*
 * The CUDA operations the core uses (internal): one table of plain C
 * functions over the CUDA runtime, exported by the small library
 * libtutti_cuda (core/device/cuda_ops.c and kernels.cu, linked with
 * libcudart, never libcuda).  libtutti loads it the first time a CUDA
 * group needs it (device.c), so a cpu-only user needs no CUDA at run time;
 * the tests put a double of the table in its place (tutti__cuda_use()).
 *
 * Conventions.  Streams and events are opaque pointers (cudaStream_t and
 * cudaEvent_t); a NULL stream is the legacy default stream.  Every entry
 * returns 0 on success or the CUDA error code (a cudaError_t, positive),
 * which error_string() describes; event_query() also returns
 * TUTTI__CUDA_PENDING while the event's work has not finished.  No entry
 * blocks the calling thread on device work, except the frees and destroys,
 * which the core calls only when that work is over.
 */
#ifndef TUTTI_CORE_DEVICE_CUDA_OPS_H
#define TUTTI_CORE_DEVICE_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/types.h>

#define TUTTI__CUDA_PENDING (-1)
#define TUTTI__CUDA_OPS_SYMBOL "tutti_cuda_ops"
#define TUTTI__CUDA_OPS_VERSION 1
#define TUTTI__PCI_BUS_ID_LEN 16 /* "0000:3b:00.0" and its NUL */

typedef struct tutti__cuda_ops {
    size_t size;                   /* sizeof(tutti__cuda_ops_t) */
    uint32_t version;              /* TUTTI__CUDA_OPS_VERSION */
    /* ---- the runtime and its devices ------------------------------ */
    /** CUDA runtime and driver versions (1000 * major + 10 * minor); the
     *  driver's is 0 where no driver is installed. */
    int (*versions)(int *runtime_out, int *driver_out);
    /** Devices this process can use (cudaGetDeviceCount). */
    int (*device_count)(int *count_out);
    /** PCI bus id of @p device, "dddd:bb:dd.f", at most len - 1 chars. */
    int (*pci_bus_id)(int device, char *buf, int len);
    /** Makes @p device current on the calling thread; the first time for
     *  a device, also loads every kernel of the library there, so none
     *  loads later while a gate could be closed. */
    int (*set_device)(int device);
    /** Where @p ptr points: the ordinal of the device whose memory it is
     *  (device or managed memory), or -1 for host memory (pageable or
     *  pinned). */
    int (*pointer_device)(const void *ptr, int *device_out);
    /* ---- memory ------------------------------------------------------- */
    /** Pinned host memory the device can read and write (mapped):
     *  @p host_out for the host, @p dev_out the device's address of it. */
    int (*host_alloc)(size_t len, void **host_out, void **dev_out);
    void (*host_free)(void *host);
    /** Device memory of the current device. */
    int (*dev_alloc)(size_t len, void **dev_out);
    void (*dev_free)(void *dev);
    /** Copies @p len bytes on @p stream, any direction (cudaMemcpyDefault);
     *  returns once queued. */
    int (*memcpy_async)(void *dst, const void *src, size_t len, void *stream);
    /* ---- streams and events -------------------------------------------- */
    /** A stream of the current device that does not synchronize with the
     *  legacy default stream. */
    int (*stream_create)(void **stream_out);
    void (*stream_destroy)(void *stream);
    /** 1 in @p capturing_out while @p stream is being captured into a CUDA
     *  graph, else 0. */
    int (*stream_capturing)(void *stream, int *capturing_out);
    /** Makes work queued on @p stream after it wait for @p event. */
    int (*stream_wait_event)(void *stream, void *event);
    /** An event without timing. */
    int (*event_create)(void **event_out);
    void (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    /** 0 once the work before the event's record finished,
     *  TUTTI__CUDA_PENDING before, or an error. */
    int (*event_query)(void *event);
    /* ---- kernels (kernels.cu) ----------------------------------------- */
    /** Makes the work queued on @p stream after this wait until the
     *  32-bit word at device address @p flag (pinned host memory, mapped)
     *  reaches @p target (compared as (int32_t)(*flag - target) >= 0), so
     *  the host holds the stream's later work until it writes the word:
     *  the driver's cuStreamWaitValue32 (no SM, no module), else a kernel
     *  that spins on the word. */
    int (*gate)(void *stream, const volatile uint32_t *flag, uint32_t target);
    /** dst[i] = src[i] * factor for a floating @p dtype, as the host's
     *  tutti__scale computes it (float16 and bfloat16 in float32, rounded
     *  to nearest even; float64 in float64); dst may be src. */
    int (*scale)(tutti_dtype_t dtype, void *dst, const void *src,
                 size_t count, double factor, void *stream);
    /** buf[i] /= divisor, as the host's tutti__divide (integers truncate
     *  toward zero, floating types divide correctly rounded). */
    int (*divide)(tutti_dtype_t dtype, void *buf, size_t count, int divisor,
                  void *stream);
    /** "cudaErrorNoDevice: no CUDA-capable device is detected"; static. */
    const char *(*error_string)(int err);
    /* ---- optional: NULL where the table does not have it ----------- */
    /** The device current on the calling thread (cudaGetDevice), so the
     *  core can put the caller's back after working on a member's. */
    int (*get_device)(int *device_out);
} tutti__cuda_ops_t;

/* Whether table @p ops has the optional entry @p field. */
#define TUTTI__CUDA_HAS(ops, field)                                            \
    ((ops)->size >= offsetof(tutti__cuda_ops_t, field) +                      \
                        sizeof((ops)->field) &&                                \
     (ops)->field != NULL)

#endif
