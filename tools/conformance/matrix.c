/* The correctness matrix (see matrix.h), shared by the tests and
 * tutti-conformance. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matrix.h"
#include "members.h"
#include "../pattern.h"

#define GUARD 64          /* bytes checked past every output */
#define FILL 0x5a         /* what unwritten bytes hold */
#define BIG_COUNT ((size_t)(1u << 20) + 3)
#define MAX_COUNTS 6
/* Per mille of the cases off the cover diagonal that run by default. */
#define RATE_SMALL 700
#define RATE_MEDIUM 200
#define RATE_BIG 15

int tutti_check_full_from_env(void)
{
    const char *v = getenv("TUTTI_CHECK_FULL");
    return v != NULL && strcmp(v, "1") == 0;
}

int tutti_check_memory_parse(const char *text)
{
    if (text == NULL || strcmp(text, "heap") == 0)
        return TUTTI_CHECK_MEMORY_HEAP;
    if (strcmp(text, "registered") == 0)
        return TUTTI_CHECK_MEMORY_REGISTERED;
    if (strcmp(text, "mixed") == 0)
        return TUTTI_CHECK_MEMORY_MIXED;
    return -1;
}

void tutti_check_env_init(tutti_check_env_t *env, tutti_context_t *ctx)
{
    memset(env, 0, sizeof(*env));
    int mem = tutti_check_memory_parse(getenv("TUTTI_CHECK_MEMORY"));
    env->memory = mem < 0 ? TUTTI_CHECK_MEMORY_HEAP : mem;
    env->ctx = ctx;
    env->group_key = 1;
    env->group_size = 1;
    env->timeout = 60;
    env->full = tutti_check_full_from_env();
    env->log = stderr;
}

void tutti_checker_init(tutti_checker_t *c, tutti_group_t *g, FILE *log,
                        uint64_t first_key)
{
    memset(c, 0, sizeof(*c));
    c->g = g;
    c->log = log;
    c->key = first_key;
    c->res.rank = g ? tutti_group_rank(g) : -1;
}

void tutti_checker_fini(tutti_checker_t *c)
{
    if (c->registered) {
        tutti_mem_free(c->in);
        tutti_mem_free(c->out);
    } else {
        free(c->in);
        free(c->out);
    }
    free(c->copy);
    c->in = c->out = c->copy = NULL;
    c->cap = 0;
}

/* Room for @p bytes plus the guard in each buffer. */
static int reserve(tutti_checker_t *c, size_t bytes)
{
    bytes += GUARD;
    if (bytes <= c->cap)
        return 1;
    tutti_checker_fini(c);
    if (c->registered) {
        void *in = NULL, *out = NULL;
        if (tutti_mem_alloc(bytes, &in) == TUTTI_OK &&
            tutti_mem_alloc(bytes, &out) != TUTTI_OK)
            out = NULL;
        c->in = in;
        c->out = out;
    } else {
        c->in = malloc(bytes);
        c->out = malloc(bytes);
    }
    c->copy = malloc(bytes);
    if (c->in == NULL || c->out == NULL || c->copy == NULL) {
        fprintf(c->log, "rank %d: cannot allocate 3 x %zu bytes%s%s%s\n",
                c->res.rank, bytes,
                c->registered ? " (two registered: " : "",
                c->registered ? tutti_last_error() : "",
                c->registered ? ")" : "");
        tutti_checker_fini(c);
        return 0;
    }
    c->cap = bytes;
    return 1;
}

static void describe(const tutti_check_case_t *k, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s %s %s", k->algorithm ? k->algorithm
                                                        : "(selection)",
                     tutti_collective_name(k->coll),
                     tutti_dtype_name(k->dtype));
    if (tutti_collective_reduces(k->coll))
        n += snprintf(buf + n, len - (size_t)n, " %s", tutti_op_name(k->op));
    if (k->pre_scale != 0 || k->post_scale != 0)
        n += snprintf(buf + n, len - (size_t)n, " pre %g post %g",
                      k->pre_scale, k->post_scale);
    n += snprintf(buf + n, len - (size_t)n, " count %zu", k->count);
    if (tutti_collective_rooted(k->coll))
        n += snprintf(buf + n, len - (size_t)n, " root %d", k->root);
    if (k->perm != NULL)
        n += snprintf(buf + n, len - (size_t)n, " perm[0]=%d", k->perm[0]);
    snprintf(buf + n, len - (size_t)n, " %s",
             k->in_place == 2 ? "in place on odd ranks"
             : k->in_place    ? "in-place"
                              : "out-of-place");
}

