/* Message channels: slot rings with fragment streaming. */
#include <stdlib.h>
#include <string.h>

#include "chan.h"
#include "log.h"

#define FRAG_HDR_BYTES TUTTI_CACHELINE

typedef struct {
    tutti_wire_key_t key;
    uint64_t msg_len;
    uint64_t frag_off;
    uint32_t frag_len;
    uint32_t reserved;
} frag_hdr_t;

_Static_assert(sizeof(frag_hdr_t) <= FRAG_HDR_BYTES, "fragment header");

static size_t slot_stride(size_t slot_size)
{
    return FRAG_HDR_BYTES + slot_size;
}

size_t tutti__chan_bytes(uint32_t slots, size_t slot_size)
{
    return sizeof(tutti__chan_t) + (size_t)slots * slot_stride(slot_size);
}

void tutti__chan_init(tutti__chan_t *ch)
{
    atomic_store_explicit(&ch->head, 0, memory_order_relaxed);
    atomic_store_explicit(&ch->tail, 0, memory_order_relaxed);
}

static frag_hdr_t *slot_at(const tutti__chan_ep_t *ep, tutti__chan_t *ch,
                           uint64_t seq)
{
    char *base = (char *)(ch + 1);
    return (frag_hdr_t *)(base + (seq % ep->slots) * slot_stride(ep->slot_size));
}

static char *slot_data(frag_hdr_t *h)
{
    return (char *)h + FRAG_HDR_BYTES;
}

tutti_status_t tutti__chan_ep_init(tutti__chan_ep_t *ep, int rank, int size,
                                   uint32_t slots, size_t slot_size,
                                   const char *tp_name)
{
    memset(ep, 0, sizeof(*ep));
    ep->peers = calloc((size_t)size, sizeof(*ep->peers));
    if (ep->peers == NULL)
        return TUTTI_ERR_NO_MEMORY;
    ep->rank = rank;
    ep->size = size;
    ep->slots = slots;
    ep->slot_size = slot_size;
    ep->tp_name = tp_name;
    return TUTTI_OK;
}

void tutti__chan_ep_fini(tutti__chan_ep_t *ep)
{
    free(ep->peers);
    ep->peers = NULL;
}

static void enqueue(tutti_tp_op_t **head, tutti_tp_op_t **tail,
                    tutti_tp_op_t *op)
{
    op->next = NULL;
    if (*tail)
        (*tail)->next = op;
    else
        *head = op;
    *tail = op;
}

/* Queues a send or a receive for its peer. */
static tutti_status_t post(tutti__chan_ep_t *ep, tutti_tp_op_t *op, int is_recv)
{
    if (op->peer < 0 || op->peer >= ep->size || op->peer == ep->rank)
        return tutti__error(TUTTI_ERR_INVALID_ARG, ep->tp_name,
                            "rank %d: peer %d is not another member of a "
                            "group of %d", ep->rank, op->peer, ep->size);
    tutti__chan_peer_t *p = &ep->peers[op->peer];
    op->is_recv = is_recv;
    op->done = 0;
    op->status = TUTTI_INPROGRESS;
    if (is_recv)
        enqueue(&p->recvq, &p->recvq_tail, op);
    else
        enqueue(&p->sendq, &p->sendq_tail, op);
    return TUTTI_OK;
}

tutti_status_t tutti__chan_send(tutti__chan_ep_t *ep, tutti_tp_op_t *op)
{
    return post(ep, op, 0);
}

tutti_status_t tutti__chan_recv(tutti__chan_ep_t *ep, tutti_tp_op_t *op)
{
    return post(ep, op, 1);
}

/* Writes as many fragments of queued sends as there are free slots. */
static int push_sends(tutti__chan_ep_t *ep, tutti__chan_peer_t *p)
{
    int moved = 0;
    while (p->sendq != NULL) {
        if (p->out_head - p->out_tail_seen >= ep->slots) {
            p->out_tail_seen =
                atomic_load_explicit(&p->out->tail, memory_order_acquire);
            if (p->out_head - p->out_tail_seen >= ep->slots)
                break;
        }
        tutti_tp_op_t *op = p->sendq;
        size_t frag = op->len - op->done;
        if (frag > ep->slot_size)
            frag = ep->slot_size;
        frag_hdr_t *h = slot_at(ep, p->out, p->out_head);
        h->key = op->key;
        h->msg_len = op->len;
        h->frag_off = op->done;
        h->frag_len = (uint32_t)frag;
        if (frag > 0)
            memcpy(slot_data(h), (const char *)op->sbuf + op->done, frag);
        op->done += frag;
        p->out_head++;
        atomic_store_explicit(&p->out->head, p->out_head, memory_order_release);
        moved++;
        if (op->done == op->len) {
            p->sendq = op->next;
            if (p->sendq == NULL)
                p->sendq_tail = NULL;
            op->status = TUTTI_OK;
        }
    }
    return moved;
}

