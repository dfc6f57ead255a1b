/*
 * BruckAllgather: latency-optimal allgather for small messages, for any
 * group size, in ceil(log2 n) steps (a ring needs n - 1), in which each
 * member receives the n-1 other blocks once.  Limits: equal counts, CPU
 * memory.
 *
 * At step k (distance d = 2^k) a member holds the blocks of ranks r .. r+d-1
 * (mod n); it sends the first min(d, n - d) of them to rank r - d and gets
 * as many from rank r + d, the blocks of ranks r+d .. r+2d-1.  The blocks
 * go straight to their final place in recvbuf: a run of consecutive ranks
 * mod n is at most two pieces of it (split where it wraps past rank n - 1),
 * so a step is up to two sends and two receives and nothing is copied but
 * the member's own block (not even that in place).  Sender and receiver
 * compute the same run of ranks, so they split it alike.  Equal counts
 * only: with per-rank counts an instance selects as large and gets the
 * ring.
 */
#include <string.h>
#include <stdlib.h>

#include <tutti/module.h>

#include "tree.h"

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t block;      /* bytes per rank */
    int dist;          /* current step's distance; 0: not started */
    tutti_xfer_t sx[2], rx[2];
    int nsend, nrecv;
} bruck_state_t;

static tutti_status_t bruck_init_context(const tutti_alg_instance_t *inst,
                                         const tutti_core_ops_t *core,
                                         const void *details,
                                         size_t details_len, void **state_out)
{
    bruck_state_t *s;
    (void)details;
    (void)details_len;
    if (inst->count == TUTTI_COUNT_PER_RANK)
        return core->error(TUTTI_ERR_UNSUPPORTED, "BruckAllgather: equal "
                           "counts only (instance 0x%llx has per-rank "
                           "counts); use RingAllgather",
                           (unsigned long long)inst->instance_key);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "BruckAllgather: out of "
                           "memory");
    s->inst = inst;
    s->block = inst->count * tutti_dtype_size(inst->dtype);
    *state_out = s;
    return TUTTI_OK;
}

static void bruck_fini_context(void *state)
{
    free(state);
}

/* Posts transfers of the blocks of ranks first .. first+nblocks-1 (mod n)
 * of recvbuf, in at most two pieces; tags 2*step and 2*step+1. */
static tutti_status_t post_run(bruck_state_t *s, tutti_alg_exec_t *x,
                               int send, int peer, int first, int nblocks,
                               uint32_t tag)
{
    const tutti_alg_instance_t *in = s->inst;
    int n = in->group_size;
    char *out = x->recvbuf;
    int piece1 = first + nblocks <= n ? nblocks : n - first;
    int pieces[2][2] = {{first, piece1}, {0, nblocks - piece1}};
    tutti_status_t st = TUTTI_OK;

    for (int i = 0; i < 2 && st == TUTTI_OK; i++) {
        if (pieces[i][1] == 0)
            continue;
        char *buf = out + (size_t)pieces[i][0] * s->block;
        size_t len = (size_t)pieces[i][1] * s->block;
        if (send)
            st = tutti_alg_send_block(x, peer, tag + (uint32_t)i, buf, len,
                                      &s->sx[s->nsend++]);
        else
            st = x->core->recv(x, peer, tag + (uint32_t)i, buf, len, NULL,
                               &s->rx[s->nrecv++]);
    }
    return st;
}

static tutti_status_t post_step(bruck_state_t *s, tutti_alg_exec_t *x)
{
    int n = s->inst->group_size, r = s->inst->rank, d = s->dist;
    int nblocks = d < n - d ? d : n - d;
    uint32_t tag = 0;
    for (int k = 1; k < d; k *= 2)
        tag += 2;
    s->nsend = s->nrecv = 0;
    tutti_status_t st = post_run(s, x, 1, (r - d + n) % n, r, nblocks, tag);
    if (st != TUTTI_OK)
        return st;
    return post_run(s, x, 0, (r + d) % n, (r + d) % n, nblocks, tag);
}

static tutti_status_t bruck_progress(void *state, tutti_alg_exec_t *x)
{
    bruck_state_t *s = state;
    tutti_status_t st;

    for (int i = 0; i < s->nsend; i++)
        if ((st = x->core->test(x, &s->sx[i])) != TUTTI_OK)
            return st;
    for (int i = 0; i < s->nrecv; i++)
        if ((st = x->core->test(x, &s->rx[i])) != TUTTI_OK)
            return st;
    s->dist *= 2;
    if (s->dist >= s->inst->group_size)
        return TUTTI_OK;
    st = post_step(s, x);
    return st == TUTTI_OK ? TUTTI_INPROGRESS : st;
}

static tutti_status_t bruck_run(void *state, tutti_alg_exec_t *x)
{
    bruck_state_t *s = state;
    const tutti_alg_instance_t *in = s->inst;
    char *own = (char *)x->recvbuf + (size_t)in->rank * s->block;

    x->recv_total = in->count * (size_t)in->group_size;
    if (s->block == 0)
        return TUTTI_OK;
    if (x->sendbuf != x->recvbuf && x->sendbuf != own)
        memcpy(own, x->sendbuf, s->block);
    if (in->group_size == 1)
        return TUTTI_OK;
    s->dist = 1;
    tutti_status_t st = post_step(s, x);
    return st == TUTTI_OK ? TUTTI_INPROGRESS : st;
}

const tutti_alg_ops_t tutti_alg_tree_allgather_bruck_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = bruck_init_context,
    .run = bruck_run, .progress = bruck_progress,
    .fini_context = bruck_fini_context};
