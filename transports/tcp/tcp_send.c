/*
 * tcp transport: sending.  A send is cut into pieces queued on the peer's
 * sockets (striped from tcp.connections x 256K up, else whole on one
 * socket, round robin); a send that finds no room waits in the peer's
 * queue until a socket frees some.  Whoever holds the endpoint's I/O lock
 * runs this: the progress engine, or the API call that posts the send
 * (it writes what the socket takes at once).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp_ep.h"

#define STRIPE_MIN (256u << 10)     /* per socket, to stripe a message */

static unsigned ring_count(const conn_t *c)
{
    return c->tail - c->head;
}

/* Queues @p op's pieces on the peer's sockets; 0 if they lack room. */
static int place(tcp_ep_t *ep, peer_t *p, tutti_tp_op_t *op)
{
    unsigned n = (unsigned)ep->set.connections, first, k = 1;
    uint64_t chunk = op->len;

    if (n > 1 && op->len >= (uint64_t)STRIPE_MIN * n) {
        chunk = ((op->len + n - 1) / n + 63) & ~UINT64_C(63);
        k = (unsigned)((op->len + chunk - 1) / chunk);
        first = 0;
    } else {
        first = p->rr++ % n;
    }
    for (unsigned i = 0; i < k; i++) {
        if (ring_count(p->conns[(first + i) % n]) == RING)
            return 0;
    }
    op->done = 0;
    for (unsigned i = 0; i < k; i++) {
        conn_t *c = p->conns[(first + i) % n];
        uint64_t off = (uint64_t)i * chunk;
        piece_t *pc = &c->ring[c->tail++ % RING];
        pc->op = op;
        pc->off = off;
        pc->len = k == 1 ? op->len : (op->len - off < chunk ? op->len - off
                                                             : chunk);
    }
    for (unsigned i = 0; i < k; i++)
        tcp_do_send(ep, p->conns[(first + i) % n]);
    return 1;
}

void tcp_post_send(tcp_ep_t *ep, tutti_tp_op_t *op)
{
    peer_t *p = &ep->peers[op->peer];
    if (p->failed) { /* nobody reads what goes to a peer that left */
        tcp_complete(ep, op, p->left ? TUTTI_OK : TUTTI_ERR_PEER);
        return;
    }
    op->next = NULL;
    if (p->wait_h == NULL && place(ep, p, op))
        return;
    tcp_op_append(&p->wait_h, &p->wait_t, op);
}

static void retry_waiting(tcp_ep_t *ep, peer_t *p)
{
    while (p->wait_h != NULL && !p->failed) {
        tutti_tp_op_t *op = p->wait_h, *next = op->next;
        if (!place(ep, p, op))
            return;
        p->wait_h = next;
        if (next == NULL)
            p->wait_t = NULL;
    }
}

/* Sends what socket @p c can take now. */
void tcp_do_send(tcp_ep_t *ep, conn_t *c)
{
    peer_t *p = &ep->peers[c->peer];
    int freed = 0;
    while (c->writable && c->fd >= 0 && ring_count(c) > 0) {
        piece_t *pc = &c->ring[c->head % RING];
        tutti_tp_op_t *op = pc->op;
        if (!c->shdr_ready) {
            c->shdr.magic = FRAME_MAGIC;
            c->shdr.frag_len = (uint32_t)pc->len;
            c->shdr.key = op->key;
            c->shdr.msg_len = op->len;
            c->shdr.frag_off = pc->off;
            c->shdr.sum = 0;
            c->shdr.flags = 0;
            memset(c->shdr.tag, 0, sizeof(c->shdr.tag));
            if (ep->verify) {
                c->shdr.sum = tutti__csum((const char *)op->sbuf + pc->off,
                                          pc->len);
                c->shdr.flags = FRAME_SUM;
            } else if (ep->mac) { /* the header with a zero tag, the body */
                c->shdr.flags = FRAME_MAC;
                tcp_mac_begin(&c->mac_out);
                tcp_mac_update(&c->mac_out, &c->shdr, sizeof(frame_t));
                tcp_mac_update(&c->mac_out, (const char *)op->sbuf + pc->off,
                               pc->len);
                tcp_mac_final(&c->mac_out, c->shdr.tag);
            }
            if (ep->garble > 0 && ++ep->frames_sent >= (unsigned)ep->garble &&
                !ep->truncate) {
                if (ep->oversize) /* TUTTI_TCP_TEST_GARBLE=R:oversize */
                    c->shdr.msg_len = MSG_MAX + 1;
                else /* TUTTI_TCP_TEST_GARBLE=R */
                    c->shdr.magic ^= 0x5a5a5a5au;
                ep->garble = 0;
            } else if (ep->garble > 0 && ep->frames_sent >= (unsigned)ep->garble
                       && pc->len > 0) {
                /* TUTTI_TCP_TEST_GARBLE=R:truncate: the header, no body. */
                ep->garble = 0;
                (void)send(c->fd, &c->shdr, sizeof(frame_t), MSG_NOSIGNAL);
                shutdown(c->fd, SHUT_WR);
                tcp_peer_fail(ep, c->peer, 0, "test hook: frame cut short");
                return;
            }
            c->shdr_ready = 1;
            c->ssent = 0;
        }
        struct iovec iov[2];
        int niov = 0;
        size_t total = sizeof(frame_t) + pc->len;
        if (c->ssent < sizeof(frame_t)) {
            iov[niov].iov_base = (char *)&c->shdr + c->ssent;
            iov[niov++].iov_len = sizeof(frame_t) - c->ssent;
        }
        if (pc->len > 0) {
            size_t at = c->ssent > sizeof(frame_t) ? c->ssent - sizeof(frame_t)
                                                   : 0;
            iov[niov].iov_base = (char *)op->sbuf + pc->off + at;
            iov[niov++].iov_len = pc->len - at;
        }
        struct msghdr mh = {0};
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)niov;
        ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->writable = 0;
                break;
            }
            if (errno == EINTR)
                continue;
            tcp_peer_fail(ep, c->peer, 1, "sending failed: %s",
                          strerror(errno));
            return;
        }
        c->ssent += (size_t)n;
        if (c->ssent < total)
            continue;
        c->shdr_ready = 0;
        c->head++;
        freed = 1;
        op->done += pc->len;
        if (op->done == op->len) {
            op->done = op->len;
            tcp_complete(ep, op, TUTTI_OK);
        }
    }
    if (freed && p->wait_h != NULL)
        retry_waiting(ep, p);
}
