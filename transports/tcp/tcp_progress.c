/*
 * tcp transport: an endpoint's progress thread, and the polling the API
 * calls share with it.  Two edge-triggered epoll sets: the data sockets
 * in one (dsc), and the thread's, which watches that set, the listener,
 * the connections still in their handshake, and an eventfd that the API
 * calls ring to hand it operations and sockets, or to stop it.
 *
 * Whoever holds the endpoint's I/O lock moves bytes: an API call
 * (send(), recv(), progress()) that gets it with trylock does the socket
 * work itself, so a member that polls pays no thread wake-up per message;
 * the thread handles what is ready when nobody polls (and the handshakes,
 * always).  An edge-triggered event goes to one epoll_wait only, so
 * whoever receives it handles it, under the lock.  The sockets in their
 * handshake stay in the thread's set alone, so that only the thread
 * frees them.
 *
 * While a member polls (progress() within the last PARK_NS), the thread
 * stops watching the data sockets: woken for data the poller takes
 * anyway, it would only cost the poller a lock hand-off and a core.  It
 * looks every PARK_NS and watches them again once nobody polls, so a
 * member that stops polling waits at most about twice that.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "tcp_ep.h"

#define EVS 64                      /* events taken per epoll_wait */
#define PARK_NS 1000000             /* a poll this recent parks the thread */

uint64_t tcp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether a member polled within the last PARK_NS. */
static int polled_lately(tcp_ep_t *ep)
{
    uint64_t last = atomic_load_explicit(&ep->last_poll_ns,
                                         memory_order_relaxed);
    return last != 0 && tcp_now_ns() - last < PARK_NS;
}

/* Stops (0) or starts (1) watching the data sockets' set; 0, or -1 where
 * epoll_ctl refused (the thread then goes on as it was). */
static int watch_data(tcp_ep_t *ep, int on)
{
    struct epoll_event ev = {EPOLLIN | EPOLLET, {0}};
    ev.data.ptr = &ep->dsc;
    return epoll_ctl(ep->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL,
                     ep->dsc.fd, &ev);
}

void tcp_take_ops(tcp_ep_t *ep)
{
    tutti_tp_op_t *ops, *op, *next;

    pthread_mutex_lock(&ep->lock);
    ops = ep->sub_h;
    ep->sub_h = ep->sub_t = NULL;
    atomic_store_explicit(&ep->queued, 0, memory_order_relaxed);
    pthread_mutex_unlock(&ep->lock);
    for (op = ops; op; op = next) {
        next = op->next;
        if (op->is_recv)
            tcp_post_recv(ep, op);
        else
            tcp_post_send(ep, op);
    }
}

/* The eventfd rang: take the sockets connect() opened and the ops. */
static void take_submitted(tcp_ep_t *ep)
{
    conn_t *outs, *c, *cn;
    uint64_t v;

    if (read(ep->evc.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return;
    pthread_mutex_lock(&ep->lock);
    outs = ep->new_out;
    ep->new_out = NULL;
    pthread_mutex_unlock(&ep->lock);
    for (c = outs; c; c = cn) {
        cn = c->next_pending;
        c->next_pending = ep->pending;
        ep->pending = c;
        if (tcp_watch(ep->epfd, c) != 0)
            tcp_pending_drop(ep, c, "cannot watch it");
    }
    tcp_take_ops(ep);
}

void tcp_poll_data(tcp_ep_t *ep)
{
    struct epoll_event evs[EVS];
    int n;

    do {
        n = epoll_wait(ep->dsc.fd, evs, EVS, 0);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            uint32_t e = evs[i].events;
            if (e & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
                c->drained = 0; /* new bytes, or the end */
                c->ended |= (e & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) != 0;
                tcp_do_recv(ep, c);
            }
            if ((e & EPOLLOUT) && c->fd >= 0) {
                c->writable = 1;
                tcp_do_send(ep, c);
            }
        }
    } while (n == EVS); /* more may wait: the set signals only new ones */
}

static void *tcp_main(void *arg)
{
    tcp_ep_t *ep = arg;
    struct epoll_event evs[EVS];
    int watching = 1;

    while (!atomic_load_explicit(&ep->stop, memory_order_acquire)) {
        int wait_ms = !watching ? (int)(PARK_NS / 1000000)
                      : ep->pending ? 100 : 500;
        int n = epoll_wait(ep->epfd, evs, EVS, wait_ms);
        int data = 0, other = ep->pending != NULL;
        for (int i = 0; i < n; i++) {
            int kind = ((conn_t *)evs[i].data.ptr)->kind;
            data |= kind == C_DATASET;
            other |= kind != C_DATASET;
        }
        if (data && polled_lately(ep) && watch_data(ep, 0) == 0) {
            watching = 0; /* the poller takes what is ready */
            data = 0;
        } else if (!watching && !polled_lately(ep) && watch_data(ep, 1) == 0) {
            watching = 1; /* what came while parked raised no event */
            data = 1;
        }
        if (!data && !other)
            continue;
        pthread_mutex_lock(&ep->io);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            switch (c->kind) {
            case C_EVENT:
                take_submitted(ep);
                break;
            case C_LISTEN:
                tcp_accept_all(ep);
                break;
            case C_IN:
            case C_OUT:
                tcp_read_pending(ep, c);
                break;
            default: /* C_DATASET: below */
                break;
            }
        }
        if (data)
            tcp_poll_data(ep);
        if (ep->pending != NULL)
            tcp_expire_pending(ep);
        pthread_mutex_unlock(&ep->io);
    }
    return NULL;
}

tutti_status_t tcp_thread_start(tcp_ep_t *ep, const tutti_tp_group_t *g)
{
    const tutti_tp_core_ops_t *core = g->core;
    struct epoll_event ev = {EPOLLIN | EPOLLET, {0}};
    ep->epfd = epoll_create1(EPOLL_CLOEXEC);
    ep->dsc.fd = epoll_create1(EPOLL_CLOEXEC);
    ep->evc.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep->epfd < 0 || ep->dsc.fd < 0 || ep->evc.fd < 0)
        return core->error(TUTTI_ERR_IO, "tcp", "epoll/eventfd: %s",
                           strerror(errno));
    ep->evc.kind = C_EVENT;
    ep->lsc.kind = C_LISTEN;
    ep->dsc.kind = C_DATASET;
    ev.data.ptr = &ep->evc;
    if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->evc.fd, &ev) != 0)
        return core->error(TUTTI_ERR_IO, "tcp", "epoll_ctl (wake-up event): "
                           "%s", strerror(errno));
    ev.data.ptr = &ep->lsc;
    if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->lsc.fd, &ev) != 0)
        return core->error(TUTTI_ERR_IO, "tcp", "epoll_ctl (listening "
                           "socket): %s", strerror(errno));
    ev.data.ptr = &ep->dsc;
    if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->dsc.fd, &ev) != 0)
        return core->error(TUTTI_ERR_IO, "tcp", "epoll_ctl (data sockets' "
                           "set): %s", strerror(errno));
    if (pthread_create(&ep->thread, NULL, tcp_main, ep) != 0)
        return core->error(TUTTI_ERR_INTERNAL, "tcp", "cannot start the "
                           "progress thread");
    ep->running = 1;
    return TUTTI_OK;
}