static int fail(tutti_checker_t *c, const tutti_check_case_t *k,
                const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reports a failed case on the log; returns 0. */
static int fail(tutti_checker_t *c, const tutti_check_case_t *k,
                const char *fmt, ...)
{
    char what[256], why[512];
    va_list ap;
    describe(k, what, sizeof(what));
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    fprintf(c->log, "rank %d: %s: %s\n", c->res.rank, what, why);
    c->res.failures++;
    return 0;
}

/* 1 if @p len bytes at @p p all hold FILL. */
static int untouched(const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != FILL)
            return 0;
    return 1;
}

int tutti_check_case(tutti_checker_t *c, const tutti_check_case_t *k)
{
    int rank = tutti_group_rank(c->g), n = tutti_group_size(c->g);
    tutti_pattern_t pat = {k->coll, k->dtype, k->op, n, k->root, k->count,
                           NULL, k->perm, k->pre_scale, k->post_scale};
    size_t es = tutti_dtype_size(k->dtype), first = 0;
    size_t nin = tutti_pattern_in_count(&pat, rank);
    size_t nout = tutti_pattern_out_count(&pat, rank);
    /* Each member decides alone whether it runs in place (mixed: the odd
     * ranks do).  A reduce's or gather's other ranks have no output: in
     * place their one buffer is only an input and must come back as it
     * was; out of place they pass recvbuf NULL for odd counts. */
    int ip = k->in_place == 1 || (k->in_place == 2 && rank % 2 == 1);
    int leaf = (k->coll == TUTTI_COLL_GATHER || k->coll == TUTTI_COLL_REDUCE) &&
               rank != k->root;
    size_t in_off = ip ? tutti_pattern_in_offset(&pat, rank) : 0;
    size_t out_off = ip ? tutti_pattern_out_offset(&pat, rank) : 0;
    size_t span = ip ? tutti_pattern_inplace_count(&pat, rank) : 0;
    size_t need = ip ? span : (nin > nout ? nin : nout);
    tutti_instance_params_t p;
    tutti_request_t *req;
    tutti_request_info_t info;

    c->res.checks++;
    if (!reserve(c, need * es))
        return fail(c, k, "no memory for %zu elements", need);
    test_params(&p, ++c->key, k->coll, k->dtype, k->count);
    p.op = k->op;
    p.root = k->root;
    p.pre_scale = k->pre_scale;
    p.post_scale = k->post_scale;
    p.permutation = k->perm;
    p.algorithm = k->algorithm;
    unsigned char *send = c->in, *recv;
    if (ip) {
        memset(c->in, FILL, span * es + GUARD);
        tutti_pattern_fill(&pat, rank, c->in + in_off * es);
        memcpy(c->copy, c->in, span * es + GUARD);
        recv = c->in;
    } else {
        tutti_pattern_fill(&pat, rank, c->in);
        memset(c->in + nin * es, FILL, GUARD);
        memcpy(c->copy, c->in, nin * es + GUARD);
        memset(c->out, FILL, nout * es + GUARD);
        recv = leaf && k->count % 2 == 1 ? NULL : c->out;
    }
    tutti_status_t st = tutti_execute(c->g, &p, send, recv, &req);
    if (st == TUTTI_OK) {
        st = tutti_request_wait(req);
        tutti_request_info(req, &info);
        tutti_request_free(req);
    }
    if (st != TUTTI_OK)
        return fail(c, k, "%s: %s", tutti_status_name(st),
                    tutti_last_error());
    if (k->algorithm && strcmp(info.algorithm, k->algorithm) != 0)
        return fail(c, k, "ran %s", info.algorithm);
    if ((k->coll == TUTTI_COLL_ALLGATHER || k->coll == TUTTI_COLL_ALLTOALL ||
         k->coll == TUTTI_COLL_REDUCE_SCATTER ||
         (k->coll == TUTTI_COLL_GATHER && rank == k->root)) &&
        info.recv_total != nout)
        return fail(c, k, "recv_total %zu, want %zu", info.recv_total, nout);
    const unsigned char *res = ip ? c->in + out_off * es : c->out;
    size_t wrong = nout ? tutti_pattern_check(&pat, rank, res, &first) : 0;
    if (wrong > 0)
        return fail(c, k, "%zu wrong elements; first at %zu: got %g, want %g",
                    wrong, first, tutti_pattern_get(res, k->dtype, first),
                    tutti_pattern_expected(&pat, rank, first));
    if (ip && !untouched(c->in + span * es, GUARD))
        return fail(c, k, "wrote past the end of its buffer (%zu elements)",
                    span);
    if (ip && leaf && memcmp(c->in, c->copy, span * es) != 0)
        return fail(c, k, "changed its in-place buffer, an input only on "
                    "this rank (%zu elements)", span);
    if (!ip && !untouched(c->out + nout * es, GUARD))
        return fail(c, k, "wrote past the output (%zu elements)", nout);
    if (!ip && memcmp(c->in, c->copy, nin * es + GUARD) != 0)
        return fail(c, k, "wrote into its input (%zu elements)", nin);
    return 1;
}

