/*
 * The cost model of tutti-tune --model and --extrapolate: for each
 * implementation a function that predicts one call's time on H hosts of L
 * members (N = H L, ranks host-contiguous) from two link classes, shm
 * inside a host (alpha_i, beta_i per member pair) and the one network link
 * per host, full duplex and shared by the host's members (alpha_e, beta_e
 * per direction).  S is the size tutti-perf counts (allreduce: the vector;
 * allgather, reduce_scatter, alltoall: the whole gathered buffer) and
 * c = S/N a block.  A message step costs alpha + bytes/beta; where a
 * phase's transfers run at once over one host link, their bytes add up on
 * it.  With H = 1 the inter terms vanish and flat algorithms run on the
 * shm class; with L = 1 the intra phases vanish.  A new implementation is
 * one function and one row of model_rows[].
 */
#include <string.h>

#include "tune_model.h"

/* Microseconds to move @p bytes at @p gbps GB/s (10^3 bytes per us). */
static double xfer(double bytes, double gbps)
{
    return bytes / (gbps * 1e3);
}

/* One message step of @p bytes over link class @p l. */
static double step(const tune_link_t *l, double bytes)
{
    return l->alpha_us + xfer(bytes, l->beta_gbps);
}

static int members(const tune_cluster_t *cl)
{
    return cl->hosts * cl->per_host;
}

/* A step of a flat ring over all N members, each sending @p bytes to its
 * neighbour at once.  On one host, the shm class.  Across hosts the ring
 * crosses each host boundary once per direction, so a host link carries
 * one transfer each way: the step lasts as long as the slower of that
 * transfer and an intra-host pair's (there is none with L = 1). */
static double ring_step(const tune_cluster_t *cl, double bytes)
{
    double e, i;

    if (cl->hosts == 1)
        return step(&cl->intra, bytes);
    e = step(&cl->inter, bytes);
    if (cl->per_host == 1)
        return e;
    i = step(&cl->intra, bytes);
    return i > e ? i : e;
}

/* A hypercube step at rank distance @p d in which every member exchanges
 * @p bytes with its partner.  Ranks being host-contiguous, at a distance
 * of L or more every partner is on another host and the L members of a
 * host cross its link at once (L x bytes each way); at a shorter one the
 * step stays inside hosts.  Approximate where L is not a power of two:
 * some pairs at a shorter distance cross too. */
static double cube_step(const tune_cluster_t *cl, int d, double bytes)
{
    if (cl->hosts > 1 && d >= cl->per_host)
        return step(&cl->inter, cl->per_host * bytes);
    return step(&cl->intra, bytes);
}

/* ---- allreduce --------------------------------------------------------- */

/*
 * RingAllreduce, a flat ring over the N members: a reduce-scatter of N-1
 * steps, then an allgather of N-1 steps; in each step every member sends
 * one segment of S/N to its neighbour:
 *   2 (N-1) ring_step(S/N)
 * which with H > 1 is 2 (N-1) (alpha_e + (S/N)/beta_e) wherever the host
 * link is the slower class, and with H = 1 2 (N-1) (alpha_i + (S/N)/beta_i).
 */
static double ring_allreduce(const tune_cluster_t *cl, double s)
{
    int n = members(cl);

    return 2.0 * (n - 1) * ring_step(cl, s / n);
}

/*
 * RecursiveDoublingAllreduce: with p the largest power of two <= N, log2 p
 * exchanges of the whole buffer S at distances 1, 2, 4 ... p/2 (cube_step):
 *   (exchanges at d < L)  (alpha_i + S/beta_i)
 *   + (exchanges at d >= L) (alpha_e + L S/beta_e)
 * and where N is not a power of two, as the implementation does, a
 * hand-over of S between ranks 2k and 2k+1 (distance 1) before and one
 * after: 2 cube_step(1, S).
 */
