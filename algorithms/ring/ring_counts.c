/*
 * What the ring module's implementations share for per-rank counts (see
 * ring_counts.h): the counts' state, record exchanges and the too-small
 * decision of RingAllgather and PairwiseAlltoall, and the block layouts,
 * which RingReduceScatter uses too.
 *
 * The records are a few bytes, so every member sends its own straight to
 * every peer in one round: one latency, where a ring pass would take n-1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ring_counts.h"

tutti_status_t tutti_alg_ring_blocks_init(tutti_alg_ring_blocks_t *b,
                                          const tutti_alg_instance_t *inst)
{
    size_t n = (size_t)inst->group_size;

    b->off = calloc(n, sizeof(*b->off));
    b->len = calloc(n, sizeof(*b->len));
    if (b->off == NULL || b->len == NULL)
        return TUTTI_ERR_NO_MEMORY;
    for (size_t i = 0; i < n && inst->count != TUTTI_COUNT_PER_RANK; i++) {
        b->off[i] = i * inst->count;
        b->len[i] = inst->count;
    }
    return TUTTI_OK;
}

void tutti_alg_ring_blocks_fini(tutti_alg_ring_blocks_t *b)
{
    free(b->off);
    free(b->len);
}

void tutti_alg_ring_blocks_set(tutti_alg_ring_blocks_t *b, int n,
                               const size_t *counts)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        b->off[i] = off;
        b->len[i] = counts[i];
        off += counts[i];
    }
}

tutti_status_t tutti_alg_ring_counts_init(tutti_alg_ring_counts_t *c,
                                          const tutti_alg_instance_t *inst,
                                          tutti_xfer_t *sx, tutti_xfer_t *rx)
{
    size_t n = (size_t)inst->group_size;

    c->inst = inst;
    c->esize = tutti_dtype_size(inst->dtype);
    c->per_rank = inst->count == TUTTI_COUNT_PER_RANK;
    if (!c->per_rank)
        return TUTTI_OK;
    c->rec = calloc(n, sizeof(*c->rec));
    if (c->rec == NULL)
        return TUTTI_ERR_NO_MEMORY;
    if (sx != NULL && rx != NULL) {
        c->meta.sx = sx;
        c->meta.rx = rx;
        return TUTTI_OK;
    }
    c->meta.own_slots = 1;
    c->meta.sx = calloc(n, sizeof(*c->meta.sx));
    c->meta.rx = calloc(n, sizeof(*c->meta.rx));
    if (c->meta.sx == NULL || c->meta.rx == NULL)
        return TUTTI_ERR_NO_MEMORY;
    return TUTTI_OK;
}

void tutti_alg_ring_counts_fini(tutti_alg_ring_counts_t *c)
{
    free(c->rec);
    if (c->meta.own_slots) {
        free(c->meta.sx);
        free(c->meta.rx);
    }
}

tutti_status_t tutti_alg_ring_meta_post(tutti_alg_exec_t *x,
                                        tutti_alg_ring_meta_t *m, uint32_t tag,
                                        const void *send, size_t send_stride,
                                        void *recv, size_t rec_bytes)
{
    int n = x->inst->group_size, r = x->inst->rank;
    tutti_status_t st;

    m->next = 0;
    /* Receives first, so no record arrives before its receive is posted. */
    for (int d = 1; d < n; d++) {
        int p = tutti_alg_ring_mod(r - d, n);
        st = x->core->recv(x, p, tag, (char *)recv + (size_t)p * rec_bytes,
                           rec_bytes, NULL, &m->rx[p]);
        if (st != TUTTI_OK)
            return st;
    }
    for (int d = 1; d < n; d++) {
        int p = tutti_alg_ring_mod(r + d, n);
        st = x->core->send(x, p, tag,
                           (const char *)send + (size_t)p * send_stride,
                           rec_bytes, &m->sx[p]);
        if (st != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

tutti_status_t tutti_alg_ring_meta_test(tutti_alg_exec_t *x,
                                        tutti_alg_ring_meta_t *m)
{
    int n = x->inst->group_size, r = x->inst->rank;
    tutti_status_t st;

    for (; m->next < n; m->next++) {
        if (m->next == r)
            continue;
        if ((st = x->core->test(x, &m->sx[m->next])) != TUTTI_OK)
            return st;
        if ((st = x->core->test(x, &m->rx[m->next])) != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

/* Advances *@p used by what snprintf wrote into a buffer of @p len bytes,
 * stopping at its end. */
static void advance(size_t len, size_t *used, int wrote)
{
    if (wrote > 0)
        *used += (size_t)wrote;
    if (*used > len)
        *used = len;
}

#define SHORT_NAMED 8 /* short ranks named in the message; more are counted */

tutti_status_t tutti_alg_ring_check_fit(tutti_alg_exec_t *x, const char *impl,
                                        const tutti_alg_ring_rec_t *recs,
                                        const uint64_t *need, int *fits_out)
{
    int n = x->inst->group_size, nshort = 0;
    char msg[400] = "";
    size_t used = 0;

    for (int i = 0; i < n; i++) {
        uint64_t want = need != NULL ? *need : recs[i].count;
        if (recs[i].capacity >= want)
            continue;
        if (nshort < SHORT_NAMED)
            advance(sizeof(msg), &used,
                    snprintf(msg + used, sizeof(msg) - used,
                             "%srank %d holds %llu elements and needs %llu",
                             nshort == 0 ? "" : ", ", i,
                             (unsigned long long)recs[i].capacity,
                             (unsigned long long)want));
        nshort++;
    }
    *fits_out = nshort == 0;
    if (nshort == 0)
        return TUTTI_OK;
    if (x->recvbuf == NULL && x->recv_capacity == 0)
        return TUTTI_OK; /* this member asked for the sizes only */
    if (nshort > SHORT_NAMED)
        advance(sizeof(msg), &used,
                snprintf(msg + used, sizeof(msg) - used,
                         ", and %d more ranks", nshort - SHORT_NAMED));
    return x->core->error(TUTTI_ERR_TOO_SMALL,
                          "%s: instance 0x%llx step %llu: receive buffer too "
                          "small, no data moved: %s", impl,
                          (unsigned long long)x->inst->instance_key,
                          (unsigned long long)x->step, msg);
}
