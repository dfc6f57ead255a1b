/*
 * The hierarchical module's implementations (internal to alg_hier.so) and
 * what they share: the group's hosts as a grid (hier_topo.c) and a
 * schedule of steps built once per instance and replayed per execution
 * (hier_sched.c).  Each file <collective>_<algorithm>.c builds one
 * schedule and names its ops table tutti_alg_hier_<collective>_<algorithm>
 * _ops; hier_module.c lists them in the descriptor.
 *
 * The grid: H hosts of L members each (every host the same number; a
 * group whose hosts hold different numbers is declined, with the counts,
 * and selection goes on to the next rule).  Hosts are numbered in the order
 * of their lowest rank, members of a host by rank: member (h, l) is the
 * l-th lowest rank of host h.  A group on one host is a grid of one row
 * (H = 1), one member per host one column (L = 1): the schedules then
 * keep only the phases inside a host, or only those between hosts.
 */
#ifndef TUTTI_ALG_HIER_H
#define TUTTI_ALG_HIER_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/module.h>

extern const tutti_alg_ops_t tutti_alg_hier_allreduce_hierarchical_ops;
extern const tutti_alg_ops_t tutti_alg_hier_allreduce_leader_ops;
extern const tutti_alg_ops_t tutti_alg_hier_allgather_hierarchical_ops;
extern const tutti_alg_ops_t tutti_alg_hier_reduce_scatter_hierarchical_ops;
extern const tutti_alg_ops_t tutti_alg_hier_alltoall_hierarchical_ops;

/* ---- the grid (hier_topo.c) ---------------------------------------- */

typedef struct {
    int hosts, per_host;  /* H and L */
    int host, local;      /* this member's place (h, l) */
    int contiguous;       /* rank_of(h, l) == rank_of(h, 0) + l for all */
    int up, down;         /* ring of the hosts at this local index:
                             (h+1, l) and (h-1, l), modulo H */
    int right, left;      /* ring inside the host: (h, l+1), (h, l-1) */
    int *rank;            /* H x L: rank of member (h, l) */
} tutti_alg_hier_topo_t;

/** The grid of @p inst's group (localities of init_context; without them
 *  one host).  An error (hosts of different sizes, no memory) is recorded
 *  with @p name. */
tutti_status_t tutti_alg_hier_topo_init(tutti_alg_hier_topo_t *t,
                                        const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        const char *name);
void tutti_alg_hier_topo_fini(tutti_alg_hier_topo_t *t);

static inline int tutti_alg_hier_rank(const tutti_alg_hier_topo_t *t, int h,
                                      int l)
{
    return t->rank[h * t->per_host + l];
}

/** ((a mod n) + n) mod n. */
static inline int tutti_alg_hier_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/** Part @p j of @p total items cut into @p n parts as even as can be
 *  (the first total mod n one item longer): its first item and length. */
static inline void tutti_alg_hier_part(size_t total, int n, int j,
                                       size_t *first_out, size_t *len_out)
{
    size_t base = total / (size_t)n, extra = total % (size_t)n;
    size_t u = (size_t)j;
    *first_out = u * base + (u < extra ? u : extra);
    *len_out = base + (u < extra ? 1 : 0);
}

/** The supports entry every implementation of the module shares: 1, or 0
 *  when the hosts hold different numbers of members (the counts in
 *  @p why).  No allocation: O(n^2) in the group size, at decision only. */
int tutti_alg_hier_supports(const tutti_alg_instance_t *inst, char *why,
                            size_t len);

/* ---- the schedule (hier_sched.c) ----------------------------------- */

/* The buffers an operation names; resolved per execution. */
enum {
    TUTTI_ALG_HIER_SEND,    /* the caller's input (or a copy of it) */
    TUTTI_ALG_HIER_RECV,    /* the caller's output */
    TUTTI_ALG_HIER_SCRATCH, /* the instance's scratch */
    TUTTI_ALG_HIER_RESULT,  /* where the output lands, if not at RECV
                               (begin sets it; RECV by default) */
    TUTTI_ALG_HIER_BUFS
};

typedef struct {
    uint8_t kind, buf, src;  /* hier_sched.c's kinds; buffers */
    int32_t peer;
    uint32_t tag;
    size_t off, soff, len;   /* bytes */
} tutti_alg_hier_op_t;

/* A tag: the step, and which of the step's messages between the pair. */
#define TUTTI_ALG_HIER_SUBS 65536u