static double rd_allreduce(const tune_cluster_t *cl, double s)
{
    int n = members(cl), p = 1;
    double t = 0;

    while (p * 2 <= n)
        p *= 2;
    for (int d = 1; d < p; d *= 2)
        t += cube_step(cl, d, s);
    if (p != n)
        t += 2 * cube_step(cl, 1, s);
    return t;
}

/*
 * HierarchicalAllreduce, three phases:
 *   intra reduce-scatter, a ring over the L members of each host, L-1
 *     steps moving a shard of S/L:       (L-1) (alpha_i + (S/L)/beta_i)
 *   inter ring allreduce of each member's shard among the H members with
 *     the same local index, 2(H-1) steps of S/(L H); the L rings share the
 *     host link, which carries L S/(L H) = S/H per step:
 *                                        2 (H-1) (alpha_e + (S/H)/beta_e)
 *   intra allgather, the reduce-scatter's mirror:
 *                                        (L-1) (alpha_i + (S/L)/beta_i)
 */
static double hier_allreduce(const tune_cluster_t *cl, double s)
{
    int h = cl->hosts, l = cl->per_host;

    return 2.0 * (l - 1) * step(&cl->intra, s / l) +
           2.0 * (h - 1) * step(&cl->inter, s / h);
}

/*
 * HierarchicalLeaderAllreduce, three steps:
 *   intra reduce to the host's leader, which receives the L-1 others'
 *     buffers in one step (then reduces them):
 *                                        alpha_i + (L-1) S/beta_i
 *   the leaders exchange their host sums directly, one step in which each
 *     sends S to the H-1 others over its link:
 *                                        alpha_e + (H-1) S/beta_e
 *   intra broadcast, one step in which the leader sends S to the L-1
 *     others:                            alpha_i + (L-1) S/beta_i
 * With H = 1 the middle step, with L = 1 the first and the last, vanish.
 */
static double leader_allreduce(const tune_cluster_t *cl, double s)
{
    int h = cl->hosts, l = cl->per_host;
    double t = l > 1 ? step(&cl->intra, (l - 1) * s) : 0;

    if (h > 1)
        t += step(&cl->inter, (h - 1) * s);
    if (l > 1)
        t += step(&cl->intra, (l - 1) * s);
    return t;
}

/* ---- allgather and reduce_scatter -------------------------------------- */

/*
 * RingAllgather, a flat ring over the N members: N-1 steps in which every
 * member passes one block c = S/N to its neighbour:
 *   (N-1) ring_step(c)
 * which with H > 1 is (N-1) (alpha_e + c/beta_e) wherever the host link is
 * the slower class.
 */
static double ring_allgather(const tune_cluster_t *cl, double s)
{
    int n = members(cl);

    return (n - 1) * ring_step(cl, s / n);
}

/*
 * HierarchicalAllgather, two phases:
 *   inter, a ring over the H hosts among the members with the same local
 *     index, H-1 steps of one block each; the L rings share the link,
 *     which carries L c per step:       (H-1) (alpha_e + L c/beta_e)
 *   intra, a ring over the L members of each host passing bundles of the
 *     H blocks of one column, L-1 steps:  (L-1) (alpha_i + H c/beta_i)
 */
static double hier_allgather(const tune_cluster_t *cl, double s)
{
    int h = cl->hosts, l = cl->per_host;
    double c = s / members(cl);

    return (h - 1) * step(&cl->inter, l * c) +
           (l - 1) * step(&cl->intra, h * c);
}

/* RingReduceScatter: the ring allgather's mirror (the same N-1 steps of a
 * block, reducing on receipt):  (N-1) ring_step(c). */
static double ring_reduce_scatter(const tune_cluster_t *cl, double s)
{
    return ring_allgather(cl, s);
}

/* HierarchicalReduceScatter: the hierarchical allgather's mirror, intra
 * phase first:  (L-1) (alpha_i + H c/beta_i) + (H-1) (alpha_e + L c/beta_e).
 */
static double hier_reduce_scatter(const tune_cluster_t *cl, double s)
{
    return hier_allgather(cl, s);
}

/* ---- alltoall ---------------------------------------------------------- */

