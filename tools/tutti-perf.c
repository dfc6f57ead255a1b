/*
 * tutti-perf: collective benchmark in the manner of the nccl-tests tables.
 * Run under tutti-run: every rank times the same sweep; rank 0 prints the
 * slowest rank's time per size, and every result is checked.  With
 * --device cuda each rank runs on a GPU, its buffers in device memory and
 * its calls ordered on a stream of its own; inputs are made and results
 * checked on the host, as for cpu.  --csv and --json print the same rows
 * for programs to read (tools/perf_output.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tutti/tutti.h>

#include "cuda_tools.h"
#include "pattern.h"
#include "perf_output.h"
#include "tool_util.h"

/*
 * What a row means for each collective, as nccl-tests has it: the size
 * column is the buffer nccl-tests names (the total for the collectives that
 * move one block per rank), algbw is that size over the time, and busbw is
 * algbw times the factor: 1, or ring x (n-1)/n.
 */
typedef struct {
    int blocks;    /* size = n x count x type size (else count x size) */
    int ring;      /* 0: bus factor 1; else ring x (n-1)/n */
    int rooted, reduction;
    const char *size_doc;
} coll_info_t;

static const coll_info_t colls[TUTTI_COLL_COUNT] = {
    [TUTTI_COLL_ALLREDUCE] = {0, 2, 0, 1, "each rank's buffer"},
    [TUTTI_COLL_BROADCAST] = {0, 0, 1, 0, "the buffer"},
    [TUTTI_COLL_REDUCE] = {0, 0, 1, 1, "each rank's input"},
    [TUTTI_COLL_ALLGATHER] = {1, 1, 0, 0, "the output"},
    [TUTTI_COLL_GATHER] = {1, 1, 1, 0, "the root's output"},
    [TUTTI_COLL_REDUCE_SCATTER] = {1, 1, 0, 1, "the input"},
    [TUTTI_COLL_ALLTOALL] = {1, 1, 0, 0, "each send buffer"},
    [TUTTI_COLL_PERMUTE] = {0, 0, 0, 0, "sent to rank+1 mod n"},
};

/* The order --help lists them in. */
static const tutti_collective_t coll_order[] = {
    TUTTI_COLL_ALLREDUCE, TUTTI_COLL_BROADCAST, TUTTI_COLL_REDUCE,
    TUTTI_COLL_ALLGATHER, TUTTI_COLL_GATHER, TUTTI_COLL_REDUCE_SCATTER,
    TUTTI_COLL_ALLTOALL, TUTTI_COLL_PERMUTE};

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
    int inplace;
    int cuda;      /* --device cuda */
    int memory;    /* --memory: MEM_HEAP, MEM_REGISTERED, MEM_MIXED */
    perf_format_t format;
} options_t;

enum { MEM_HEAP, MEM_REGISTERED, MEM_MIXED };

static double bus_factor(tutti_collective_t coll, int n)
{
    int ring = colls[coll].ring;
    return ring == 0 ? 1.0 : (double)ring * (n - 1) / n;
}

/* "2(n-1)/n", "(n-1)/n" or "1". */
static const char *bus_formula(tutti_collective_t coll)
{
    int ring = colls[coll].ring;
    return ring == 0 ? "1" : ring == 1 ? "(n-1)/n" : "2(n-1)/n";
}