/* ---- the matrix --------------------------------------------------------- */

/* splitmix64 over the case's coordinates: the same on every member. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    uint64_t z = h ^ (v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* The scale variants of float reductions: none, then powers of two. */
static const double scale_pre[] = {0, 0.5, 4, -2};
static const double scale_post[] = {0, 4, 0.25, 0};
#define NUM_SCALES 4

typedef struct {
    const tutti_check_env_t *env;
    tutti_checker_t *c;
    int n;
    size_t counts[MAX_COUNTS];
    int num_counts;
    int *perms; /* 3 permutations of n: shift by one, reverse, identity */
} matrix_t;

/* Counts 0, 1, n-1, n+1, 4099, 1 Mi+3 without repeats. */
static int count_list(int n, size_t *out)
{
    size_t all[MAX_COUNTS] = {0, 1, (size_t)n - 1, (size_t)n + 1, 4099,
                              BIG_COUNT};
    int k = 0;
    for (int i = 0; i < MAX_COUNTS; i++) {
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= out[j] == all[i];
        if (!dup)
            out[k++] = all[i];
    }
    return k;
}

/*
 * Whether case (d, o, s, k, ip, v) of implementation @p impl_ix on @p coll
 * runs.  The cover diagonal: dtype d with op d % ops, count d % counts,
 * placement alternating (shifted after the first round of counts), scale d
 * % scales; every root (permutation) for counts up to n+1, one picked by
 * hash above.  Off the diagonal the hash decides, by the count's cost.
 */
enum { COVER_ONLY, SAMPLED, FULL };

static int keep(const matrix_t *m, int mode, int impl_ix, int coll, int d,
                int o, int nops, int s, int nsc, int k, int ip, int v, int nv)
{
    uint64_t h = mix(mix(mix(mix(0x7475747469u, (uint64_t)impl_ix),
                             (uint64_t)coll), (uint64_t)m->n),
                     (uint64_t)(((d * 8 + o) * 8 + s) * 8 + k) * 3 + ip);
    int small = m->counts[k] <= (size_t)m->n + 1;
    if (mode == FULL)
        return 1;
    if (o == d % nops && k == d % m->num_counts &&
        ip == (d + d / m->num_counts) % 3 && s == d % nsc)
        return small || v == (int)(h % (uint64_t)nv);
    h = mix(h, (uint64_t)v);
    if (mode == COVER_ONLY)
        return 0;
    if (small)
        return h % 1000 < RATE_SMALL;
    if (m->counts[k] < BIG_COUNT)
        return h % 1000 < RATE_MEDIUM;
    return h % 1000 < RATE_BIG;
}

/* The cases of @p coll through @p algorithm (NULL: selection) that
 * @p mode keeps. */
