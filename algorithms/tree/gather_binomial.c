/*
 * TreeGather: gather to any root down a binomial tree.  Cost: ceil(log2 n)
 * steps, the root receiving n-1 blocks in one message per child subtree
 * (two for the one that wraps past rank n - 1).  Limits: equal counts, CPU
 * memory; members with a parent and children keep a scratch of their
 * subtree's blocks.
 *
 * Ranks are renumbered by distance from the root (v = rank - root, modulo
 * the group size n).  Member v's subtree is v .. v + s(v) - 1, with s(v)
 * the lowest set bit of v (n for the root), cut at n; its children are
 * v + 1, v + 2, v + 4 ... below that bit.  Each member gathers its
 * subtree's blocks in that relative order in a scratch buffer made at
 * init_context (its own block first, then each child's subtree as one
 * message at its offset) and sends them to its parent as one message.
 * The root's children send straight into the root's recvbuf, where
 * relative order is rank order except where it wraps from rank n - 1 to
 * rank 0: a subtree that spans that point goes as two messages, one for
 * each side.  Leaves send their input as it is; the root copies its own
 * block into place unless it is already there (in place).  In place
 * (sendbuf == recvbuf) a rank's input sits at its block of the buffer, as
 * for allgather; non-roots usually pass recvbuf NULL instead.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "tree.h"

#define GATHER_MAX_CHILDREN 32 /* log2 of any group size */

static const char impl_name[] = "TreeGather";

enum { PHASE_RECV, PHASE_SEND };

typedef struct {
    char *scratch;         /* non-roots with children: sub blocks */
    const tutti_alg_instance_t *inst;
    long v;                /* relative rank */
    int parent;            /* real rank, -1 at the root */
    int nchildren;
    int children[GATHER_MAX_CHILDREN];  /* real ranks */
    long child_v[GATHER_MAX_CHILDREN];  /* their relative ranks */
    long sub;              /* blocks in this member's subtree */
    size_t block;          /* bytes of one rank's block */
    long split;            /* blocks of the first of two messages to the
                              root, or 0: one message */
    int nrx;               /* receives: one per child, and at the root one
                              more for the subtree that wraps, if any */
    int phase;
    tutti_xfer_t rx[GATHER_MAX_CHILDREN + 1];
    tutti_xfer_t sx[2];
} gather_state_t;
_Static_assert(offsetof(gather_state_t, scratch) == 0,
               "tutti_alg_tree_scratch_fini frees the first member");

/* Blocks in the subtree of relative rank @p v of @p n. */
static long subtree(long v, long n)
{
    long low = v & -v;
    if (v == 0 || low > n - v)
        return n - v;
    return low;
}

/* Blocks of relative ranks v .. v + sub - 1 that come before the wrap
 * from rank n - 1 to 0, or 0 if they do not wrap. */
static long wrap_split(long v, long sub, long root, long n)
{
    long first = (v + root) % n;
    return first + sub > n ? n - first : 0;
}

static tutti_status_t gather_init_context(const tutti_alg_instance_t *inst,
                                          const tutti_core_ops_t *core,
                                          const void *details,
                                          size_t details_len, void **state_out)
{
    long n = inst->group_size, root = inst->root;
    (void)details;
    (void)details_len;
    gather_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory",
                           impl_name);
    s->inst = inst;
    s->block = inst->count * tutti_dtype_size(inst->dtype);
    s->v = (inst->rank - root + n) % n;
    s->sub = subtree(s->v, n);
    s->parent = -1;
    if (s->v > 0) {
        long pv = s->v - (s->v & -s->v);
        s->parent = (int)((pv + root) % n);
        if (pv == 0)
            s->split = wrap_split(s->v, s->sub, root, n);
    }
    for (long mask = 1; mask < s->sub; mask <<= 1) {
        long cv = s->v + mask;
        s->child_v[s->nchildren] = cv;
        s->children[s->nchildren++] = (int)((cv + root) % n);
        if (s->v == 0 && wrap_split(cv, subtree(cv, n), root, n) > 0)
            s->nrx++;
    }
    s->nrx += s->nchildren;
    if (s->parent >= 0 && s->nchildren > 0 && s->block > 0) {
        size_t want = (size_t)s->sub * s->block;
        long sub = s->sub;
        s->scratch = malloc(want);
        if (s->scratch == NULL) {
            tutti_alg_tree_scratch_fini(s);
            return core->error(TUTTI_ERR_NO_MEMORY, "%s: no memory for a "
                               "%zu-byte buffer of %ld ranks' blocks",
                               impl_name, want, sub);
        }
    }
    *state_out = s;
    return TUTTI_OK;
}

