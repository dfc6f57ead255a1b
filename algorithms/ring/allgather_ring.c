/*
 * RingAllgather: allgather around a ring of all members.  Cost: n-1 steps,
 * in which each member sends and receives every other member's block once.
 * Limits: CPU memory; per-rank counts add one round of small records first.
 *
 * In n-1 steps each member passes to its right neighbour the block it got
 * from its left one at the step before (its own block first), so every
 * block travels n-1 hops and every link carries every block once.  All
 * n-1 receives are posted at the start, each into its block's final place
 * in recvbuf, and a block is forwarded as soon as it has arrived, so a
 * member never waits for its own send before taking the next block.  Large
 * blocks stream through the transport in slot-sized fragments.  Out of
 * place, the own block leaves straight from sendbuf and is copied into
 * recvbuf while the first step is under way.
 *
 * Per-rank counts: the members first send each other their (send_count,
 * recv_capacity) in one round, so every member knows every block's size
 * and every member's room; if any recvbuf is short, no data moves and each
 * member ends alike (see tutti_alg_ring_check_fit()).
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "ring.h"
#include "ring_counts.h"

#define IMPL "RingAllgather"

enum { PHASE_SIZES, PHASE_DATA };

typedef struct {
    tutti_alg_ring_counts_t c;   /* records: send_count, recv_capacity */
    tutti_alg_ring_blocks_t blk; /* per block, in recvbuf */
    tutti_xfer_t *sx, *rx;       /* group_size slots each */
    int phase;
    int recvd, sent, send_done; /* data steps completed, posted, completed */
} gather_state_t;

static void gather_fini_context(void *state)
{
    gather_state_t *s = state;
    if (s == NULL)
        return;
    tutti_alg_ring_blocks_fini(&s->blk);
    tutti_alg_ring_counts_fini(&s->c);
    free(s->sx);
    free(s->rx);
    free(s);
}

static tutti_status_t gather_init_context(const tutti_alg_instance_t *inst,
                                          const tutti_core_ops_t *core,
                                          const void *details,
                                          size_t details_len, void **state_out)
{
    size_t n = (size_t)inst->group_size;
    gather_state_t *s = calloc(1, sizeof(*s));
    (void)details;
    (void)details_len;
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": out of memory");
    s->sx = calloc(n, sizeof(*s->sx));
    s->rx = calloc(n, sizeof(*s->rx));
    /* The record round ends before any data moves, so it uses the data
     * slots (n each, indexed by peer there and by step here). */
    if (s->sx == NULL || s->rx == NULL ||
        tutti_alg_ring_counts_init(&s->c, inst, s->sx, s->rx) != TUTTI_OK ||
        tutti_alg_ring_blocks_init(&s->blk, inst) != TUTTI_OK) {
        gather_fini_context(s);
        return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": out of memory for "
                           "a group of %zu", n);
    }
    *state_out = s;
    return TUTTI_OK;
}

/* Where block @p b starts in recvbuf. */
static char *block(const gather_state_t *s, tutti_alg_exec_t *x, int b)
{
    return tutti_alg_ring_at(x->recvbuf, s->blk.off[b] * s->c.esize);
}

/* Posts the send of data step @p k: the own block at step 0, else the
 * block received at step k-1. */
static tutti_status_t post_send(gather_state_t *s, tutti_alg_exec_t *x, int k)
{
    int n = s->c.inst->group_size, r = s->c.inst->rank;
    int b = tutti_alg_ring_mod(r - k, n);
    const char *src = block(s, x, b);
    if (k == 0 && x->sendbuf != x->recvbuf)
        src = x->sendbuf;
    return tutti_alg_send_block(x, tutti_alg_ring_mod(r + 1, n),
                                (uint32_t)k, src, s->blk.len[b] * s->c.esize,
                                &s->sx[k]);
}

