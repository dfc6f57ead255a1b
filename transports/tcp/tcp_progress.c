/*
 * tcp transport: the process's progress engine, and the polling the API
 * calls share with it.
 *
 * Each endpoint has two edge-triggered epoll sets: the data sockets in one
 * (dsc), and its own (epfd), which watches that set, the listener, the
 * connections still in their handshake, and an eventfd that the API calls
 * ring to hand it operations and sockets.  One thread per process, the
 * engine, serves every endpoint: its epoll set watches each endpoint's
 * epfd (nested, edge-triggered) and an eventfd of its own; an endpoint
 * whose set has events is serviced, under its I/O lock, as a thread of
 * its own would.  The engine starts with the first endpoint and stops
 * (joined) with the last, before the module can be unloaded; the
 * endpoints register and leave under the engine's lock, which the engine
 * holds while it services, so a leaving endpoint is never serviced again
 * and an event taken for it before it left is dropped (its pointer is
 * looked up among those registered).
 *
 * Whoever holds an endpoint's I/O lock moves bytes: an API call (send(),
 * recv(), progress()) that gets it with trylock does the socket work
 * itself, so a member that polls pays no thread wake-up per message; the
 * engine handles what is ready when nobody polls (and the handshakes,
 * always).  The engine also takes the I/O lock with trylock: where a
 * member holds it, the endpoint is tried again within a millisecond, so
 * one endpoint's long transfer never holds up another's.  An
 * edge-triggered event goes to one epoll_wait only, so whoever receives
 * it handles it, under the lock.  The sockets in their handshake stay in
 * the endpoint's own set alone, so that only the engine frees them.
 *
 * While a member polls (progress() within the last PARK_NS), the engine
 * stops watching that endpoint's data sockets: woken for data the poller
 * takes anyway, it would only cost the poller a lock hand-off and a core.
 * It looks every PARK_NS and watches them again once nobody polls, so a
 * member that stops polling waits at most about twice that.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "tcp_ep.h"

#define EVS 64                      /* events taken per epoll_wait */
#define PARK_NS 1000000             /* a poll this recent parks the engine */

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
 * epoll_ctl refused (the engine then goes on as it was). */
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

/* ---- the engine --------------------------------------------------------- */

enum { ENG_STOPPED, ENG_RUNNING, ENG_STOPPING };

static struct {
    pthread_mutex_t lock;       /* the list, the state; held to service */
    pthread_cond_t stopped;     /* state left ENG_STOPPING */
    int state;
    int epfd;                   /* every endpoint's epfd, and wakefd */
    int wakefd;
    pthread_t thread;
    tcp_ep_t *eps;              /* registered endpoints (eng_next) */
    int count;
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER,
         .stopped = PTHREAD_COND_INITIALIZER,
         .state = ENG_STOPPED,
         .epfd = -1,
         .wakefd = -1};

/* How soon the engine must look at @p ep again without an event (ms). */
static int due_ms(const tcp_ep_t *ep)
{
    int guard = tcp_guard_due_ms(&ep->guard), due;
    if (ep->retry || !ep->watching)
        return (int)(PARK_NS / 1000000);
    due = ep->pending != NULL ? 100 : 500;
    return guard >= 0 && guard < due ? guard : due;
}

/* Handles one batch of @p ep's events; the caller holds its I/O lock. */
static void dispatch(tcp_ep_t *ep, struct epoll_event *evs, int n)
{
    int data = 0;
    for (int i = 0; i < n; i++)
        data |= ((conn_t *)evs[i].data.ptr)->kind == C_DATASET;
    if (data && polled_lately(ep) && watch_data(ep, 0) == 0) {
        ep->watching = 0; /* the poller takes what is ready */
        data = 0;
    }
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
}

/* Services @p ep: what its set holds, the data sockets it parked once
 * nobody polls, the handshakes past their deadline.  The engine's lock
 * is held. */
static void service(tcp_ep_t *ep)
{
    struct epoll_event evs[EVS];
    int n;
    if (pthread_mutex_trylock(&ep->io) != 0) {
        ep->retry = 1; /* a member moves bytes: again soon */
        return;
    }
    ep->retry = 0;
    do {
        n = epoll_wait(ep->epfd, evs, EVS, 0);
        if (n > 0)
            dispatch(ep, evs, n);
    } while (n == EVS); /* more may wait: the set signals only new ones */
    if (!ep->watching && !polled_lately(ep) && watch_data(ep, 1) == 0) {
        ep->watching = 1; /* what came while parked raised no event */
        tcp_poll_data(ep);
    }
    if (ep->pending != NULL)
        tcp_expire_pending(ep);
    /* A listener that rested takes its backlog again (no new connection
     * may come to raise an event); the warnings it summed are logged. */
    if (ep->guard.paused_until != 0 && !tcp_guard_resting(&ep->guard))
        tcp_accept_all(ep);
    tcp_guard_tick(&ep->guard);
    pthread_mutex_unlock(&ep->io);
}

