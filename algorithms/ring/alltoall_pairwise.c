/*
 * PairwiseAlltoall: pairwise exchange, one partner per step.  Cost: n-1
 * exchange steps, at most WINDOW in flight, in which each member sends
 * and receives n-1 blocks; per-rank counts add two rounds of small records
 * first.  Limits: CPU memory; in place, a scratch of WINDOW blocks.
 *
 * At step k (0 .. n-1) member r exchanges blocks with its partner
 * (k - r) mod n, the same peer in both directions (the pairing is its own
 * inverse, so every member has one partner per step, or itself, which
 * makes the step idle).  Blocks go straight between the callers'
 * buffers; out of place, the own block is copied locally.  Every member
 * talks to one peer per step, so the load spreads over all pairs, and at
 * most WINDOW steps are in flight at once, so large groups do not post
 * everything at the start.
 *
 * In place, a block may be overwritten only once it has left: the block
 * for the partner is copied to a scratch slot (WINDOW blocks, made at
 * init_context), sent from there, and the partner's block arrives in its
 * place.  The schedule is the same in place and out of place, so members
 * may differ in whether they run in place (each decides by its own
 * buffers).  With per-rank counts the core moves an in-place call's input
 * aside first, so this implementation never sees one.
 *
 * Per-rank counts: each member first sends every peer how many elements it
 * will send it, then every member sends every other what it must receive
 * in all and what its recvbuf holds, so all decide alike whether any
 * buffer is short (see tutti_alg_ring_check_fit()).
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "ring.h"
#include "ring_counts.h"

#define IMPL "PairwiseAlltoall"
#define WINDOW 4 /* steps in flight */

enum { PHASE_COUNTS, PHASE_TOTALS, PHASE_DATA };

typedef struct {
    tutti_alg_ring_counts_t c;    /* records: its total, its capacity */
    tutti_alg_ring_blocks_t sblk; /* per peer: what goes to it */
    tutti_alg_ring_blocks_t rblk; /* per peer: what comes from it */
    uint64_t *cnt_out;            /* per-rank: elements for each peer */
    uint64_t *cnt_in;             /* per-rank: elements from each peer */
    char *scratch;                /* in place: WINDOW blocks */
    tutti_xfer_t sx[WINDOW], rx[WINDOW];
    int phase;
    int in_place, steps;          /* this call */
    int posted, done;             /* data steps */
    int own_copied;               /* out of place: the own block is */
} a2a_state_t;

static void a2a_fini_context(void *state)
{
    a2a_state_t *s = state;
    if (s == NULL)
        return;
    tutti_alg_ring_blocks_fini(&s->sblk);
    tutti_alg_ring_blocks_fini(&s->rblk);
    free(s->cnt_out);
    free(s->cnt_in);
    tutti_alg_ring_counts_fini(&s->c);
    free(s->scratch);
    free(s);
}

static tutti_status_t a2a_init_context(const tutti_alg_instance_t *inst,
                                       const tutti_core_ops_t *core,
                                       const void *details,
                                       size_t details_len, void **state_out)
{
    size_t n = (size_t)inst->group_size;
    a2a_state_t *s = calloc(1, sizeof(*s));
    (void)details;
    (void)details_len;
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": out of memory");
    /* Its data slots are WINDOW, not n: the record rounds get their own. */
    if (tutti_alg_ring_counts_init(&s->c, inst, NULL, NULL) != TUTTI_OK ||
        tutti_alg_ring_blocks_init(&s->sblk, inst) != TUTTI_OK ||
        tutti_alg_ring_blocks_init(&s->rblk, inst) != TUTTI_OK)
        goto err_free_state;
    if (s->c.per_rank) {
        s->cnt_out = calloc(n, sizeof(uint64_t));
        s->cnt_in = calloc(n, sizeof(uint64_t));
        if (s->cnt_out == NULL || s->cnt_in == NULL)
            goto err_free_state;
    } else {
        /* Whether a call will be in place is known only per call.  Step i
         * uses slot i mod WINDOW. */
        size_t slots = n < WINDOW ? n : WINDOW;
        if (n > 1 && inst->count > 0 &&
            (s->scratch = malloc(slots * inst->count * s->c.esize)) == NULL)
            goto err_free_state;
    }
    *state_out = s;
    return TUTTI_OK;

err_free_state:
    a2a_fini_context(s);
    return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": no memory for a group "
                       "of %zu (count %zu)", n,
                       inst->count == TUTTI_COUNT_PER_RANK ? 0 : inst->count);
}

/* The partner of data step @p i, both directions, or -1: an idle step. */
static void step_peers(const a2a_state_t *s, int i, int *to, int *from)
{
    int n = s->c.inst->group_size, r = s->c.inst->rank;
    *to = *from = tutti_alg_ring_mod(i - r, n);
    if (*to == r)
        *to = *from = -1;
}

static tutti_status_t post_step(a2a_state_t *s, tutti_alg_exec_t *x, int i)
{
    int to, from, slot = i % WINDOW;
    size_t es = s->c.esize;
    const char *src;
    tutti_status_t st;

    step_peers(s, i, &to, &from);
    if (to < 0)
        return TUTTI_OK;
    src = tutti_alg_ring_cat(x->sendbuf, s->sblk.off[to] * es);
    if (s->in_place) {
        char *copy = s->scratch + (size_t)slot * s->c.inst->count * es;
        memcpy(copy, src, s->sblk.len[to] * es);
        src = copy;
    }
    st = x->core->recv(x, from, (uint32_t)i,
                       tutti_alg_ring_at(x->recvbuf, s->rblk.off[from] * es),
                       s->rblk.len[from] * es, NULL, &s->rx[slot]);
    if (st != TUTTI_OK)
        return st;
    return tutti_alg_send_block(x, to, (uint32_t)i, src,
                                s->sblk.len[to] * es, &s->sx[slot]);
}

