/*
 * tutti-perf: collective benchmark in the manner of the nccl-tests tables.
 * Run under tutti-run: every rank times the same sweep; rank 0 prints the
 * slowest rank's time per size, and every result is checked.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tutti/tutti.h>

#include "pattern.h"

typedef struct {
    tutti_collective_t coll;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int root;
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmups;
    const char *impl;
    int check;
} options_t;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: tutti-run -n N tutti-perf [options]\n"
        "Times a collective over a sweep of message sizes; rank 0 prints one\n"
        "row per size. Every result is checked against the exact answer.\n"
        "  -c, --collective NAME  allreduce (default) or broadcast\n"
        "  -b, --minbytes SIZE    smallest message, bytes; K/M/G suffixes (8)\n"
        "  -e, --maxbytes SIZE    largest message (64M)\n"
        "  -f, --stepfactor F     multiply the size by F each row (2)\n"
        "  -d, --datatype TYPE    int8 uint8 int32 uint32 int64 uint64 float16\n"
        "                         bfloat16 float32 (default) float64\n"
        "  -o, --op OP            sum (default) prod min max\n"
        "  -r, --root R           broadcast root (0)\n"
        "  -n, --iters N          timed iterations per size (20)\n"
        "  -w, --warmup N         untimed iterations per size (5)\n"
        "  -a, --algorithm NAME   run this implementation instead of selection\n"
        "  -C, --check 0|1        check results (1)\n"
        "  -h, --help             this text\n"
        "Columns: size (bytes per rank), count (elements), type, redop, root,\n"
        "time_us (slowest rank, mean per iteration), algbw_GBps (size/time),\n"
        "busbw_GBps (algbw x 2(n-1)/n for allreduce, x 1 for broadcast),\n"
        "#wrong (elements differing from the exact result, all ranks), impl.\n"
        "Exit status 1 if any element is wrong or a call fails.\n");
}

static int parse_bytes(const char *s, size_t *out)
{
    uint64_t v;
    if (tutti_size_parse(s, &v) != TUTTI_OK || v > SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > 1 << 30)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, options_t *o)
{
    static const struct option longs[] = {
        {"collective", 1, 0, 'c'}, {"minbytes", 1, 0, 'b'},
        {"maxbytes", 1, 0, 'e'},   {"stepfactor", 1, 0, 'f'},
        {"datatype", 1, 0, 'd'},   {"op", 1, 0, 'o'},
        {"root", 1, 0, 'r'},       {"iters", 1, 0, 'n'},
        {"warmup", 1, 0, 'w'},     {"algorithm", 1, 0, 'a'},
        {"check", 1, 0, 'C'},      {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    int c, bad = 0;
    char *end;
    while ((c = getopt_long(argc, argv, "c:b:e:f:d:o:r:n:w:a:C:h", longs,
                            NULL)) != -1) {
        switch (c) {
        case 'c': bad = tutti_collective_parse(optarg, &o->coll) != TUTTI_OK ||
                        (o->coll != TUTTI_COLL_ALLREDUCE &&
                         o->coll != TUTTI_COLL_BROADCAST); break;
        case 'b': bad = parse_bytes(optarg, &o->min_bytes); break;
        case 'e': bad = parse_bytes(optarg, &o->max_bytes); break;
        case 'f': o->factor = strtod(optarg, &end);
                  bad = *end != '\0' || o->factor <= 1.0; break;
        case 'd': bad = tutti_dtype_parse(optarg, &o->dtype) != TUTTI_OK; break;
        case 'o': bad = tutti_op_parse(optarg, &o->op) != TUTTI_OK; break;
        case 'r': bad = parse_int(optarg, 0, &o->root); break;
        case 'n': bad = parse_int(optarg, 1, &o->iters); break;
        case 'w': bad = parse_int(optarg, 0, &o->warmups); break;
        case 'a': o->impl = optarg; break;
        case 'C': bad = parse_int(optarg, 0, &o->check); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
        if (bad) {
            fprintf(stderr, "tutti-perf: -%c '%s': invalid value; see "
                    "tutti-perf --help\n", c, optarg);
            return -1;
        }
    }
    if (optind < argc || o->min_bytes > o->max_bytes) {
        fprintf(stderr, "tutti-perf: %s; see tutti-perf --help\n",
                optind < argc ? "unexpected argument" : "-b exceeds -e");
        return -1;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    tutti_context_t *ctx;
    tutti_group_t *group;
    const options_t *o;
    char *sendbuf, *recvbuf;
    int rank, size;
} bench_t;

static tutti_status_t run_n(bench_t *b, tutti_instance_params_t *p, int n)
{
    for (int i = 0; i < n; i++) {
        tutti_request_t *r;
        tutti_status_t st = tutti_execute(b->group, p, b->sendbuf, b->recvbuf,
                                          &r);
        if (st == TUTTI_OK) {
            st = tutti_request_wait(r);
            tutti_request_free(r);
        }
        if (st != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

/* The implementation selection picks for this size (for the table). */
static const char *impl_name(bench_t *b, size_t bytes)
{
    const char *name = NULL;
    tutti_select_query_t q = {b->o->coll, TUTTI_DEVICE_CPU, b->o->dtype,
                              bytes, b->size, tutti_context_num_tasks(b->ctx)};
    if (b->o->impl)
        return b->o->impl;
    return tutti_info_explain(b->ctx, &q, NULL, 0, &name) == TUTTI_OK ? name
                                                                      : "-";
}

