/*
 * The kernels of libtutti_cuda: the gate that holds a stream until the host
 * writes a word, and the scaling and dividing of op avg and pre/post scales.
 *
 * Scaling and dividing give the same bits as the host's tutti__scale and
 * tutti__divide (core/base/reduce.c), so a result does not depend on where
 * it was computed: float16 and bfloat16 are widened to float32 with the
 * same conversions, computed in float32 and rounded to nearest even;
 * float32 in float32, float64 in float64, each operation IEEE
 * round-to-nearest (the _rn intrinsics: no contraction, no fast math;
 * nvcc's default keeps subnormals).  NaNs need care: a GPU returns one
 * canonical NaN where the host's SSE/AVX propagates the NaN operand,
 * quieted, and makes its own "default NaN" for an invalid operation
 * (0 * inf), so the kernels do as the host does, with the host's default
 * NaN measured at run time by the host side of this file.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

/* tutti/types.h (through kernels.h) is C: in C++, g++'s -Wextra flags the
 * enum/unsigned conditional of tutti_dtype_name(), which this file does not
 * call. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wextra"
#include "device/kernels.h"
#pragma GCC diagnostic pop

#define THREADS 256
#define MAX_BLOCKS 32768

/* ---- bit-exact arithmetic as the host does it ---------------------------- */

static __device__ __forceinline__ float f32(uint32_t u)
{
    return __uint_as_float(u);
}

static __device__ __forceinline__ uint32_t u32(float f)
{
    return __float_as_uint(f);
}

/* The host's tutti__half_to_float (reduce.h), branch for branch. */
static __device__ __forceinline__ float half_to_float(uint16_t h)
{
    const uint32_t exp_mask = 0x7c00u << 13;
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t exp = em & exp_mask;
    uint32_t bits;

    if (exp == 0) /* zero and subnormal, exactly */
        bits = u32(__fsub_rn(f32(em + (113u << 23)), f32(113u << 23)));
    else if (exp == exp_mask) /* inf, NaN (quieted) */
        bits = (em + ((255u - 31u) << 23)) | (em > exp_mask ? 0x00400000u : 0u);
    else
        bits = em + ((127u - 15u) << 23);
    return f32(bits | sign);
}

/* The host's tutti__float_to_half: nearest even, NaNs keep their top
 * payload bits. */
static __device__ __forceinline__ uint16_t float_to_half(float f)
{
    uint32_t u = u32(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t x = u & 0x7fffffffu;
    int32_t xs = (int32_t)x;
    uint32_t h;

    if (xs > 0x7f800000)
        h = 0x7e00u | ((x >> 13) & 0x3ffu);
    else if (xs >= 0x477ff000)
        h = 0x7c00u;
    else if (xs < (113 << 23))
        h = u32(__fadd_rn(f32(x), 0.5f)) - u32(0.5f);
    else
        h = (x + 0xfffu + ((x >> 13) & 1u) - ((127u - 15u) << 23)) >> 13;
    return (uint16_t)(h | sign);
}

static __device__ __forceinline__ float bf16_to_float(uint16_t b)
{
    return f32((uint32_t)b << 16);
}

/* The host's tutti__float_to_bf16. */
static __device__ __forceinline__ uint16_t float_to_bf16(float f)
{
    uint32_t u = u32(f);
    uint32_t v = f != f ? u | 0x00400000u : u + 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(v >> 16);
}

/* x * m or x / m as the host's SSE/AVX: a NaN operand comes back quieted
 * (x first), a NaN the operation makes is the host's default NaN. */
template <bool DIV>
static __device__ __forceinline__ float op_f32(float x, float m, uint32_t dnan)
{
    if (x != x)
        return f32(u32(x) | 0x00400000u);
    if (m != m)
        return f32(u32(m) | 0x00400000u);
    float r = DIV ? __fdiv_rn(x, m) : __fmul_rn(x, m);
    return r != r ? f32(dnan) : r;
}

template <bool DIV>
static __device__ __forceinline__ double op_f64(double x, double m,
                                                uint64_t dnan)
{
    const uint64_t quiet = 1ull << 51;

    if (x != x)
        return __longlong_as_double(
            (long long)((uint64_t)__double_as_longlong(x) | quiet));
    if (m != m)
        return __longlong_as_double(
            (long long)((uint64_t)__double_as_longlong(m) | quiet));
    double r = DIV ? __ddiv_rn(x, m) : __dmul_rn(x, m);
    return r != r ? __longlong_as_double((long long)dnan) : r;
}

/* ---- kernels ------------------------------------------------------------- */

/* One thread: spins until the host's word reaches the target (wrapping
 * compare), sleeping between reads so it leaves the SM's issue slots to
 * other work. */
static __global__ void gate_kernel(const volatile uint32_t *flag,
                                   uint32_t target)
{
    while ((int32_t)(*flag - target) < 0)
        __nanosleep(1000);
    /* What the host wrote before the word is visible to later work. */
    __threadfence_system();
}

#define GRID_LOOP(i, n)                                                        \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);    \
         i += (size_t)gridDim.x * blockDim.x)

