/*
 * libtutti_cuda: the CUDA operations table the core loads (cuda_ops.h),
 * plain C over the CUDA runtime, the kernels in kernels.cu.  The library
 * exports the table alone (tutti_cuda_ops); it links libcudart, never
 * libcuda, so it loads where no driver is installed and its calls then
 * return the runtime's error.
 *
 * The gate that holds a caller's stream is the driver's stream memory
 * operation cuStreamWaitValue32 (reached through the runtime's
 * cudaGetDriverEntryPointByVersion, so libcuda is still not linked): it
 * takes no SM and loads no module, so nothing that runs or loads while a
 * gate is closed (NCCL's kernels, the core's, the caller's) can wait for
 * it.  Where the driver lacks it, a kernel spinning on the word is queued
 * instead; so that no module loads lazily while one spins, the first
 * set_device() of each device loads every kernel of the library.
 */
#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* the driver's types: the function is found at run time */
#include <cuda_runtime_api.h>

#include "device/cuda_ops.h"
#include "device/kernels.h"

/* ---- the runtime and its devices ----------------------------------------- */

static int cu_versions(int *runtime_out, int *driver_out)
{
    int runtime = 0, driver = 0;
    cudaError_t err = cudaRuntimeGetVersion(&runtime);

    if (err != cudaSuccess)
        return (int)err;
    /* 0 and success where no driver is installed. */
    err = cudaDriverGetVersion(&driver);
    if (err != cudaSuccess)
        return (int)err;
    *runtime_out = runtime;
    *driver_out = driver;
    return 0;
}

static int cu_device_count(int *count_out)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);

    if (err != cudaSuccess)
        return (int)err;
    *count_out = count;
    return 0;
}

static int cu_pci_bus_id(int device, char *buf, int len)
{
    cudaError_t err = cudaDeviceGetPCIBusId(buf, len, device);

    if (err != cudaSuccess)
        return (int)err;
    /* The runtime writes hex digits upper case; sysfs, nvidia-smi -q and
     * our logs write them lower case. */
    for (char *p = buf; *p != '\0'; p++)
        *p = (char)tolower((unsigned char)*p);
    return 0;
}

#define LOADED_DEVICES 64
static atomic_uint_least64_t kernels_loaded; /* a bit per device ordinal */

static int cu_get_device(int *device_out)
{
    return (int)cudaGetDevice(device_out);
}

static int cu_set_device(int device)
{
    cudaError_t err = cudaSetDevice(device);
    uint_least64_t bit;

    if (err != cudaSuccess || device < 0 || device >= LOADED_DEVICES)
        return (int)err;
    bit = (uint_least64_t)1 << device;
    if (atomic_load_explicit(&kernels_loaded, memory_order_acquire) & bit)
        return 0;
    int lerr = tutti__cuda_load_kernels();
    if (lerr == 0)
        atomic_fetch_or_explicit(&kernels_loaded, bit, memory_order_release);
    return lerr;
}

static int cu_pointer_device(const void *ptr, int *device_out)
{
    struct cudaPointerAttributes attr;
    cudaError_t err;

    memset(&attr, 0, sizeof(attr));
    err = cudaPointerGetAttributes(&attr, ptr);
    if (err == cudaErrorInvalidValue) {
        /* Runtimes before 11.0 refuse a host pointer they do not know,
         * and leave the refusal as the thread's last error. */
        (void)cudaGetLastError();
        *device_out = -1;
        return 0;
    }
    if (err != cudaSuccess)
        return (int)err;
    switch (attr.type) {
        case cudaMemoryTypeDevice:
        case cudaMemoryTypeManaged:
            *device_out = attr.device;
            break;
        default: /* unregistered or pinned host memory */
            *device_out = -1;
            break;
    }
    return 0;
}

/* ---- memory -------------------------------------------------------------- */

static int cu_host_alloc(size_t len, void **host_out, void **dev_out)
{
    void *host = NULL, *dev = NULL;
    cudaError_t err =
        cudaHostAlloc(&host, len, cudaHostAllocMapped | cudaHostAllocPortable);

    if (err != cudaSuccess)
        return (int)err;
    err = cudaHostGetDevicePointer(&dev, host, 0);
    if (err != cudaSuccess) {
        (void)cudaFreeHost(host);
        return (int)err;
    }
    *host_out = host;
    *dev_out = dev;
    return 0;
}

static void cu_host_free(void *host)
{
    if (host != NULL)
        (void)cudaFreeHost(host);
}

static int cu_dev_alloc(size_t len, void **dev_out)
{
    void *dev = NULL;
    cudaError_t err = cudaMalloc(&dev, len);

    if (err != cudaSuccess)
        return (int)err;
    *dev_out = dev;
    return 0;
}

static void cu_dev_free(void *dev)
{
    if (dev != NULL)
        (void)cudaFree(dev);
}

static int cu_memcpy_async(void *dst, const void *src, size_t len, void *stream)
{
    return (int)cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault,
                                (cudaStream_t)stream);
}

/* ---- streams and events -------------------------------------------------- */

static int cu_stream_create(void **stream_out)
{
    cudaStream_t stream = NULL;
    cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);

    if (err != cudaSuccess)
        return (int)err;
    *stream_out = stream;
    return 0;
}

static void cu_stream_destroy(void *stream)
{
    if (stream != NULL)
        (void)cudaStreamDestroy((cudaStream_t)stream);
}