static int key_eq(const tutti_wire_key_t *a, const tutti_wire_key_t *b)
{
    return a->instance == b->instance && a->step == b->step && a->tag == b->tag;
}

/* Takes the posted receive for @p key off the queue, or NULL. */
static tutti_tp_op_t *match(tutti__chan_peer_t *p, const tutti_wire_key_t *key)
{
    tutti_tp_op_t *prev = NULL;
    for (tutti_tp_op_t *op = p->recvq; op != NULL; prev = op, op = op->next) {
        if (!key_eq(&op->key, key))
            continue;
        if (prev)
            prev->next = op->next;
        else
            p->recvq = op->next;
        if (p->recvq_tail == op)
            p->recvq_tail = prev;
        op->next = NULL;
        return op;
    }
    return NULL;
}

static void deliver(tutti_tp_op_t *op, const frag_hdr_t *h, const char *data)
{
    char *dst = (char *)op->rbuf + h->frag_off;
    if (h->frag_len == 0)
        return;
    if (op->reduce.fn != NULL) {
        size_t esize = tutti_dtype_size(op->reduce.dtype);
        op->reduce.fn(op->reduce.dtype, op->reduce.op, dst,
                      (const char *)op->reduce.local + h->frag_off, data,
                      h->frag_len / esize);
    } else {
        memcpy(dst, data, h->frag_len);
    }
}

/* Starts receiving the message whose first fragment is @p h.  Returns 0 if
 * no receive is posted for it yet (it waits at the head of the channel). */
static int begin_message(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                         const frag_hdr_t *h, int peer)
{
    tutti_tp_op_t *op = match(p, &h->key);
    if (op == NULL)
        return 0;
    if (op->len != h->msg_len) {
        op->status = tutti__error(
            TUTTI_ERR_TRUNCATED, ep->tp_name,
            "rank %d: message from rank %d (instance 0x%llx step %u tag %u) "
            "has %llu bytes, the receive expects %zu", ep->rank, peer,
            (unsigned long long)h->key.instance, h->key.step, h->key.tag,
            (unsigned long long)h->msg_len, op->len);
        p->discard_left = h->msg_len;
        p->discarding = 1;
        return 1;
    }
    p->cur_recv = op;
    return 1;
}

/* Consumes fragments that have arrived from @p peer. */
static int drain(tutti__chan_ep_t *ep, tutti__chan_peer_t *p, int peer)
{
    int moved = 0;
    uint64_t head = atomic_load_explicit(&p->in->head, memory_order_acquire);
    while (p->in_tail < head) {
        frag_hdr_t *h = slot_at(ep, p->in, p->in_tail);
        if (p->cur_recv == NULL && !p->discarding &&
            !begin_message(ep, p, h, peer))
            break;
        if (p->discarding) {
            p->discard_left -= h->frag_len;
            p->discarding = p->discard_left > 0;
        } else {
            tutti_tp_op_t *op = p->cur_recv;
            deliver(op, h, slot_data(h));
            op->done += h->frag_len;
            if (op->done == op->len) {
                p->cur_recv = NULL;
                op->status = TUTTI_OK;
            }
        }
        p->in_tail++;
        atomic_store_explicit(&p->in->tail, p->in_tail, memory_order_release);
        moved++;
    }
    return moved;
}

int tutti__chan_progress(tutti__chan_ep_t *ep)
{
    int moved = 0;
    for (int i = 0; i < ep->size; i++) {
        if (i == ep->rank)
            continue;
        tutti__chan_peer_t *p = &ep->peers[i];
        if (p->sendq != NULL)
            moved += push_sends(ep, p);
        moved += drain(ep, p, i);
    }
    return moved;
}

tutti_status_t tutti__chan_tp_send(tutti_tp_ep_t *ep, tutti_tp_op_t *op)
{
    return tutti__chan_send((tutti__chan_ep_t *)ep, op);
}

tutti_status_t tutti__chan_tp_recv(tutti_tp_ep_t *ep, tutti_tp_op_t *op)
{
    return tutti__chan_recv((tutti__chan_ep_t *)ep, op);
}

int tutti__chan_tp_progress(tutti_tp_ep_t *ep)
{
    return tutti__chan_progress((tutti__chan_ep_t *)ep);
}