template <bool DIV>
static __global__ void f32_kernel(float *dst, const float *src, size_t n,
                                  float m, uint32_t dnan)
{
    GRID_LOOP(i, n)
    dst[i] = op_f32<DIV>(src[i], m, dnan);
}

template <bool DIV>
static __global__ void f64_kernel(double *dst, const double *src, size_t n,
                                  double m, uint64_t dnan)
{
    GRID_LOOP(i, n)
    dst[i] = op_f64<DIV>(src[i], m, dnan);
}

template <bool DIV>
static __global__ void f16_kernel(uint16_t *dst, const uint16_t *src, size_t n,
                                  float m, uint32_t dnan)
{
    GRID_LOOP(i, n)
    dst[i] = float_to_half(op_f32<DIV>(half_to_float(src[i]), m, dnan));
}

template <bool DIV>
static __global__ void bf16_kernel(uint16_t *dst, const uint16_t *src, size_t n,
                                   float m, uint32_t dnan)
{
    GRID_LOOP(i, n)
    dst[i] = float_to_bf16(op_f32<DIV>(bf16_to_float(src[i]), m, dnan));
}

/* As tutti__divide: the divisor converted to T first, the quotient in C's
 * promoted arithmetic, truncating toward zero. */
template <typename T>
static __global__ void int_divide_kernel(T *buf, size_t n, T q)
{
    GRID_LOOP(i, n)
    buf[i] = (T)(buf[i] / q);
}

/* ---- host side ----------------------------------------------------------- */