static void *engine_main(void *arg)
{
    struct epoll_event evs[EVS];
    int wait_ms = 500;
    (void)arg;
    prctl(PR_SET_NAME, "tutti-tcp"); /* as top and /proc name it */
    for (;;) {
        int n = epoll_wait(eng.epfd, evs, EVS, wait_ms);
        pthread_mutex_lock(&eng.lock);
        if (eng.state == ENG_STOPPING) {
            pthread_mutex_unlock(&eng.lock);
            return NULL;
        }
        /* An event names an endpoint only if it is still registered. */
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &eng) {
                uint64_t v;
                ssize_t got = read(eng.wakefd, &v, sizeof(v));
                (void)got; /* it only wakes: the count does not matter */
                continue;
            }
            for (tcp_ep_t *ep = eng.eps; ep != NULL; ep = ep->eng_next)
                ep->woke |= ep == evs[i].data.ptr;
        }
        wait_ms = 500;
        for (tcp_ep_t *ep = eng.eps; ep != NULL; ep = ep->eng_next) {
            /* Without an event, only what is timed: parked data sockets,
             * a lock a member held, handshakes' deadlines, a listener's
             * rest and summed warnings. */
            if (ep->woke || ep->retry || !ep->watching || ep->pending ||
                tcp_guard_due_ms(&ep->guard) == 0)
                service(ep);
            ep->woke = 0;
            int due = due_ms(ep);
            wait_ms = due < wait_ms ? due : wait_ms;
        }
        pthread_mutex_unlock(&eng.lock);
    }
}

/* Wakes the engine (to stop, or to look at a new endpoint). */
static void engine_wake(void)
{
    uint64_t one = 1;
    if (write(eng.wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        return; /* a full counter wakes it as well */
}

/* Starts the engine; the caller holds its lock and it is stopped. */
static tutti_status_t engine_start(const tutti_tp_core_ops_t *core)
{
    struct epoll_event ev = {EPOLLIN | EPOLLET, {.ptr = &eng}};
    eng.epfd = epoll_create1(EPOLL_CLOEXEC);
    eng.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (eng.epfd < 0 || eng.wakefd < 0 ||
        epoll_ctl(eng.epfd, EPOLL_CTL_ADD, eng.wakefd, &ev) != 0) {
        int e = errno;
        if (eng.epfd >= 0)
            close(eng.epfd);
        if (eng.wakefd >= 0)
            close(eng.wakefd);
        eng.epfd = eng.wakefd = -1;
        return core->error(TUTTI_ERR_IO, "tcp", "the progress engine's "
                           "epoll set or eventfd: %s", strerror(e));
    }
    if (pthread_create(&eng.thread, NULL, engine_main, NULL) != 0) {
        close(eng.epfd);
        close(eng.wakefd);
        eng.epfd = eng.wakefd = -1;
        return core->error(TUTTI_ERR_INTERNAL, "tcp", "cannot start the "
                           "progress engine's thread");
    }
    eng.state = ENG_RUNNING;
    return TUTTI_OK;
}

/* Registers @p ep with the engine, starting it if it is not running. */
static tutti_status_t engine_add(tcp_ep_t *ep, const tutti_tp_core_ops_t *core)
{
    struct epoll_event ev = {EPOLLIN | EPOLLET, {.ptr = ep}};
    tutti_status_t st = TUTTI_OK;
    pthread_mutex_lock(&eng.lock);
    while (eng.state == ENG_STOPPING)
        pthread_cond_wait(&eng.stopped, &eng.lock);
    if (eng.state == ENG_STOPPED)
        st = engine_start(core);
    if (st == TUTTI_OK &&
        epoll_ctl(eng.epfd, EPOLL_CTL_ADD, ep->epfd, &ev) != 0)
        st = core->error(TUTTI_ERR_IO, "tcp", "epoll_ctl (an endpoint in "
                         "the progress engine): %s", strerror(errno));
    if (st == TUTTI_OK) {
        ep->eng_next = eng.eps;
        eng.eps = ep;
        eng.count++;
        ep->running = 1;
        ep->woke = 1; /* whatever its set already holds */
        engine_wake();
    }
    pthread_mutex_unlock(&eng.lock);
    return st;
}

void tcp_engine_remove(tcp_ep_t *ep)
{
    if (!ep->running)
        return;
    pthread_mutex_lock(&eng.lock);
    for (tcp_ep_t **pp = &eng.eps; *pp != NULL; pp = &(*pp)->eng_next) {
        if (*pp == ep) {
            *pp = ep->eng_next;
            break;
        }
    }
    epoll_ctl(eng.epfd, EPOLL_CTL_DEL, ep->epfd, NULL);
    ep->running = 0;
    if (--eng.count > 0) {
        pthread_mutex_unlock(&eng.lock);
        return;
    }
    /* The last one: stop the thread before the module may be unloaded. */
    eng.state = ENG_STOPPING;
    engine_wake();
    pthread_t t = eng.thread;
    pthread_mutex_unlock(&eng.lock);
    pthread_join(t, NULL);
    pthread_mutex_lock(&eng.lock);
    close(eng.epfd);
    close(eng.wakefd);
    eng.epfd = eng.wakefd = -1;
    eng.state = ENG_STOPPED;
    pthread_cond_broadcast(&eng.stopped);
    pthread_mutex_unlock(&eng.lock);
}

tutti_status_t tcp_engine_add(tcp_ep_t *ep, const tutti_tp_group_t *g)
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
    ep->watching = 1;
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
    return engine_add(ep, core);
}
