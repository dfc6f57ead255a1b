/* Message channels: slot rings with fragment streaming, and single-copy
 * descriptors between processes (chan.h). */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport/chan.h"
#include "base/checksum.h"
#include "base/log.h"
#include "transport/chan_frag.h"

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
    atomic_store_explicit(&ch->tail, 0, memory_order_relaxed);
    atomic_store_explicit(&ch->sc_done, 0, memory_order_relaxed);
    atomic_store_explicit(&ch->sc_accept, 0, memory_order_relaxed);
}

static frag_hdr_t *slot_at(const tutti__chan_ep_t *ep, tutti__chan_t *ch,
                           uint64_t seq)
{
    char *base = (char *)(ch + 1);
    return (frag_hdr_t *)(base +
                          (ep->slot_mask ? seq & ep->slot_mask
                                         : seq % ep->slots) *
                              slot_stride(ep->slot_size));
}

/* Reads the header of fragment @p h, which has arrived, into @p f. */
static void frag_read(const frag_hdr_t *h, frag_t *f)
{
    f->h = h;
    f->key = h->key;
    f->frag_len = h->frag_len;
    f->flags = h->flags;
    if (h->flags & FRAG_INLINE) {
        f->msg_len = h->frag_len;
        f->frag_off = 0;
        f->sum = 0;
        f->data = (char *)h->u.data;
    } else {
        f->msg_len = h->u.x.msg_len;
        f->frag_off = h->u.x.frag_off;
        f->sum = h->u.x.sum;
        f->data = tutti__chan_slot_data(h);
    }
}

/* Publishes fragment number @p seq, whose slot @p h is written. */
static void frag_publish(frag_hdr_t *h, uint64_t seq)
{
    atomic_store_explicit(&h->seq, seq + 1, memory_order_release);
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
    ep->slot_mask = (slots & (slots - 1)) == 0 ? slots - 1 : 0;
    ep->slot_size = slot_size;
    ep->tp_name = tp_name;
    ep->pid = (int)getpid();
    ep->sc_min = TUTTI_CHAN_SC_MIN;
    ep->sc_max = SIZE_MAX;
    ep->map_min = TUTTI_CHAN_MAP_MIN;
    const char *hook = getenv("TUTTI_TEST_CORRUPT");
    int hook_rank;
    unsigned long long hook_at;
    if (hook != NULL && sscanf(hook, "%d:%llu", &hook_rank, &hook_at) == 2 &&
        hook_rank == rank) {
        ep->corrupt_armed = 1;
        ep->corrupt_at = hook_at;
        ep->check = 1;
    }
    return TUTTI_OK;
}

void tutti__chan_set_verify(tutti__chan_ep_t *ep, int verify)
{
    /* mac: only the job's processes reach the memory, nothing between
     * the ends could alter it, so the checksum serves. */
    ep->verify = verify != TUTTI_TP_VERIFY_OFF;
    ep->check = ep->verify || ep->corrupt_armed;
}