/* Enters the data phase: data_progress() posts the first window of
 * steps, then copies the own block. */
static tutti_status_t start_data(a2a_state_t *s, tutti_alg_exec_t *x)
{
    s->phase = PHASE_DATA;
    tutti_alg_exec_phase(x, "data");
    s->posted = s->done = 0;
    s->own_copied = s->in_place;
    return TUTTI_OK;
}

/* Out of place: the own block, copied while the first window's transfers
 * are on their way (a send with nothing queued before it is written into
 * the channel as it is posted, so the peers take it meanwhile). */
static void copy_own(a2a_state_t *s, tutti_alg_exec_t *x)
{
    int r = s->c.inst->rank;
    size_t es = s->c.esize;
    s->own_copied = 1;
    if (s->sblk.len[r] > 0)
        memcpy(tutti_alg_ring_at(x->recvbuf, s->rblk.off[r] * es),
               tutti_alg_ring_cat(x->sendbuf, s->sblk.off[r] * es),
               s->sblk.len[r] * es);
}

/* Completes data steps in order and keeps the window full. */
static tutti_status_t data_progress(a2a_state_t *s, tutti_alg_exec_t *x)
{
    tutti_status_t st;
    for (;;) {
        while (s->posted < s->steps && s->posted - s->done < WINDOW) {
            if ((st = post_step(s, x, s->posted)) != TUTTI_OK)
                return st;
            s->posted++;
        }
        if (!s->own_copied)
            copy_own(s, x);
        if (s->done == s->steps)
            return TUTTI_OK;
        int to, from, slot = s->done % WINDOW;
        step_peers(s, s->done, &to, &from);
        if (to >= 0) {
            if ((st = x->core->test(x, &s->rx[slot])) != TUTTI_OK)
                return st;
            if ((st = x->core->test(x, &s->sx[slot])) != TUTTI_OK)
                return st;
        }
        s->done++;
    }
}

/* Counts in from every peer: this member's blocks and total; then the
 * totals and capacities go to everyone. */
static tutti_status_t counts_known(a2a_state_t *s, tutti_alg_exec_t *x)
{
    int n = s->c.inst->group_size, r = s->c.inst->rank;
    tutti_alg_ring_rec_t *rec = s->c.rec;
    uint64_t total = 0;

    s->cnt_in[r] = s->cnt_out[r];
    for (int i = 0; i < n; i++) {
        x->recv_counts[i] = (size_t)s->cnt_in[i];
        total = tutti_alg_ring_add(total, s->cnt_in[i]);
    }
    tutti_alg_ring_blocks_set(&s->rblk, n, x->recv_counts);
    x->recv_total = total > SIZE_MAX ? SIZE_MAX : (size_t)total;
    rec[r].count = total;
    rec[r].capacity = x->recv_capacity;
    s->phase = PHASE_TOTALS;
    tutti_alg_exec_phase(x, "totals");
    return tutti_alg_ring_meta_post(x, &s->c.meta,
                                    TUTTI_ALG_RING_TAG_META + 1, &rec[r], 0,
                                    rec, sizeof(rec[0]));
}

static tutti_status_t a2a_progress(void *state, tutti_alg_exec_t *x)
{
    a2a_state_t *s = state;
    tutti_status_t st;
    int fits = 0;

    if (s->phase == PHASE_COUNTS) {
        if ((st = tutti_alg_ring_meta_test(x, &s->c.meta)) != TUTTI_OK)
            return st;
        if ((st = counts_known(s, x)) != TUTTI_OK)
            return st;
    }
    if (s->phase == PHASE_TOTALS) {
        if ((st = tutti_alg_ring_meta_test(x, &s->c.meta)) != TUTTI_OK)
            return st;
        st = tutti_alg_ring_check_fit(x, IMPL, s->c.rec, NULL, &fits);
        if (st != TUTTI_OK || !fits)
            return st;
        if ((st = start_data(s, x)) != TUTTI_OK)
            return st;
    }
    return data_progress(s, x);
}

static tutti_status_t a2a_run(void *state, tutti_alg_exec_t *x)
{
    a2a_state_t *s = state;
    const tutti_alg_instance_t *in = s->c.inst;
    int n = in->group_size;
    tutti_status_t st;

    s->in_place = !s->c.per_rank && x->sendbuf == x->recvbuf;
    s->steps = n;
    if (!s->c.per_rank) {
        if (in->count == 0 || (s->in_place && n == 1))
            return TUTTI_OK;
        if ((st = start_data(s, x)) != TUTTI_OK)
            return st;
        return data_progress(s, x);
    }
    /* Per-rank counts: sizes first, even when this member sends nothing. */
    tutti_alg_ring_blocks_set(&s->sblk, n, x->counts);
    for (int i = 0; i < n; i++)
        s->cnt_out[i] = x->counts[i];
    s->phase = PHASE_COUNTS;
    tutti_alg_exec_phase(x, "counts");
    st = tutti_alg_ring_meta_post(x, &s->c.meta, TUTTI_ALG_RING_TAG_META,
                                  s->cnt_out, sizeof(uint64_t), s->cnt_in,
                                  sizeof(uint64_t));
    return st != TUTTI_OK ? st : a2a_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_ring_alltoall_pairwise_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = a2a_init_context,
    .run = a2a_run, .progress = a2a_progress, .fini_context = a2a_fini_context};
