/*
 * tcp transport: receiving.  Receives match by key per peer; a fragment
 * goes straight into the posted buffer (through a small staging buffer and
 * op->reduce.fn where it reduces), waits in its socket while no receive of
 * the peer is posted, or is copied aside when a receive for another
 * message waits behind it.  A frame that fails its checks fails the peer.
 * Whoever holds the endpoint's I/O lock runs this: the progress engine,
 * or an API call (recv() or progress()) that polls the sockets itself.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tcp_ep.h"

/* Bytes of one element @p op reduces; 1 for a data type the core would
 * have refused, so that a fragment is never divided by 0. */
static size_t elem_size(const tutti_tp_op_t *op)
{
    size_t es = tutti_dtype_size(op->reduce.dtype);
    return es != 0 ? es : 1;
}

static int key_eq(const tutti_wire_key_t *a, const tutti_wire_key_t *b)
{
    return a->instance == b->instance && a->step == b->step && a->tag == b->tag;
}

/* Copies or reduces @p len bytes at offset @p off of @p op's message. */
static void deliver(tutti_tp_op_t *op, uint64_t off, const char *data,
                    size_t len)
{
    if (len == 0)
        return;
    if (op->reduce.fn != NULL) {
        op->reduce.fn(op->reduce.dtype, op->reduce.op, (char *)op->rbuf + off,
                      (const char *)op->reduce.local + off, data,
                      len / elem_size(op));
    } else {
        memcpy((char *)op->rbuf + off, data, len);
    }
}

static void truncated(tcp_ep_t *ep, tutti_tp_op_t *op, uint64_t msg_len)
{
    char text[400];
    snprintf(text, sizeof(text), "rank %d: message from rank %d (instance "
             "0x%llx step %u tag %u) has %llu bytes, the receive expects %zu",
             ep->rank, op->peer, (unsigned long long)op->key.instance,
             op->key.step, op->key.tag, (unsigned long long)msg_len, op->len);
    ep->core->log(0, "tcp", "%s", text);
    tcp_note_error(ep, TUTTI_ERR_TRUNCATED, text);
    tcp_complete(ep, op, TUTTI_ERR_TRUNCATED);
}

static int match_fragment(tcp_ep_t *ep, conn_t *c);
static void fragment_done(tcp_ep_t *ep, conn_t *c);

/* Up to @p want bytes of @p c's stream into @p dst, as recv() returns
 * them.  Small reads go through c->in, so that a small frame's header and
 * body come in one system call; a short read means the socket held no
 * more bytes (TCP returns less only then), and bytes that come later
 * raise an event, so the next read waits for it (tcp_poll_data clears
 * c->drained) rather than calling recv() only to learn EAGAIN.  Not so
 * for the end: a short read may stop at a FIN or an error whose event
 * was already taken (c->ended), after which recv() must be called to
 * learn it. */
static ssize_t conn_read(conn_t *c, void *dst, size_t want)
{
    ssize_t n;
    if (c->in_at < c->in_len) {
        size_t k = c->in_len - c->in_at;
        if (k > want)
            k = want;
        memcpy(dst, c->in + c->in_at, k);
        c->in_at += k;
        return (ssize_t)k;
    }
    if (c->drained) {
        errno = EAGAIN;
        return -1;
    }
    if (want >= INBUF) {
        n = recv(c->fd, dst, want, 0);
        c->drained = !c->ended && n > 0 && (size_t)n < want;
        return n;
    }
    n = recv(c->fd, c->in, INBUF, 0);
    if (n <= 0)
        return n;
    c->drained = !c->ended && n < INBUF;
    c->in_at = 0;
    c->in_len = (size_t)n;
    return conn_read(c, dst, want);
}

/* A receive was posted: place the headers that waited for one, and read
 * on. */
static void resume_held(tcp_ep_t *ep, peer_t *p)
{
    for (unsigned i = 0; i < ep->set.connections; i++) {
        conn_t *c = p->conns[i];
        if (c == NULL || !c->held || c->fd < 0)
            continue;
        c->held = 0;
        if (match_fragment(ep, c) != 0)
            continue;
        if (c->rhdr.frag_len == 0)
            fragment_done(ep, c);
        tcp_do_recv(ep, c);
    }
}