/*
 * PairwiseAlltoall, flat: N-1 steps, in step k every member sends its
 * block c to rank + k.  Across hosts the steps are bound by the host link,
 * which carries in all the blocks of its L members for the N-L members
 * elsewhere:
 *   (N-1) alpha_e + L (N-L) c/beta_e
 * and on one host every step is one pair's:  (N-1) (alpha_i + c/beta_i).
 */
static double pairwise_alltoall(const tune_cluster_t *cl, double s)
{
    int n = members(cl), l = cl->per_host;
    double c = s / n;

    if (cl->hosts == 1)
        return (n - 1) * step(&cl->intra, c);
    return (n - 1) * cl->inter.alpha_us +
           xfer((double)l * (n - l) * c, cl->inter.beta_gbps);
}

/*
 * HierarchicalAlltoall, three steps; member (h, g mod L) of each host h
 * handles its traffic to host g:
 *   intra gather: each member sends each of the L-1 others (as handlers)
 *     its blocks for the handlers' hosts, (N-L) c in all, and its blocks
 *     for the own host straight to their members, (L-1) c:
 *                                    (L-1) alpha_i + (N-1) c/beta_i
 *   inter: each handler sends one packed message of L x L blocks to each
 *     of its ceil((H-1)/L) hosts; the link carries L (N-L) c in all:
 *                                    ceil((H-1)/L) alpha_e + L (N-L) c/beta_e
 *   intra scatter, the gather's mirror for the blocks from other hosts:
 *                                    (L-1) alpha_i + (N-L) c/beta_i
 * With H = 1 only the gather is left (a flat alltoall inside the host, as
 * PairwiseAlltoall's); with L = 1 only the inter step.
 */
static double hier_alltoall(const tune_cluster_t *cl, double s)
{
    int h = cl->hosts, l = cl->per_host, n = members(cl);
    double c = s / n, t = 0;

    if (l > 1)
        t += (l - 1) * cl->intra.alpha_us +
             xfer((n - 1) * c, cl->intra.beta_gbps);
    if (h == 1)
        return t;
    t += ((h - 1 + l - 1) / l) * cl->inter.alpha_us +
         xfer((double)l * (n - l) * c, cl->inter.beta_gbps);
    if (l > 1)
        t += (l - 1) * cl->intra.alpha_us +
             xfer((n - l) * c, cl->intra.beta_gbps);
    return t;
}

/* ---- the table --------------------------------------------------------- */

const tune_model_row_t tune_model_rows[] = {
    {TUTTI_COLL_ALLREDUCE, "RingAllreduce", ring_allreduce},
    {TUTTI_COLL_ALLREDUCE, "RecursiveDoublingAllreduce", rd_allreduce},
    {TUTTI_COLL_ALLREDUCE, "HierarchicalAllreduce", hier_allreduce},
    {TUTTI_COLL_ALLREDUCE, "HierarchicalLeaderAllreduce", leader_allreduce},
    {TUTTI_COLL_ALLGATHER, "RingAllgather", ring_allgather},
    {TUTTI_COLL_ALLGATHER, "HierarchicalAllgather", hier_allgather},
    {TUTTI_COLL_REDUCE_SCATTER, "RingReduceScatter", ring_reduce_scatter},
    {TUTTI_COLL_REDUCE_SCATTER, "HierarchicalReduceScatter",
     hier_reduce_scatter},
    {TUTTI_COLL_ALLTOALL, "PairwiseAlltoall", pairwise_alltoall},
    {TUTTI_COLL_ALLTOALL, "HierarchicalAlltoall", hier_alltoall},
};
const int tune_model_nrows =
    (int)(sizeof(tune_model_rows) / sizeof(tune_model_rows[0]));

int tune_model_knows(tutti_collective_t coll)
{
    for (int r = 0; r < tune_model_nrows; r++)
        if (tune_model_rows[r].coll == coll)
            return 1;
    return 0;
}