static void usage(FILE *out)
{
    fprintf(out,
        "usage: tutti-run -n N tutti-perf [options]\n"
        "Times a collective over a sweep of message sizes; rank 0 prints one\n"
        "row per size. Every result is checked against the exact answer.\n"
        "  -c, --collective NAME  the collective (allreduce); see below\n"
        "  -b, --minbytes SIZE    smallest size, bytes; K/M/G suffixes (8)\n"
        "  -e, --maxbytes SIZE    largest size (64M)\n"
        "  -f, --stepfactor F     multiply the size by F each row (2)\n"
        "  -d, --datatype TYPE    int8 uint8 int32 uint32 int64 uint64 float16\n"
        "                         bfloat16 float32 (default) float64\n"
        "  -o, --op OP            reductions: sum (default) prod min max avg\n"
        "  -r, --root R           broadcast, reduce, gather: the root (0)\n"
        "  -i, --inplace          run in place (sendbuf == recvbuf)\n"
        "  -n, --iters N          timed iterations per size (20)\n"
        "  -w, --warmup N         untimed iterations per size (5)\n"
        "  -a, --algorithm NAME   run this implementation instead of selection\n"
        "  -C, --check 0|1        check results (1)\n"
        "      --device cpu|cuda  where the buffers are (cpu): cuda puts them\n"
        "                         in device memory of the GPU local rank mod\n"
        "                         the GPUs (the local rank: TUTTI_LOCAL_RANK,\n"
        "                         else the rank), a CUDA group, one stream\n"
        "                         per rank; data made and checked on the host\n"
        "      --csv              rows as CSV: a header line of the column\n"
        "                         names, then one line per size; each line\n"
        "                         ends with the run's ranks, inplace (0|1),\n"
        "                         iters, warmup and device\n"
        "      --json             one JSON object: the run (collective,\n"
        "                         dtype, redop, root, ranks, inplace, iters,\n"
        "                         warmup, device, size_convention,\n"
        "                         bus_formula, bus_factor; with cuda gpus)\n"
        "                         and \"rows\", an array of one object per\n"
        "                         size keyed by the column names; \"error\"\n"
        "                         when a call failed before the last size\n"
        "      --memory heap|registered|mixed\n"
        "                         where cpu buffers come from (heap):\n"
        "                         registered is tutti_mem_alloc's shared\n"
        "                         memory, read by peers in place; mixed:\n"
        "                         registered on even ranks, heap on odd\n"
        "  -h, --help             this text\n"
        "Collectives, with n ranks and count elements per rank (the call's\n"
        "count): what a size means (as in nccl-tests) and the bus bandwidth\n"
        "factor:\n");
    for (size_t i = 0; i < sizeof(coll_order) / sizeof(coll_order[0]); i++) {
        tutti_collective_t c = coll_order[i];
        fprintf(out, "  %-15s %s: %-22s %s\n", tutti_collective_name(c),
                colls[c].blocks ? "n x count x type" : "    count x type",
                colls[c].size_doc, bus_formula(c));
    }
    fprintf(out,
        "Each size rounds down to whole elements and, where it holds n\n"
        "blocks, to a multiple of n elements (count = size / type / n, as\n"
        "nccl-tests does); the size column shows the size that ran.\n"
        "Columns: size (bytes, as above), count (elements per rank), type,\n"
        "redop (none unless a reduction), root (-1 unless rooted), time_us\n"
        "(slowest rank, mean per iteration), algbw_GBps (size / time),\n"
        "busbw_GBps (algbw x the factor above), #wrong (elements of every\n"
        "rank's output that differ from the exact result, all ranks, totalled\n"
        "over the control plane, not by the collectives under test), impl\n"
        "(the implementation that ran), coll (the collective). The table\n"
        "prints fixed decimals; --csv and --json 6 significant digits.\n"
        "When stderr is a terminal, a sweep that has run a second shows a\n"
        "progress line there; never when stderr is a file or a pipe.\n"
        "With --device cuda, time_us is taken on the host around each call\n"
        "and its wait (a request completes once the result is in place).\n"
        "Exit status 1 if any element is wrong or a call fails (a collective\n"
        "no loaded implementation runs fails at its first size), or --device\n"
        "cuda cannot run (no CUDA in the build, no device); 2 on bad options.\n");
}

