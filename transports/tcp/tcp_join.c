/*
 * tcp transport: joining, how an endpoint gets its sockets to each peer.
 * The lower rank of each pair opens tcp.connections sockets and sends the
 * handshake (job id, group key, both ranks, socket index, a nonce); the
 * higher accepts them, checks the handshake and challenges it (its own
 * nonce and MAC), the opener checks that and proves it holds the secret
 * too, and the higher answers.  A connection
 * silent past its deadline is dropped; connect() waits until every peer
 * it serves has all its sockets joined.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_ep.h"

int tcp_watch(int epfd, conn_t *c)
{
    struct epoll_event ev = {EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP, {0}};
    ev.data.ptr = c;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

void tcp_pending_drop(tcp_ep_t *ep, conn_t *c, const char *reason)
{
    for (conn_t **pp = &ep->pending; *pp; pp = &(*pp)->next_pending) {
        if (*pp == c) {
            *pp = c->next_pending;
            break;
        }
    }
    if (reason != NULL)
        tcp_guard_refuse(&ep->guard, c->from, reason, 0);
    tcp_conn_close(ep, c);
    tcp_conn_free(c);
}

static void join(tcp_ep_t *ep, conn_t *c, int peer, unsigned index)
{
    peer_t *p = &ep->peers[peer];
    /* From the endpoint's own set to the data sockets', which API calls poll
     * too: watched there before any op can use it (a socket no set
     * watched could wait forever for room). */
    epoll_ctl(ep->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (tcp_watch(ep->dsc.fd, c) != 0) {
        char why[120];
        snprintf(why, sizeof(why), "cannot watch its socket: %s",
                 strerror(errno));
        tcp_pending_drop(ep, c, why);
        return;
    }
    for (conn_t **pp = &ep->pending; *pp; pp = &(*pp)->next_pending) {
        if (*pp == c) {
            *pp = c->next_pending;
            break;
        }
    }
    c->kind = C_DATA;
    c->peer = peer;
    c->index = (int)index;
    c->writable = 1;
    p->conns[index] = c;
    if (index == 0)
        snprintf(p->addr, sizeof(p->addr), "%s", c->from);
    pthread_mutex_lock(&ep->lock);
    p->joined++;
    pthread_mutex_unlock(&ep->lock);
    tcp_do_recv(ep, c); /* frames may have followed the handshake */
}

static void setup_fail(tcp_ep_t *ep, tutti_status_t st, const char *text)
{
    pthread_mutex_lock(&ep->lock);
    if (ep->setup_err == TUTTI_OK) {
        ep->setup_err = st;
        snprintf(ep->err_text, sizeof(ep->err_text), "%s", text);
    }
    pthread_mutex_unlock(&ep->lock);
}

/* An accepted connection proved it holds the secret: join it or refuse
 * it. */
static void check_incoming(tcp_ep_t *ep, conn_t *c)
{
    const tcp_hs_t *h = &c->hs.hs;
    const char *why = NULL;
    char text[300];
    uint32_t ack = TCP_ACK_OK;
    int from = h->from_rank;

    if (why == NULL && h->group_key != ep->group_key)
        why = "a handshake for another group";
    if (why == NULL && (h->to_rank != ep->rank || from < 0 ||
                        from >= ep->rank || !ep->peers[from].serve))
        why = "ranks that do not connect here";
    if (why == NULL && h->nconn != ep->set.connections)
        ack = TCP_ACK_NCONN;
    else if (why == NULL && (h->conn_index >= ep->set.connections ||
                             ep->peers[from].conns[h->conn_index] != NULL))
        ack = TCP_ACK_DUP;
    if (why != NULL) {
        tcp_pending_drop(ep, c, why);
        return;
    }
    if (send(c->fd, &ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack)) {
        tcp_pending_drop(ep, c, "closed before the answer to its handshake");
        return;
    }
    if (ack == TCP_ACK_NCONN) {
        snprintf(text, sizeof(text), "group 0x%llx: rank %d uses "
                 "tcp.connections %u, rank %d uses %u; expected the same "
                 "value on every task", (unsigned long long)ep->group_key,
                 from, h->nconn, ep->rank, (unsigned)ep->set.connections);
        setup_fail(ep, TUTTI_ERR_MISMATCH, text);
    }
    if (ack != TCP_ACK_OK) {
        tcp_pending_drop(ep, c, ack == TCP_ACK_DUP
                                    ? "socket index already joined"
                                    : "tcp.connections differs");
        return;
    }
    join(ep, c, from, h->conn_index);
}