/* Posts every receive and the first send; copies the own block in. */
static tutti_status_t start_data(gather_state_t *s, tutti_alg_exec_t *x)
{
    int n = s->c.inst->group_size, r = s->c.inst->rank;
    tutti_status_t st;

    s->phase = PHASE_DATA;
    tutti_alg_exec_phase(x, "data");
    s->recvd = s->sent = s->send_done = 0;
    for (int k = 0; k < n - 1; k++) {
        int b = tutti_alg_ring_mod(r - k - 1, n);
        st = x->core->recv(x, tutti_alg_ring_mod(r - 1, n), (uint32_t)k,
                           block(s, x, b), s->blk.len[b] * s->c.esize, NULL,
                           &s->rx[k]);
        if (st != TUTTI_OK)
            return st;
    }
    if (n > 1) {
        if ((st = post_send(s, x, 0)) != TUTTI_OK)
            return st;
        s->sent = 1;
    }
    if (x->sendbuf != x->recvbuf && s->blk.len[r] > 0)
        memcpy(block(s, x, r), x->sendbuf, s->blk.len[r] * s->c.esize);
    return TUTTI_OK;
}

/* With every record in: the sizes, then the decision whether data moves. */
static tutti_status_t sizes_known(gather_state_t *s, tutti_alg_exec_t *x,
                                  int *fits_out)
{
    const tutti_alg_ring_rec_t *rec = s->c.rec;
    int n = s->c.inst->group_size;
    uint64_t total = 0;

    for (int i = 0; i < n; i++) {
        x->recv_counts[i] = (size_t)rec[i].count;
        total = tutti_alg_ring_add(total, rec[i].count);
    }
    x->recv_total = total > SIZE_MAX ? SIZE_MAX : (size_t)total;
    tutti_status_t st = tutti_alg_ring_check_fit(x, IMPL, rec, &total,
                                                 fits_out);
    if (st != TUTTI_OK || !*fits_out)
        return st;
    tutti_alg_ring_blocks_set(&s->blk, n, x->recv_counts);
    return TUTTI_OK;
}

static tutti_status_t gather_progress(void *state, tutti_alg_exec_t *x)
{
    gather_state_t *s = state;
    int steps = s->c.inst->group_size - 1, fits = 0;
    tutti_status_t st;

    if (s->phase == PHASE_SIZES) {
        if ((st = tutti_alg_ring_meta_test(x, &s->c.meta)) != TUTTI_OK)
            return st;
        if ((st = sizes_known(s, x, &fits)) != TUTTI_OK || !fits)
            return st;
        if ((st = start_data(s, x)) != TUTTI_OK)
            return st;
    }
    /* One pass: nothing changes until the core progresses the transport. */
    st = TUTTI_OK;
    while (s->recvd < steps &&
           (st = x->core->test(x, &s->rx[s->recvd])) == TUTTI_OK)
        s->recvd++;
    if (s->recvd < steps && st != TUTTI_INPROGRESS)
        return st;
    /* The block received at step k leaves at step k+1. */
    while (s->sent < steps && s->sent <= s->recvd) {
        if ((st = post_send(s, x, s->sent)) != TUTTI_OK)
            return st;
        s->sent++;
    }
    while (s->send_done < s->sent &&
           (st = x->core->test(x, &s->sx[s->send_done])) == TUTTI_OK)
        s->send_done++;
    if (s->send_done < s->sent && st != TUTTI_INPROGRESS)
        return st;
    return s->recvd == steps && s->send_done == steps ? TUTTI_OK
                                                      : TUTTI_INPROGRESS;
}

static tutti_status_t gather_run(void *state, tutti_alg_exec_t *x)
{
    gather_state_t *s = state;
    const tutti_alg_instance_t *in = s->c.inst;
    tutti_status_t st;

    if (!s->c.per_rank) {
        if (in->count == 0)
            return TUTTI_OK;
        if ((st = start_data(s, x)) != TUTTI_OK)
            return st;
        return gather_progress(s, x);
    }
    /* Per-rank counts: sizes first, even when this member sends nothing. */
    s->phase = PHASE_SIZES;
    tutti_alg_exec_phase(x, "sizes");
    tutti_alg_ring_rec_t *rec = s->c.rec;
    rec[in->rank].count = x->send_count;
    rec[in->rank].capacity = x->recv_capacity;
    st = tutti_alg_ring_meta_post(x, &s->c.meta, TUTTI_ALG_RING_TAG_META,
                                  &rec[in->rank], 0, rec, sizeof(rec[0]));
    return st != TUTTI_OK ? st : gather_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_ring_allgather_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = gather_init_context,
    .run = gather_run, .progress = gather_progress,
    .fini_context = gather_fini_context};