static void run_collective(matrix_t *m, int mode, int impl_ix,
                           tutti_collective_t coll, const char *algorithm)
{
    int nops = tutti_collective_reduces(coll) ? TUTTI_OP_COUNT : 1;
    int nv = tutti_collective_rooted(coll) ? m->n : coll == TUTTI_COLL_PERMUTE ? 3 : 1;
    for (int d = 0; d < TUTTI_DTYPE_COUNT; d++) {
        int nsc = tutti_collective_reduces(coll) && tutti_dtype_is_float((tutti_dtype_t)d)
                      ? NUM_SCALES : 1;
        for (int o = 0; o < nops; o++)
            for (int s = 0; s < nsc; s++)
                for (int k = 0; k < m->num_counts; k++)
                    for (int ip = 0; ip < 3; ip++)
                        for (int v = 0; v < nv; v++) {
                            tutti_check_case_t kc = {
                                coll, (tutti_dtype_t)d,
                                (tutti_op_t)(tutti_collective_reduces(coll) ? o : 0),
                                m->counts[k], tutti_collective_rooted(coll) ? v : 0, ip,
                                scale_pre[s], scale_post[s],
                                coll == TUTTI_COLL_PERMUTE
                                    ? m->perms + v * m->n : NULL,
                                algorithm};
                            if (keep(m, mode, impl_ix, coll, d, o, nops, s,
                                     nsc, k, ip, v, nv))
                                tutti_check_case(m->c, &kc);
                            else if (mode != COVER_ONLY)
                                m->c->res.sampled_out++;
                        }
    }
}

/* ---- per-rank counts ---------------------------------------------------- */

/* Scenario @p sc's counts: allgather and reduce_scatter n entries (per
 * rank), alltoall n x n (sender-major).  0: uneven with zeros; 1: all
 * zero; 2: only what goes to (or comes from) the last rank; 3: large and
 * uneven. */
static void scenario_counts(int sc, int n, tutti_collective_t coll,
                            size_t *out)
{
    int rows = coll == TUTTI_COLL_ALLTOALL ? n : 1;
    for (int s = 0; s < rows; s++)
        for (int d = 0; d < n; d++) {
            size_t v = 0;
            if (sc == 0)
                v = (size_t)(s * 3 + d * 5 + 2) % 7;
            else if (sc == 2)
                v = d == n - 1 ? 4099 : 0;
            else if (sc == 3)
                v = 1000 * (size_t)(d + 1) + (size_t)(7 * s + d);
            out[s * n + d] = v;
        }
}

static const tutti_dtype_t scenario_dtype[] = {TUTTI_INT32, TUTTI_FLOAT32,
                                               TUTTI_FLOAT16, TUTTI_BFLOAT16};
static const tutti_op_t scenario_op[] = {TUTTI_OP_SUM, TUTTI_OP_MAX,
                                         TUTTI_OP_AVG, TUTTI_OP_PROD};
/* reduce_scatter's pre_scale per scenario (float types only). */
static const double scenario_pre[] = {0, -2, 4, 0.5};

/* What recv_counts[j] must say on @p rank. */
static size_t want_recv_count(const tutti_pattern_t *p, int rank, int j)
{
    if (p->coll == TUTTI_COLL_ALLTOALL)
        return p->counts[(size_t)j * (size_t)p->nranks + (size_t)rank];
    return p->counts[j];
}

/* Checks the request's recv_total and recv_counts; 1 if right. */
static int check_info(tutti_checker_t *c, const tutti_check_case_t *k,
                      const tutti_pattern_t *p, int rank,
                      const tutti_request_info_t *info, const char *when)
{
    size_t want = tutti_pattern_out_count(p, rank);
    if (info->recv_total != want)
        return fail(c, k, "%s: recv_total %zu, want %zu", when,
                    info->recv_total, want);
    if (info->recv_counts == NULL)
        return fail(c, k, "%s: recv_counts NULL", when);
    for (int j = 0; j < p->nranks; j++)
        if (info->recv_counts[j] != want_recv_count(p, rank, j))
            return fail(c, k, "%s: recv_counts[%d] %zu, want %zu", when, j,
                        info->recv_counts[j], want_recv_count(p, rank, j));
    return 1;
}