/* The opener's answer is in: join, or say why not. */
static void check_answer(tcp_ep_t *ep, conn_t *c)
{
    char why[200];
    if (c->hs.in.ack == TCP_ACK_OK) {
        join(ep, c, c->peer, (unsigned)c->index);
        return;
    }
    snprintf(why, sizeof(why), "rank %d at %s refused socket %d: %s",
             c->peer, c->from, c->index,
             c->hs.in.ack == TCP_ACK_NCONN ? "tcp.connections differs "
             "between the tasks; expected the same value everywhere"
                                           : "already joined");
    setup_fail(ep, TUTTI_ERR_MISMATCH, why);
    tcp_pending_drop(ep, c, NULL);
}

/* The handshake of @p c passed, seen from its end @p dir: the MAC keys
 * of its frames from the transcript (while the proof is still in c->hs:
 * the answer overwrites it). */
static void keys(const tcp_ep_t *ep, conn_t *c, int dir)
{
    unsigned char key[TCP_KEY];
    tcp_session_key(&c->hs.hs, &c->hs.chal, &c->hs.in.proof, &ep->cred,
                    key);
    tcp_mac_setup(&c->mac_out, &c->mac_in, key, dir);
    tcp_wipe(key, sizeof(key));
}

/* An accepted connection proved it holds the secret: only now does it
 * get the data path's staging buffer; one that joins is one fewer of the
 * sockets the lower ranks still open to this endpoint. */
static void proven(tcp_ep_t *ep, conn_t *c)
{
    int from = c->hs.hs.from_rank;
    peer_t *p = from >= 0 && from < ep->size ? &ep->peers[from] : NULL;
    unsigned before = p != NULL ? p->joined : 0;

    if (c->stage == NULL && (c->stage = malloc(STAGE_BYTES)) == NULL) {
        tcp_pending_drop(ep, c, "no memory for its staging buffer");
        return;
    }
    check_incoming(ep, c);
    if (p != NULL && p->joined != before)
        ep->in_joined++;
}

/* A part of the exchange is in (the opening, the challenge or the
 * proof): check it and send the next; 0 to read on, -1 when @p c is
 * gone. */
static int step_done(tcp_ep_t *ep, conn_t *c)
{
    char why[300];
    const void *next = NULL;
    size_t next_len = 0;

    if (c->kind == C_IN) {
        const char *bad = tcp_hs_check(&c->hs.hs, &ep->cred, TCP_KIND_DATA);
        if (bad == NULL && tcp_chal_make(&c->hs.hs, &ep->cred,
                                         &c->hs.chal) != 0)
            bad = "no random bytes for the challenge (getrandom)";
        if (bad != NULL) {
            tcp_pending_drop(ep, c, bad);
            return -1;
        }
        next = &c->hs.chal;
        next_len = sizeof(c->hs.chal);
    } else {
        if (tcp_chal_check(&c->hs.hs, &ep->cred, &c->hs.chal,
                           &c->hs.in.proof) != 0) {
            snprintf(why, sizeof(why), "rank %d at %s: secret mismatch "
                     "(its answer to our challenge is not this job's; "
                     "TUTTI_JOB_SECRET must be the same for every task)",
                     c->peer, c->from);
            setup_fail(ep, TUTTI_ERR_PEER, why);
            tcp_pending_drop(ep, c, NULL);
            return -1;
        }
        next = &c->hs.in.proof;
        next_len = sizeof(c->hs.in.proof);
        keys(ep, c, TCP_DIR_OPENER);
    }
    /* A few dozen bytes on a socket nothing else was sent on: they fit. */
    if (send(c->fd, next, next_len, MSG_NOSIGNAL) != (ssize_t)next_len) {
        if (c->kind == C_IN) {
            tcp_pending_drop(ep, c, "closed before the challenge");
        } else {
            snprintf(why, sizeof(why), "rank %d at %s closed the connection "
                     "before our proof", c->peer, c->from);
            setup_fail(ep, TUTTI_ERR_PEER, why);
            tcp_pending_drop(ep, c, NULL);
        }
        return -1;
    }
    c->hs_step = 1;
    c->hs_got = 0;
    return 0;
}

