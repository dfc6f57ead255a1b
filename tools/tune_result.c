/*
 * tutti-tune's results: medians of the rounds, the fastest candidate per
 * size, adjacent sizes with one winner merged into one size range, the
 * summary on stdout and the YAML selection file, checked by loading it
 * back through the library before it takes its name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

static double *sample_at(const tune_coll_t *c, int cand, int size)
{
    return c->samples +
           ((size_t)cand * TUNE_MAX_SIZES + (size_t)size) * (size_t)c->rounds;
}

int tune_add_sample(tune_coll_t *c, int cand, uint64_t bytes, double time_us)
{
    int i = 0;
    while (i < c->nsizes && c->size[i] < bytes)
        i++;
    if (i == c->nsizes || c->size[i] != bytes) {
        if (c->nsizes == TUNE_MAX_SIZES) {
            fprintf(stderr, "tutti-tune: %s: more than %d sizes in the "
                    "sweep: expected at most %d\n",
                    tutti_collective_name(c->coll), TUNE_MAX_SIZES,
                    TUNE_MAX_SIZES);
            return -1;
        }
        /* A new size between known ones (rounding to whole blocks can
         * make sizes of one sweep differ): every candidate's samples move
         * up with it. */
        for (int k = 0; k < c->ncand; k++) {
            memmove(sample_at(c, k, i + 1), sample_at(c, k, i),
                    (size_t)(c->nsizes - i) * (size_t)c->rounds *
                        sizeof(double));
            memmove(&c->nsamp[k][i + 1], &c->nsamp[k][i],
                    (size_t)(c->nsizes - i) * sizeof(int));
            c->nsamp[k][i] = 0;
        }
        memmove(&c->size[i + 1], &c->size[i],
                (size_t)(c->nsizes - i) * sizeof(c->size[0]));
        c->size[i] = bytes;
        c->nsizes++;
    }
    /* A size seen twice in one run (sizes under one block round to the
     * same count) keeps its first time for the round. */
    if (c->nsamp[cand][i] < c->rounds)
        sample_at(c, cand, i)[c->nsamp[cand][i]++] = time_us;
    return 0;
}