/* Executes and waits; the request's info goes to @p info_out. */
static tutti_status_t exec_wait(tutti_checker_t *c,
                                const tutti_instance_params_t *ip,
                                const void *send, void *recv,
                                tutti_request_info_t *info_out)
{
    tutti_request_t *r;
    tutti_status_t st = tutti_execute(c->g, ip, send, recv, &r);
    memset(info_out, 0, sizeof(*info_out));
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_info(r, info_out);
    /* The info's recv_counts live as long as the request: keep a copy. */
    static _Thread_local size_t counts[64];
    if (info_out->recv_counts) {
        int n = tutti_group_size(c->g) < 64 ? tutti_group_size(c->g) : 64;
        memcpy(counts, info_out->recv_counts, (size_t)n * sizeof(size_t));
        info_out->recv_counts = counts;
    }
    tutti_request_free(r);
    return st;
}

/* The sizes-only query, then the last rank short by one element, then the
 * real call; in place when @p in_place (2: on odd ranks only; alltoall:
 * the core stages it). */
static void per_rank_one(tutti_checker_t *c, tutti_collective_t coll,
                         const char *algorithm, int sc, int in_place)
{
    int rank = tutti_group_rank(c->g), n = tutti_group_size(c->g);
    size_t *mat = calloc((size_t)n * (size_t)n, sizeof(size_t)), first = 0;
    double pre = coll == TUTTI_COLL_REDUCE_SCATTER ? scenario_pre[sc] : 0;
    tutti_pattern_t pat = {coll, scenario_dtype[sc], scenario_op[sc], n, 0,
                           TUTTI_COUNT_PER_RANK, mat, NULL, pre, 0};
    tutti_check_case_t k = {coll, pat.dtype, pat.op, TUTTI_COUNT_PER_RANK, 0,
                            in_place, pre, 0, NULL, algorithm};
    tutti_instance_params_t p;
    tutti_request_info_t info;
    tutti_status_t st;
    int gathers = coll != TUTTI_COLL_REDUCE_SCATTER;

    c->res.checks++;
    if (mat == NULL) {
        fail(c, &k, "no memory");
        return;
    }
    scenario_counts(sc, n, coll, mat);
    size_t es = tutti_dtype_size(pat.dtype);
    size_t nin = tutti_pattern_in_count(&pat, rank);
    size_t nout = tutti_pattern_out_count(&pat, rank);
    size_t span = tutti_pattern_inplace_count(&pat, rank);
    if (!reserve(c, (span > nin ? span : nin) * es)) {
        fail(c, &k, "no memory");
        goto out;
    }
    test_params(&p, ++c->key, coll, pat.dtype, TUTTI_COUNT_PER_RANK);
    p.op = pat.op;
    p.pre_scale = pre;
    p.algorithm = algorithm;
    p.counts = coll == TUTTI_COLL_ALLTOALL ? mat + (size_t)rank * (size_t)n
                                          : mat;
    p.send_count = mat[rank];
    tutti_pattern_fill(&pat, rank, c->in);
    memset(c->in + nin * es, FILL, GUARD);
    memcpy(c->copy, c->in, nin * es + GUARD);
    if (gathers) {
        /* Everyone asks for the sizes only. */
        st = exec_wait(c, &p, c->in, NULL, &info);
        if (st != TUTTI_OK) {
            fail(c, &k, "sizes-only query: %s: %s", tutti_status_name(st),
                 tutti_last_error());
            goto out;
        }
        if (!check_info(c, &k, &pat, rank, &info, "sizes-only query"))
            goto out;
    }
    if (gathers && sc == 0 && !in_place) {
        /* The last rank is one element short: nobody's data moves. */
        int brief = rank == n - 1 && nout > 0;
        char want[64];
        p.recv_capacity = brief ? nout - 1 : nout;
        memset(c->out, FILL, nout * es + GUARD);
        st = exec_wait(c, &p, c->in, c->out, &info);
        snprintf(want, sizeof(want), "rank %d", n - 1);
        if (st != TUTTI_ERR_TOO_SMALL) {
            fail(c, &k, "last rank short by one: %s, want ERR_TOO_SMALL: %s",
                 tutti_status_name(st), tutti_last_error());
            goto out;
        }
        if (strstr(tutti_last_error(), want) == NULL) {
            fail(c, &k, "last rank short: detail does not name '%s': %s",
                 want, tutti_last_error());
            goto out;
        }
        if (!untouched(c->out, nout * es + GUARD)) {
            fail(c, &k, "last rank short: data moved anyway");
            goto out;
        }
        if (!check_info(c, &k, &pat, rank, &info, "last rank short"))
            goto out;
    }
    /* The real call, with exactly the room needed. */
    p.recv_capacity = nout;
    unsigned char *res = c->out;
    int ip = in_place == 1 || (in_place == 2 && rank % 2 == 1);
    if (ip) {
        memset(c->in, FILL, span * es + GUARD);
        tutti_pattern_fill(&pat, rank,
                           c->in + tutti_pattern_in_offset(&pat, rank) * es);
        st = exec_wait(c, &p, c->in, c->in, &info);
        res = c->in + tutti_pattern_out_offset(&pat, rank) * es;
    } else {
        memset(c->out, FILL, nout * es + GUARD);
        st = exec_wait(c, &p, c->in, c->out, &info);
    }
    if (st != TUTTI_OK) {
        fail(c, &k, "%s: %s", tutti_status_name(st), tutti_last_error());
        goto out;
    }
    if (!check_info(c, &k, &pat, rank, &info, "after the call"))
        goto out;
    size_t wrong = nout ? tutti_pattern_check(&pat, rank, res, &first) : 0;
    if (wrong > 0)
        fail(c, &k, "counts scenario %d: %zu wrong elements; first at %zu: "
             "got %g, want %g", sc, wrong, first,
             tutti_pattern_get(res, pat.dtype, first),
             tutti_pattern_expected(&pat, rank, first));
    else if (ip && !untouched(c->in + span * es, GUARD))
        fail(c, &k, "counts scenario %d: wrote past its buffer", sc);
    else if (!ip && !untouched(c->out + nout * es, GUARD))
        fail(c, &k, "counts scenario %d: wrote past the output", sc);
    else if (!ip && memcmp(c->in, c->copy, nin * es + GUARD) != 0)
        fail(c, &k, "counts scenario %d: wrote into its input", sc);
out:
    free(mat);
}

