/*
 * tutti-tune: measures, on this machine and for one group shape, every cpu
 * implementation of each collective over a size sweep (tutti-run -n N
 * tutti-perf -a IMPL, several rounds), and writes the selection rules that
 * pick the fastest per size as a YAML file Tutti loads (tune_result.c).
 * With --model or --extrapolate it runs nothing and predicts instead, on
 * a cluster of hosts, from the cost model of tune_model.c.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune.h"
#include "tune_model.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: tutti-tune -n N [-c COLL[,COLL...]] [-b MIN] [-e MAX] [-f F]\n"
        "                  [-r ROUNDS] [--iters I] [-o FILE]\n"
        "                  [--tutti-run PATH] [--tutti-perf PATH]\n"
        "       tutti-tune --model --hosts H --per-host L\n"
        "                  [--intra LAT_US,GBPS] [--inter LAT_US,GBPS]\n"
        "                  [-c COLL[,COLL...]] [-b MIN] [-e MAX] [-f F]\n"
        "       tutti-tune --extrapolate [--intra LAT_US,GBPS]\n"
        "                  [--inter LAT_US,GBPS] [-c COLL[,COLL...]]\n"
        "       tutti-tune --links [-e BYTES]   (as every task of a job)\n"
        "Times every cpu implementation of each collective on N processes\n"
        "of this host, over a sweep of sizes, and writes selection rules\n"
        "that pick the fastest per size.  Each implementation runs as\n"
        "  tutti-run -n N tutti-perf -c COLL -a IMPL -b MIN -e MAX -f F -n I\n"
        "ROUNDS times, the candidates alternating within each round; per\n"
        "size the median time of each decides.  An implementation whose\n"
        "run fails is reported and left out.\n"
        "  -n N                 processes (group members), 1 to 1024\n"
        "  -c, --collectives L  comma list (allreduce,broadcast,reduce,\n"
        "                       allgather,gather,reduce_scatter,alltoall;\n"
        "                       the model: allreduce,allgather,\n"
        "                       reduce_scatter,alltoall)\n"
        "  -b, --minbytes SIZE  smallest tutti-perf size; K/M/G suffixes (8)\n"
        "  -e, --maxbytes SIZE  largest (64M)\n"
        "  -f, --stepfactor F   size multiplier, above 1 (8)\n"
        "  -r, --rounds R       rounds, 1 to 100 (3)\n"
        "      --iters I        tutti-perf -n: timed calls per size (20)\n"
        "  -o, --output FILE    the selection file (tutti-tuned.yaml)\n"
        "      --tutti-run PATH, --tutti-perf PATH\n"
        "                       the tools to run (default: beside\n"
        "                       tutti-tune, else found in PATH)\n"
        "      --model          run nothing: predict each implementation's\n"
        "                       time on H hosts of L members from a cost\n"
        "                       model of two link classes\n"
        "      --extrapolate    the model at 16, 64, 256 and 1024 members,\n"
        "                       8 per host: Markdown tables and the\n"
        "                       selection rules of its crossovers\n"
        "      --hosts H        hosts, 1 to 1024 (--model needs it)\n"
        "      --per-host L     members per host, 1 to 1024 (as --hosts)\n"
        "      --intra LAT_US,GBPS\n"
        "                       inside a host: latency per message step in\n"
        "                       us, bandwidth per member pair in GB/s\n"
        "                       (0.3,5: 2 processes of the development\n"
        "                       host, tutti-perf -c allreduce, rounded)\n"
        "      --inter LAT_US,GBPS\n"
        "                       between hosts: latency, and bandwidth of a\n"
        "                       host's link each way (25,1.25: 10 Gbit/s)\n"
        "      --links          measure both classes on the job this task\n"
        "                       is part of (run it under tutti-run, a\n"
        "                       launcher or TUTTI_* variables): rank 0\n"
        "                       times 8-byte round trips and one -e BYTES\n"
        "                       message (16M) with a peer on its host and\n"
        "                       one on another, and prints --intra and\n"
        "                       --inter for --model\n"
        "  -h, --help           this text\n"
        "Sizes -b and -e are tutti-perf's (as nccl-tests counts them: for\n"
        "allgather, gather, reduce_scatter and alltoall n x count x type);\n"
        "the rules, the summary and the file count as selection does\n"
        "(count x type: one rank's part, one block).\n"
        "Output: on stdout one line per collective and size, 'COLL BYTES\n"
        "WINNER IMPL=MEDIAN_US...'; the file (written only when every\n"
        "collective ran, and checked by loading it back) holds one rule\n"
        "per size range with the medians it rests on in comments.  With\n"
        "--model, per collective and size a line 'model COLL BYTES IMPL\n"
        "PREDICTED_US' per implementation, then 'best COLL BYTES IMPL'.\n"
        "Exit status: 0; 1 if a collective had no implementation that ran\n"
        "or the file cannot be written; 2 on bad options or tools not\n"
        "found.\n");
}

/* The default collectives, in the order the file lists them. */
static const tutti_collective_t default_colls[] = {
    TUTTI_COLL_ALLREDUCE, TUTTI_COLL_BROADCAST, TUTTI_COLL_REDUCE,
    TUTTI_COLL_ALLGATHER, TUTTI_COLL_GATHER, TUTTI_COLL_REDUCE_SCATTER,
    TUTTI_COLL_ALLTOALL};