void tcp_read_pending(tcp_ep_t *ep, conn_t *c)
{
    for (;;) {
        int in = c->kind == C_IN;
        void *to = c->hs_step == 0 ? (in ? (void *)&c->hs.hs
                                         : (void *)&c->hs.chal)
                                   : (void *)&c->hs.in;
        size_t want = c->hs_step == 0
                          ? (in ? sizeof(tcp_hs_t) : sizeof(tcp_chal_t))
                          : (in ? sizeof(tcp_proof_t) : sizeof(uint32_t));
        ssize_t n = recv(c->fd, (char *)to + c->hs_got, want - c->hs_got, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            char why[256];
            snprintf(why, sizeof(why), "closed after %zu of %zu %s bytes",
                     c->hs_got, want, c->hs_step == 0 ? "handshake"
                                                      : "proof");
            if (!in) {
                snprintf(why, sizeof(why), "rank %d at %s closed the "
                         "connection instead of accepting its handshake "
                         "(another job or secret?)", c->peer, c->from);
                setup_fail(ep, TUTTI_ERR_PEER, why);
                tcp_pending_drop(ep, c, NULL);
            } else {
                tcp_pending_drop(ep, c, why);
            }
            return;
        }
        c->hs_got += (size_t)n;
        if (c->hs_got < want)
            continue;
        if (c->hs_step == 0) {
            if (step_done(ep, c) != 0)
                return;
            continue;
        }
        if (!in) {
            check_answer(ep, c);
        } else if (tcp_proof_check(&c->hs.hs, &ep->cred, &c->hs.chal,
                                   &c->hs.in.proof) != 0) {
            tcp_pending_drop(ep, c, "secret mismatch (its proof is not of "
                                    "this job's secret)");
        } else {
            keys(ep, c, TCP_DIR_ACCEPTER);
            proven(ep, c);
        }
        return;
    }
}

void tcp_accept_all(tcp_ep_t *ep)
{
    tcp_addr_t src;
    char from[64], why[160];
    int fd;

    while ((fd = tcp_guard_accept(&ep->guard, ep->lsc.fd, &src, from,
                                  sizeof(from))) >= 0) {
        unsigned all = 0, same = 0, extra = 0;
        const char *over;
        conn_t *c;

        /* What the lower ranks still open comes on top of the limits. */
        if (ep->in_expect > ep->in_joined)
            extra = ep->in_expect - ep->in_joined;
        for (conn_t *p = ep->pending; p; p = p->next_pending) {
            if (p->kind == C_IN) {
                all++;
                same += tcp_addr_same_host(&p->src, &src);
            }
        }
        if ((over = tcp_guard_over(all, same, extra, why, sizeof(why))) !=
            NULL) {
            close(fd);
            tcp_guard_refuse(&ep->guard, from, over, 1);
            continue;
        }
        /* No staging buffer before the proof (proven()). */
        if ((c = calloc(1, sizeof(*c))) == NULL) {
            close(fd);
            tcp_guard_refuse(&ep->guard, from, "no memory for its "
                             "handshake", 0);
            continue;
        }
        c->kind = C_IN;
        c->fd = fd;
        c->peer = -1;
        c->src = src;
        c->deadline = ep->core->now() + TCP_HS_TIMEOUT;
        snprintf(c->from, sizeof(c->from), "%s", from);
        tcp_nodelay(fd);
        c->next_pending = ep->pending;
        ep->pending = c;
        if (tcp_watch(ep->epfd, c) != 0)
            tcp_pending_drop(ep, c, "cannot watch it");
        else /* what came with it: a peer's opening, or the end of one
              * that already left, which frees its descriptor at once */
            tcp_read_pending(ep, c);
    }
}

void tcp_expire_pending(tcp_ep_t *ep)
{
    double now = ep->core->now();
    conn_t *c = ep->pending, *next;
    for (; c; c = next) {
        next = c->next_pending;
        if (now <= c->deadline)
            continue;
        if (c->kind == C_OUT) {
            char why[160];
            snprintf(why, sizeof(why), "rank %d at %s did not answer the "
                     "handshake of socket %d", c->peer, c->from, c->index);
            setup_fail(ep, TUTTI_ERR_TIMEOUT, why);
            tcp_pending_drop(ep, c, NULL);
        } else {
            tcp_pending_drop(ep, c, "no handshake within the deadline "
                                    "(silent connection)");
        }
    }
}