void tutti_check_per_rank(tutti_checker_t *c, tutti_collective_t coll,
                          const char *algorithm)
{
    for (int sc = 0; sc < 4; sc++)
        for (int ip = 0; ip < 3; ip++)
            per_rank_one(c, coll, algorithm, sc, ip);
}

/* ---- driver ------------------------------------------------------------- */

/* The device resolver's table: ranks in task-then-device order, every
 * member on this one host, a NUMA node for each (or -1: unknown). */
static int check_localities(tutti_group_t *g, FILE *log)
{
    char host[64];
    tutti_locality_t prev = {-1, -1, -1, -1}, loc;
    int bad = 0;
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    for (int r = 0; r < tutti_group_size(g); r++) {
        if (tutti_group_locality(g, r, &loc) != TUTTI_OK ||
            loc.task < prev.task ||
            (loc.task == prev.task && loc.device_index <= prev.device_index) ||
            loc.host != 0 || loc.numa_node < -1) {
            fprintf(log, "rank %d: locality task %d device %d host %d numa "
                    "%d out of order or wrong\n", r, loc.task,
                    loc.device_index, loc.host, loc.numa_node);
            bad++;
        }
        prev = loc;
    }
    const char *name = tutti_group_host(g, 0);
    if (name == NULL || strcmp(name, host) != 0 ||
        tutti_group_host(g, 1) != NULL) {
        fprintf(log, "host 0 is '%s', this host is '%s'\n",
                name ? name : "(none)", host);
        bad++;
    }
    return bad;
}

static tutti_group_t *join(const tutti_check_env_t *env, uint64_t sub,
                           tutti_check_result_t *res)
{
    tutti_group_t *g = NULL;
    uint64_t key = env->group_key * 4096 + sub;
    tutti_status_t st = test_join(env->ctx, key, env->group_size,
                                  env->device_index, env->timeout, &g);
    if (st != TUTTI_OK) {
        fprintf(env->log, "device %d: join group 0x%llx: %s: %s\n",
                env->device_index, (unsigned long long)key,
                tutti_status_name(st), tutti_last_error());
        res->failures++;
        return NULL;
    }
    return g;
}