#define NDEFAULT (int)(sizeof(default_colls) / sizeof(default_colls[0]))

/* What tutti-tune does: measure, or predict (--model, --extrapolate). */
enum { MODE_MEASURE, MODE_MODEL, MODE_EXTRAPOLATE, MODE_LINKS };

typedef struct {
    tune_sweep_t s;
    tutti_collective_t coll[TUTTI_COLL_COUNT];
    int ncolls;
    const char *run, *perf;  /* as given, or NULL */
    char run_path[PATH_MAX], perf_path[PATH_MAX];
    int mode;
    const char *mode_opt;    /* --model or --extrapolate, as given */
    tune_cluster_t cl;       /* hosts, per_host: 0 until given */
    /* The first option given of each kind, for the checks between them:
     * measuring only, the model only, the size sweep. */
    const char *measure_opt, *model_opt, *sweep_opt;
} tune_opts_t;

static int bad_value(const char *opt, const char *value, const char *want)
{
    fprintf(stderr, "tutti-tune: %s '%s': invalid value: expected %s\n", opt,
            value, want);
    return 2;
}

#define LINK_EXPECTED                                                    \
    "LAT_US,GBPS: a latency in us (0 or more) and a bandwidth in GB/s "  \
    "(above 0), e.g. 25,1.25"

static int parse_int(const char *s, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

/* -c: a comma list of collectives, each once. */
static int parse_colls(const char *list, tune_opts_t *o)
{
    char buf[256];
    if (strlen(list) >= sizeof(buf) || list[0] == '\0')
        return bad_value("-c", list, "a comma list of collectives");
    strcpy(buf, list);
    o->ncolls = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        tutti_collective_t c;
        if (tutti_collective_parse(t, &c) != TUTTI_OK)
            return bad_value("-c", t, "allreduce, broadcast, reduce, "
                             "allgather, gather, reduce_scatter, alltoall or "
                             "permute");
        for (int i = 0; i < o->ncolls; i++)
            if (o->coll[i] == c)
                return bad_value("-c", t, "each collective once");
        o->coll[o->ncolls++] = c;
    }
    return 0;
}

/* --intra, --inter: "LAT_US,GBPS", a latency of 0 or more and a bandwidth
 * above 0. */
static int parse_link(const char *opt, const char *value, tune_link_t *out)
{
    char *end;
    const char *bw;
    double a, b;

    a = strtod(value, &end);
    if (end == value || *end != ',' || !isfinite(a) || a < 0)
        return bad_value(opt, value, LINK_EXPECTED);
    bw = end + 1;
    b = strtod(bw, &end);
    if (end == bw || *end != '\0' || !isfinite(b) || !(b > 0))
        return bad_value(opt, value, LINK_EXPECTED);
    out->alpha_us = a;
    out->beta_gbps = b;
    return 0;
}

