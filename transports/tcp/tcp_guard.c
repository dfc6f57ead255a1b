/*
 * tcp transport: what guards a listener against connections that never
 * authenticate, for the endpoints' listeners (tcp_join.c) and the
 * rendezvous server (tcp_rendezvous.c) alike.  A one-host job listens on
 * loopback alone; a listener holds at most TCP_PENDING_MAX connections in
 * their handshake, TCP_PENDING_PER_SOURCE of them from one address, and
 * accepts and closes the others at once; its refusals are logged one by
 * one up to TCP_WARN_BURST, then summed once per TCP_WARN_PERIOD until a
 * period passes without any; where accept fails for want of descriptors
 * or memory it rests TCP_ACCEPT_PAUSE rather than spin, and the
 * connections wait in its backlog until it takes them.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_int.h"

int tcp_loopback_only(const tutti_tp_group_t *g, const tcp_settings_t *s)
{
    const char *rdv = getenv("TUTTI_RENDEZVOUS");
    const char *file = getenv("TUTTI_RENDEZVOUS_FILE");
    if (s->interface[0] != '\0' || (rdv != NULL && *rdv != '\0') ||
        (file != NULL && *file != '\0'))
        return 0;
    if (g->rank_host == NULL)
        return 1;
    for (int r = 0; r < g->group_size; r++)
        if (g->rank_host[r] != g->rank_host[g->rank])
            return 0;
    return 1;
}

void tcp_guard_init(tcp_guard_t *g, const tutti_tp_core_ops_t *core,
                    const char *name)
{
    memset(g, 0, sizeof(*g));
    g->core = core;
    snprintf(g->name, sizeof(g->name), "%s", name);
    g->since = core->now();
}

/* Ends the period if it is over: logs what was summed, or, after a
 * period without refusals, lets the next ones be logged one by one. */
static void tick_at(tcp_guard_t *g, double now)
{
    double took = now - g->since;
    if (took < TCP_WARN_PERIOD)
        return;
    if (g->held > 0)
        g->core->log(1, "tcp", "%s%lu more connections refused in the last "
                     "%.1f s (%lu over the limits of %d connections in "
                     "their handshake per listener, %d per address)",
                     g->name, g->held, took, g->held_over, TCP_PENDING_MAX,
                     TCP_PENDING_PER_SOURCE);
    if (g->pauses > 0)
        g->core->log(1, "tcp", "%sthe listener rested %lu more times in the "
                     "last %.1f s: accept failed for want of descriptors "
                     "or memory", g->name, g->pauses, took);
    if (g->held == 0 && g->pauses == 0)
        g->logged = 0;
    g->held = g->held_over = g->pauses = 0;
    g->since = now;
}

/* One line for the first rest of a spell, the others summed. */
static void rest(tcp_guard_t *g, int err)
{
    double now = g->core->now();
    tick_at(g, now);
    g->paused_until = now + TCP_ACCEPT_PAUSE;
    if (g->logged < TCP_WARN_BURST) {
        g->logged++;
        g->core->log(1, "tcp", "%scannot accept connections: %s; the "
                     "listener rests %.0f ms and its connections wait in "
                     "the backlog", g->name, strerror(err),
                     TCP_ACCEPT_PAUSE * 1000);
    } else {
        g->pauses++;
    }
}

int tcp_guard_resting(const tcp_guard_t *g)
{
    return g->paused_until != 0 && g->core->now() < g->paused_until;
}

int tcp_guard_accept(tcp_guard_t *g, int lfd, tcp_addr_t *src, char *from,
                     size_t from_len)
{
    if (g->paused_until != 0) {
        if (g->core->now() < g->paused_until)
            return -1;
        g->paused_until = 0;
    }
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            tcp_sockaddr_to_addr((struct sockaddr *)&ss, 0, src);
            tcp_sockaddr_str((struct sockaddr *)&ss, from, from_len);
            return fd;
        }
        switch (errno) {
        case EAGAIN:
#if EWOULDBLOCK != EAGAIN
        case EWOULDBLOCK:
#endif
            return -1;
        /* That one connection failed (Linux passes its pending network
         * error on, accept(2)): take the next. */
        case EINTR:
        case ECONNABORTED:
        case EPROTO:
        case EPERM:
        case ENETDOWN:
        case ENOPROTOOPT:
        case EHOSTDOWN:
        case ENONET:
        case EHOSTUNREACH:
        case EOPNOTSUPP:
        case ENETUNREACH:
            continue;
        default: /* EMFILE, ENFILE, ENOBUFS, ENOMEM, or worse */
            rest(g, errno);
            return -1;
        }
    }
}

const char *tcp_guard_over(unsigned all, unsigned same, unsigned extra,
                           char *why, size_t wl)
{
    if (all >= TCP_PENDING_MAX + extra)
        snprintf(why, wl, "over the limit of connections in their handshake "
                 "on this listener: %u already, the most it holds", all);
    else if (same >= TCP_PENDING_PER_SOURCE + extra)
        snprintf(why, wl, "over the limit of connections in their handshake "
                 "from one address: %u from it already, the most one "
                 "address may have", same);
    else
        return NULL;
    return why;
}

int tcp_addr_same_host(const tcp_addr_t *a, const tcp_addr_t *b)
{
    return a->family == b->family &&
           memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

void tcp_guard_refuse(tcp_guard_t *g, const char *from, const char *why,
                      int over)
{
    tick_at(g, g->core->now());
    if (g->logged < TCP_WARN_BURST) {
        g->logged++;
        g->core->log(1, "tcp", "%srefused connection from %s: %s", g->name,
                     from, why);
        return;
    }
    g->held++;
    g->held_over += over != 0;
}

void tcp_guard_tick(tcp_guard_t *g)
{
    if (g->held > 0 || g->pauses > 0)
        tick_at(g, g->core->now());
}

int tcp_guard_due_ms(const tcp_guard_t *g)
{
    double now, due = 1e9;
    if (g->held == 0 && g->pauses == 0 && g->paused_until == 0)
        return -1;
    now = g->core->now();
    if (g->held > 0 || g->pauses > 0)
        due = g->since + TCP_WARN_PERIOD - now;
    if (g->paused_until != 0 && g->paused_until - now < due)
        due = g->paused_until - now;
    return due <= 0 ? 0 : (int)(due * 1000) + 1;
}