void tcp_post_recv(tcp_ep_t *ep, tutti_tp_op_t *op)
{
    peer_t *p = &ep->peers[op->peer];
    op->next = NULL;
    op->done = 0;
    if (p->failed && !p->left) {
        tcp_complete(ep, op, TUTTI_ERR_PEER);
        return;
    }
    for (unexp_t **up = &p->unexp; *up; up = &(*up)->next) {
        unexp_t *u = *up;
        if (!key_eq(&u->key, &op->key) || u->op != NULL)
            continue;
        if (u->msg_len != op->len) {
            truncated(ep, op, u->msg_len);
            return; /* u stays, unclaimed, until the job ends */
        }
        if (u->got < u->msg_len) {
            u->op = op;
            return;
        }
        *up = u->next;
        deliver(op, 0, u->data, u->msg_len);
        tcp_unexp_free(ep, u);
        op->done = op->len;
        tcp_complete(ep, op, TUTTI_OK);
        return;
    }
    tcp_op_append(&p->posted_h, &p->posted_t, op);
    resume_held(ep, p);
}

/* A fragment whose message length differs from that of the message its
 * key matched (the length every fragment of a message carries): it could
 * write past that message's buffer, so the peer fails; -1. */
static int garbled(tcp_ep_t *ep, conn_t *c, const char *what, uint64_t len)
{
    const frame_t *h = &c->rhdr;
    tcp_peer_fail(ep, c->peer, 0, "garbled frame: fragment at %llu of %u "
                  "bytes (instance 0x%llx step %u tag %u) says its message "
                  "has %llu bytes; it continues %s %llu bytes",
                  (unsigned long long)h->frag_off, h->frag_len,
                  (unsigned long long)h->key.instance, h->key.step,
                  h->key.tag, (unsigned long long)h->msg_len, what,
                  (unsigned long long)len);
    return -1;
}

/* Where the fragment whose header @p c just read goes; 0, 1 (held until a
 * receive is posted) or -1 (failed). */