static int cu_stream_capturing(void *stream, int *capturing_out)
{
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing((cudaStream_t)stream, &status);

    if (err != cudaSuccess)
        return (int)err;
    /* An invalidated capture is still one: work queued now joins it. */
    *capturing_out = status != cudaStreamCaptureStatusNone;
    return 0;
}

static int cu_stream_wait_event(void *stream, void *event)
{
    return (int)cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event,
                                    0);
}

static int cu_event_create(void **event_out)
{
    cudaEvent_t event = NULL;
    cudaError_t err = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);

    if (err != cudaSuccess)
        return (int)err;
    *event_out = event;
    return 0;
}

static void cu_event_destroy(void *event)
{
    if (event != NULL)
        (void)cudaEventDestroy((cudaEvent_t)event);
}

static int cu_event_record(void *event, void *stream)
{
    return (int)cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
}

static int cu_event_query(void *event)
{
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);

    if (err == cudaErrorNotReady)
        return TUTTI__CUDA_PENDING;
    return (int)err;
}

/* ---- the gate ------------------------------------------------------------ */

typedef CUresult (*wait_value32_t)(CUstream stream, CUdeviceptr addr,
                                   cuuint32_t value, unsigned int flags);

static _Atomic(wait_value32_t) wait_value32;
static atomic_int wait_looked; /* 0: not yet; 1: looked (found or not) */

/* cuStreamWaitValue32 of the installed driver (its CUDA 12 form), or
 * NULL where the driver has none. */
static wait_value32_t find_wait_value32(void)
{
    if (!atomic_load_explicit(&wait_looked, memory_order_acquire)) {
        void *fn = NULL;
        enum cudaDriverEntryPointQueryResult found =
            cudaDriverEntryPointSymbolNotFound;
        cudaError_t err = cudaGetDriverEntryPointByVersion(
            "cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &found);
        if (err != cudaSuccess || found != cudaDriverEntryPointSuccess)
            fn = NULL;
        atomic_store_explicit(&wait_value32, (wait_value32_t)fn,
                              memory_order_relaxed);
        atomic_store_explicit(&wait_looked, 1, memory_order_release);
    }
    return atomic_load_explicit(&wait_value32, memory_order_relaxed);
}

/* Work queued on @p stream after this waits until (int32_t)(*flag -
 * target) >= 0: the driver's wait where it has one (CU_STREAM_WAIT_VALUE_
 * GEQ is that cyclic compare), else the gate kernel. */
static int cu_gate(void *stream, const volatile uint32_t *flag,
                   uint32_t target)
{
    wait_value32_t wait = find_wait_value32();

    if (wait != NULL &&
        wait((CUstream)stream, (CUdeviceptr)(uintptr_t)flag, target,
             CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS)
        return 0;
    return tutti__cuda_gate(stream, flag, target);
}

/* ---- errors -------------------------------------------------------------- */

/*
 * "cudaErrorName: description", built once per code and kept for the
 * library's lifetime (the header promises a static string; the core keeps
 * the library loaded while it holds any).  The runtime's
 * codes are below 1000 (cudaErrorUnknown is 999); threads racing on one
 * code keep the first string and free their own.
 */
#define ERROR_CODES 1024
static _Atomic(char *) error_strings[ERROR_CODES];

static const char *cu_error_string(int err)
{
    const char *name, *desc;
    char *s, *expected = NULL;
    size_t len;

    if (err < 0 || err >= ERROR_CODES)
        return "cudaError (out of range): not a CUDA runtime error code";
    s = atomic_load_explicit(&error_strings[err], memory_order_acquire);
    if (s != NULL)
        return s;
    name = cudaGetErrorName((cudaError_t)err);
    desc = cudaGetErrorString((cudaError_t)err);
    len = strlen(name) + 2 + strlen(desc) + 1;
    s = malloc(len);
    if (s == NULL)
        return name; /* static too; the description is lost */
    snprintf(s, len, "%s: %s", name, desc);
    if (!atomic_compare_exchange_strong_explicit(&error_strings[err], &expected,
                                                 s, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free(s);
        return expected;
    }
    return s;
}

/* The strings live as long as the library: freed when it is unloaded. */
__attribute__((destructor)) static void free_error_strings(void)
{
    for (int i = 0; i < ERROR_CODES; i++)
        free(atomic_exchange(&error_strings[i], NULL));
}

/* ---- the table ----------------------------------------------------------- */

extern __attribute__((visibility("default")))
const tutti__cuda_ops_t tutti_cuda_ops;

const tutti__cuda_ops_t tutti_cuda_ops = {
    .size = sizeof(tutti__cuda_ops_t),
    .version = TUTTI__CUDA_OPS_VERSION,
    .versions = cu_versions,
    .device_count = cu_device_count,
    .pci_bus_id = cu_pci_bus_id,
    .set_device = cu_set_device,
    .pointer_device = cu_pointer_device,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .dev_alloc = cu_dev_alloc,
    .dev_free = cu_dev_free,
    .memcpy_async = cu_memcpy_async,
    .stream_create = cu_stream_create,
    .stream_destroy = cu_stream_destroy,
    .stream_capturing = cu_stream_capturing,
    .stream_wait_event = cu_stream_wait_event,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .gate = cu_gate,
    .scale = tutti__cuda_scale,
    .divide = tutti__cuda_divide,
    .error_string = cu_error_string,
    .get_device = cu_get_device,
};
