/*
 * The correctness matrix every member of a group runs: every implementation
 * the registry lists x every collective it runs x every dtype x every op
 * (with power-of-two pre/post scales on float reductions) x counts 0, 1,
 * n-1, n+1, 4099, 1 Mi+3 x in place and out of place x every root, each
 * result compared element by element with tools/pattern.c's exact
 * reference, with guard bytes past every output and the input of an
 * out-of-place call checked untouched.  Then the same through selection
 * (no algorithm named), and per-rank counts (allgather, reduce_scatter,
 * alltoall: uneven, zero, the sizes-only query, a buffer too small).
 *
 * Sampling: a case runs if it is on the cover diagonal (each
 * implementation x collective keeps every dtype, every op, every count,
 * both placements and, for counts up to n+1, every root) or if a fixed hash
 * of its coordinates picks it (small counts often, 4099 seldom, 1 Mi+3
 * only on the diagonal).  TUTTI_CHECK_FULL=1 runs every case.
 */
#ifndef TUTTI_CONFORMANCE_MATRIX_H
#define TUTTI_CONFORMANCE_MATRIX_H

#include <stdint.h>
#include <stdio.h>

#include <tutti/tutti.h>

typedef struct {
    int checks;      /* collectives run and checked */
    int failures;    /* calls that failed or gave a wrong element */
    int sampled_out; /* cases of the full matrix not run */
    int rank;        /* this member's rank */
} tutti_check_result_t;

/** Where and how a member runs the matrix. */
typedef struct {
    tutti_context_t *ctx;
    uint64_t group_key;   /* the matrix uses keys group_key * 4096 + i */
    int group_size;
    int device_index;
    double timeout;       /* join and execution timeout, seconds */
    int full;             /* every case, nothing sampled out */
    int selection_only;   /* only the pass through selection */
    uint32_t selection_colls; /* collectives of that pass (TUTTI_COLL_BIT);
                                 0: all */
    const char *only_impl; /* this implementation alone, every collective it
                              declares (no selection pass, no complaint of
                              collectives nobody implements); NULL: all */
    FILE *log;            /* every failure, one line each */
    int memory;           /* TUTTI_CHECK_MEMORY_*: where the buffers of
                             the calls come from */
} tutti_check_env_t;

/* tutti_check_env_t.memory */
#define TUTTI_CHECK_MEMORY_HEAP 0
#define TUTTI_CHECK_MEMORY_REGISTERED 1 /* tutti_mem_alloc */
#define TUTTI_CHECK_MEMORY_MIXED 2      /* registered on even ranks */

/** One call, as every member makes it. */
typedef struct {
    tutti_collective_t coll;
    tutti_dtype_t dtype;
    tutti_op_t op;
    size_t count;
    int root;
    int in_place;           /* 0 out of place, 1 in place, 2 mixed: odd
                               ranks in place, even ranks not */
    double pre_scale, post_scale;
    const int *perm;        /* permute */
    const char *algorithm;  /* NULL: selection */
} tutti_check_case_t;

/** Runs cases on one group, with buffers it keeps between them. */
typedef struct {
    tutti_group_t *g;
    FILE *log;
    unsigned char *in, *out, *copy;
    size_t cap;
    uint64_t key;
    tutti_check_result_t res;
    int registered;         /* in and out are tutti_mem_alloc's */
} tutti_checker_t;

/** 1 if the environment asks for the whole matrix (TUTTI_CHECK_FULL=1). */
int tutti_check_full_from_env(void);

/** TUTTI_CHECK_MEMORY (heap, registered, mixed) as a
 *  TUTTI_CHECK_MEMORY_* value; -1 for another value (heap if unset). */
int tutti_check_memory_parse(const char *text);

/** Fill @p env with defaults for @p ctx (timeout 60 s, full and memory
 *  from the environment). */
void tutti_check_env_init(tutti_check_env_t *env, tutti_context_t *ctx);

/** Runs the whole matrix as one member; reports each failure on the log. */
tutti_check_result_t tutti_check_matrix(const tutti_check_env_t *env);

void tutti_checker_init(tutti_checker_t *c, tutti_group_t *g, FILE *log,
                        uint64_t first_key);
void tutti_checker_fini(tutti_checker_t *c);
/** Runs and checks one case; 1 if it passed (counted in c->res). */
int tutti_check_case(tutti_checker_t *c, const tutti_check_case_t *k);
/** Per-rank counts of @p coll (allgather, reduce_scatter, alltoall) through
 *  @p algorithm (NULL: selection): uneven and zero counts, in place where
 *  allowed, the sizes-only query, a rank with too small a buffer. */
void tutti_check_per_rank(tutti_checker_t *c, tutti_collective_t coll,
                          const char *algorithm);

#endif
