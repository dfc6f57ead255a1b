/*
 * RingReduceScatter: reduce_scatter around a ring of all members.  Cost:
 * n-1 steps per round (one round unless a block is longer than the chunk
 * below), in which each member sends and receives n-1 partial blocks.
 * Limits: CPU memory; out of place, two scratch buffers of one chunk.
 *
 * At step k (0 .. n-2) member r sends to its right neighbour the partial
 * result of block r-k-1 and receives from its left one the partial of block
 * r-k-2, reducing it on receipt with its own input of that block, read
 * straight from sendbuf.  After n-1 steps the block that arrives is block r
 * with every member's input in it: that last receive writes the result
 * where it belongs in recvbuf, so nothing is copied at the end.
 *
 * In place, the partials of block b live at block b of the buffer itself.
 * Out of place, sendbuf is not ours to write and recvbuf holds one block,
 * so partials go to two scratch buffers made at init_context (one is
 * received into while the other is sent from).  They are one chunk each
 * (rule parameter "chunk", bytes, default 1M): blocks longer than that
 * are reduced in rounds of one chunk-sized piece of every block, which
 * bounds the scratch also for per-rank counts, unknown until each call.
 * Members in place cut the same rounds, so members may differ in whether
 * they run in place.
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "ring.h"
#include "ring_counts.h"

#define IMPL "RingReduceScatter"
#define DEFAULT_CHUNK (1024 * 1024)

typedef struct {
    uint64_t chunk; /* bytes of one scratch buffer */
} rs_plan_t;

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t esize;
    int per_rank;
    size_t chunk;                /* elements one scratch buffer holds */
    char *scratch[2];            /* NULL when no call needs them */
    tutti_alg_ring_blocks_t blk; /* per block, in sendbuf */
    size_t piece;                /* elements of a block per round, this
                                    call */
    size_t rounds, round;        /* this call */
    int step;                    /* 0 .. n-2 within the round */
    char *last_dst;              /* where the previous step's receive
                                    went */
    tutti_xfer_t sx, rx;
} rs_state_t;

static tutti_status_t rs_init_params(const tutti_alg_instance_t *inst,
                                     const tutti_core_ops_t *core,
                                     void *details, size_t *len_out)
{
    rs_plan_t plan;
    size_t esize = tutti_dtype_size(inst->dtype);
    tutti_status_t st = core->param_size(inst, "chunk", DEFAULT_CHUNK,
                                         &plan.chunk);
    if (st != TUTTI_OK)
        return st;
    if (plan.chunk < esize || plan.chunk > SIZE_MAX / 4)
        return core->error(TUTTI_ERR_CONFIG, IMPL ": chunk %llu: expected "
                           "at least one element (%zu bytes) and at most "
                           "%zu", (unsigned long long)plan.chunk, esize,
                           (size_t)SIZE_MAX / 4);
    memcpy(details, &plan, sizeof(plan));
    *len_out = sizeof(plan);
    return TUTTI_OK;
}

static void rs_fini_context(void *state)
{
    rs_state_t *s = state;
    if (s == NULL)
        return;
    free(s->scratch[0]);
    free(s->scratch[1]);
    tutti_alg_ring_blocks_fini(&s->blk);
    free(s);
}

static tutti_status_t rs_init_context(const tutti_alg_instance_t *inst,
                                      const tutti_core_ops_t *core,
                                      const void *details, size_t details_len,
                                      void **state_out)
{
    size_t n = (size_t)inst->group_size;
    rs_plan_t plan = {DEFAULT_CHUNK};
    rs_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": out of memory");
    if (details_len == sizeof(plan))
        memcpy(&plan, details, sizeof(plan));
    s->inst = inst;
    s->esize = tutti_dtype_size(inst->dtype);
    s->per_rank = inst->count == TUTTI_COUNT_PER_RANK;
    s->chunk = (size_t)plan.chunk / s->esize;
    if (!s->per_rank && inst->count < s->chunk)
        s->chunk = inst->count;
    if (tutti_alg_ring_blocks_init(&s->blk, inst) != TUTTI_OK)
        goto err_free_state;
    /* Only groups of 3 or more keep partials between steps. */
    if (n > 2 && s->chunk > 0) {
        s->scratch[0] = malloc(s->chunk * s->esize);
        s->scratch[1] = malloc(s->chunk * s->esize);
        if (s->scratch[0] == NULL || s->scratch[1] == NULL)
            goto err_free_state;
    }
    *state_out = s;
    return TUTTI_OK;

err_free_state:
    rs_fini_context(s);
    return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": no memory for a group "
                       "of %zu with two %zu-byte scratch buffers", n,
                       (size_t)plan.chunk);
}

