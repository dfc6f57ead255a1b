/*
 * Throughput of the reduction kernels (not part of the build).
 *
 *   gcc -O3 -std=gnu11 -I include -I core bench/reduce_bench.c \
 *       core/base/reduce.c -o reduce_bench && ./reduce_bench
 *
 * Add -DTUTTI_REDUCE_BASELINE_ONLY to measure the kernels without the AVX2
 * set.  GB/s counts the bytes the kernel must move: two inputs read and one
 * output written, 3 * count * element size, also when dst is one of the
 * inputs.  Each figure is the best of several timed runs of about 0.1 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/reduce.h"

enum { RUNS = 7 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Fill with small values of the type so sums stay finite over many runs. */
static void fill(tutti_dtype_t dtype, void *buf, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        float v = (float)(i % 61) * 0.015625f;
        if (dtype == TUTTI_FLOAT32)
            ((float *)buf)[i] = v;
        else if (dtype == TUTTI_BFLOAT16)
            ((uint16_t *)buf)[i] = tutti__float_to_bf16(v);
        else if (dtype == TUTTI_FLOAT16)
            ((uint16_t *)buf)[i] = tutti__float_to_half(v);
    }
}

static void bench(const char *label, tutti_dtype_t dtype, size_t bytes,
                  int in_place)
{
    size_t size = dtype == TUTTI_FLOAT32 ? 4 : 2;
    size_t count = bytes / size;
    char *a = aligned_alloc(64, bytes);
    char *b = aligned_alloc(64, bytes);
    char *c = aligned_alloc(64, bytes);
    char *dst = in_place ? a : c;
    double best = 1e30;
    long iters = 1;

    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    fill(dtype, a, count);
    fill(dtype, b, count);
    memset(c, 0, bytes);
    /* Calibrate the iteration count to about 0.1 s per run. */
    for (;;) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++)
            tutti__reduce(dtype, TUTTI_OP_SUM, dst, a, b, count);
        if (now_s() - t0 > 0.1)
            break;
        iters *= 2;
    }
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++)
            tutti__reduce(dtype, TUTTI_OP_SUM, dst, a, b, count);
        double t = (now_s() - t0) / (double)iters;
        if (t < best)
            best = t;
    }
    printf("%-9s sum %6zu KiB  %-9s %8.2f GB/s  %8.3f Gelem/s\n", label,
           bytes / 1024, in_place ? "dst==a" : "separate",
           3.0 * (double)bytes / best * 1e-9, (double)count / best * 1e-9);
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    static const size_t sizes[] = {64 << 10, 16 << 20};
    static const struct {
        const char *name;
        tutti_dtype_t dtype;
    } types[] = {{"float32", TUTTI_FLOAT32},
                 {"bfloat16", TUTTI_BFLOAT16},
                 {"float16", TUTTI_FLOAT16}};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
            for (int in_place = 1; in_place >= 0; in_place--)
                bench(types[t].name, types[t].dtype, sizes[s], in_place);
    return 0;
}