void tutti__chan_ep_fini(tutti__chan_ep_t *ep)
{
    const tutti__chan_stats_t *s = &ep->stats;
    if (ep->peers != NULL)
        tutti__log(TUTTI_LOG_DEBUG, ep->tp_name,
                   "rank %d: received %llu message(s) by single copy (%llu "
                   "of them from registered memory) and %llu of %d+ bytes "
                   "through the slots; sent %llu by single copy (%llu "
                   "registered)", ep->rank, (unsigned long long)s->sc_in,
                   (unsigned long long)s->map_in,
                   (unsigned long long)s->ring_large_in, TUTTI_CHAN_SC_MIN,
                   (unsigned long long)s->sc_out,
                   (unsigned long long)s->map_out);
    /* Messages nobody received (a group left mid-operation) die here. */
    for (int i = 0; ep->peers != NULL && i < ep->size; i++) {
        tutti__chan_unexp_t *u = ep->peers[i].unexp;
        while (u != NULL) {
            tutti__chan_unexp_t *next = u->next;
            free(u);
            u = next;
        }
        tutti__chan_maps_destroy(ep->peers[i].maps);
    }
    free(ep->peers);
    ep->peers = NULL;
    free(ep->bounce);
    ep->bounce = NULL;
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

static int key_eq(const tutti_wire_key_t *a, const tutti_wire_key_t *b)
{
    return a->instance == b->instance && a->step == b->step && a->tag == b->tag;
}

static tutti_status_t truncated(const tutti__chan_ep_t *ep, int peer,
                                const tutti_wire_key_t *key, uint64_t msg_len,
                                size_t want)
{
    return tutti__error(
        TUTTI_ERR_TRUNCATED, ep->tp_name,
        "rank %d: message from rank %d (instance 0x%llx step %u tag %u) "
        "has %llu bytes, the receive expects %zu", ep->rank, peer,
        (unsigned long long)key->instance, key->step, key->tag,
        (unsigned long long)msg_len, want);
}

/* Checks @p op's peer and marks it in progress. */
static tutti_status_t op_start(tutti__chan_ep_t *ep, tutti_tp_op_t *op,
                               int is_recv)
{
    if (op->peer < 0 || op->peer >= ep->size || op->peer == ep->rank)
        return tutti__error(TUTTI_ERR_INVALID_ARG, ep->tp_name,
                            "rank %d: peer %d is not another member of a "
                            "group of %d", ep->rank, op->peer, ep->size);
    op->is_recv = is_recv;
    op->done = 0;
    op->status = TUTTI_INPROGRESS;
    return TUTTI_OK;
}

/* Unlinks and returns the oldest buffered message under @p key, or NULL. */
static tutti__chan_unexp_t *unexp_take(tutti__chan_peer_t *p,
                                       const tutti_wire_key_t *key)
{
    tutti__chan_unexp_t *prev = NULL;
    for (tutti__chan_unexp_t *u = p->unexp; u != NULL; prev = u, u = u->next) {
        if (!key_eq(&u->key, key))
            continue;
        if (prev)
            prev->next = u->next;
        else
            p->unexp = u->next;
        if (p->unexp_tail == u)
            p->unexp_tail = prev;
        return u;
    }
    return NULL;
}

/* Gives buffered message @p u to @p op, just posted for it, and frees it.
 * If the rest of @p u is still on the ring, it streams straight into @p op
 * (or is dropped, on a size mismatch) as it arrives. */
static void unexp_claim(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                        tutti__chan_unexp_t *u, tutti_tp_op_t *op)
{
    int partial = p->filling == u;
    if (op->len != u->msg_len || u->status != TUTTI_OK) {
        op->status = u->status != TUTTI_OK
                         ? u->status
                         : truncated(ep, op->peer, &u->key, u->msg_len,
                                     op->len);
        p->discard_left = u->msg_len - u->got;
        p->discarding = partial && p->discard_left > 0;
    } else {
        tutti__chan_deliver(op, 0, u->data, u->got);
        op->done = u->got;
        if (partial)
            p->cur_recv = op;
        else
            op->status = TUTTI_OK;
    }
    if (partial)
        p->filling = NULL;
    free(u);
}

static int push_sends(tutti__chan_ep_t *ep, tutti__chan_peer_t *p);
static int drain(tutti__chan_ep_t *ep, tutti__chan_peer_t *p, int peer);

/* A send with none queued before it goes onto the ring at once, and a
 * receive takes what has already arrived: the message leaves, or is
 * taken, a progress call earlier (a small message's latency is a few such
 * calls). */
tutti_status_t tutti__chan_send(tutti__chan_ep_t *ep, tutti_tp_op_t *op)
{
    tutti_status_t st = op_start(ep, op, 0);
    if (st != TUTTI_OK)
        return st;
    tutti__chan_peer_t *p = &ep->peers[op->peer];
    enqueue(&p->sendq, &p->sendq_tail, op);
    if (p->sendq == op && p->out != NULL)
        push_sends(ep, p);
    return TUTTI_OK;
}

tutti_status_t tutti__chan_recv(tutti__chan_ep_t *ep, tutti_tp_op_t *op)
{
    tutti_status_t st = op_start(ep, op, 1);
    if (st != TUTTI_OK)
        return st;
    tutti__chan_peer_t *p = &ep->peers[op->peer];
    tutti__chan_unexp_t *u = p->unexp ? unexp_take(p, &op->key) : NULL;
    if (u != NULL) {
        unexp_claim(ep, p, u, op);
    } else {
        enqueue(&p->recvq, &p->recvq_tail, op);
        if (p->in != NULL)
            drain(ep, p, op->peer);
    }
    return TUTTI_OK;
}

/* True if @p op goes to @p p as a single-copy descriptor. */
static int goes_single_copy(const tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                            const tutti_tp_op_t *op)
{
    if (!(op->flags & TUTTI_TP_OP_WHOLE) || op->len < ep->sc_min ||
        op->len > ep->sc_max || op->done != 0)
        return 0;
    if (!p->out_sc_ok)
        p->out_sc_ok = (atomic_load_explicit(&p->out->sc_accept,
                                             memory_order_acquire) &
                        TUTTI_CHAN_ACCEPT_READV) != 0;
    return p->out_sc_ok;
}

/* True if @p op goes to @p p as a mapped descriptor: its buffer lies in
 * registered region @p r (filled then). */
static int goes_mapped(const tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                       const tutti_tp_op_t *op, tutti__mem_region_t *r)
{
    if (op->len < ep->map_min || op->done != 0)
        return 0;
    if (!p->out_map_ok)
        p->out_map_ok = (atomic_load_explicit(&p->out->sc_accept,
                                              memory_order_acquire) &
                         TUTTI_CHAN_ACCEPT_MAPPED) != 0;
    return p->out_map_ok && tutti__mem_find(op->sbuf, op->len, r);
}

/* Writes the descriptor of @p op into slot @p h, naming region @p r
 * (NULL: read with process_vm_readv); the op waits on the peer's reading
 * (scq) from now on. */
static void post_descriptor(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                            tutti_tp_op_t *op, frag_hdr_t *h,
                            const tutti__mem_region_t *r)
{
    h->key = op->key;
    h->u.x.msg_len = op->len;
    h->u.x.frag_off = 0;
    h->frag_len = 0;
    h->flags = FRAG_SC;
    h->u.x.sc_addr = (uint64_t)(uintptr_t)op->sbuf;
    h->u.x.sc_pid = ep->pid;
    if (r != NULL) {
        memcpy(tutti__chan_slot_data(h), r, sizeof(*r));
        h->flags |= FRAG_MAP;
        ep->stats.map_out++;
    }
    if (ep->verify) {
        h->u.x.sum = tutti__csum(op->sbuf, op->len);
        h->flags |= FRAG_SUM;
    }
    p->sendq = op->next;
    if (p->sendq == NULL)
        p->sendq_tail = NULL;
    enqueue(&p->scq, &p->scq_tail, op);
    ep->stats.sc_out++;
}

/* Completes the sends whose descriptors the peer finished reading. */
static int reap_single_copy(tutti__chan_peer_t *p)
{
    int done = 0;
    uint64_t finished =
        atomic_load_explicit(&p->out->sc_done, memory_order_acquire);
    while (p->sc_acked < finished && p->scq != NULL) {
        tutti_tp_op_t *op = p->scq;
        p->scq = op->next;
        if (p->scq == NULL)
            p->scq_tail = NULL;
        p->sc_acked++;
        op->done = op->len;
        op->status = TUTTI_OK;
        done++;
    }
    return done;
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
        frag_hdr_t *h = slot_at(ep, p->out, p->out_head);
        tutti__mem_region_t r;
        int mapped = goes_mapped(ep, p, op, &r);
        if (mapped || goes_single_copy(ep, p, op)) {
            post_descriptor(ep, p, op, h, mapped ? &r : NULL);
            frag_publish(h, p->out_head++);
            moved++;
            continue;
        }
        size_t frag = op->len - op->done;
        if (frag > ep->slot_size)
            frag = ep->slot_size;
        h->key = op->key;
        h->frag_len = (uint32_t)frag;
        if (frag <= FRAG_INLINE_MAX && op->done == 0 && !ep->verify) {
            h->flags = FRAG_INLINE;
            if (frag > 0)
                memcpy(h->u.data, op->sbuf, frag);
        } else {
            h->u.x.msg_len = op->len;
            h->u.x.frag_off = op->done;
            h->flags = 0;
            const char *from = (const char *)op->sbuf + op->done;
            if (ep->verify) { /* copied and summed in one pass */
                tutti__csum_t sum;
                tutti__csum_init(&sum);
                tutti__csum_copy(&sum, tutti__chan_slot_data(h), from, frag);
                h->u.x.sum = tutti__csum_final(&sum);
                h->flags = FRAG_SUM;
            } else if (frag > 0) {
                memcpy(tutti__chan_slot_data(h), from, frag);
            }
        }
        op->done += frag;
        frag_publish(h, p->out_head++);
        moved++;
        if (op->done == op->len) {
            p->sendq = op->next;
            if (p->sendq == NULL)
                p->sendq_tail = NULL;
            op->status = TUTTI_OK;
        }
    }
    if (moved > 0 && p->bell != NULL)
        tutti__bell_ring(p->bell);
    return moved;
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

/* Starts receiving the message whose first fragment is @p f.  Returns 0 if
 * no receive is posted for it yet. */
static int begin_message(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                         const frag_t *f, int peer)
{
    tutti_tp_op_t *op = match(p, &f->key);
    if (op == NULL)
        return 0;
    if (op->len != f->msg_len) {
        op->status = truncated(ep, peer, &f->key, f->msg_len, op->len);
        p->discard_left = f->msg_len;
        p->discarding = 1;
        return 1;
    }
    p->cur_recv = op;
    return 1;
}

/* Starts copying the message whose first fragment is @p f into a new
 * unexpected record.  Returns 0 if memory ran out: the message then stays
 * at the head and is tried again on the next progress call. */
static int unexp_begin(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                       const frag_t *f, int peer)
{
    tutti__chan_unexp_t *u = malloc(sizeof(*u) + f->msg_len);
    if (u == NULL) {
        if (!p->nomem_logged)
            tutti__error(TUTTI_ERR_NO_MEMORY, ep->tp_name,
                         "rank %d: no memory to buffer a %llu-byte message "
                         "from rank %d that no receive matches yet; its "
                         "channel stays blocked", ep->rank,
                         (unsigned long long)f->msg_len, peer);
        p->nomem_logged = 1;
        return 0;
    }
    p->nomem_logged = 0;
    u->next = NULL;
    u->key = f->key;
    u->msg_len = f->msg_len;
    u->got = 0;
    u->status = TUTTI_OK;
    if (p->unexp_tail)
        p->unexp_tail->next = u;
    else
        p->unexp = u;
    p->unexp_tail = u;
    p->filling = u;
    return 1;
}

/* The test hook (TUTTI_TEST_CORRUPT): flips byte corrupt_at of the first
 * message of more than that many bytes, where @p data holds the bytes
 * [@p off, @p off + @p len) of message @p f. */
void tutti__chan_test_corrupt(tutti__chan_ep_t *ep, const frag_t *f, int peer,
                              uint64_t off, char *data, size_t len)
{
    if (!ep->corrupt_armed || f->msg_len <= ep->corrupt_at ||
        ep->corrupt_at < off || ep->corrupt_at - off >= len)
        return;
    data[ep->corrupt_at - off] ^= 0x10;
    ep->corrupt_armed = 0;
    ep->check = ep->verify;
    tutti__log(TUTTI_LOG_WARN, ep->tp_name, "rank %d: test hook: flipped "
               "byte %llu of a message from rank %d (instance 0x%llx step %u "
               "tag %u)", ep->rank, (unsigned long long)ep->corrupt_at, peer,
               (unsigned long long)f->key.instance, f->key.step, f->key.tag);
}

/* Verify on: TUTTI_OK if @p got, the sum of the bytes [@p off, @p off +
 * @p len) of message @p f from @p peer, is the one the sender wrote; else
 * the error, recorded with everything a user needs to find the chunk. */
tutti_status_t tutti__chan_check_sum(const tutti__chan_ep_t *ep,
                                    const frag_t *f, int peer, uint64_t off,
                                    uint64_t len, uint32_t got)
{
    unsigned long long last = (unsigned long long)(off + len - (len > 0));
    if (!(f->flags & FRAG_SUM))
        return tutti__error(
            TUTTI_ERR_PEER, ep->tp_name,
            "rank %d: chunk from rank %d (instance 0x%llx step %u tag %u, "
            "bytes %llu-%llu of %llu) carries no checksum: verify is "
            "checksum here and off on rank %d", ep->rank, peer,
            (unsigned long long)f->key.instance, f->key.step, f->key.tag,
            (unsigned long long)off, last, (unsigned long long)f->msg_len,
            peer);
    if (f->sum == got)
        return TUTTI_OK;
    return tutti__error(
        TUTTI_ERR_PEER, ep->tp_name,
        "rank %d: chunk from rank %d failed its checksum (instance 0x%llx "
        "step %u tag %u, bytes %llu-%llu of %llu): rank %d sent 0x%08x, "
        "received 0x%08x", ep->rank, peer,
        (unsigned long long)f->key.instance, f->key.step, f->key.tag,
        (unsigned long long)off, last, (unsigned long long)f->msg_len, peer,
        f->sum, got);
}

/* Fragment @p f (in its slot) passes the test hook and, verify on, its
 * check; TUTTI_OK or the error recorded.  A non-NULL @p to gets a copy of
 * it, made in the same pass as its sum: a fragment that fails its check
 * is already there, and its receive fails with the error. */
static tutti_status_t check_fragment(tutti__chan_ep_t *ep, const frag_t *f,
                                     int peer, char *to)
{
    tutti__chan_test_corrupt(ep, f, peer, f->frag_off, f->data, f->frag_len);
    if (!ep->verify) {
        if (to != NULL && f->frag_len > 0)
            memcpy(to, f->data, f->frag_len);
        return TUTTI_OK;
    }
    tutti__csum_t sum;
    tutti__csum_init(&sum);
    if (to != NULL)
        tutti__csum_copy(&sum, to, f->data, f->frag_len);
    else
        tutti__csum_update(&sum, f->data, f->frag_len);
    return tutti__chan_check_sum(ep, f, peer, f->frag_off, f->frag_len,
                     tutti__csum_final(&sum));
}

/* Takes descriptor @p f, through the reader single copy or mapping
 * installed; a peer that sends one to a channel that never accepted them
 * breaks the protocol: nothing more is taken from it. */
static int read_descriptor(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                           const frag_t *f, int peer)
{
    if (ep->read_descriptor != NULL)
        return ep->read_descriptor(ep, p, f, peer);
    p->sc_frozen = 1;
    tutti__log(TUTTI_LOG_WARN, ep->tp_name, "rank %d: rank %d sent a "
               "descriptor (instance 0x%llx step %u tag %u) to a channel "
               "that reads none; nothing more is taken from rank %d",
               ep->rank, peer, (unsigned long long)f->key.instance,
               f->key.step, f->key.tag, peer);
    return 0;
}

/* Moves fragment @p f to where its message goes: dropped, buffered, or into
 * the receive being filled.  Returns 0 if it could not (it stays). */
static int consume(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                   const frag_t *f, int peer)
{
    if (f->flags & FRAG_SC)
        return read_descriptor(ep, p, f, peer);
    if (f->frag_off == 0 && f->msg_len >= TUTTI_CHAN_SC_MIN)
        ep->stats.ring_large_in++;
    if (p->discarding) {
        p->discard_left -= f->frag_len;
        p->discarding = p->discard_left > 0;
        return 1;
    }
    tutti_tp_op_t *op = p->cur_recv;
    /* Where a plain copy of the fragment goes (a reduction reads it in
     * the slot); verify on, it is copied as it is summed. */
    char *to = p->filling != NULL       ? p->filling->data + f->frag_off
               : op->reduce.fn == NULL ? (char *)op->rbuf + f->frag_off
                                       : NULL;
    tutti_status_t st = TUTTI_OK;
    if (ep->check)
        st = check_fragment(ep, f, peer, to);
    else if (to != NULL && f->frag_len > 0)
        memcpy(to, f->data, f->frag_len);
    if (p->filling != NULL) {
        tutti__chan_unexp_t *u = p->filling;
        u->got += f->frag_len;
        if (u->status == TUTTI_OK)
            u->status = st;
        if (u->got == u->msg_len)
            p->filling = NULL;
    } else if (st != TUTTI_OK) { /* the rest of the message is dropped */
        p->cur_recv = NULL;
        op->status = st;
        p->discard_left = f->msg_len - f->frag_off - f->frag_len;
        p->discarding = p->discard_left > 0;
    } else {
        if (to == NULL)
            tutti__chan_deliver(op, f->frag_off, f->data, f->frag_len);
        op->done += f->frag_len;
        if (op->done == op->len) {
            p->cur_recv = NULL;
            op->status = TUTTI_OK;
        }
    }
    return 1;
}

/* True if a receive from this peer is posted for another instance.  (A
 * later step of the same instance never blocks an earlier one: a member
 * runs one instance's steps in order and the channel keeps their order,
 * so buffering for it would only cost an allocation and a copy.) */
static int waits_elsewhere(const tutti__chan_peer_t *p,
                           const tutti_wire_key_t *key)
{
    for (const tutti_tp_op_t *op = p->recvq; op != NULL; op = op->next) {
        if (op->key.instance != key->instance)
            return 1;
    }
    return 0;
}

/* Consumes fragments that have arrived from @p peer. */
static int drain(tutti__chan_ep_t *ep, tutti__chan_peer_t *p, int peer)
{
    int moved = 0;
    if (p->sc_frozen)
        return 0;
    for (;;) {
        const frag_hdr_t *h = slot_at(ep, p->in, p->in_tail);
        if (atomic_load_explicit(&h->seq, memory_order_acquire) !=
            p->in_tail + 1)
            break; /* not written yet */
        frag_t fr, *f = &fr;
        frag_read(h, f);
        int between = p->cur_recv == NULL && !p->discarding &&
                      p->filling == NULL;
        /* Unmatched: its receive usually comes a moment later (a neighbour
         * one step ahead), so leave it, even on a full ring: the sender
         * only waits.  If a receive from this peer is posted for another
         * instance, that message may be queued behind this one while this
         * member waits for it before it posts this one's receive
         * (instances issued in different orders): only then is the head
         * worth an allocation and a copy. */
        if (between && !begin_message(ep, p, f, peer) &&
            (!waits_elsewhere(p, &f->key) || !unexp_begin(ep, p, f, peer)))
            break;
        if (!consume(ep, p, f, peer))
            break;
        p->in_tail++;
        atomic_store_explicit(&p->in->tail, p->in_tail, memory_order_release);
        moved++;
    }
    if (moved > 0 && p->bell != NULL)
        tutti__bell_ring(p->bell); /* it may wait for room on the ring */
    return moved;
}

int tutti__chan_progress(tutti__chan_ep_t *ep)
{
    int moved = 0;
    for (int i = 0; i < ep->size; i++) {
        if (i == ep->rank)
            continue;
        tutti__chan_peer_t *p = &ep->peers[i];
        if (p->in == NULL)
            continue; /* served by another transport */
        if (p->sendq != NULL)
            moved += push_sends(ep, p);
        moved += drain(ep, p, i);
        if (p->scq != NULL)
            moved += reap_single_copy(p);
    }
    return moved;
}

void tutti__chan_set_mapped_min(tutti__chan_ep_t *ep, size_t min)
{
    ep->map_min = min;
}

void tutti__chan_set_single_copy_range(tutti__chan_ep_t *ep, size_t min,
                                       size_t max)
{
    ep->sc_min = min;
    ep->sc_max = max;
}

void tutti__chan_attach_bell(tutti__chan_ep_t *ep, int rank, void *bell)
{
    if (rank == ep->rank)
        ep->bell = bell;
    else if (rank >= 0 && rank < ep->size)
        ep->peers[rank].bell = bell;
}

int tutti__chan_sleep(tutti__chan_ep_t *ep, double seconds)
{
    if (ep->bell == NULL)
        return -1;
    uint32_t seen = tutti__bell_arm(ep->bell);
    int moved = tutti__chan_progress(ep); /* the last look, armed */
    if (moved == 0)
        tutti__bell_wait(ep->bell, seen, seconds);
    else
        tutti__bell_disarm(ep->bell);
    return moved;
}