int tune_model_best(const tune_cluster_t *cl, tutti_collective_t coll,
                    double bytes)
{
    int best = -1;
    double best_us = 0;

    for (int r = 0; r < tune_model_nrows; r++) {
        if (tune_model_rows[r].coll != coll)
            continue;
        double us = tune_model_rows[r].cost(cl, bytes);
        if (best < 0 || us < best_us) {
            best = r;
            best_us = us;
        }
    }
    return best;
}

void tune_model_print(FILE *out, const tune_cluster_t *cl,
                      const tutti_collective_t *colls, int ncolls,
                      uint64_t min, uint64_t max, double factor)
{
    fprintf(out, "# tutti-tune --model: %d hosts x %d members; intra "
            "%g us, %g GB/s; inter %g us, %g GB/s\n", cl->hosts,
            cl->per_host, cl->intra.alpha_us, cl->intra.beta_gbps,
            cl->inter.alpha_us, cl->inter.beta_gbps);
    fprintf(out, "# model COLL BYTES IMPL PREDICTED_US, then best COLL "
            "BYTES IMPL (bytes as tutti-perf counts them)\n");
    for (int j = 0; j < ncolls; j++) {
        const char *cn = tutti_collective_name(colls[j]);
        /* The sizes tutti-perf's sweep takes: times the factor, 1 after 0. */
        for (double sz = (double)min; sz <= (double)max;
             sz = sz > 0 ? sz * factor : 1) {
            unsigned long long b = (unsigned long long)sz;
            for (int r = 0; r < tune_model_nrows; r++)
                if (tune_model_rows[r].coll == colls[j])
                    fprintf(out, "model %s %llu %s %.2f\n", cn, b,
                            tune_model_rows[r].impl,
                            tune_model_rows[r].cost(cl, (double)b));
            int best = tune_model_best(cl, colls[j], (double)b);
            fprintf(out, "best %s %llu %s\n", cn, b,
                    tune_model_rows[best].impl);
        }
    }
}