static int match_fragment(tcp_ep_t *ep, conn_t *c)
{
    peer_t *p = &ep->peers[c->peer];
    frame_t *h = &c->rhdr;
    tutti_tp_op_t **pp, *prev = NULL;
    int dropped = 0;

    c->rop = NULL;
    c->rux = NULL;
    for (tutti_tp_op_t *op = p->active; op; op = op->next) {
        if (key_eq(&op->key, &h->key)) {
            c->rop = op;
            break;
        }
    }
    if (c->rop != NULL && h->msg_len != c->rop->len)
        return garbled(ep, c, "a fragment of a message of", c->rop->len);
    for (pp = &p->posted_h; c->rop == NULL && *pp; prev = *pp, pp = &(*pp)->next) {
        tutti_tp_op_t *op = *pp;
        if (!key_eq(&op->key, &h->key))
            continue;
        *pp = op->next;
        if (p->posted_t == op)
            p->posted_t = prev;
        if (op->len != h->msg_len) {
            truncated(ep, op, h->msg_len);
            dropped = 1; /* the bytes are read and dropped */
            break;
        }
        op->next = p->active;
        p->active = op;
        c->rop = op;
        break;
    }
    if (c->rop == NULL) {
        for (unexp_t *u = p->unexp; u; u = u->next) {
            if (key_eq(&u->key, &h->key) && u->got < u->msg_len) {
                c->rux = u;
                break;
            }
        }
    }
    if (c->rux != NULL && h->msg_len != c->rux->msg_len)
        return garbled(ep, c, "a fragment of a message held aside of",
                       c->rux->msg_len);
    if (c->rop == NULL && c->rux == NULL && !dropped &&
        p->posted_h == NULL) {
        /* No receive from this peer is posted: its receive usually comes a
         * moment later, so leave the body in the socket (the sender waits
         * on a full socket at worst) rather than copying it aside.  Once a
         * receive is posted, tcp_post_recv() looks again. */
        c->held = 1;
        return 1;
    }
    if (c->rop == NULL && c->rux == NULL && !dropped) {
        /* A receive for another message is waiting behind this one: take
         * this one aside so the socket flows again. */
        if (h->msg_len > ep->set.unexpected - ep->unexp_bytes) {
            tcp_peer_fail(ep, c->peer, 0, "a message of %llu bytes came "
                          "before its receive (instance 0x%llx step %u tag "
                          "%u) and %llu bytes are held aside already: over "
                          "tcp.unexpected (%llu bytes)",
                          (unsigned long long)h->msg_len,
                          (unsigned long long)h->key.instance, h->key.step,
                          h->key.tag, (unsigned long long)ep->unexp_bytes,
                          (unsigned long long)ep->set.unexpected);
            return -1;
        }
        unexp_t *u = malloc(sizeof(*u) + h->msg_len);
        if (u == NULL) {
            tcp_peer_fail(ep, c->peer, 0, "no memory to hold an unexpected "
                          "message of %llu bytes",
                          (unsigned long long)h->msg_len);
            return -1;
        }
        u->key = h->key;
        u->msg_len = h->msg_len;
        u->got = 0;
        u->op = NULL;
        u->next = p->unexp;
        p->unexp = u;
        ep->unexp_bytes += h->msg_len;
        c->rux = u;
    }
    uint64_t had = c->rop != NULL ? c->rop->done
                   : c->rux != NULL ? c->rux->got : 0;
    if ((c->rop != NULL || c->rux != NULL) && had + h->frag_len > h->msg_len) {
        tcp_peer_fail(ep, c->peer, 0, "garbled frame: fragment at %llu of %u "
                      "bytes repeats bytes of its message",
                      (unsigned long long)h->frag_off, h->frag_len);
        return -1;
    }
    if (c->rop != NULL && c->rop->reduce.fn != NULL &&
        (h->frag_off % elem_size(c->rop) != 0 ||
         h->frag_len % elem_size(c->rop) != 0)) {
        tcp_peer_fail(ep, c->peer, 0, "garbled frame: fragment at %llu of %u "
                      "bytes splits an element of %zu bytes",
                      (unsigned long long)h->frag_off, h->frag_len,
                      elem_size(c->rop));
        return -1;
    }
    if (ep->verify)
        tutti__csum_init(&c->rsum);
    c->in_body = 1;
    c->body_got = 0;
    c->rdone = 0;
    c->stage_have = 0;
    return 0;
}

static void remove_active(peer_t *p, tutti_tp_op_t *op)
{
    for (tutti_tp_op_t **pp = &p->active; *pp; pp = &(*pp)->next) {
        if (*pp == op) {
            *pp = op->next;
            return;
        }
    }
}

/* Verify on: whether the body of the frame @p c read has the sum its
 * header says; if not, the peer fails with a line naming the chunk. */
static int sum_ok(tcp_ep_t *ep, conn_t *c)
{
    const frame_t *h = &c->rhdr;
    uint32_t got = tutti__csum_final(&c->rsum);
    unsigned long long last =
        (unsigned long long)(h->frag_off + h->frag_len - (h->frag_len > 0));
    if ((h->flags & FRAME_SUM) && h->sum == got)
        return 1;
    if (!(h->flags & FRAME_SUM))
        tcp_peer_fail(ep, c->peer, 0, "chunk (instance 0x%llx step %u tag "
                      "%u, bytes %llu-%llu of %llu) carries no checksum: "
                      "verify is checksum here and off on rank %d",
                      (unsigned long long)h->key.instance, h->key.step,
                      h->key.tag, (unsigned long long)h->frag_off, last,
                      (unsigned long long)h->msg_len, c->peer);
    else
        tcp_peer_fail(ep, c->peer, 0, "chunk failed its checksum (instance "
                      "0x%llx step %u tag %u, bytes %llu-%llu of %llu): rank "
                      "%d sent 0x%08x, received 0x%08x",
                      (unsigned long long)h->key.instance, h->key.step,
                      h->key.tag, (unsigned long long)h->frag_off, last,
                      (unsigned long long)h->msg_len, c->peer, h->sum, got);
    return 0;
}

