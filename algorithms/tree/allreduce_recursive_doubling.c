/*
 * RecursiveDoublingAllreduce: latency-optimal allreduce for small messages,
 * for any group size.  Cost: log2(p) exchanges of the whole buffer (p the
 * largest power of two <= n), plus a hand-over before and after where n is
 * not a power of two.  Limits: equal counts, CPU memory; a scratch of the
 * whole buffer.
 *
 * With p the largest power of two <= n and e = n - p extra members: among
 * ranks 0 .. 2e-1 each even rank first hands its data to the odd rank above
 * it, which reduces it; the p members left (odd ranks below 2e, and every
 * rank from 2e) exchange and reduce with partners at distance 1, 2, 4 ...
 * (log2 p steps); each odd rank below 2e finally hands the result back.
 * Every member ends with the same bits: the operations are commutative and
 * every pair combines the same two partial results.  Each exchange sends a
 * copy of the current result (the scratch buffer, made at init_context)
 * while the peer's arrives reduced into the output.
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "tree.h"
#include "tree_fold.h"

#define IMPL "RecursiveDoublingAllreduce"

enum { ACT_SEND, ACT_RECV, ACT_RECV_REDUCE, ACT_EXCHANGE };

typedef struct {
    int kind;
    int peer;
    uint32_t tag;  /* the logical step, the same on both sides */
} action_t;

#define TAG_HAND_IN 0
#define TAG_HAND_BACK 1000 /* exchanges use 1 + their step */

typedef struct {
    char *scratch; /* the copy of the result an exchange sends */
    const tutti_alg_instance_t *inst;
    size_t bytes;
    int nact, cur;
    tutti_xfer_t sx, rx;
    action_t act[]; /* log2 of the group size, plus the two hand-overs;
                       after the hot fields, which share few lines */
} rd_state_t;
_Static_assert(offsetof(rd_state_t, scratch) == 0,
               "tutti_alg_tree_scratch_fini frees the first member");

/* Writes this member's list of actions. */
static void plan(rd_state_t *s)
{
    int r = s->inst->rank;
    tutti_alg_tree_fold_t f = tutti_alg_tree_fold(s->inst->group_size, r);
    if (f.v < 0) {
        s->act[s->nact++] = (action_t){ACT_SEND, r + 1, TAG_HAND_IN};
        s->act[s->nact++] = (action_t){ACT_RECV, r + 1, TAG_HAND_BACK};
        return;
    }
    if (r < 2 * f.e)
        s->act[s->nact++] = (action_t){ACT_RECV_REDUCE, r - 1, TAG_HAND_IN};
    uint32_t step = 1;
    for (int mask = 1; mask < f.p; mask <<= 1)
        s->act[s->nact++] = (action_t){
            ACT_EXCHANGE, tutti_alg_tree_fold_rank(&f, f.v ^ mask), step++};
    if (r < 2 * f.e)
        s->act[s->nact++] = (action_t){ACT_SEND, r - 1, TAG_HAND_BACK};
}

static tutti_status_t rd_init_context(const tutti_alg_instance_t *inst,
                                      const tutti_core_ops_t *core,
                                      const void *details, size_t details_len,
                                      void **state_out)
{
    size_t bytes = inst->count * tutti_dtype_size(inst->dtype);
    rd_state_t *s = tutti_alg_tree_state_new(
        core, IMPL,
        sizeof(*s) + tutti_alg_tree_fold_actions(inst->group_size) *
                         sizeof(action_t),
        bytes, "copy of the result");
    (void)details;
    (void)details_len;
    if (s == NULL)
        return TUTTI_ERR_NO_MEMORY;
    s->inst = inst;
    s->bytes = bytes;
    plan(s);
    *state_out = s;
    return TUTTI_OK;
}

/* The phase of action @p a: the hand-over in, the exchanges, or the
 * hand-over back. */
static const char *phase_of(const action_t *a)
{
    return a->kind == ACT_EXCHANGE      ? "exchange"
           : a->tag == TAG_HAND_IN      ? "hand-in"
                                        : "hand-back";
}

/* Posts the transfers of action s->cur. */
static tutti_status_t post(rd_state_t *s, tutti_alg_exec_t *x)
{
    const action_t *a = &s->act[s->cur];
    tutti_recv_reduce_t red = {x->recvbuf};
    uint32_t tag = a->tag;
    tutti_status_t st = TUTTI_OK;
    if (s->cur == 0 || phase_of(a) != phase_of(a - 1))
        tutti_alg_exec_phase(x, phase_of(a));
    switch (a->kind) {
    case ACT_SEND:
        return tutti_alg_send_block(x, a->peer, tag, x->recvbuf, s->bytes,
                                    &s->sx);
    case ACT_RECV:
        return x->core->recv(x, a->peer, tag, x->recvbuf, s->bytes, NULL,
                             &s->rx);
    case ACT_RECV_REDUCE:
        return x->core->recv(x, a->peer, tag, x->recvbuf, s->bytes, &red,
                             &s->rx);
    default: /* exchange: send a copy, reduce what comes into the output */
        memcpy(s->scratch, x->recvbuf, s->bytes);
        st = x->core->send(x, a->peer, tag, s->scratch, s->bytes, &s->sx);
        if (st == TUTTI_OK)
            st = x->core->recv(x, a->peer, tag, x->recvbuf, s->bytes, &red,
                               &s->rx);
        return st;
    }
}

static tutti_status_t rd_progress(void *state, tutti_alg_exec_t *x)
{
    rd_state_t *s = state;
    tutti_status_t st;
    while (s->cur < s->nact) {
        int kind = s->act[s->cur].kind;
        if (kind != ACT_RECV && kind != ACT_RECV_REDUCE &&
            (st = x->core->test(x, &s->sx)) != TUTTI_OK)
            return st;
        if (kind != ACT_SEND && (st = x->core->test(x, &s->rx)) != TUTTI_OK)
            return st;
        if (++s->cur < s->nact && (st = post(s, x)) != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

static tutti_status_t rd_run(void *state, tutti_alg_exec_t *x)
{
    rd_state_t *s = state;
    if (x->sendbuf != x->recvbuf && s->bytes > 0)
        memcpy(x->recvbuf, x->sendbuf, s->bytes);
    s->cur = 0;
    if (s->nact == 0 || s->bytes == 0)
        return TUTTI_OK;
    tutti_status_t st = post(s, x);
    return st == TUTTI_OK ? rd_progress(s, x) : st;
}

const tutti_alg_ops_t tutti_alg_tree_allreduce_recursive_doubling_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = rd_init_context,
    .run = rd_run, .progress = rd_progress,
    .fini_context = tutti_alg_tree_scratch_fini};