/* A size as a rule writes it: with K, M or G where exact. */
static void rule_size(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "GMK";

    for (int u = 0; u < 3; u++) {
        uint64_t m = 1ull << (10 * (3 - u));
        if (v >= m && v % m == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(v / m),
                     units[u]);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* tutti-perf's size of a call whose selection size is @p rule_bytes:
 * allreduce counts the vector alike; the others one block, of N. */
static double perf_bytes(const tune_cluster_t *cl, tutti_collective_t coll,
                         uint64_t rule_bytes)
{
    if (coll == TUTTI_COLL_ALLREDUCE)
        return (double)rule_bytes;
    return (double)rule_bytes * members(cl);
}

void tune_model_rules(FILE *out, const tune_cluster_t *cl,
                      tutti_collective_t coll, const char *hosts,
                      uint64_t lo, uint64_t hi)
{
    const char *cn = tutti_collective_name(coll);
    uint64_t from = 0, last = 0;
    int run = -1;

    for (uint64_t sz = lo; sz <= hi && sz != 0; sz *= 2) {
        int best = tune_model_best(cl, coll, perf_bytes(cl, coll, sz));
        if (best < 0)
            return;
        if (run >= 0 && best != run) {
            char a[32], b[32];
            rule_size(from, a, sizeof(a));
            rule_size(last, b, sizeof(b));
            fprintf(out, "  - { collective: %s, hosts: \"%s\", size: "
                    "\"%s-%s\", algorithm: %s }\n", cn, hosts, a, b,
                    tune_model_rows[run].impl);
            from = last + 1;
        }
        run = best;
        last = sz;
    }
    if (run >= 0) {
        char a[32];
        rule_size(from, a, sizeof(a));
        fprintf(out, "  - { collective: %s, hosts: \"%s\", size: \"%s-\", "
                "algorithm: %s }\n", cn, hosts, a, tune_model_rows[run].impl);
    }
}

/* The shapes and sizes of --extrapolate. */
#define EXTRA_PER_HOST 8
static const int extra_members[] = {16, 64, 256, 1024};
#define EXTRA_SHAPES (int)(sizeof(extra_members) / sizeof(extra_members[0]))
static const uint64_t extra_sizes[] = {8, 64 << 10, 1 << 20, 16 << 20,
                                       64 << 20};
#define EXTRA_SIZES (int)(sizeof(extra_sizes) / sizeof(extra_sizes[0]))

/* One collective's Markdown table: a row per shape and size. */
static void extrapolate_table(FILE *out, tune_cluster_t *cl,
                              tutti_collective_t coll)
{
    const char *cn = tutti_collective_name(coll);

    fprintf(out, "\n## %s\n\n| N | hosts | bytes |", cn);
    for (int r = 0; r < tune_model_nrows; r++)
        if (tune_model_rows[r].coll == coll)
            fprintf(out, " %s us |", tune_model_rows[r].impl);
    fprintf(out, " best |\n|---:|---:|---:|");
    for (int r = 0; r < tune_model_nrows; r++)
        if (tune_model_rows[r].coll == coll)
            fprintf(out, "---:|");
    fprintf(out, "---|\n");
    for (int k = 0; k < EXTRA_SHAPES; k++) {
        cl->hosts = extra_members[k] / EXTRA_PER_HOST;
        for (int i = 0; i < EXTRA_SIZES; i++) {
            char sz[32];
            double b = (double)extra_sizes[i];
            rule_size(extra_sizes[i], sz, sizeof(sz));
            fprintf(out, "| %d | %d | %s |", extra_members[k], cl->hosts,
                    sz);
            for (int r = 0; r < tune_model_nrows; r++)
                if (tune_model_rows[r].coll == coll)
                    fprintf(out, " %.2f |", tune_model_rows[r].cost(cl, b));
            fprintf(out, " %s |\n",
                    tune_model_rows[tune_model_best(cl, coll, b)].impl);
        }
    }
}

void tune_model_extrapolate(FILE *out, const tune_link_t *intra,
                            const tune_link_t *inter,
                            const tutti_collective_t *colls, int ncolls)
{
    tune_cluster_t cl = {1, EXTRA_PER_HOST, *intra, *inter};

    fprintf(out, "# tutti-tune --extrapolate\n\nModel: %d members per "
            "host; intra %g us, %g GB/s; inter %g us, %g GB/s.  Times in "
            "us; bytes as tutti-perf counts them (allreduce the vector, "
            "the others the whole gathered buffer).\n", EXTRA_PER_HOST,
            intra->alpha_us, intra->beta_gbps, inter->alpha_us,
            inter->beta_gbps);
    for (int j = 0; j < ncolls; j++)
        extrapolate_table(out, &cl, colls[j]);
    fprintf(out, "\n## Selection rules\n\nThe fastest implementation per "
            "size, scanned by 2 from 8 B to 1 GiB; sizes as selection "
            "counts them (allreduce the vector, the others one block).  "
            "The rules of N members hold from its %d-member hosts up to "
            "the next shape's; they say nothing of one host, so they go "
            "before a configuration's own rules.\n\n```yaml\n"
            "selection:\n", EXTRA_PER_HOST);
    for (int j = 0; j < ncolls; j++)
        for (int k = 0; k < EXTRA_SHAPES; k++) {
            char hosts[32];
            cl.hosts = extra_members[k] / EXTRA_PER_HOST;
            if (k + 1 < EXTRA_SHAPES)
                snprintf(hosts, sizeof(hosts), "%d-%d", cl.hosts,
                         extra_members[k + 1] / EXTRA_PER_HOST - 1);
            else
                snprintf(hosts, sizeof(hosts), "%d-", cl.hosts);
            fprintf(out, "  # %s, %d members (%d hosts x %d)\n",
                    tutti_collective_name(colls[j]), extra_members[k],
                    cl.hosts, EXTRA_PER_HOST);
            tune_model_rules(out, &cl, colls[j], hosts, 8, 1ull << 30);
        }
    fprintf(out, "```\n");
}