static int per_rank_coll(int coll)
{
    return coll == TUTTI_COLL_ALLGATHER || coll == TUTTI_COLL_REDUCE_SCATTER ||
           coll == TUTTI_COLL_ALLTOALL;
}

/* Every case of one implementation (or, @p impl NULL, of selection) in a
 * group of its own, so the instances' memory goes when it is left. */
static void run_impl(matrix_t *m, tutti_check_result_t *res, int ix,
                     const tutti_impl_info_t *impl, uint32_t colls)
{
    tutti_checker_t c;
    tutti_group_t *g = join(m->env, 1 + (uint64_t)ix, res);
    if (g == NULL)
        return;
    tutti_checker_init(&c, g, m->env->log, 0);
    c.registered = m->env->memory == TUTTI_CHECK_MEMORY_REGISTERED ||
                   (m->env->memory == TUTTI_CHECK_MEMORY_MIXED &&
                    tutti_group_rank(g) % 2 == 0);
    m->c = &c;
    int mode = impl == NULL ? COVER_ONLY : m->env->full ? FULL : SAMPLED;
    for (int coll = 0; coll < TUTTI_COLL_COUNT; coll++) {
        if (!(colls & TUTTI_COLL_BIT(coll)))
            continue;
        run_collective(m, mode, ix, (tutti_collective_t)coll,
                       impl ? impl->name : NULL);
        if (per_rank_coll(coll) &&
            (impl == NULL ||
             (impl->per_rank_collectives & TUTTI_COLL_BIT(coll))))
            tutti_check_per_rank(&c, (tutti_collective_t)coll,
                                 impl ? impl->name : NULL);
    }
    tutti_checker_fini(&c);
    res->checks += c.res.checks;
    res->failures += c.res.failures;
    res->sampled_out += c.res.sampled_out;
    tutti_group_leave(g);
}

tutti_check_result_t tutti_check_matrix(const tutti_check_env_t *env)
{
    tutti_check_result_t res = {0, 0, 0, -1};
    matrix_t m = {env, NULL, env->group_size, {0}, 0, NULL};
    tutti_impl_info_t info;
    uint32_t have = 0;
    int n = env->group_size;

    tutti_group_t *g = join(env, 0, &res);
    if (g == NULL)
        return res;
    res.rank = tutti_group_rank(g);
    res.checks = 1;
    res.failures += check_localities(g, env->log);
    tutti_group_leave(g);
    m.num_counts = count_list(n, m.counts);
    m.perms = malloc(3 * (size_t)n * sizeof(int));
    if (m.perms == NULL) {
        res.failures++;
        return res;
    }
    for (int r = 0; r < n; r++) {
        m.perms[r] = (r + 1) % n;
        m.perms[n + r] = n - 1 - r;
        m.perms[2 * n + r] = r;
    }
    size_t ix = 0;
    if (env->only_impl != NULL) {
        for (; tutti_info_impl(env->ctx, ix, &info) == TUTTI_OK; ix++) {
            if (strcmp(info.name, env->only_impl) == 0)
                run_impl(&m, &res, (int)ix + 1, &info, info.collectives);
        }
        free(m.perms);
        return res;
    }
    for (; tutti_info_impl(env->ctx, ix, &info) == TUTTI_OK; ix++) {
        if (!(info.device_types & TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)))
            continue;
        have |= info.collectives;
        if (!env->selection_only)
            run_impl(&m, &res, (int)ix + 1, &info, info.collectives);
    }
    /* A collective nobody implements fails here until one lands. */
    for (int coll = 0; coll < TUTTI_COLL_COUNT; coll++) {
        if (!(have & TUTTI_COLL_BIT(coll)) && !env->selection_only) {
            fprintf(env->log, "rank %d: no implementation of %s in this "
                    "build\n", res.rank,
                    tutti_collective_name((tutti_collective_t)coll));
            res.failures++;
        }
    }
    uint32_t sel = env->selection_colls ? env->selection_colls
                                        : TUTTI_COLL_BIT(TUTTI_COLL_COUNT) - 1;
    run_impl(&m, &res, (int)ix + 1, NULL, sel);
    free(m.perms);
    return res;
}