void tune_drop(tune_coll_t *c, int cand)
{
    c->cand[cand].failed = 1;
    for (int i = 0; i < c->nsizes; i++)
        c->nsamp[cand][i] = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void tune_decide(tune_coll_t *c)
{
    double v[TUNE_MAX_ROUNDS];
    for (int i = 0; i < c->nsizes; i++) {
        c->winner[i] = -1;
        for (int k = 0; k < c->ncand; k++) {
            int n = c->nsamp[k][i];
            c->median[k][i] = -1.0;
            if (n == 0)
                continue;
            memcpy(v, sample_at(c, k, i), (size_t)n * sizeof(double));
            qsort(v, (size_t)n, sizeof(double), cmp_double);
            double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
            c->median[k][i] = m;
            if (c->winner[i] < 0 || m < c->median[c->winner[i]][i])
                c->winner[i] = k;
        }
    }
}

void tune_print_summary(const tune_sweep_t *s, const tune_coll_t *colls,
                        int ncolls, FILE *out)
{
    fprintf(out, "# tutti-tune: %d members over %d tasks, float32: per "
            "collective and size (bytes as the selection rules count them)\n"
            "# the fastest, then each candidate's median time_us of %d "
            "round%s\n", s->nprocs, s->nprocs, s->rounds,
            s->rounds == 1 ? "" : "s");
    fprintf(out, "# collective bytes winner candidate=median_us...\n");
    for (int j = 0; j < ncolls; j++) {
        const tune_coll_t *c = &colls[j];
        for (int i = 0; i < c->nsizes; i++) {
            if (c->winner[i] < 0)
                continue;
            fprintf(out, "%s %llu %s", tutti_collective_name(c->coll),
                    (unsigned long long)c->size[i], c->cand[c->winner[i]].name);
            for (int k = 0; k < c->ncand; k++)
                if (c->median[k][i] >= 0)
                    fprintf(out, " %s=%.2f", c->cand[k].name, c->median[k][i]);
            fprintf(out, "\n");
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
            snprintf(buf, len, "%llu%c", (unsigned long long)(v / m), units[u]);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* A size for people: "8 B", "4 KiB", "4097 B". */
static void human_size(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"GiB", "MiB", "KiB"};
    for (int u = 0; u < 3; u++) {
        uint64_t m = 1ull << (10 * (3 - u));
        if (v >= m && v % m == 0) {
            snprintf(buf, len, "%llu %s", (unsigned long long)(v / m),
                     units[u]);
            return;
        }
    }
    snprintf(buf, len, "%llu B", (unsigned long long)v);
}

/* "# 8 B: A 0.61 us, B 0.92 us": every candidate measured at size @p i,
 * fastest first. */
static void write_medians(FILE *f, const tune_coll_t *c, int i)
{
    int order[TUNE_MAX_CANDS], n = 0;
    char hs[32];
    for (int k = 0; k < c->ncand; k++) {
        if (c->median[k][i] < 0)
            continue;
        int at = n++;
        while (at > 0 && c->median[order[at - 1]][i] > c->median[k][i]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = k;
    }
    human_size(c->size[i], hs, sizeof(hs));
    fprintf(f, "  # %s:", hs);
    for (int m = 0; m < n; m++)
        fprintf(f, "%s %s %.2f us", m ? "," : "", c->cand[order[m]].name,
                c->median[order[m]][i]);
    fprintf(f, "\n");
}

/* One collective's rules: a range per run of sizes with one winner; the
 * first from 0, each next from the size after the previous one's last
 * measured size, the last open. */
static void write_rules(FILE *f, const tune_sweep_t *s, const tune_coll_t *c)
{
    const char *cn = tutti_collective_name(c->coll), *sep = "";
    int first = -1, last = -1;
    uint64_t lo = 0;

    fprintf(f, "  # %s, candidates: ", cn);
    for (int k = 0; k < c->ncand; k++)
        if (!c->cand[k].failed) {
            fprintf(f, "%s%s", *sep ? ", " : "", c->cand[k].name);
            sep = ",";
        }
    sep = "";
    for (int k = 0; k < c->ncand; k++)
        if (c->cand[k].failed) {
            fprintf(f, "%s%s", *sep ? ", " : "; left out (run failed): ",
                    c->cand[k].name);
            sep = ",";
        }
    fprintf(f, "\n");
    for (int i = 0; i <= c->nsizes; i++) {
        if (i < c->nsizes && c->winner[i] < 0)
            continue;
        if (first >= 0 &&
            (i == c->nsizes || c->winner[i] != c->winner[first])) {
            char a[32], b[32] = "";
            int open = i == c->nsizes;
            for (int m = first; m <= last; m++)
                if (c->winner[m] >= 0)
                    write_medians(f, c, m);
            rule_size(lo, a, sizeof(a));
            if (!open)
                rule_size(c->size[last], b, sizeof(b));
            fprintf(f, "  - { collective: %s, group_size: %d, num_tasks: %d, "
                    "size: \"%s-%s\", algorithm: %s }\n", cn, s->nprocs,
                    s->nprocs, a, b, c->cand[c->winner[first]].name);
            lo = c->size[last] + 1;
            first = -1;
        }
        if (i < c->nsizes) {
            if (first < 0)
                first = i;
            last = i;
        }
    }
}

static void write_header(FILE *f, const tune_sweep_t *s)
{
    char host[256] = "unknown", when[64] = "unknown", lo[32], hi[32];
    time_t now = time(NULL);
    struct tm tm;

    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    if (localtime_r(&now, &tm) != NULL)
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", &tm);
    rule_size(s->min_bytes, lo, sizeof(lo));
    rule_size(s->max_bytes, hi, sizeof(hi));
    fprintf(f,
        "# Tutti selection rules measured by tutti-tune.\n"
        "# When: %s.  Host: %s.\n"
        "# Shape: %d members over %d tasks (tutti-run -n %d), float32.\n"
        "# Sweep: tutti-perf -b %s -e %s -f %g -n %d for every candidate, %d "
        "round%s\n"
        "# (the candidates alternating within each round); the figures are "
        "medians\n"
        "# of the rounds' time_us (slowest rank, mean per call).\n"
        "# Sizes as the rules count them: count x type, count per rank as "
        "the\n"
        "# collective has it (allgather, gather: one rank's part; "
        "reduce_scatter,\n"
        "# alltoall: one block); tutti-perf's size column is n times that "
        "for these.\n"
        "# The rules match groups of %d members over %d tasks only: put them "
        "before\n"
        "# the rules of your tutti.yaml's selection, or load this file alone\n"
        "# (TUTTI_CONFIG=FILE) for jobs of that shape that call only these\n"
        "# collectives.\n",
        when, host, s->nprocs, s->nprocs, s->nprocs, lo, hi, s->factor,
        s->iters, s->rounds, s->rounds == 1 ? "" : "s", s->nprocs, s->nprocs);
}

/* Loads @p path through the library and asks, for every measured size,
 * which implementation it selects: 0 if the winner every time. */
static int check_file(const char *path, const tune_sweep_t *s,
                      const tune_coll_t *colls, int ncolls)
{
    static char text[65536];
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    int bad = 0;

    /* TUTTI_ALGO's rules would come before the file's: the check is of
     * the file alone. */
    unsetenv("TUTTI_ALGO");
    tutti_context_params_init(&cp);
    cp.config_path = path;
    cp.task = 0;
    cp.num_tasks = 1;
    tutti_status_t st = tutti_context_create(&cp, &ctx);
    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-tune: %s does not load: %s: %s\n", path,
                tutti_strerror(st), tutti_last_error());
        return -1;
    }
    for (int j = 0; j < ncolls && !bad; j++) {
        const tune_coll_t *c = &colls[j];
        for (int i = 0; i < c->nsizes && !bad; i++) {
            tutti_select_query_t q = {c->coll, TUTTI_DEVICE_CPU,
                                      TUTTI_FLOAT32, (size_t)c->size[i],
                                      s->nprocs, s->nprocs, 0, 0};
            const char *impl = NULL;
            if (c->winner[i] < 0)
                continue;
            st = tutti_info_explain(ctx, &q, text, sizeof(text), &impl);
            const char *want = c->cand[c->winner[i]].name;
            if (st != TUTTI_OK || impl == NULL || strcmp(impl, want) != 0) {
                fprintf(stderr, "tutti-tune: %s selects %s for %s of %llu "
                        "bytes, expected %s (the fastest); its choice:\n%s",
                        path, st == TUTTI_OK && impl ? impl : "nothing",
                        tutti_collective_name(c->coll),
                        (unsigned long long)c->size[i], want, text);
                bad = 1;
            }
        }
    }
    tutti_context_destroy(ctx);
    return bad ? -1 : 0;
}

int tune_write(const tune_sweep_t *s, const tune_coll_t *colls, int ncolls)
{
    size_t len = strlen(s->out) + 5;
    char *tmp = malloc(len);
    FILE *f;
    int err;

    if (tmp == NULL) {
        fprintf(stderr, "tutti-tune: out of memory\n");
        return -1;
    }
    snprintf(tmp, len, "%s.tmp", s->out);
    f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "tutti-tune: cannot write %s: %s\n", tmp,
                strerror(errno));
        free(tmp);
        return -1;
    }
    write_header(f, s);
    fprintf(f, "selection:\n");
    for (int j = 0; j < ncolls; j++)
        write_rules(f, s, &colls[j]);
    err = ferror(f);
    if (fclose(f) != 0 || err) {
        fprintf(stderr, "tutti-tune: cannot write %s: %s\n", tmp,
                strerror(errno));
        goto err_unlink;
    }
    if (check_file(tmp, s, colls, ncolls) != 0)
        goto err_unlink;
    if (rename(tmp, s->out) != 0) {
        fprintf(stderr, "tutti-tune: cannot rename %s to %s: %s\n", tmp,
                s->out, strerror(errno));
        goto err_unlink;
    }
    free(tmp);
    return 0;

err_unlink:
    unlink(tmp);
    free(tmp);
    return -1;
}