/* Rows tutti-perf prints for the sweep, as its loop counts them. */
static int sweep_rows(const tune_sweep_t *s)
{
    int rows = 0;
    for (double sz = (double)s->min_bytes;
         sz <= (double)s->max_bytes && rows <= TUNE_MAX_SIZES;
         sz = sz > 0 ? sz * s->factor : 1)
        rows++;
    return rows;
}

/* Notes @p opt as the first of its kind in @p *first. */
static void seen(const char **first, const char *opt)
{
    if (*first == NULL)
        *first = opt;
}

/* --model or --extrapolate; the two exclude each other. */
static int set_mode(tune_opts_t *o, int mode, const char *opt)
{
    if (o->mode != MODE_MEASURE && o->mode != mode) {
        fprintf(stderr, "tutti-tune: %s and %s: expected one of them\n",
                o->mode_opt, opt);
        return 2;
    }
    o->mode = mode;
    o->mode_opt = opt;
    return 0;
}

/* The options of the model alone. */
static int parse_model_opt(int c, tune_opts_t *o)
{
    switch (c) {
    case 'M': return set_mode(o, MODE_MODEL, "--model");
    case 'X': return set_mode(o, MODE_EXTRAPOLATE, "--extrapolate");
    case 'K': return set_mode(o, MODE_LINKS, "--links");
    case 'H':
        seen(&o->model_opt, "--hosts");
        if (parse_int(optarg, 1, 1024, &o->cl.hosts) != 0)
            return bad_value("--hosts", optarg, "hosts from 1 to 1024");
        return 0;
    case 'L':
        seen(&o->model_opt, "--per-host");
        if (parse_int(optarg, 1, 1024, &o->cl.per_host) != 0)
            return bad_value("--per-host", optarg,
                             "members per host from 1 to 1024");
        return 0;
    case 'A':
        seen(&o->model_opt, "--intra");
        return parse_link("--intra", optarg, &o->cl.intra);
    default:
        seen(&o->model_opt, "--inter");
        return parse_link("--inter", optarg, &o->cl.inter);
    }
}

/* The options of a measurement, and those both take. */
static int parse_opt(int c, tune_opts_t *o)
{
    uint64_t v;
    char *end;

    switch (c) {
    case 'n':
        seen(&o->measure_opt, "-n");
        if (parse_int(optarg, 1, 1024, &o->s.nprocs) != 0)
            return bad_value("-n", optarg, "processes from 1 to 1024");
        return 0;
    case 'c': return parse_colls(optarg, o) != 0 ? 2 : 0;
    case 'b':
    case 'e':
        seen(&o->sweep_opt, c == 'b' ? "-b" : "-e");
        if (tutti_size_parse(optarg, &v) != TUTTI_OK || v > SIZE_MAX / 2)
            return bad_value(c == 'b' ? "-b" : "-e", optarg,
                             "bytes, with K, M or G (binary)");
        *(c == 'b' ? &o->s.min_bytes : &o->s.max_bytes) = v;
        return 0;
    case 'f':
        seen(&o->sweep_opt, "-f");
        o->s.factor = strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(o->s.factor > 1.0) ||
            !isfinite(o->s.factor))
            return bad_value("-f", optarg, "a factor above 1");
        return 0;
    case 'r':
        seen(&o->measure_opt, "-r");
        if (parse_int(optarg, 1, TUNE_MAX_ROUNDS, &o->s.rounds) != 0)
            return bad_value("-r", optarg, "rounds from 1 to 100");
        return 0;
    case 'I':
        seen(&o->measure_opt, "--iters");
        if (parse_int(optarg, 1, 1 << 30, &o->s.iters) != 0)
            return bad_value("--iters", optarg, "1 or more calls");
        return 0;
    case 'o':
        seen(&o->measure_opt, "-o");
        o->s.out = optarg;
        return 0;
    case 'R':
        seen(&o->measure_opt, "--tutti-run");
        o->run = optarg;
        return 0;
    case 'P':
        seen(&o->measure_opt, "--tutti-perf");
        o->perf = optarg;
        return 0;
    case 'h': usage(stdout); exit(0);
    default:
        fprintf(stderr, "tutti-tune: see tutti-tune --help\n");
        return 2;
    }
}

