/*
 * RecursiveHalvingReduceScatter: latency-optimal reduce_scatter for small
 * blocks, for any group size.  Cost: log2(p) exchanges (p the largest power
 * of two <= n) of 1/2, 1/4 ... of the buffer, plus a hand-over before and
 * after where n is not a power of two; the ring's n-1 steps become log2(p)
 * (8 members: 3 instead of 7).  Limits: equal counts, CPU memory; a scratch
 * of the whole input (n blocks).
 *
 * With e = n - p extra members: among ranks 0 .. 2e-1 each even rank first
 * hands its whole input to the odd rank above it, which reduces it on
 * receipt.  The p members left take virtual ranks (odd ranks below 2e
 * become r / 2, every rank from 2e becomes r - e) and share the n blocks in
 * order: virtual rank v < e owns blocks 2v and 2v + 1, the others block v +
 * e.  At each step, with distance d = p/2, p/4 ... 1, a member keeps the half
 * of its current range of virtual ranks that holds its own and exchanges
 * the other half with virtual rank v ^ d: it sends its partials of the
 * partner's half and receives the partner's of its own, reduced on receipt
 * into the scratch.  After log2(p) steps each member holds the full result
 * of its blocks; an odd rank below 2e finally hands block r - 1 to the even
 * rank below it.  The first exchange reads the input straight from sendbuf,
 * and the last receive of a member that owns one block writes its result
 * where it belongs in recvbuf, so a member of a power-of-two group copies
 * nothing.  In place the result lands at block r of the buffer, as for
 * every reduce_scatter; members may differ in whether they run in place.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "tree.h"
#include "tree_fold.h"

#define IMPL "RecursiveHalvingReduceScatter"

enum { ACT_FOLD_SEND, ACT_FOLD_RECV, ACT_HALVE, ACT_UNFOLD_SEND,
       ACT_UNFOLD_RECV };

#define TAG_FOLD 0
#define TAG_UNFOLD 1000 /* halving steps use 1 + their step */

typedef struct {
    int kind;
    int peer;
    uint32_t tag;
    size_t send_off, send_len; /* blocks (halving) */
    size_t keep_off, keep_len;
    int last;                  /* the member's last halving step */
} action_t;

typedef struct {
    char *acc;          /* n blocks of partial results */
    const tutti_alg_instance_t *inst;
    size_t block;       /* bytes of one block */
    int own;            /* 1: the member owns one block (its result goes
                           straight to recvbuf); 0: two, or none */
    int nact, cur;
    const char *src;    /* this execution's partials: sendbuf, then acc */
    tutti_xfer_t sx, rx;
    action_t act[];     /* log2 of the group size, plus the hand-overs */
} rh_state_t;
_Static_assert(offsetof(rh_state_t, acc) == 0,
               "tutti_alg_tree_scratch_fini frees the first member");

/* First block of virtual rank @p v (n blocks; p virtual ranks own them:
 * those below e two each). */
static size_t vstart(const tutti_alg_tree_fold_t *f, int v, int n)
{
    if (v >= f->p)
        return (size_t)n;
    return v < f->e ? 2 * (size_t)v : (size_t)(v + f->e);
}

/* Writes this member's list of actions. */
static void plan(rh_state_t *s)
{
    int n = s->inst->group_size, r = s->inst->rank;
    tutti_alg_tree_fold_t f = tutti_alg_tree_fold(n, r);
    int v = f.v;
    if (v < 0) {
        s->act[s->nact++] = (action_t){.kind = ACT_FOLD_SEND, .peer = r + 1,
                                       .tag = TAG_FOLD};
        s->act[s->nact++] = (action_t){.kind = ACT_UNFOLD_RECV,
                                       .peer = r + 1, .tag = TAG_UNFOLD};
        s->own = 1;
        return;
    }
    if (r < 2 * f.e)
        s->act[s->nact++] = (action_t){.kind = ACT_FOLD_RECV, .peer = r - 1,
                                       .tag = TAG_FOLD};
    int lo = 0, hi = f.p;
    uint32_t step = 1;
    for (int d = f.p / 2; d >= 1; d /= 2) {
        int mid = lo + d, klo = v < mid ? lo : mid, khi = v < mid ? mid : hi;
        int slo = v < mid ? mid : lo, shi = v < mid ? hi : mid;
        size_t ks = vstart(&f, klo, n), ss = vstart(&f, slo, n);
        s->act[s->nact++] = (action_t){
            .kind = ACT_HALVE, .peer = tutti_alg_tree_fold_rank(&f, v ^ d),
            .tag = step++, .send_off = ss,
            .send_len = vstart(&f, shi, n) - ss, .keep_off = ks,
            .keep_len = vstart(&f, khi, n) - ks, .last = d == 1};
        lo = klo;
        hi = khi;
    }
    s->own = v >= f.e; /* block v + e = r alone */
    if (r < 2 * f.e)
        s->act[s->nact++] = (action_t){.kind = ACT_UNFOLD_SEND,
                                       .peer = r - 1, .tag = TAG_UNFOLD};
}