/* The test hook and the running sum over @p n body bytes just read into
 * @p data (the fragment's bytes from body_got on). */
static void look_at(tcp_ep_t *ep, conn_t *c, char *data, size_t n)
{
    uint64_t off = c->rhdr.frag_off + c->body_got;
    if (ep->corrupt_armed && c->rhdr.msg_len > ep->corrupt_at &&
        ep->corrupt_at >= off && ep->corrupt_at - off < n) {
        data[ep->corrupt_at - off] ^= 0x10;
        ep->corrupt_armed = 0;
        ep->check = ep->verify || ep->mac;
        ep->core->log(1, "tcp", "rank %d: test hook: flipped byte %llu of a "
                      "message from rank %d (instance 0x%llx step %u tag %u)",
                      ep->rank, (unsigned long long)ep->corrupt_at, c->peer,
                      (unsigned long long)c->rhdr.key.instance,
                      c->rhdr.key.step, c->rhdr.key.tag);
    }
    if (ep->verify)
        tutti__csum_update(&c->rsum, data, n);
    if (ep->mac)
        tcp_mac_update(&c->mac_in, data, n);
}

/* Mac on: whether the frame @p c read has the tag its header says; if
 * not, the peer fails with a line naming the chunk. */
static int mac_ok(tcp_ep_t *ep, conn_t *c)
{
    const frame_t *h = &c->rhdr;
    unsigned long long last =
        (unsigned long long)(h->frag_off + h->frag_len - (h->frag_len > 0));
    if ((h->flags & FRAME_MAC) && tcp_mac_check(&c->mac_in, h->tag))
        return 1;
    tcp_peer_fail(ep, c->peer, 0, "chunk (instance 0x%llx step %u tag %u, "
                  "bytes %llu-%llu of %llu) on socket %d %s",
                  (unsigned long long)h->key.instance, h->key.step,
                  h->key.tag, (unsigned long long)h->frag_off, last,
                  (unsigned long long)h->msg_len, c->index,
                  (h->flags & FRAME_MAC) ? "failed its MAC: altered on the "
                                           "way, or not sent by that peer"
                                         : "carries no MAC: verify is mac "
                                           "here, not on the peer");
    return 0;
}

static void fragment_done(tcp_ep_t *ep, conn_t *c)
{
    peer_t *p = &ep->peers[c->peer];
    if (ep->verify && !sum_ok(ep, c))
        return;
    if (ep->mac && !mac_ok(ep, c))
        return;
    c->in_body = 0;
    c->rgot = 0;
    if (c->rop != NULL) {
        tutti_tp_op_t *op = c->rop;
        op->done += c->rhdr.frag_len;
        if (op->done == op->len) {
            remove_active(p, op);
            tcp_complete(ep, op, TUTTI_OK);
        }
    } else if (c->rux != NULL) {
        unexp_t *u = c->rux;
        u->got += c->rhdr.frag_len;
        if (u->got == u->msg_len && u->op != NULL) {
            for (unexp_t **up = &p->unexp; *up; up = &(*up)->next) {
                if (*up == u) {
                    *up = u->next;
                    break;
                }
            }
            deliver(u->op, 0, u->data, u->msg_len);
            u->op->done = u->op->len;
            tcp_complete(ep, u->op, TUTTI_OK);
            tcp_unexp_free(ep, u);
        }
    }
    c->rop = NULL;
    c->rux = NULL;
}

static const char *frame_problem(const frame_t *h)
{
    if (h->magic != FRAME_MAGIC)
        return "bad magic";
    if (h->msg_len > MSG_MAX)
        return "message length over 1 TiB";
    if (h->frag_len > h->msg_len || h->frag_off > h->msg_len - h->frag_len)
        return "fragment outside its message";
    if (h->flags & ~(FRAME_SUM | FRAME_MAC))
        return "unknown flags";
    return NULL;
}

