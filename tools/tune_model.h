/*
 * tutti-tune --model and --extrapolate (tune_model.c): a cost model of each
 * implementation of allreduce, allgather, reduce_scatter and alltoall on a
 * cluster of hosts, from two link classes (shm inside a host, one network
 * link per host between hosts), each a latency and a bandwidth.  The
 * formulas are a table, one row per implementation.
 */
#ifndef TUTTI_TOOLS_TUNE_MODEL_H
#define TUTTI_TOOLS_TUNE_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include <tutti/tutti.h>

/* The defaults of --intra: measured on the development host (2 processes,
 * `tutti-run -n 2 tutti-perf -c allreduce -b 8 -e 64M -f 8`): 0.29 us at
 * 8 B (one exchange), 3522 us at 16 MiB (a ring of two steps of 8 MiB:
 * 16 MiB / 3521 us = 4.8 GB/s), rounded. */
#define TUNE_MODEL_INTRA_US 0.3
#define TUNE_MODEL_INTRA_GBPS 5.0
/* The defaults of --inter: 10 Gbit/s Ethernet. */
#define TUNE_MODEL_INTER_US 25.0
#define TUNE_MODEL_INTER_GBPS 1.25

/* One link class: alpha, the latency of one message step, and beta, the
 * bandwidth of a host link per direction (inter) or of a member pair
 * (intra), in GB/s (10^9 bytes per second). */
typedef struct {
    double alpha_us;
    double beta_gbps;
} tune_link_t;

/* @p hosts hosts of @p per_host members each, ranks host-contiguous. */
typedef struct {
    int hosts;
    int per_host;
    tune_link_t intra, inter;
} tune_cluster_t;

/* Predicted microseconds of one call on @p cl at @p bytes, counted as
 * tutti-perf does (allreduce: the vector; allgather, reduce_scatter and
 * alltoall: n x count x type, the whole gathered buffer). */
typedef double (*tune_model_cost_fn)(const tune_cluster_t *cl, double bytes);

/* One row of the table: an implementation of a collective and its cost. */
typedef struct {
    tutti_collective_t coll;
    const char *impl;
    tune_model_cost_fn cost;
} tune_model_row_t;

/* The table, collectives in turn, implementations in a fixed order. */
extern const tune_model_row_t tune_model_rows[];
extern const int tune_model_nrows;

/* 1 if the table has a row for @p coll. */
int tune_model_knows(tutti_collective_t coll);

/* The row of the fastest implementation of @p coll at @p bytes (the first
 * in table order on a tie), or -1 if the table has none. */
int tune_model_best(const tune_cluster_t *cl, tutti_collective_t coll,
                    double bytes);

/* --model: for each collective and each size from @p min to @p max (times
 * @p factor, as tutti-perf steps), a line "model COLL BYTES IMPL US" per
 * row, then "best COLL BYTES IMPL". */
void tune_model_print(FILE *out, const tune_cluster_t *cl,
                      const tutti_collective_t *colls, int ncolls,
                      uint64_t min, uint64_t max, double factor);

/* Selection rules for @p coll on @p cl: the fastest implementation over
 * sizes from @p lo to @p hi (times 2), sizes counted as selection does
 * (allreduce: the vector; the others: one block), one line
 * "  - { collective: C, hosts: "HOSTS", size: "A-B", algorithm: IMPL }"
 * per run of sizes with one winner; between scanned sizes s1 < s2 with
 * different winners the first range ends at s1, the first from 0, the
 * last open. */
void tune_model_rules(FILE *out, const tune_cluster_t *cl,
                      tutti_collective_t coll, const char *hosts,
                      uint64_t lo, uint64_t hi);

/* --extrapolate: per collective a Markdown table of every implementation's
 * time at N = 16, 64, 256, 1024 members, 8 per host, for 8 B to 64 MiB,
 * then the rules of each shape (tune_model_rules, 8 B to 1 GiB) in a YAML
 * block. */
void tune_model_extrapolate(FILE *out, const tune_link_t *intra,
                            const tune_link_t *inter,
                            const tutti_collective_t *colls, int ncolls);

/* tutti-tune --links (tune_links.c), run by every task of a job: rank 0
 * times one peer on its host and one on another with messages of 8 bytes
 * and of @p bytes, and prints both classes as --model's options.  Exit
 * status 0, or 1 after saying why. */
int tune_links_main(size_t bytes);

#endif
