/*
 * What `verify: checksum` adds to a copy: per size, the bytes per second of
 * memcpy(), of memcpy() then tutti__csum_update() over the copy (two
 * passes, as the channel did), of tutti__csum_copy() (one pass) and of the
 * sum alone, by each checksum implementation this CPU has; and the time of
 * each against memcpy()'s in the same run.  Each figure is the median of
 * RUNS runs, a run repeating each operation in turn over the same two
 * buffers until it has moved at least 64 MiB (so sizes that fit a cache
 * are measured hot, as a channel's slot is).
 *
 *   bench/tutti-csum-copy [-t] [-r RUNS (11)] [SIZE...]
 *
 * SIZE in bytes, with K, M or G (4K 64K 1M 16M by default); -t adds the
 * table, a hundred times slower.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/checksum.h"

enum { MEMCPY, SEPARATE, FUSED, SUM_ONLY, NOPS };

static const char *const op_names[NOPS] = {"memcpy", "memcpy+csum", "csum_copy",
                                           "csum"};
static const char *const impl_names[] = {"table", "crc32", "vector"};

static volatile uint32_t sink; /* keeps the sums from being optimized out */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_op(int op, unsigned char *dst, const unsigned char *src,
                   size_t len)
{
    tutti__csum_t s;
    tutti__csum_init(&s);
    switch (op) {
        case MEMCPY:
            memcpy(dst, src, len);
            break;
        case SEPARATE:
            memcpy(dst, src, len);
            tutti__csum_update(&s, dst, len);
            break;
        case FUSED:
            tutti__csum_copy(&s, dst, src, len);
            break;
        default:
            tutti__csum_update(&s, src, len);
            break;
    }
    sink += tutti__csum_final(&s);
    __asm__ volatile("" ::: "memory"); /* the copy is used */
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return v[n / 2];
}

/* Median GB/s of each op over len bytes into gbs[], and of its time over
 * memcpy()'s into x[].  The ops take turns within a run, so that a load
 * on a shared machine slows all of them alike, and each time is set
 * against memcpy()'s in the same run. */
static int measure(unsigned char *dst, const unsigned char *src, size_t len,
                   int runs, double gbs[NOPS], double x[NOPS])
{
    double *t = malloc((size_t)runs * NOPS * sizeof(*t));
    double *v = malloc((size_t)runs * sizeof(*v));
    size_t reps = len >= (64u << 20) ? 1 : (64u << 20) / len;
    if (t == NULL || v == NULL) {
        free(t);
        free(v);
        return -1;
    }
    for (int op = 0; op < NOPS; op++)
        run_op(op, dst, src, len); /* fault the pages in, warm the caches */
    for (int r = 0; r < runs; r++) {
        for (int k = 0; k < NOPS; k++) {
            int op = (r + k) % NOPS; /* no op always first */
            double t0 = now_s();
            for (size_t i = 0; i < reps; i++)
                run_op(op, dst, src, len);
            t[r * NOPS + op] = now_s() - t0;
        }
    }
    for (int op = 0; op < NOPS; op++) {
        for (int r = 0; r < runs; r++)
            v[r] = (double)len * (double)reps / t[r * NOPS + op] / 1e9;
        gbs[op] = median(v, runs);
        for (int r = 0; r < runs; r++)
            v[r] = t[r * NOPS + op] / t[r * NOPS + MEMCPY];
        x[op] = median(v, runs);
    }
    free(t);
    free(v);
    return 0;
}

static size_t parse_size(const char *arg)
{
    char *end;
    size_t v = strtoul(arg, &end, 10);
    switch (*end) {
        case 'K':
        case 'k':
            v <<= 10;
            end++;
            break;
        case 'M':
        case 'm':
            v <<= 20;
            end++;
            break;
        case 'G':
        case 'g':
            v <<= 30;
            end++;
            break;
        default:
            break;
    }
    return *end == '\0' ? v : 0;
}

int main(int argc, char **argv)
{
    int runs = 11, table = 0, opt;
    while ((opt = getopt(argc, argv, "tr:")) != -1) {
        if (opt == 't')
            table = 1;
        else if (opt == 'r' && atoi(optarg) > 0)
            runs = atoi(optarg);
        else
            goto usage;
    }
    static const char *const defaults[] = {"4K", "64K", "1M", "16M"};
    int nsizes = optind < argc ? argc - optind : 4;
    size_t *sizes = calloc((size_t)nsizes, sizeof(*sizes)), max = 0;
    if (sizes == NULL)
        return 1;
    for (int i = 0; i < nsizes; i++) {
        sizes[i] = parse_size(optind < argc ? argv[optind + i] : defaults[i]);
        if (sizes[i] == 0)
            goto usage;
        max = sizes[i] > max ? sizes[i] : max;
    }
    /* Page-aligned plus 64: the copy is not at its best alignment, as a
     * user's buffer may not be; src and dst at different offsets. */
    unsigned char *src = aligned_alloc(4096, max + 4096);
    unsigned char *dst = aligned_alloc(4096, max + 4096);
    if (src == NULL || dst == NULL)
        return 1;
    for (size_t i = 0; i < max + 4096; i++) {
        src[i] = (unsigned char)(i * 131u + 7u);
        dst[i] = 0;
    }
    tutti__csum_impl_t best = tutti__csum_force(TUTTI_CSUM_VECTOR);
    printf("# GB/s (bytes copied or summed per second), median of %d runs; "
           "_x: time over memcpy's in the same run, median\n",
           runs);
    printf("%-7s %10s %9s %12s %10s %8s %8s %8s\n", "impl", "size",
           op_names[MEMCPY], op_names[SEPARATE], op_names[FUSED],
           op_names[SUM_ONLY], "sep_x", "fused_x");
    int last = table || best == TUTTI_CSUM_TABLE ? 0 : 1;
    for (int impl = (int)best; impl >= last; impl--) {
        tutti__csum_force((tutti__csum_impl_t)impl);
        for (int i = 0; i < nsizes; i++) {
            double g[NOPS], x[NOPS];
            if (measure(dst + 64, src + 64 + 8, sizes[i], runs, g, x) != 0)
                return 1;
            printf("%-7s %10zu %9.1f %12.1f %10.1f %8.1f %8.2f %8.2f\n",
                   impl_names[impl], sizes[i], g[MEMCPY], g[SEPARATE], g[FUSED],
                   g[SUM_ONLY], x[SEPARATE], x[FUSED]);
        }
    }
    free(sizes);
    free(src);
    free(dst);
    return 0;
usage:
    fprintf(stderr, "usage: tutti-csum-copy [-t] [-r RUNS] [SIZE[K|M|G]...]\n");
    return 2;
}