/* What each mode needs and refuses: no option of another mode. */
static int check_mode(const tune_opts_t *o)
{
    if (o->mode == MODE_LINKS) {
        const char *other = o->measure_opt ? o->measure_opt : o->model_opt;
        if (other == NULL && o->ncolls == 0 &&
            (o->sweep_opt == NULL || strcmp(o->sweep_opt, "-e") == 0))
            return 0;
        fprintf(stderr, "tutti-tune: %s is not taken with --links, which "
                "takes only -e (the large message); see tutti-tune "
                "--help\n", other ? other : o->ncolls ? "-c" : o->sweep_opt);
        return 2;
    }
    if (o->mode == MODE_MEASURE) {
        if (o->model_opt != NULL) {
            fprintf(stderr, "tutti-tune: %s is taken only with --model or "
                    "--extrapolate; see tutti-tune --help\n", o->model_opt);
            return 2;
        }
        if (o->s.nprocs == 0) {
            fprintf(stderr, "tutti-tune: -n N is required: the processes "
                    "to tune for; see tutti-tune --help\n");
            return 2;
        }
        return 0;
    }
    if (o->measure_opt != NULL) {
        fprintf(stderr, "tutti-tune: %s is not taken with %s, which runs "
                "nothing: expected the model's options; see tutti-tune "
                "--help\n", o->measure_opt, o->mode_opt);
        return 2;
    }
    if (o->mode == MODE_EXTRAPOLATE &&
        (o->cl.hosts || o->cl.per_host || o->sweep_opt)) {
        fprintf(stderr, "tutti-tune: %s is not taken with --extrapolate, "
                "whose shapes and sizes are fixed: expected --intra, "
                "--inter or -c\n", o->sweep_opt ? o->sweep_opt :
                o->cl.hosts ? "--hosts" : "--per-host");
        return 2;
    }
    if (o->mode == MODE_MODEL && (!o->cl.hosts || !o->cl.per_host)) {
        fprintf(stderr, "tutti-tune: --model needs --hosts H and "
                "--per-host L: the shape to model\n");
        return 2;
    }
    for (int j = 0; j < o->ncolls; j++)
        if (!tune_model_knows(o->coll[j]))
            return bad_value("-c", tutti_collective_name(o->coll[j]),
                             "allreduce, allgather, reduce_scatter or "
                             "alltoall (the collectives the model knows)");
    return 0;
}

static int parse_args(int argc, char **argv, tune_opts_t *o)
{
    static const struct option longs[] = {
        {"collectives", 1, 0, 'c'}, {"minbytes", 1, 0, 'b'},
        {"maxbytes", 1, 0, 'e'},    {"stepfactor", 1, 0, 'f'},
        {"rounds", 1, 0, 'r'},      {"iters", 1, 0, 'I'},
        {"output", 1, 0, 'o'},      {"tutti-run", 1, 0, 'R'},
        {"tutti-perf", 1, 0, 'P'},  {"help", 0, 0, 'h'},
        {"model", 0, 0, 'M'},       {"extrapolate", 0, 0, 'X'},
        {"hosts", 1, 0, 'H'},       {"per-host", 1, 0, 'L'},
        {"intra", 1, 0, 'A'},       {"inter", 1, 0, 'E'},
        {"links", 0, 0, 'K'},       {0, 0, 0, 0}};
    int c, li, rc;

    while ((c = getopt_long(argc, argv, "n:c:b:e:f:r:o:h", longs, &li)) !=
           -1) {
        rc = strchr("MXKHLAE", c) != NULL ? parse_model_opt(c, o)
                                         : parse_opt(c, o);
        if (rc != 0)
            return rc;
    }
    if (optind < argc) {
        fprintf(stderr, "tutti-tune: unexpected argument '%s'; see "
                "tutti-tune --help\n", argv[optind]);
        return 2;
    }
    if ((rc = check_mode(o)) != 0)
        return rc;
    if (o->s.min_bytes > o->s.max_bytes) {
        fprintf(stderr, "tutti-tune: -b %llu exceeds -e %llu: expected MIN "
                "<= MAX\n", (unsigned long long)o->s.min_bytes,
                (unsigned long long)o->s.max_bytes);
        return 2;
    }
    if (sweep_rows(&o->s) > TUNE_MAX_SIZES) {
        fprintf(stderr, "tutti-tune: -b %llu -e %llu -f %g: more than %d "
                "sizes: expected a larger -f or a narrower range\n",
                (unsigned long long)o->s.min_bytes,
                (unsigned long long)o->s.max_bytes, o->s.factor,
                TUNE_MAX_SIZES);
        return 2;
    }
    return 0;
}

