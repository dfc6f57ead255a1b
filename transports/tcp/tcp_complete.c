/*
 * tcp transport: completing and failing operations.  Whoever holds the
 * endpoint's I/O lock completes an op by storing its status (release);
 * failing a peer closes its sockets and ends each of its operations
 * once.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp_ep.h"

#define DONE_MARK SIZE_MAX

/* The op is the caller's again once its status is stored: touch it no more. */
void tcp_complete(tcp_ep_t *ep, tutti_tp_op_t *op, tutti_status_t st)
{
    __atomic_store_n(&op->status, st, __ATOMIC_RELEASE);
    atomic_fetch_add_explicit(&ep->completed, 1, memory_order_release);
}

/* Keeps the first error's text for progress() to record on its thread. */
void tcp_note_error(tcp_ep_t *ep, tutti_status_t st, const char *text)
{
    pthread_mutex_lock(&ep->lock);
    if (ep->err_st == TUTTI_OK) {
        ep->err_st = st;
        snprintf(ep->err_text, sizeof(ep->err_text), "%s", text);
    }
    pthread_mutex_unlock(&ep->lock);
}

void tcp_conn_close(tcp_ep_t *ep, conn_t *c)
{
    if (c->fd >= 0) {
        epoll_ctl(c->kind == C_DATA ? ep->dsc.fd : ep->epfd, EPOLL_CTL_DEL,
                  c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
}

void tcp_unexp_free(tcp_ep_t *ep, unexp_t *u)
{
    ep->unexp_bytes -= u->msg_len;
    free(u);
}

void tcp_conn_free(conn_t *c)
{
    if (c == NULL)
        return;
    tcp_wipe(&c->mac_out, sizeof(c->mac_out));
    tcp_wipe(&c->mac_in, sizeof(c->mac_in));
    tcp_wipe(&c->hs, sizeof(c->hs));
    free(c->stage);
    free(c);
}

static void chain(tutti_tp_op_t **list, tutti_tp_op_t *op)
{
    if (op != NULL && op->done != DONE_MARK) {
        op->done = DONE_MARK;
        op->next = *list;
        *list = op;
    }
}

/* Fails peer @p p: closes its sockets and ends each of its operations once
 * with TUTTI_ERR_PEER. */
void tcp_peer_fail(tcp_ep_t *ep, int peer, int remote_closed,
                   const char *fmt, ...)
{
    peer_t *p = &ep->peers[peer];
    tutti_tp_op_t *fail = NULL, *op, *next;
    char text[512];
    va_list ap;

    if (p->failed)
        return;
    p->failed = 1;
    if (remote_closed)
        atomic_store(&p->closed, 1);
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof(p->why), fmt, ap);
    va_end(ap);
    snprintf(text, sizeof(text), "group 0x%llx rank %d: peer rank %d (task "
             "%d, %s): %s; its operations fail",
             (unsigned long long)ep->group_key, ep->rank, peer,
             ep->rank_task[peer], p->addr, p->why);
    if (!p->left)
        ep->core->log(remote_closed ? 1 : 0, "tcp", "%s", text);
    for (unsigned i = 0; i < ep->set.connections; i++) {
        conn_t *c = p->conns[i];
        if (c == NULL)
            continue;
        tcp_conn_close(ep, c);
        for (unsigned k = c->head; k != c->tail; k++)
            chain(&fail, c->ring[k % RING].op);
        c->head = c->tail = 0;
        c->rop = NULL;
        c->rux = NULL;
        c->in_body = 0;
    }
    for (op = p->wait_h; op; op = next) {
        next = op->next;
        chain(&fail, op);
    }
    p->wait_h = p->wait_t = NULL;
    for (op = p->posted_h; op && !p->left; op = next) {
        next = op->next;
        chain(&fail, op);
    }
    for (op = p->active; op && !p->left; op = next) {
        next = op->next;
        chain(&fail, op);
    }
    if (!p->left)
        p->posted_h = p->posted_t = p->active = NULL;
    while (p->unexp != NULL && !p->left) {
        unexp_t *u = p->unexp;
        p->unexp = u->next;
        chain(&fail, u->op);
        tcp_unexp_free(ep, u);
    }
    if (!p->left)
        snprintf(p->fail_text, sizeof(p->fail_text), "%s", text);
    if (fail != NULL && !p->left)
        tcp_note_error(ep, TUTTI_ERR_PEER, text);
    for (op = fail; op; op = next) {
        next = op->next;
        op->done = 0;
        tcp_complete(ep, op,
                     p->left && !op->is_recv ? TUTTI_OK : TUTTI_ERR_PEER);
    }
}