static int parse_bytes(const char *s, size_t *out)
{
    uint64_t v;
    if (tutti_size_parse(s, &v) != TUTTI_OK || v > SIZE_MAX / 2)
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

enum { OPT_CSV = 256, OPT_JSON, OPT_MEMORY };

static int parse_args(int argc, char **argv, options_t *o)
{
    static const struct option longs[] = {
        {"collective", 1, 0, 'c'}, {"minbytes", 1, 0, 'b'},
        {"maxbytes", 1, 0, 'e'},   {"stepfactor", 1, 0, 'f'},
        {"datatype", 1, 0, 'd'},   {"op", 1, 0, 'o'},
        {"root", 1, 0, 'r'},       {"inplace", 0, 0, 'i'},
        {"iters", 1, 0, 'n'},      {"warmup", 1, 0, 'w'},
        {"algorithm", 1, 0, 'a'},  {"check", 1, 0, 'C'},
        {"device", 1, 0, 'D'},     {"help", 0, 0, 'h'},
        {"csv", 0, 0, OPT_CSV},    {"json", 0, 0, OPT_JSON},
        {"memory", 1, 0, OPT_MEMORY},
        {0, 0, 0, 0}};
    int c, bad = 0, formats = 0;
    char *end;
    while ((c = getopt_long(argc, argv, "c:b:e:f:d:o:r:in:w:a:C:h", longs,
                            NULL)) != -1) {
        switch (c) {
        case 'c': bad = tutti_collective_parse(optarg, &o->coll) != TUTTI_OK;
                  break;
        case 'b': bad = parse_bytes(optarg, &o->min_bytes); break;
        case 'e': bad = parse_bytes(optarg, &o->max_bytes); break;
        case 'f': o->factor = strtod(optarg, &end);
                  bad = *end != '\0' || o->factor <= 1.0; break;
        case 'd': bad = tutti_dtype_parse(optarg, &o->dtype) != TUTTI_OK; break;
        case 'o': bad = tutti_op_parse(optarg, &o->op) != TUTTI_OK; break;
        case 'r': bad = parse_int(optarg, 0, &o->root); break;
        case 'i': o->inplace = 1; break;
        case 'n': bad = parse_int(optarg, 1, &o->iters); break;
        case 'w': bad = parse_int(optarg, 0, &o->warmups); break;
        case 'a': o->impl = optarg; break;
        case 'C': bad = parse_int(optarg, 0, &o->check); break;
        case 'D': o->cuda = strcmp(optarg, "cuda") == 0;
                  bad = !o->cuda && strcmp(optarg, "cpu") != 0; break;
        case OPT_CSV: o->format = PERF_FORMAT_CSV; formats |= 1; break;
        case OPT_MEMORY:
            o->memory = strcmp(optarg, "registered") == 0 ? MEM_REGISTERED
                        : strcmp(optarg, "mixed") == 0    ? MEM_MIXED
                                                          : MEM_HEAP;
            if (o->memory == MEM_HEAP && strcmp(optarg, "heap") != 0) {
                fprintf(stderr, "tutti-perf: --memory '%s': expected heap, "
                        "registered or mixed\n", optarg);
                return -1;
            }
            break;
        case OPT_JSON: o->format = PERF_FORMAT_JSON; formats |= 2; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
        if (bad && c == 'D') {
            fprintf(stderr, "tutti-perf: --device '%s': expected cpu or "
                    "cuda\n", optarg);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "tutti-perf: -%c '%s': invalid value; see "
                    "tutti-perf --help\n", c, optarg);
            return -1;
        }
    }
    if (formats == 3) {
        fprintf(stderr, "tutti-perf: --csv and --json: choose one\n");
        return -1;
    }
    if (optind < argc || o->min_bytes > o->max_bytes) {
        fprintf(stderr, "tutti-perf: %s; see tutti-perf --help\n",
                optind < argc ? "unexpected argument" : "-b exceeds -e");
        return -1;
    }
    return 0;
}

typedef struct {
    tutti_context_t *ctx;
    tutti_group_t *group;    /* the collectives under test */
    tutti_group_t *ctl;      /* barriers and the slowest time: the group
                                itself, or with cuda a cpu group of the
                                same tasks (host values need host memory) */
    const options_t *o;
    char *sendbuf, *recvbuf; /* each holds the largest size; with cuda,
                                the host's side of the data */
    size_t cap;              /* bytes in each */
    int registered;          /* they are tutti_mem_alloc's */
    int *perm;               /* permute: rank r sends to r+1 mod n */
    int rank, size;
    char impl[64];           /* what the last execution ran */
    /* --device cuda: */
    int device;              /* the GPU's ordinal */
    void *stream;            /* this rank's cudaStream_t */
    void *dsend, *drecv;     /* device buffers of the current size */
    char cuda_err[256];      /* the CUDA call that failed, and why */
} bench_t;

/* Runs @p n executions; remembers the implementation that ran. */
static tutti_status_t run_n(bench_t *b, tutti_instance_params_t *p, int n)
{
    char *recv = b->o->cuda ? b->drecv : b->recvbuf;
    char *send = b->o->inplace ? recv : b->o->cuda ? b->dsend : b->sendbuf;
    for (int i = 0; i < n; i++) {
        tutti_request_t *r;
        tutti_request_info_t info;
        tutti_status_t st = tutti_execute(b->group, p, send, recv, &r);
        if (st == TUTTI_OK) {
            st = tutti_request_wait(r);
            /* Once, not per call: the peers' loops format nothing. */
            if (i == n - 1) {
                tutti_request_info(r, &info);
                snprintf(b->impl, sizeof(b->impl), "%s",
                         info.algorithm[0] ? info.algorithm : "-");
            }
            tutti_request_free(r);
        }
        if (st != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

/* Sets up this rank's input for @p pat and fills the output with a value
 * no result holds, so that an element left unwritten counts as wrong. */
static void prepare(bench_t *b, const tutti_pattern_t *pat)
{
    size_t esize = tutti_dtype_size(pat->dtype);
    char *in = b->recvbuf + tutti_pattern_in_offset(pat, b->rank) * esize;

    if (!b->o->inplace) {
        memset(b->recvbuf, 0xa5,
               tutti_pattern_out_count(pat, b->rank) * esize);
        tutti_pattern_fill(pat, b->rank, b->sendbuf);
        return;
    }
    memset(b->recvbuf, 0xa5,
           tutti_pattern_inplace_count(pat, b->rank) * esize);
    tutti_pattern_fill(pat, b->rank, in);
}

/* cuda: the host's input and filled output (@p bytes of each, which hold
 * every collective's) to the device.  0, or -1 with b->cuda_err. */
static int to_device(bench_t *b, size_t bytes)
{
    char *e = b->cuda_err;
    size_t n = sizeof(b->cuda_err);
    if (!b->o->cuda)
        return 0;
    if ((!b->o->inplace &&
         tool_cuda_copy(b->dsend, b->sendbuf, bytes, b->stream, e, n) != 0) ||
        tool_cuda_copy(b->drecv, b->recvbuf, bytes, b->stream, e, n) != 0)
        return -1;
    return 0;
}

/* cuda: device buffers of @p bytes each for one size (at least 64 bytes,
 * so that no pointer is NULL).  0, or -1 with b->cuda_err. */
static int device_buffers(bench_t *b, size_t bytes)
{
    size_t len = bytes > 64 ? bytes : 64;
    tool_cuda_free(b->dsend);
    tool_cuda_free(b->drecv);
    b->dsend = b->drecv = NULL;
    if (tool_cuda_alloc(len, &b->dsend, b->cuda_err,
                        sizeof(b->cuda_err)) != 0 ||
        tool_cuda_alloc(len, &b->drecv, b->cuda_err,
                        sizeof(b->cuda_err)) != 0)
        return -1;
    return 0;
}

/* Times one size (@p count elements per rank, @p bytes in the size
 * column); fills time (slowest rank) and wrong (all ranks).  A CUDA call
 * that fails returns TUTTI_ERR_IO with b->cuda_err saying which. */
static tutti_status_t bench_size(bench_t *b, uint64_t key, size_t count,
                                 size_t bytes, double *time_us_out,
                                 uint64_t *wrong_out)
{
    const options_t *o = b->o;
    tutti_instance_params_t p;
    tutti_status_t st;
    double t, tmax;
    uint64_t wrong = 0, total;

    tutti_instance_params_init(&p);
    p.instance_key = key;
    p.collective = o->coll;
    p.dtype = o->dtype;
    p.op = o->op;
    p.root = o->root;
    p.count = count;
    p.algorithm = o->impl;
    p.permutation = b->perm;
    p.stream = b->stream;
    tutti_pattern_t pat = {o->coll, o->dtype, o->op, b->size, o->root, count,
                           NULL, b->perm, 0, 0};
    prepare(b, &pat);
    if (o->cuda && (device_buffers(b, bytes) != 0 || to_device(b, bytes) != 0))
        return TUTTI_ERR_IO;
    if ((st = run_n(b, &p, o->warmups)) != TUTTI_OK ||
        (st = tutti_barrier(b->ctl)) != TUTTI_OK)
        return st;
    t = tool_now();
    if ((st = run_n(b, &p, o->iters)) != TUTTI_OK)
        return st;
    t = (tool_now() - t) * 1e6 / o->iters;
    if (o->check) {
        /* In place, the timed runs overwrote the input. */
        prepare(b, &pat);
        if (to_device(b, bytes) != 0)
            return TUTTI_ERR_IO;
        if ((st = run_n(b, &p, 1)) != TUTTI_OK)
            return st;
        /* The result back on the stream, after the call's own work. */
        if (o->cuda && tool_cuda_copy(b->recvbuf, b->drecv, bytes, b->stream,
                                      b->cuda_err, sizeof(b->cuda_err)) != 0)
            return TUTTI_ERR_IO;
        size_t off = o->inplace ? tutti_pattern_out_offset(&pat, b->rank) : 0;
        wrong = tutti_pattern_check(
            &pat, b->rank, b->recvbuf + off * tutti_dtype_size(o->dtype), NULL);
    }
    /* #wrong is totalled over the control plane, which no selection rule
     * or module under test takes part in: a broken allreduce cannot hide
     * its own errors. */
    if ((st = tutti_allreduce(b->ctl, &t, &tmax, 1, TUTTI_FLOAT64,
                              TUTTI_OP_MAX)) != TUTTI_OK ||
        (st = tutti_context_sum(b->ctx, wrong, &total)) != TUTTI_OK)
        return st;
    *time_us_out = tmax;
    *wrong_out = total;
    return TUTTI_OK;
}

/* The size after @p sz in the sweep: the factor, or 1 after a size 0. */
static double next_size(const options_t *o, double sz)
{
    return sz > 0 ? sz * o->factor : 1;
}

/* What every row shares, for the writer; @p gpus is filled with cuda. */
static void describe_run(const bench_t *b, const char **gpus,
                         perf_run_t *run_out)
{
    const options_t *o = b->o;
    const coll_info_t *ci = &colls[o->coll];

    for (int r = 0; o->cuda && r < b->size; r++)
        gpus[r] = tutti_group_pci_bus_id(b->group, r);
    *run_out = (perf_run_t){
        .coll = tutti_collective_name(o->coll),
        .dtype = tutti_dtype_name(o->dtype),
        .redop = ci->reduction ? tutti_op_name(o->op) : "none",
        .root = ci->rooted ? o->root : -1,
        .ranks = b->size,
        .inplace = o->inplace,
        .iters = o->iters,
        .warmups = o->warmups,
        .device = o->cuda ? "cuda" : "cpu",
        .blocks = ci->blocks,
        .size_doc = ci->size_doc,
        .bus_formula = bus_formula(o->coll),
        .bus_factor = bus_factor(o->coll, b->size),
        .gpus = o->cuda ? gpus : NULL,
    };
}

/* Every size in turn; rank 0 writes the rows.  0, or 1 when an element
 * was wrong or a call failed (its error on stderr, and in the JSON). */
static int sweep(bench_t *b, perf_out_t *out)
{
    const options_t *o = b->o;
    size_t esize = tutti_dtype_size(o->dtype);
    size_t blocks = colls[o->coll].blocks ? (size_t)b->size : 1;
    int failed = 0, done = 0, total = 0;
    uint64_t key = 1;
    perf_progress_t prog;
    char err[1024];

    for (double sz = (double)o->min_bytes; sz <= (double)o->max_bytes;
         sz = next_size(o, sz))
        total++;
    perf_progress_init(&prog, total, b->rank == 0);
    for (double sz = (double)o->min_bytes; sz <= (double)o->max_bytes;
         sz = next_size(o, sz), key++, done++) {
        /* Per rank, rounded down to whole elements and whole blocks. */
        size_t count = (size_t)sz / esize / blocks;
        size_t bytes = count * esize * blocks;
        double t;
        uint64_t wrong;
        perf_progress_show(&prog, done, bytes);
        tutti_status_t st = bench_size(b, key, count, bytes, &t, &wrong);
        perf_progress_clear(&prog);
        if (st != TUTTI_OK) {
            if (b->cuda_err[0] != '\0')
                snprintf(err, sizeof(err), "%s of %zu bytes: %s",
                         tutti_collective_name(o->coll), bytes, b->cuda_err);
            else
                snprintf(err, sizeof(err), "%s of %zu bytes: %s: %s",
                         tutti_collective_name(o->coll), bytes,
                         tutti_strerror(st), tutti_last_error());
            fprintf(stderr, "tutti-perf: rank %d: %s\n", b->rank, err);
            if (b->rank == 0)
                perf_out_end(out, err);
            return 1;
        }
        failed |= wrong != 0;
        if (b->rank != 0)
            continue;
        double algbw = t > 0 ? (double)bytes / (t * 1e3) : 0;
        perf_out_row(out, &(perf_row_t){bytes, count, t, algbw,
                                         algbw * bus_factor(o->coll, b->size),
                                         (unsigned long long)wrong, b->impl});
    }
    if (b->rank == 0)
        perf_out_end(out, NULL);
    /* Every rank knows the outcome; none may exit with it (and have
     * tutti-run stop the job) before rank 0 printed the last row. */
    tutti_status_t st = tutti_barrier(b->ctl);
    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-perf: rank %d: final barrier: %s: %s\n",
                b->rank, tutti_strerror(st), tutti_last_error());
        return 1;
    }
    return failed;
}

/* Rank 0 starts the output, then every rank runs the sweep.  0 or 1, as
 * sweep(); 1 without a sweep if there is no memory. */
static int run_sweep(bench_t *b)
{
    perf_run_t run;
    perf_out_t out = {0};
    const char **gpus = calloc((size_t)b->size, sizeof(*gpus));
    int rc;

    if (gpus == NULL) {
        fprintf(stderr, "tutti-perf: no memory for %d names\n", b->size);
        return 1;
    }
    describe_run(b, gpus, &run);
    if (b->rank == 0)
        perf_out_begin(&out, stdout, b->o->format, &run);
    rc = sweep(b, &out);
    free(gpus);
    return rc;
}

/* Buffers for the largest size, and permute's ring; 0 or -1. */
static int setup_buffers(bench_t *b)
{
    /* Every collective's input and output fit in the size column's
     * bytes, which never exceed -e. */
    size_t need = b->o->max_bytes > 64 ? b->o->max_bytes : 64;
    b->cap = (need + 63) / 64 * 64;
    b->registered = b->o->memory == MEM_REGISTERED ||
                    (b->o->memory == MEM_MIXED && b->rank % 2 == 0);
    if (b->registered) {
        void *s = NULL, *r = NULL;
        tutti_status_t st = tutti_mem_alloc(b->cap, &s);
        if (st == TUTTI_OK)
            st = tutti_mem_alloc(b->cap, &r);
        if (st != TUTTI_OK) {
            fprintf(stderr, "tutti-perf: --memory: %s\n",
                    tutti_last_error());
            tutti_mem_free(s);
            return -1;
        }
        b->sendbuf = s;
        b->recvbuf = r;
    } else {
        b->sendbuf = aligned_alloc(64, b->cap);
        b->recvbuf = aligned_alloc(64, b->cap);
    }
    b->perm = malloc((size_t)b->size * sizeof(*b->perm));
    if (b->sendbuf == NULL || b->recvbuf == NULL || b->perm == NULL) {
        fprintf(stderr, "tutti-perf: cannot allocate 2 x %zu bytes\n",
                b->cap);
        return -1;
    }
    memset(b->sendbuf, 0, b->cap);
    memset(b->recvbuf, 0, b->cap);
    for (int r = 0; r < b->size; r++)
        b->perm[r] = (r + 1) % b->size;
    return 0;
}

/* The rank among the ranks on this host: TUTTI_LOCAL_RANK (tutti-run sets
 * it), else the task. */
static int local_rank(const tutti_context_t *ctx)
{
    const char *v = getenv("TUTTI_LOCAL_RANK");
    int r;
    if (v != NULL && parse_int(v, 0, &r) == 0)
        return r;
    return tutti_context_task(ctx);
}

/* Joins the group under test (and with cuda, first its GPU and the cpu
 * group for the control values).  0, or -1 after saying why. */
static int join(bench_t *b, int ngpus)
{
    tutti_group_params_t gp;
    tutti_status_t st;
    const char *what = "the group";

    tutti_group_params_init(&gp);
    gp.group_key = 0x7065726600000000ULL; /* "perf" */
    gp.group_size = b->size;
    if (b->o->cuda) {
        b->device = local_rank(b->ctx) % ngpus;
        if (tool_cuda_open(b->device, &b->stream, b->cuda_err,
                           sizeof(b->cuda_err)) != 0) {
            fprintf(stderr, "tutti-perf: task %d: --device cuda: %s\n",
                    tutti_context_task(b->ctx), b->cuda_err);
            return -1;
        }
        st = tutti_group_join(b->ctx, &gp, &b->ctl);
        if (st != TUTTI_OK)
            goto err;
        what = "the CUDA group";
        gp.group_key = 0x7065726663756461ULL; /* "perfcuda" */
        gp.device_type = TUTTI_DEVICE_CUDA;
        gp.device_index = b->device;
        gp.device_order = TUTTI_ORDER_TOPOLOGY;
    }
    st = tutti_group_join(b->ctx, &gp, &b->group);
    if (st != TUTTI_OK)
        goto err;
    if (!b->o->cuda)
        b->ctl = b->group;
    b->rank = tutti_group_rank(b->group);
    return 0;
err:
    fprintf(stderr, "tutti-perf: task %d: joining %s: %s: %s\n",
            tutti_context_task(b->ctx), what, tutti_strerror(st),
            tutti_last_error());
    return -1;
}

int main(int argc, char **argv)
{
    options_t o = {TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, TUTTI_OP_SUM, 0, 8,
                   64u << 20, 2.0, 20, 5, NULL, 1, 0, 0, MEM_HEAP,
                   PERF_FORMAT_TABLE};
    bench_t b = {0};
    tutti_status_t st;
    int rc = 1, ngpus = 0;

    if (parse_args(argc, argv, &o) != 0)
        return 2;
    b.o = &o;
    /* Before any task waits for the others: a task without CUDA says so
     * at once. */
    if (o.cuda && tool_cuda_count(&ngpus, b.cuda_err,
                                  sizeof(b.cuda_err)) != 0) {
        fprintf(stderr, "tutti-perf: --device cuda: %s\n", b.cuda_err);
        return 1;
    }
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
    if (join(&b, ngpus) != 0)
        goto out_groups;
    if (setup_buffers(&b) == 0)
        rc = run_sweep(&b);
    free(b.perm);
    if (b.registered) {
        tutti_mem_free(b.sendbuf);
        tutti_mem_free(b.recvbuf);
    } else {
        free(b.sendbuf);
        free(b.recvbuf);
    }
    tool_cuda_free(b.dsend);
    tool_cuda_free(b.drecv);
out_groups:
    tutti_group_leave(b.group);
    if (b.ctl != b.group)
        tutti_group_leave(b.ctl);
    tool_cuda_close(b.stream);
out_ctx:
    tutti_context_destroy(b.ctx);
    return rc;
}