/* @p name in directory @p dir, if executable there. */
static int try_dir(const char *dir, size_t dlen, const char *name, char *out)
{
    if (dlen == 0 ||
        snprintf(out, PATH_MAX, "%.*s/%s", (int)dlen, dir, name) >= PATH_MAX)
        return -1;
    return access(out, X_OK) == 0 ? 0 : -1;
}

/* The tool @p name: @p given as is, else beside this program, else in
 * PATH.  0, or -1 after saying where it looked. */
static int find_tool(const char *name, const char *given, const char *opt,
                     char *out)
{
    char self[PATH_MAX];
    const char *path = getenv("PATH");

    if (given != NULL) {
        if (access(given, X_OK) == 0 &&
            snprintf(out, PATH_MAX, "%s", given) < PATH_MAX)
            return 0;
        fprintf(stderr, "tutti-tune: %s '%s': %s: expected an executable "
                "%s\n", opt, given, strerror(errno), name);
        return -1;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        size_t dlen = slash ? (size_t)(slash - self) : 0;
        /* In a build tree libtool runs this program from .libs/; the
         * tools beside it there lack the wrappers that find libtutti, so
         * the directory above comes first. */
        if (dlen >= 6 && strncmp(self + dlen - 6, "/.libs", 6) == 0 &&
            try_dir(self, dlen - 6, name, out) == 0)
            return 0;
        if (try_dir(self, dlen, name, out) == 0)
            return 0;
    }
    for (const char *p = path; p != NULL && *p != '\0';) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (try_dir(p, len, name, out) == 0)
            return 0;
        p = colon ? colon + 1 : NULL;
    }
    fprintf(stderr, "tutti-tune: no %s beside tutti-tune or in PATH: "
            "expected one there, or %s PATH\n", name, opt);
    return -1;
}

/* The cpu implementations of @p c->coll, from the library's list. */
static int list_candidates(const tutti_context_t *ctx, tune_coll_t *c)
{
    tutti_impl_info_t im;
    c->ncand = 0;
    for (size_t i = 0; tutti_info_impl(ctx, i, &im) == TUTTI_OK; i++) {
        if (!(im.collectives & TUTTI_COLL_BIT(c->coll)) ||
            !(im.device_types & TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)))
            continue;
        if (c->ncand == TUNE_MAX_CANDS || strlen(im.name) >= 64) {
            fprintf(stderr, "tutti-tune: %s: %s not tried (over %d "
                    "candidates, or a name over 63 characters)\n",
                    tutti_collective_name(c->coll), im.name, TUNE_MAX_CANDS);
            continue;
        }
        snprintf(c->cand[c->ncand].name, 64, "%s", im.name);
        c->cand[c->ncand++].failed = 0;
    }
    return c->ncand;
}

/* Runs @p argv with its stdout into a new buffer in @p out_text (stderr
 * passes through); returns the exit status, 128 + a signal, or -1. */