/* Opens the sockets to @p peer (a higher rank) and hands them to the
 * thread, which waits for their answers. */
tutti_status_t tcp_open_to(tcp_ep_t *ep, int peer, const tcp_reg_t *reg,
                           const char *my_host, double deadline)
{
    char why[128] = "no address", addr[64] = "";
    int same_host = strcmp(reg->host, my_host) == 0;

    for (unsigned i = 0; i < ep->set.connections; i++) {
        int fd = -1;
        /* On one host the loopback address (listed last) is the surest. */
        for (uint32_t k = 0; fd < 0 && k < reg->naddr; k++) {
            const tcp_addr_t *a =
                &reg->addrs[same_host ? reg->naddr - 1 - k : k];
            tcp_addr_str(a, addr, sizeof(addr));
            fd = tcp_connect_addr(a, 2.0, why, sizeof(why));
        }
        tcp_hs_t hs;
        if (tcp_hs_fill(&hs, &ep->cred, TCP_KIND_DATA, ep->group_key,
                        ep->rank, peer, i,
                        (uint32_t)ep->set.connections) != 0 && fd >= 0) {
            snprintf(why, sizeof(why), "no random bytes for the handshake "
                     "(getrandom): %s", strerror(errno));
            close(fd);
            fd = -1;
        }
        if (fd >= 0 && tcp_write_full(fd, &hs, sizeof(hs)) != 0) {
            snprintf(why, sizeof(why), "writing the handshake: %s",
                     strerror(errno));
            close(fd);
            fd = -1;
        }
        conn_t *c = fd >= 0 ? calloc(1, sizeof(*c)) : NULL;
        if (c != NULL && (c->stage = malloc(STAGE_BYTES)) == NULL) {
            free(c);
            c = NULL;
        }
        if (c == NULL) {
            if (fd >= 0)
                close(fd);
            return ep->core->error(fd >= 0 ? TUTTI_ERR_NO_MEMORY
                                            : TUTTI_ERR_PEER, "tcp",
                                   "group 0x%llx rank %d: cannot connect to "
                                   "rank %d (task %d, host %s, last tried "
                                   "%s): %s",
                                   (unsigned long long)ep->group_key, ep->rank,
                                   peer, ep->rank_task[peer], reg->host, addr,
                                   why);
        }
        tcp_nonblock(fd);
        c->kind = C_OUT;
        c->fd = fd;
        c->peer = peer;
        c->index = (int)i;
        c->hs.hs = hs; /* its MACs cover it */
        c->deadline = deadline;
        snprintf(c->from, sizeof(c->from), "%s", addr);
        pthread_mutex_lock(&ep->lock);
        c->next_pending = ep->new_out;
        ep->new_out = c;
        pthread_mutex_unlock(&ep->lock);
        tcp_ring(ep);
    }
    return TUTTI_OK;
}

/* Waits until every served peer has all its sockets joined. */
tutti_status_t tcp_wait_joined(tcp_ep_t *ep, double deadline)
{
    for (;;) {
        int missing = -1;
        tutti_status_t st;
        pthread_mutex_lock(&ep->lock);
        st = ep->setup_err;
        for (int r = 0; r < ep->size && missing < 0; r++) {
            if (ep->peers[r].serve &&
                ep->peers[r].joined < ep->set.connections)
                missing = r;
        }
        pthread_mutex_unlock(&ep->lock);
        if (st != TUTTI_OK)
            return ep->core->error(st, "tcp", "group 0x%llx rank %d: %s",
                                   (unsigned long long)ep->group_key,
                                   ep->rank, ep->err_text);
        if (missing < 0)
            return TUTTI_OK;
        if (ep->core->now() > deadline)
            return ep->core->error(TUTTI_ERR_TIMEOUT, "tcp", "group 0x%llx "
                                   "rank %d: rank %d (task %d) did not "
                                   "connect within the timeout",
                                   (unsigned long long)ep->group_key,
                                   ep->rank, missing, ep->rank_task[missing]);
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
}