/* Reads body bytes of the current fragment; returns bytes read, 0 at EOF,
 * -1 with errno. */
static ssize_t read_body(tcp_ep_t *ep, conn_t *c)
{
    uint64_t left = c->rhdr.frag_len - c->body_got;
    tutti_tp_op_t *op = c->rop;
    char *dst;
    size_t want;

    if (op != NULL && op->reduce.fn == NULL) {
        dst = (char *)op->rbuf + c->rhdr.frag_off + c->body_got;
        want = (size_t)left;
    } else if (c->rux != NULL) {
        dst = c->rux->data + c->rhdr.frag_off + c->body_got;
        want = (size_t)left;
    } else { /* reducing, or dropping a refused message */
        dst = c->stage + c->stage_have;
        want = STAGE_BYTES - c->stage_have;
        if (want > left)
            want = (size_t)left;
    }
    ssize_t n = conn_read(c, dst, want);
    if (n <= 0)
        return n;
    if (ep->check)
        look_at(ep, c, dst, (size_t)n);
    c->body_got += (uint64_t)n;
    if (op != NULL && op->reduce.fn != NULL) {
        size_t es = elem_size(op);
        size_t have = c->stage_have + (size_t)n;
        size_t whole = have - have % es;
        deliver(op, c->rhdr.frag_off + c->rdone, c->stage, whole);
        c->rdone += whole;
        memmove(c->stage, c->stage + whole, have - whole);
        c->stage_have = have - whole;
    }
    return n;
}

void tcp_do_recv(tcp_ep_t *ep, conn_t *c)
{
    while (c->fd >= 0 && !c->held) {
        ssize_t n;
        if (!c->in_body) {
            n = conn_read(c, (char *)&c->rhdr + c->rgot,
                          sizeof(frame_t) - c->rgot);
            if (n > 0) {
                c->rgot += (size_t)n;
                if (c->rgot < sizeof(frame_t))
                    continue;
                const char *bad = frame_problem(&c->rhdr);
                if (bad != NULL) {
                    tcp_peer_fail(ep, c->peer, 0, "garbled frame on socket "
                                  "%d: %s (magic 0x%08x, %u bytes at %llu of "
                                  "%llu)", c->index, bad, c->rhdr.magic,
                                  c->rhdr.frag_len,
                                  (unsigned long long)c->rhdr.frag_off,
                                  (unsigned long long)c->rhdr.msg_len);
                    return;
                }
                if (ep->mac) { /* the header as it was tagged */
                    static const unsigned char no_tag[TCP_TAG];
                    tcp_mac_begin(&c->mac_in);
                    tcp_mac_update(&c->mac_in, &c->rhdr,
                                   offsetof(frame_t, tag));
                    tcp_mac_update(&c->mac_in, no_tag, sizeof(no_tag));
                }
                if (match_fragment(ep, c) != 0)
                    return;
                if (c->rhdr.frag_len == 0)
                    fragment_done(ep, c);
                continue;
            }
        } else {
            n = read_body(ep, c);
            if (n > 0) {
                if (c->body_got == c->rhdr.frag_len)
                    fragment_done(ep, c);
                continue;
            }
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && (c->in_body || c->rgot > 0)) {
            tcp_peer_fail(ep, c->peer, 1, "connection closed in the middle "
                          "of a frame (truncated)");
        } else if (n == 0) {
            /* A clean end of this socket: what the peer sent on its other
             * sockets may still be unread, so the peer has left only once
             * every one of them has ended too. */
            peer_t *p = &ep->peers[c->peer];
            int open = 0;
            tcp_conn_close(ep, c);
            for (unsigned i = 0; i < ep->set.connections; i++)
                open += p->conns[i] != NULL && p->conns[i]->fd >= 0;
            if (open > 0)
                return;
            p->left = !p->failed;
            tcp_peer_fail(ep, c->peer, 1, "the peer closed its connections");
        } else
            tcp_peer_fail(ep, c->peer, 1, "connection %s",
                          n == 0 ? "closed by the peer" : strerror(errno));
        return;
    }
}