static int run_capture(char *const argv[], char **out_text)
{
    int fd[2];
    size_t n = 0, cap = 65536;
    char *buf = malloc(cap);
    pid_t pid;
    int st;

    *out_text = NULL;
    if (buf == NULL || pipe(fd) != 0) {
        fprintf(stderr, "tutti-tune: cannot run %s: %s\n", argv[0],
                buf ? strerror(errno) : "out of memory");
        free(buf);
        return -1;
    }
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        fprintf(stderr, "tutti-tune: cannot execute %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    if (pid < 0) {
        fprintf(stderr, "tutti-tune: cannot fork: %s\n", strerror(errno));
        close(fd[0]);
        free(buf);
        return -1;
    }
    for (;;) {
        if (cap - n < 4096) {
            char *grown = realloc(buf, cap *= 2);
            if (grown == NULL)
                break;
            buf = grown;
        }
        ssize_t got = read(fd[0], buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    buf[n] = '\0';
    close(fd[0]);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    *out_text = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Takes the rows of one tutti-perf run of candidate @p k: 0, or -1 when
 * it printed none, or a row of another implementation. */
static int take_rows(tune_coll_t *c, int k, char *text)
{
    int rows = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l != NULL;
         l = strtok_r(NULL, "\n", &save)) {
        unsigned long long size, count, wrong;
        char type[16], op[16], impl[64], coll[32];
        int root;
        double t, algbw, busbw;
        tutti_dtype_t dt;
        if (l[0] == '#' ||
            sscanf(l, "%llu %llu %15s %15s %d %lf %lf %lf %llu %63s %31s",
                   &size, &count, type, op, &root, &t, &algbw, &busbw, &wrong,
                   impl, coll) != 11)
            continue;
        if (strcmp(impl, c->cand[k].name) != 0 ||
            tutti_dtype_parse(type, &dt) != TUTTI_OK) {
            fprintf(stderr, "tutti-tune: %s: asked for %s, tutti-perf ran "
                    "%s (%s)\n", tutti_collective_name(c->coll),
                    c->cand[k].name, impl, type);
            return -1;
        }
        rows++;
        /* A size under one element per rank runs nothing worth timing. */
        if (count == 0)
            continue;
        if (tune_add_sample(c, k, count * tutti_dtype_size(dt), t) != 0)
            return -1;
    }
    if (rows == 0)
        fprintf(stderr, "tutti-tune: %s: tutti-perf printed no row for %s\n",
                tutti_collective_name(c->coll), c->cand[k].name);
    return rows ? 0 : -1;
}

/* One run of candidate @p k; a failed one is reported and left out. */
static void run_candidate(const tune_opts_t *o, tune_coll_t *c, int k,
                          int round)
{
    char np[16], lo[32], hi[32], f[32], it[16], *text;
    char *argv[] = {(char *)o->run_path, "-n", np, (char *)o->perf_path,
                    "-c", (char *)tutti_collective_name(c->coll), "-a",
                    c->cand[k].name, "-b", lo, "-e", hi, "-f", f, "-n", it,
                    NULL};

    snprintf(np, sizeof(np), "%d", o->s.nprocs);
    snprintf(lo, sizeof(lo), "%llu", (unsigned long long)o->s.min_bytes);
    snprintf(hi, sizeof(hi), "%llu", (unsigned long long)o->s.max_bytes);
    snprintf(f, sizeof(f), "%.17g", o->s.factor);
    snprintf(it, sizeof(it), "%d", o->s.iters);
    fprintf(stderr, "tutti-tune: %s, round %d of %d: %s\n",
            tutti_collective_name(c->coll), round + 1, o->s.rounds,
            c->cand[k].name);
    int rc = run_capture(argv, &text);
    if (rc != 0 || take_rows(c, k, text) != 0) {
        fprintf(stderr, "tutti-tune: %s: %s failed (tutti-run exited %d; "
                "its errors are above): left out\n",
                tutti_collective_name(c->coll), c->cand[k].name, rc);
        tune_drop(c, k);
    }
    free(text);
}

/* Every round of one collective; 0 if some candidate ran. */
static int tune_collective(const tune_opts_t *o, tune_coll_t *c)
{
    int alive = 0;
    for (int r = 0; r < o->s.rounds; r++)
        /* Each round starts one candidate later, so that no candidate
         * always runs first (or right after the same one). */
        for (int j = 0; j < c->ncand; j++) {
            int k = (j + r) % c->ncand;
            if (!c->cand[k].failed)
                run_candidate(o, c, k, r);
        }
    tune_decide(c);
    for (int k = 0; k < c->ncand; k++)
        alive |= !c->cand[k].failed;
    if (!alive)
        fprintf(stderr, "tutti-tune: %s: no implementation ran%s\n",
                tutti_collective_name(c->coll),
                c->ncand ? "" : " (no loaded module runs it on cpu)");
    return alive ? 0 : -1;
}

/* Fails early, before the sweep, where FILE cannot be made. */
static int check_output(const char *out)
{
    struct stat sb;
    char dir[PATH_MAX];
    const char *slash = strrchr(out, '/');

    if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "tutti-tune: -o %s: is a directory: expected a "
                "file name\n", out);
        return -1;
    }
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == out)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - out), out);
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "tutti-tune: -o %s: cannot write in %s: %s\n", out,
                dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* --model, --extrapolate: the collectives given, else every one the model
 * knows, in its table's order. */