static tutti_status_t rh_init_context(const tutti_alg_instance_t *inst,
                                      const tutti_core_ops_t *core,
                                      const void *details, size_t details_len,
                                      void **state_out)
{
    size_t block = inst->count * tutti_dtype_size(inst->dtype);
    rh_state_t *s = tutti_alg_tree_state_new(
        core, IMPL,
        sizeof(*s) + tutti_alg_tree_fold_actions(inst->group_size) *
                         sizeof(action_t),
        block * (size_t)inst->group_size, "scratch of the input");
    (void)details;
    (void)details_len;
    if (s == NULL)
        return TUTTI_ERR_NO_MEMORY;
    s->inst = inst;
    s->block = block;
    plan(s);
    *state_out = s;
    return TUTTI_OK;
}

/* Where this member's result goes in recvbuf. */
static char *result_at(const rh_state_t *s, tutti_alg_exec_t *x)
{
    char *out = x->recvbuf;
    if (x->sendbuf == x->recvbuf)
        out += (size_t)s->inst->rank * s->block;
    return out;
}

/* Posts the transfers of action s->cur. */
static tutti_status_t post(rh_state_t *s, tutti_alg_exec_t *x)
{
    const action_t *a = &s->act[s->cur];
    size_t b = s->block, all = b * (size_t)s->inst->group_size;
    tutti_status_t st;
    switch (a->kind) {
    case ACT_FOLD_SEND:
        return x->core->send(x, a->peer, a->tag, x->sendbuf, all, &s->sx);
    case ACT_FOLD_RECV: {
        tutti_recv_reduce_t red = {x->sendbuf};
        return x->core->recv(x, a->peer, a->tag, s->acc, all, &red, &s->rx);
    }
    case ACT_UNFOLD_SEND:
        return x->core->send(x, a->peer, a->tag, s->acc + (size_t)a->peer * b,
                             b, &s->sx);
    case ACT_UNFOLD_RECV:
        return x->core->recv(x, a->peer, a->tag, result_at(s, x), b, NULL,
                             &s->rx);
    default: { /* halving: send the partner's half, reduce ours */
        tutti_recv_reduce_t red = {s->src + a->keep_off * b};
        char *dst = a->last && s->own ? result_at(s, x)
                                      : s->acc + a->keep_off * b;
        st = x->core->send(x, a->peer, a->tag, s->src + a->send_off * b,
                           a->send_len * b, &s->sx);
        if (st == TUTTI_OK)
            st = x->core->recv(x, a->peer, a->tag, dst, a->keep_len * b,
                               &red, &s->rx);
        return st;
    }
    }
}

/* The member's result, where no receive wrote it: from the partials (its
 * two blocks' first is the folded partner's), or the input itself for a
 * group of one. */
static void finish(rh_state_t *s, tutti_alg_exec_t *x)
{
    int r = s->inst->rank;
    char *out = result_at(s, x);
    const char *from = s->src + (size_t)r * s->block;
    if (from != out && s->block > 0)
        memcpy(out, from, s->block);
}

static tutti_status_t rh_progress(void *state, tutti_alg_exec_t *x)
{
    rh_state_t *s = state;
    tutti_status_t st;
    while (s->cur < s->nact) {
        const action_t *a = &s->act[s->cur];
        int sends = a->kind != ACT_FOLD_RECV && a->kind != ACT_UNFOLD_RECV;
        int recvs = a->kind != ACT_FOLD_SEND && a->kind != ACT_UNFOLD_SEND;
        if (sends && (st = x->core->test(x, &s->sx)) != TUTTI_OK)
            return st;
        if (recvs && (st = x->core->test(x, &s->rx)) != TUTTI_OK)
            return st;
        if (a->kind == ACT_FOLD_RECV || a->kind == ACT_HALVE)
            s->src = s->acc;
        /* The last halving step leaves an owner of two blocks with block
         * r in the partials (before it hands block r - 1 on). */
        if (a->kind == ACT_HALVE && a->last && !s->own)
            finish(s, x);
        if (++s->cur < s->nact && (st = post(s, x)) != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

static tutti_status_t rh_run(void *state, tutti_alg_exec_t *x)
{
    rh_state_t *s = state;
    s->cur = 0;
    s->src = x->sendbuf;
    if (s->block == 0) /* every member has nothing: no message at all */
        return TUTTI_OK;
    if (s->nact == 0) { /* a group of one */
        finish(s, x);
        return TUTTI_OK;
    }
    tutti_status_t st = post(s, x);
    return st == TUTTI_OK ? rh_progress(s, x) : st;
}

const tutti_alg_ops_t tutti_alg_tree_reduce_scatter_recursive_halving_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = rh_init_context,
    .run = rh_run, .progress = rh_progress,
    .fini_context = tutti_alg_tree_scratch_fini};