/* Posts the receives of every child's subtree. */
static tutti_status_t post_recvs(gather_state_t *s, tutti_alg_exec_t *x)
{
    long n = s->inst->group_size, root = s->inst->root;
    tutti_status_t st = TUTTI_OK;
    for (int i = 0; i < s->nchildren && st == TUTTI_OK; i++) {
        long cv = s->child_v[i], cs = subtree(cv, n);
        int peer = s->children[i];
        if (s->parent >= 0) {
            st = x->core->recv(x, peer, 0,
                               s->scratch + (size_t)(cv - s->v) * s->block,
                               (size_t)cs * s->block, NULL, &s->rx[i]);
            continue;
        }
        char *out = x->recvbuf;
        long first = (cv + root) % n, split = wrap_split(cv, cs, root, n);
        size_t len = (size_t)(split > 0 ? split : cs) * s->block;
        st = x->core->recv(x, peer, 0, out + (size_t)first * s->block, len,
                           NULL, &s->rx[i]);
        if (st == TUTTI_OK && split > 0) /* at most one subtree wraps */
            st = x->core->recv(x, peer, 1, out,
                               (size_t)(cs - split) * s->block, NULL,
                               &s->rx[s->nchildren]);
    }
    return st;
}

/* This member's input: in place (as for allgather) it sits at its block
 * of the one buffer, on the root and on any other rank that passes one. */
static const char *input(const gather_state_t *s, const tutti_alg_exec_t *x)
{
    if (x->sendbuf == x->recvbuf)
        return (const char *)x->recvbuf + (size_t)s->inst->rank * s->block;
    return x->sendbuf;
}

/* Posts the send of this member's subtree to its parent. */
static tutti_status_t post_sends(gather_state_t *s, tutti_alg_exec_t *x)
{
    const char *src = s->nchildren > 0 ? s->scratch : input(s, x);
    size_t first = (size_t)(s->split > 0 ? s->split : s->sub) * s->block;
    tutti_status_t st = tutti_alg_send_block(x, s->parent, 0, src, first,
                                             &s->sx[0]);
    if (st == TUTTI_OK && s->split > 0)
        st = tutti_alg_send_block(x, s->parent, 1, src + first,
                                  (size_t)(s->sub - s->split) * s->block,
                                  &s->sx[1]);
    return st;
}

static tutti_status_t gather_progress(void *state, tutti_alg_exec_t *x)
{
    gather_state_t *s = state;
    tutti_status_t st;
    if (s->phase == PHASE_RECV) {
        for (int i = 0; i < s->nrx; i++) {
            if ((st = x->core->test(x, &s->rx[i])) != TUTTI_OK)
                return st;
        }
        if (s->parent < 0)
            return TUTTI_OK;
        tutti_alg_exec_phase(x, "to parent");
        if ((st = post_sends(s, x)) != TUTTI_OK)
            return st;
        s->phase = PHASE_SEND;
    }
    for (int i = 0; i < (s->split > 0 ? 2 : 1); i++) {
        if ((st = x->core->test(x, &s->sx[i])) != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

static tutti_status_t gather_run(void *state, tutti_alg_exec_t *x)
{
    gather_state_t *s = state;
    tutti_status_t st;
    if (s->block == 0)
        return TUTTI_OK;
    if (s->parent < 0) {
        char *own = (char *)x->recvbuf + (size_t)s->inst->rank * s->block;
        if (x->sendbuf != x->recvbuf)
            memcpy(own, x->sendbuf, s->block);
    } else if (s->nchildren > 0) {
        memcpy(s->scratch, input(s, x), s->block);
    }
    if (s->inst->group_size == 1)
        return TUTTI_OK;
    s->phase = PHASE_RECV;
    tutti_alg_exec_phase(x, "from children");
    if ((st = post_recvs(s, x)) != TUTTI_OK)
        return st;
    return gather_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_tree_gather_binomial_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = gather_init_context,
    .run = gather_run, .progress = gather_progress,
    .fini_context = tutti_alg_tree_scratch_fini};