static int run_model(tune_opts_t *o)
{
    if (o->ncolls == 0)
        for (int r = 0; r < tune_model_nrows; r++)
            if (o->ncolls == 0 ||
                o->coll[o->ncolls - 1] != tune_model_rows[r].coll)
                o->coll[o->ncolls++] = tune_model_rows[r].coll;
    if (o->mode == MODE_MODEL)
        tune_model_print(stdout, &o->cl, o->coll, o->ncolls, o->s.min_bytes,
                         o->s.max_bytes, o->s.factor);
    else
        tune_model_extrapolate(stdout, &o->cl.intra, &o->cl.inter, o->coll,
                               o->ncolls);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    tune_opts_t o = {
        .s = {0, 8, 64u << 20, 8.0, 20, 3, "tutti-tuned.yaml"},
        .cl = {0, 0, {TUNE_MODEL_INTRA_US, TUNE_MODEL_INTRA_GBPS},
               {TUNE_MODEL_INTER_US, TUNE_MODEL_INTER_GBPS}}};
    static tune_coll_t colls[TUTTI_COLL_COUNT];
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    int rc = parse_args(argc, argv, &o), failed = 0;

    if (rc != 0)
        return rc;
    if (o.mode == MODE_LINKS)
        return tune_links_main(o.sweep_opt ? (size_t)o.s.max_bytes
                                           : (size_t)16 << 20);
    if (o.mode != MODE_MEASURE)
        return run_model(&o);
    if (o.ncolls == 0)
        for (o.ncolls = 0; o.ncolls < NDEFAULT; o.ncolls++)
            o.coll[o.ncolls] = default_colls[o.ncolls];
    if (find_tool("tutti-run", o.run, "--tutti-run", o.run_path) != 0 ||
        find_tool("tutti-perf", o.perf, "--tutti-perf", o.perf_path) != 0)
        return 2;
    if (check_output(o.s.out) != 0)
        return 1;
    /* The list of implementations, as tutti-info has it. */
    tutti_context_params_init(&cp);
    cp.task = 0;
    cp.num_tasks = 1;
    tutti_status_t st = tutti_context_create(&cp, &ctx);
    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-tune: %s: %s\n", tutti_strerror(st),
                tutti_last_error());
        return 1;
    }
    for (int j = 0; j < o.ncolls; j++) {
        colls[j].coll = o.coll[j];
        colls[j].rounds = o.s.rounds;
        list_candidates(ctx, &colls[j]);
    }
    tutti_context_destroy(ctx);
    for (int j = 0; j < o.ncolls && !failed; j++) {
        tune_coll_t *c = &colls[j];
        c->samples = calloc((size_t)TUNE_MAX_CANDS * TUNE_MAX_SIZES *
                                (size_t)c->rounds, sizeof(double));
        if (c->samples == NULL) {
            fprintf(stderr, "tutti-tune: out of memory\n");
            failed = 1;
            break;
        }
        failed = tune_collective(&o, c) != 0;
    }
    if (!failed) {
        tune_print_summary(&o.s, colls, o.ncolls, stdout);
        fflush(stdout);
        failed = tune_write(&o.s, colls, o.ncolls) != 0;
    }
    if (failed)
        fprintf(stderr, "tutti-tune: no file written\n");
    else
        printf("# wrote %s\n", o.s.out);
    for (int j = 0; j < o.ncolls; j++)
        free(colls[j].samples);
    return failed;
}