/* Times one size; fills time (slowest rank) and wrong (all ranks). */
static tutti_status_t bench_size(bench_t *b, uint64_t key, size_t count,
                                 double *time_us_out, long long *wrong_out)
{
    const options_t *o = b->o;
    tutti_instance_params_t p;
    tutti_status_t st;
    double t, tmax;
    long long wrong = 0, total;

    tutti_instance_params_init(&p);
    p.instance_key = key;
    p.collective = o->coll;
    p.dtype = o->dtype;
    p.op = o->op;
    p.root = o->root;
    p.count = count;
    p.algorithm = o->impl;
    tutti_pattern_t pat = {o->coll, o->dtype, o->op, b->size, o->root, count,
                           NULL, NULL, 0, 0};
    tutti_pattern_fill(&pat, b->rank, b->sendbuf);
    if ((st = run_n(b, &p, o->warmups)) != TUTTI_OK ||
        (st = tutti_barrier(b->group)) != TUTTI_OK)
        return st;
    t = now_s();
    if ((st = run_n(b, &p, o->iters)) != TUTTI_OK)
        return st;
    t = (now_s() - t) * 1e6 / o->iters;
    if (o->check) {
        memset(b->recvbuf, 0xa5, count * tutti_dtype_size(o->dtype));
        if ((st = run_n(b, &p, 1)) != TUTTI_OK)
            return st;
        wrong = (long long)tutti_pattern_check(&pat, b->rank, b->recvbuf,
                                               NULL);
    }
    if ((st = tutti_allreduce(b->group, &t, &tmax, 1, TUTTI_FLOAT64,
                              TUTTI_OP_MAX)) != TUTTI_OK ||
        (st = tutti_allreduce(b->group, &wrong, &total, 1, TUTTI_INT64,
                              TUTTI_OP_SUM)) != TUTTI_OK)
        return st;
    *time_us_out = tmax;
    *wrong_out = total;
    return TUTTI_OK;
}

static double bus_factor(tutti_collective_t coll, int n)
{
    return coll == TUTTI_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : 1.0;
}

static int sweep(bench_t *b)
{
    const options_t *o = b->o;
    size_t esize = tutti_dtype_size(o->dtype);
    int failed = 0;
    uint64_t key = 1;

    if (b->rank == 0) {
        printf("# tutti-perf: %s, %d ranks, %s, %s, %d iterations "
               "(+%d warm-up)\n", tutti_collective_name(o->coll), b->size,
               tutti_dtype_name(o->dtype), tutti_op_name(o->op), o->iters,
               o->warmups);
        printf("#%11s %12s %9s %6s %5s %11s %11s %11s %7s  %s\n", "size",
               "count", "type", "redop", "root", "time_us", "algbw_GBps",
               "busbw_GBps", "#wrong", "impl");
    }
    for (double sz = (double)o->min_bytes; sz <= (double)o->max_bytes;
         sz = sz > 0 ? sz * o->factor : 1, key++) {
        size_t count = (size_t)sz / esize, bytes = count * esize;
        double t;
        long long wrong;
        tutti_status_t st = bench_size(b, key, count, &t, &wrong);
        if (st != TUTTI_OK) {
            fprintf(stderr, "tutti-perf: rank %d, %zu bytes: %s: %s\n",
                    b->rank, bytes, tutti_strerror(st), tutti_last_error());
            return 1;
        }
        failed |= wrong != 0;
        if (b->rank != 0)
            continue;
        double algbw = t > 0 ? (double)bytes / (t * 1e3) : 0;
        printf("%12zu %12zu %9s %6s %5d %11.2f %11.3f %11.3f %7lld  %s\n",
               bytes, count, tutti_dtype_name(o->dtype),
               o->coll == TUTTI_COLL_ALLREDUCE ? tutti_op_name(o->op) : "none",
               o->coll == TUTTI_COLL_BROADCAST ? o->root : -1, t, algbw,
               algbw * bus_factor(o->coll, b->size), wrong,
               impl_name(b, bytes));
        fflush(stdout);
    }
    return failed;
}

int main(int argc, char **argv)
{
    options_t o = {TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, TUTTI_OP_SUM, 0, 8,
                   64u << 20, 2.0, 20, 5, NULL, 1};
    bench_t b = {0};
    tutti_group_params_t gp;
    tutti_status_t st;
    int rc = 1;

    if (parse_args(argc, argv, &o) != 0)
        return 2;
    b.o = &o;
    if ((st = tutti_context_create(NULL, &b.ctx)) != TUTTI_OK) {
        fprintf(stderr, "tutti-perf: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return 1;
    }
    b.size = tutti_context_num_tasks(b.ctx);
    if (o.root >= b.size) {
        fprintf(stderr, "tutti-perf: root %d: expected 0..%d\n", o.root,
                b.size - 1);
        goto out_ctx;
    }
    tutti_group_params_init(&gp);
    gp.group_key = 0x7065726600000000ULL; /* "perf" */
    gp.group_size = b.size;
    if ((st = tutti_group_join(b.ctx, &gp, &b.group)) != TUTTI_OK) {
        fprintf(stderr, "tutti-perf: joining the group: %s: %s\n",
                tutti_strerror(st), tutti_last_error());
        goto out_ctx;
    }
    b.rank = tutti_group_rank(b.group);
    size_t cap = o.max_bytes > 64 ? o.max_bytes : 64;
    b.sendbuf = aligned_alloc(64, (cap + 63) / 64 * 64);
    b.recvbuf = aligned_alloc(64, (cap + 63) / 64 * 64);
    if (b.sendbuf == NULL || b.recvbuf == NULL) {
        fprintf(stderr, "tutti-perf: cannot allocate 2 x %zu bytes\n", cap);
        goto out_group;
    }
    memset(b.sendbuf, 0, cap);
    memset(b.recvbuf, 0, cap);
    rc = sweep(&b);
out_group:
    free(b.sendbuf);
    free(b.recvbuf);
    tutti_group_leave(b.group);
out_ctx:
    tutti_context_destroy(b.ctx);
    return rc;
}