/* Offset and length, in elements within block @p b, of this round's piece. */
static void piece_of(const rs_state_t *s, int b, size_t *po, size_t *pl)
{
    size_t start = s->round * s->piece;
    *po = start < s->blk.len[b] ? start : s->blk.len[b];
    *pl = s->blk.len[b] - *po < s->piece ? s->blk.len[b] - *po : s->piece;
}

/* Posts the send and the reducing receive of the current step. */
static tutti_status_t post_step(rs_state_t *s, tutti_alg_exec_t *x)
{
    const tutti_alg_instance_t *in = s->inst;
    int n = in->group_size, r = in->rank, k = s->step;
    int sb = tutti_alg_ring_mod(r - k - 1, n); /* block sent */
    int rb = tutti_alg_ring_mod(r - k - 2, n); /* block received */
    int in_place = x->sendbuf == x->recvbuf;
    size_t es = s->esize, spo, spl, rpo, rpl;
    const char *src;
    char *dst;
    tutti_status_t st;

    piece_of(s, sb, &spo, &spl);
    piece_of(s, rb, &rpo, &rpl);
    src = k == 0 ? tutti_alg_ring_cat(x->sendbuf, (s->blk.off[sb] + spo) * es)
                 : s->last_dst;
    if (in_place)
        dst = tutti_alg_ring_at(x->recvbuf, (s->blk.off[rb] + rpo) * es);
    else if (k == n - 2) /* rb == r: the result, at the start of recvbuf */
        dst = tutti_alg_ring_at(x->recvbuf, rpo * es);
    else
        dst = s->scratch[k % 2];
    uint32_t tag = (uint32_t)(s->round * (size_t)(n - 1) + (size_t)k);
    st = x->core->send(x, tutti_alg_ring_mod(r + 1, n), tag, src, spl * es,
                       &s->sx);
    if (st != TUTTI_OK)
        return st;
    tutti_recv_reduce_t red = {
        tutti_alg_ring_cat(x->sendbuf, (s->blk.off[rb] + rpo) * es)};
    s->last_dst = dst;
    return x->core->recv(x, tutti_alg_ring_mod(r - 1, n), tag, dst, rpl * es,
                         &red, &s->rx);
}

static tutti_status_t rs_progress(void *state, tutti_alg_exec_t *x)
{
    rs_state_t *s = state;
    int n = s->inst->group_size;
    tutti_status_t st;

    if ((st = x->core->test(x, &s->sx)) != TUTTI_OK)
        return st;
    if ((st = x->core->test(x, &s->rx)) != TUTTI_OK)
        return st;
    if (++s->step == n - 1) {
        s->step = 0;
        if (++s->round == s->rounds)
            return TUTTI_OK;
    }
    st = post_step(s, x);
    return st == TUTTI_OK ? TUTTI_INPROGRESS : st;
}

static tutti_status_t rs_run(void *state, tutti_alg_exec_t *x)
{
    rs_state_t *s = state;
    const tutti_alg_instance_t *in = s->inst;
    int n = in->group_size, r = in->rank;
    size_t maxlen = 0;

    if (s->per_rank) {
        tutti_alg_ring_blocks_set(&s->blk, n, x->counts);
        for (int i = 0; i < n; i++)
            x->recv_counts[i] = x->counts[i];
    }
    x->recv_total = s->blk.len[r];
    for (int i = 0; i < n; i++)
        maxlen = s->blk.len[i] > maxlen ? s->blk.len[i] : maxlen;
    if (maxlen == 0)
        return TUTTI_OK;
    if (n == 1) {
        if (x->sendbuf != x->recvbuf)
            memcpy(x->recvbuf, x->sendbuf, s->blk.len[0] * s->esize);
        return TUTTI_OK;
    }
    /* Pieces of at most one scratch buffer in groups that keep partials
     * in scratch.  In place needs none, but every member must cut the
     * same pieces, whatever each chose alone: a member's in place is not
     * its peers' (each decides by its own buffers, as NCCL's callers do). */
    s->piece = maxlen;
    if (n > 2 && s->chunk < maxlen)
        s->piece = s->chunk;
    s->rounds = (maxlen + s->piece - 1) / s->piece;
    s->round = 0;
    s->step = 0;
    tutti_status_t st = post_step(s, x);
    return st == TUTTI_OK ? TUTTI_INPROGRESS : st;
}

const tutti_alg_ops_t tutti_alg_ring_reduce_scatter_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_params = rs_init_params,
    .init_context = rs_init_context, .run = rs_run, .progress = rs_progress,
    .fini_context = rs_fini_context};
