/*
 * The differential client (tests/mp/diffcheck.c): a seeded pseudo-random
 * sequence of calls through the public API, every output element checked
 * against an independent sequential reference.
 *
 * Every member derives call k from (seed, k) alone (dc_plan_call), so all
 * members agree on every decision, each member can recompute what every
 * other one does (its in-place choice, its counts, its buffer), and one call
 * can be replayed on its own (--only k).  Inputs are counter-based hashes of
 * (seed, call, rank, element), so the reference needs no exchange: it
 * regenerates every member's input (diffcheck_ref.c).
 */
#ifndef TUTTI_TEST_DIFFCHECK_H
#define TUTTI_TEST_DIFFCHECK_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/tutti.h>

#define DC_MAX_N 32      /* largest group the client runs */
#define DC_MAX_IMPLS 64

/* ---- hashing and the per-call stream --------------------------------- */

/** splitmix64's finalizer of @p h combined with @p v. */
uint64_t dc_mix(uint64_t h, uint64_t v);
/** dc_mix over three values: a counter-based hash. */
uint64_t dc_hash3(uint64_t seed, uint64_t a, uint64_t b);

/** xoshiro256** state. */
typedef struct {
    uint64_t s[4];
} dc_rng_t;

void dc_rng_seed(dc_rng_t *r, uint64_t seed);
uint64_t dc_rng_next(dc_rng_t *r);
/** Uniform in 0 .. @p n - 1 (@p n > 0). */
uint64_t dc_rng_below(dc_rng_t *r, uint64_t n);

/* ---- implementations ---------------------------------------------------- */

typedef struct {
    char name[64];
    uint32_t colls;    /* TUTTI_COLL_BIT mask */
    uint32_t per_rank; /* collectives also run with per-rank counts */
} dc_impl_t;

/* ---- one call ----------------------------------------------------------- */

typedef enum {
    DC_API_EXEC,   /* tutti_execute + tutti_request_wait */
    DC_API_HELPER, /* the blocking helper of the collective */
    DC_API_BARRIER /* tutti_barrier */
} dc_api_t;

/* What a member of a per-rank allgather or alltoall passes as recvbuf. */
enum {
    DC_CAP_EXACT, /* capacity = what it receives */
    DC_CAP_ROOMY, /* more */
    DC_CAP_SHORT, /* less: every member but the sizes-only ones fails */
    DC_CAP_QUERY  /* recvbuf NULL, capacity 0: sizes only */
};

/** What the run is allowed to do (options), the same on every member. */
typedef struct {
    uint64_t seed;
    int n;                   /* group size */
    const dc_impl_t *impls;
    int nimpls;
    size_t max_count;        /* elements per rank at most */
    size_t max_bytes;        /* bytes of one buffer at most */
    int mixed;               /* members may differ on in place */
    int phase;               /* calls per phase (barrier, fresh group) */
} dc_plan_env_t;

typedef struct {
    long index;              /* this call */
    long origin;             /* the call whose instance it executes */
    uint64_t key;            /* instance key (exec) */
    uint64_t data_seed;      /* this execution's inputs and buffers */
    dc_api_t api;
    tutti_collective_t coll;
    int per_rank;            /* count = TUTTI_COUNT_PER_RANK */
    tutti_dtype_t dtype;
    tutti_op_t op;
    double pre, post;        /* 0: none */
    size_t count;            /* per rank (fixed counts) */
    int root;
    int impl;                /* index into the plan's impls, -1: selection */
    int perm[DC_MAX_N];
    /* Per member (index: rank). */
    unsigned char in_place[DC_MAX_N];
    unsigned char null_buf[DC_MAX_N]; /* unused buffer passed as NULL */
    unsigned char cap_kind[DC_MAX_N]; /* per-rank allgather, alltoall */
    size_t cap[DC_MAX_N];
    /* Per-rank counts: allgather: counts[r] = rank r's contribution;
     * reduce_scatter: counts[r] = block r; alltoall: counts[s * n + d] =
     * elements rank s sends rank d. */
    size_t counts[DC_MAX_N * DC_MAX_N];
    int n;
} dc_call_t;

/** Plans call @p k (a pure function of the environment and @p k). */
void dc_plan_call(const dc_plan_env_t *env, long k, dc_call_t *out);
/** One line naming the call, its parameters and every member's choices. */
void dc_describe(const dc_plan_env_t *env, const dc_call_t *c, char *buf,
                 size_t len);

/* ---- a member's view of one call ----------------------------------------- */

typedef enum {
    DC_OUT_DATA,      /* completes OK with its output */
    DC_OUT_QUERY,     /* completes OK, sizes only */
    DC_OUT_TOO_SMALL  /* fails ERR_TOO_SMALL, nothing moves */
} dc_outcome_t;

typedef struct {
    int in_place;
    size_t in_n;      /* elements read as input */
    size_t out_n;     /* elements of output (0: none) */
    size_t in_off;    /* in place: where the input sits in the buffer */
    size_t out_off;   /* in place: where the output lands */
    size_t a_len;     /* elements of buffer A: send, or the one buffer */
    size_t b_len;     /* elements of buffer B: recv (out of place) */
    int a_null, b_null;
    int a_input;      /* A holds the input (else poison only) */
    int a_output;     /* in place and A receives output */
    size_t need;      /* per-rank gathers: elements to receive */
    size_t cap;       /* per-rank gathers: recv_capacity */
    int query;
    size_t recv_total;                /* expected from tutti_request_info */
    size_t recv_counts[DC_MAX_N];     /* per-rank: expected, per rank */
    int check_total;                  /* recv_total is defined for it */
    dc_outcome_t outcome;
    int short_ranks[DC_MAX_N];        /* TOO_SMALL: ranks the detail names */
    int nshort;
} dc_layout_t;

/** Member @p r's buffers, what it gets and what the library must say. */
void dc_layout(const dc_call_t *c, int r, dc_layout_t *out);

/* ---- reference ----------------------------------------------------------- */

/** Fills member @p r's input (in_n elements) into @p buf. */
void dc_fill_input(const dc_call_t *c, int r, void *buf, size_t in_n);
/** Fills what member @p r must hold in its output (out_n elements). */
void dc_fill_expected(const dc_call_t *c, int r, void *buf, size_t out_n);
/** 1 if results compare by value (floating reductions), else by bits. */
int dc_by_value(const dc_call_t *c);
/** Number of elements of @p got that differ from @p want; the first goes
 *  to @p first_out. */
size_t dc_compare(tutti_dtype_t dtype, int by_value, const void *got,
                  const void *want, size_t n, size_t *first_out);
/** "0x3c00 (1)": element @p i of @p buf, bits and value. */
void dc_format(tutti_dtype_t dtype, const void *buf, size_t i, char *out,
               size_t len);

/** Fills @p len bytes with the poison stream of @p seed. */
void dc_poison(void *buf, size_t len, uint64_t seed);
/** Bytes [from, to) of a buffer poisoned with @p seed: the offset of the
 *  first that changed, or SIZE_MAX. */
size_t dc_poison_check(const void *buf, size_t from, size_t to,
                       uint64_t seed);

/* float16 and bfloat16, round to nearest even (independent of the core). */
uint16_t dc_float_to_half(float f);
float dc_half_to_float(uint16_t h);
uint16_t dc_float_to_bf16(float f);
float dc_bf16_to_float(uint16_t h);

#endif