typedef struct {
    tutti_alg_hier_op_t *ops;
    size_t nops, cap;
    size_t *first;           /* steps + 1 entries: step k is ops
                                first[k] .. first[k+1]-1 */
    const char **phase;      /* per step: the phase it opens, or NULL */
    size_t nsteps, step_cap;
    size_t max_xfers;        /* messages of the busiest step */
    int failed;              /* out of memory, or a tag out of range */
} tutti_alg_hier_sched_t;

/** Opens step k+1 (the next), in @p phase if not NULL (a literal). */
void tutti_alg_hier_step(tutti_alg_hier_sched_t *s, const char *phase);
/** Messages (none of 0 bytes: sender and receiver skip them alike). */
void tutti_alg_hier_send(tutti_alg_hier_sched_t *s, int peer, uint32_t sub,
                         int buf, size_t off, size_t len);
void tutti_alg_hier_recv(tutti_alg_hier_sched_t *s, int peer, uint32_t sub,
                         int buf, size_t off, size_t len);
/** Receives into buf + off, reduced with what @p src holds at @p soff
 *  (buf itself: with what is there). */
void tutti_alg_hier_recv_reduce(tutti_alg_hier_sched_t *s, int peer,
                                uint32_t sub, int buf, size_t off, int src,
                                size_t soff, size_t len);
/** Local work, done when the step starts (its receives not yet in). */
void tutti_alg_hier_copy(tutti_alg_hier_sched_t *s, int buf, size_t off,
                         int src, size_t soff, size_t len);
void tutti_alg_hier_reduce(tutti_alg_hier_sched_t *s, int buf, size_t off,
                           int src, size_t soff, size_t len);

/* ---- an implementation: its schedule, scratch and per-call ends ------ */

typedef struct tutti_alg_hier_state tutti_alg_hier_state_t;

typedef struct {
    const char *name;
    /** Scratch bytes the instance needs. */
    size_t (*scratch)(const tutti_alg_hier_state_t *s);
    /** Writes the schedule. */
    void (*build)(tutti_alg_hier_state_t *s);
    /** Optional, per execution before the first step: copies the input
     *  in, points bufs[] elsewhere. */
    void (*begin)(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x);
    /** Optional, once the last step is done. */
    void (*end)(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x);
} tutti_alg_hier_impl_t;

struct tutti_alg_hier_state {
    const tutti_alg_hier_impl_t *impl;
    const tutti_alg_instance_t *inst;
    const tutti_core_ops_t *core;
    tutti_alg_hier_topo_t topo;
    tutti_alg_hier_sched_t sched;
    size_t esize, bytes;   /* element size; count x esize */
    char *scratch;
    size_t scratch_bytes;
    tutti_xfer_t *xfer;    /* sched.max_xfers */
    void *bufs[TUTTI_ALG_HIER_BUFS]; /* this execution's */
    size_t step;           /* this execution's */
    size_t posted;         /* messages of that step posted, in xfer[] */
};

/** init_context of every implementation of the module. */
tutti_status_t tutti_alg_hier_init(const tutti_alg_hier_impl_t *impl,
                                   const tutti_alg_instance_t *inst,
                                   const tutti_core_ops_t *core,
                                   void **state_out);
tutti_status_t tutti_alg_hier_run(void *state, tutti_alg_exec_t *x);
tutti_status_t tutti_alg_hier_progress(void *state, tutti_alg_exec_t *x);
void tutti_alg_hier_fini(void *state);

/** Scratch of none. */
size_t tutti_alg_hier_no_scratch(const tutti_alg_hier_state_t *s);

/** Where rank (h, l)'s block of the instance's count lies in a buffer of
 *  one block per rank, in bytes. */
static inline size_t tutti_alg_hier_block_at(const tutti_alg_hier_state_t *s,
                                             int h, int l)
{
    return (size_t)tutti_alg_hier_rank(&s->topo, h, l) * s->bytes;
}

/** Defines the ops table @p ops of the implementation @p impl (a
 *  tutti_alg_hier_impl_t) and its init_context. */
#define TUTTI_ALG_HIER_DEFINE(ops, impl)                                    \
    static tutti_status_t ops##_init(const tutti_alg_instance_t *inst,      \
                                     const tutti_core_ops_t *core,          \
                                     const void *details,                   \
                                     size_t details_len, void **state_out)  \
    {                                                                       \
        (void)details;                                                      \
        (void)details_len;                                                  \
        return tutti_alg_hier_init(&(impl), inst, core, state_out);         \
    }                                                                       \
    const tutti_alg_ops_t ops = {                                           \
        .size = sizeof(tutti_alg_ops_t), .init_context = ops##_init,        \
        .run = tutti_alg_hier_run, .progress = tutti_alg_hier_progress,     \
        .fini_context = tutti_alg_hier_fini,                                \
        .supports = tutti_alg_hier_supports}

#endif
