/*
 * tutti-tune's measurements and what it makes of them (tune_result.c):
 * per collective the candidates' times per size, their medians, the winner
 * per size, the summary on stdout and the YAML selection file.
 */
#ifndef TUTTI_TOOLS_TUNE_H
#define TUTTI_TOOLS_TUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tutti/tutti.h>

#define TUNE_MAX_CANDS 32
#define TUNE_MAX_SIZES 128
#define TUNE_MAX_ROUNDS 100

/* One implementation tried for a collective. */
typedef struct {
    char name[64];
    int failed;           /* its run failed: left out of every size */
} tune_cand_t;

/* One collective's sweep: sizes as the selection rules count them (count x
 * type: allgather and gather one rank's part, reduce_scatter and alltoall
 * one block), ascending. */
typedef struct {
    tutti_collective_t coll;
    tune_cand_t cand[TUNE_MAX_CANDS];
    int ncand;
    uint64_t size[TUNE_MAX_SIZES];
    int nsizes;
    int rounds;
    double *samples;      /* [cand][size][round], time_us */
    int nsamp[TUNE_MAX_CANDS][TUNE_MAX_SIZES];
    double median[TUNE_MAX_CANDS][TUNE_MAX_SIZES]; /* < 0: not measured */
    int winner[TUNE_MAX_SIZES];                    /* a cand, or -1 */
} tune_coll_t;

/* What the file's header says of the run, and where it goes. */
typedef struct {
    int nprocs;
    uint64_t min_bytes, max_bytes;
    double factor;
    int iters, rounds;
    const char *out;      /* the file */
} tune_sweep_t;

/* Records @p time_us of candidate @p cand at @p bytes (the rules' size);
 * -1 (after saying why) when the sweep holds more sizes than it can. */
int tune_add_sample(tune_coll_t *c, int cand, uint64_t bytes, double time_us);

/* Forgets every sample of candidate @p cand (its run failed). */
void tune_drop(tune_coll_t *c, int cand);

/* Medians per candidate and size, and the fastest per size (the first in
 * candidate order on a tie). */
void tune_decide(tune_coll_t *c);

/* The summary: one line per collective and size. */
void tune_print_summary(const tune_sweep_t *s, const tune_coll_t *colls,
                        int ncolls, FILE *out);

/* Writes the selection file: to s->out ".tmp", loads it back and checks
 * that it selects every measured winner, then renames it to s->out.  0, or
 * -1 after saying why (nothing left at s->out or its .tmp). */
int tune_write(const tune_sweep_t *s, const tune_coll_t *colls, int ncolls);

#endif