static unsigned grid_for(size_t count)
{
    size_t blocks = (count + THREADS - 1) / THREADS;
    return (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
}

/* The NaN this host's 0 * inf gives (x86: negative, quiet, no payload;
 * Arm: positive), computed at run time: volatile keeps the compiler from
 * folding it. */
static uint32_t host_nan32(void)
{
    volatile float zero = 0.0f, inf = __builtin_inff();
    float r = zero * inf;
    uint32_t u;
    memcpy(&u, &r, sizeof(u));
    return u;
}

static uint64_t host_nan64(void)
{
    volatile double zero = 0.0, inf = __builtin_inf();
    double r = zero * inf;
    uint64_t u;
    memcpy(&u, &r, sizeof(u));
    return u;
}

/* cudaLaunchKernel rather than <<<>>> and cudaGetLastError: the launch's
 * own error comes back, and an error the caller has yet to read is left
 * alone. */
static int launch(const void *kernel, size_t count, void **args, void *stream)
{
    return (int)cudaLaunchKernel(kernel, dim3(grid_for(count)), dim3(THREADS),
                                 args, 0, (cudaStream_t)stream);
}

int tutti__cuda_gate(void *stream, const volatile uint32_t *flag,
                     uint32_t target)
{
    void *args[] = {&flag, &target};
    return (int)cudaLaunchKernel((const void *)gate_kernel, dim3(1), dim3(1),
                                 args, 0, (cudaStream_t)stream);
}

static int loaded(const void *kernel, int err)
{
    struct cudaFuncAttributes attr;
    return err != 0 ? err : (int)cudaFuncGetAttributes(&attr, kernel);
}

int tutti__cuda_load_kernels(void)
{
    int err = loaded((const void *)gate_kernel, 0);
    err = loaded((const void *)f32_kernel<false>, err);
    err = loaded((const void *)f32_kernel<true>, err);
    err = loaded((const void *)f64_kernel<false>, err);
    err = loaded((const void *)f64_kernel<true>, err);
    err = loaded((const void *)f16_kernel<false>, err);
    err = loaded((const void *)f16_kernel<true>, err);
    err = loaded((const void *)bf16_kernel<false>, err);
    err = loaded((const void *)bf16_kernel<true>, err);
    err = loaded((const void *)int_divide_kernel<int8_t>, err);
    err = loaded((const void *)int_divide_kernel<uint8_t>, err);
    err = loaded((const void *)int_divide_kernel<int32_t>, err);
    err = loaded((const void *)int_divide_kernel<uint32_t>, err);
    err = loaded((const void *)int_divide_kernel<int64_t>, err);
    return loaded((const void *)int_divide_kernel<uint64_t>, err);
}

/* dst = src * f, or buf / f when DIV, for the floating types. */
template <bool DIV>
static int float_op(tutti_dtype_t dtype, void *dst, const void *src,
                    size_t count, double f, void *stream)
{
    float m32 = (float)f;
    uint32_t n32 = host_nan32();
    uint64_t n64 = host_nan64();
    void *args32[] = {&dst, &src, &count, &m32, &n32};
    void *args64[] = {&dst, &src, &count, &f, &n64};

    if (count == 0)
        return 0;
    switch (dtype) {
        case TUTTI_FLOAT32:
            return launch((const void *)f32_kernel<DIV>, count, args32, stream);
        case TUTTI_FLOAT16:
            return launch((const void *)f16_kernel<DIV>, count, args32, stream);
        case TUTTI_BFLOAT16:
            return launch((const void *)bf16_kernel<DIV>, count, args32,
                          stream);
        case TUTTI_FLOAT64:
            return launch((const void *)f64_kernel<DIV>, count, args64, stream);
        default:
            return (int)cudaErrorInvalidValue;
    }
}

int tutti__cuda_scale(tutti_dtype_t dtype, void *dst, const void *src,
                      size_t count, double factor, void *stream)
{
    return float_op<false>(dtype, dst, src, count, factor, stream);
}

template <typename T>
static int int_divide(void *buf, size_t count, int divisor, void *stream)
{
    T q = (T)divisor;
    void *args[] = {&buf, &count, &q};

    /* The host would trap dividing by a divisor its type reads as 0. */
    if (q == 0)
        return (int)cudaErrorInvalidValue;
    if (count == 0)
        return 0;
    return launch((const void *)int_divide_kernel<T>, count, args, stream);
}

int tutti__cuda_divide(tutti_dtype_t dtype, void *buf, size_t count,
                       int divisor, void *stream)
{
    if (divisor <= 0)
        return (int)cudaErrorInvalidValue;
    switch (dtype) {
        case TUTTI_INT8:
            return int_divide<int8_t>(buf, count, divisor, stream);
        case TUTTI_UINT8:
            return int_divide<uint8_t>(buf, count, divisor, stream);
        case TUTTI_INT32:
            return int_divide<int32_t>(buf, count, divisor, stream);
        case TUTTI_UINT32:
            return int_divide<uint32_t>(buf, count, divisor, stream);
        case TUTTI_INT64:
            return int_divide<int64_t>(buf, count, divisor, stream);
        case TUTTI_UINT64:
            return int_divide<uint64_t>(buf, count, divisor, stream);
        default:
            return float_op<true>(dtype, buf, buf, count, divisor, stream);
    }
}
