/*
 * tcp transport module: members on any hosts, over sockets.
 *
 * Each endpoint has a listening socket, tcp.connections sockets per peer
 * and an epoll set (edge-triggered) over the listener, connections still
 * in their handshake, an eventfd the API calls ring, and the epoll set of
 * the peer sockets.  One progress engine per process (tcp_progress.c), a
 * thread over every endpoint's set, serves them all: the control plane
 * and any number of groups cost one thread, not one each.
 *
 * The data path has a direct way and a queued one (tcp_progress.c).
 * send()/recv() that get the endpoint's I/O lock with trylock post the op
 * themselves (a send writes what its socket takes at once), and
 * progress() that gets it polls the peer sockets with no wait and moves
 * what is ready: a member that polls pays no thread wake-up per message.
 * Where another holds the lock, send()/recv() queue the op (no
 * allocation) and ring the engine.  Whoever holds the lock completes ops
 * by storing op->status (release); progress() returns how many completed
 * since its last call.
 *
 * Wire: every fragment is a frame_t header and its bytes.  Messages from
 * tcp.connections x 256K up are cut into one piece per socket (64-byte
 * aligned); smaller ones go whole on one socket, round robin.  Receives
 * match by key per peer: a fragment goes straight into the posted buffer
 * (through a small staging buffer and op->reduce.fn where it reduces), or,
 * unmatched, into a buffer that waits for its receive.  A frame that fails
 * its checks fails that peer: its sockets close and its operations end
 * with TUTTI_ERR_PEER naming it; other peers go on.
 *
 * Connecting: endpoints register at the rendezvous (tcp_rendezvous.c);
 * the lower rank of each pair opens the sockets, the higher accepts them
 * after the handshake (job id, group key, both ranks, socket index, and
 * a challenge-response on the secret, tcp_net.c).  Where every rank is on
 * this host the listener takes loopback alone; what it accepts before the
 * proof is bounded (tcp_guard.c).
 *
 * Test hooks, not for production: TUTTI_TCP_TEST_GARBLE=R makes rank R of
 * every group (not the control plane) corrupt the magic of its 3rd frame;
 * TUTTI_TCP_TEST_GARBLE=R:truncate makes it send only the header of its
 * first frame with a body from the 3rd on, then end that socket;
 * TUTTI_TCP_TEST_GARBLE=R:oversize makes its 3rd frame claim a message
 * over the 1 TiB limit.  TUTTI_TEST_CORRUPT=R:N (as the core's channels
 * read it) makes rank R of every group (not the control plane) flip
 * byte N of the first message of more than N bytes it receives, as it
 * comes off the socket.
 *
 * Verify (group->verify, the core's `verify: checksum`): each frame's
 * header carries the checksum of its body, computed from the send buffer
 * just before the header goes; the receiver sums the body as it reads it,
 * before it copies aside or reduces, and fails the peer where they differ,
 * naming the key, the frame's bytes and the two sums.  `verify: mac`, and
 * always the control plane: the header carries a tag of itself and the
 * body instead (tcp_mac.h), under the connection's session key and the
 * frame's number on it, checked the same way; a frame altered, replayed,
 * reordered or moved between connections fails it.
 *
 * Bounds: every fragment of a message carries that message's length, and
 * is refused unless it equals the length of the receive or the buffer
 * held aside it continues, so that its offset and length stay inside
 * them; what peers send ahead of their receives is held aside up to
 * tcp.unexpected bytes per endpoint.
 *
 * Where each part lives: this file is the ops table, the settings' rows,
 * connect (with the test hook's parsing) and disconnect; tcp_progress.c
 * the engine and the polling API calls share with it; tcp_send.c and
 * tcp_recv.c the data path; tcp_complete.c completing operations and
 * failing a peer; tcp_join.c the sockets of
 * each pair and their handshake; tcp_rendezvous.c the rendezvous;
 * tcp_net.c the socket, address and secret helpers.  tcp_ep.h holds the
 * endpoint's types, tcp_int.h the settings', the handshake's and the
 * rendezvous's.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_ep.h"

#define CTRL_GROUP_KEY 0xc0c0c0c0c0c0c0c0ULL

static tutti_status_t submit(tutti_tp_ep_t *tep, tutti_tp_op_t *op,
                             int is_recv)
{
    tcp_ep_t *ep = (tcp_ep_t *)tep;
    if (op->peer < 0 || op->peer >= ep->size || !ep->peers[op->peer].serve)
        return ep->core->error(TUTTI_ERR_INVALID_ARG, "tcp", "rank %d: peer "
                               "%d is not a member this transport connects "
                               "(group of %d)", ep->rank, op->peer, ep->size);
    if ((uint64_t)op->len > MSG_MAX)
        return ep->core->error(TUTTI_ERR_INVALID_ARG, "tcp", "rank %d: a "
                               "message of %zu bytes to rank %d; expected at "
                               "most 1 TiB", ep->rank, op->len, op->peer);
    op->is_recv = is_recv;
    op->done = 0;
    op->status = TUTTI_INPROGRESS;
    op->next = NULL;
    atomic_fetch_add_explicit(&ep->submitted, 1, memory_order_relaxed);
    if (pthread_mutex_trylock(&ep->io) == 0) {
        /* Ops queued before this one go first, in their order. */
        if (atomic_load_explicit(&ep->queued, memory_order_relaxed))
            tcp_take_ops(ep);
        if (is_recv)
            tcp_post_recv(ep, op);
        else
            tcp_post_send(ep, op);
        pthread_mutex_unlock(&ep->io);
        return TUTTI_OK;
    }
    pthread_mutex_lock(&ep->lock);
    tcp_op_append(&ep->sub_h, &ep->sub_t, op);
    atomic_store_explicit(&ep->queued, 1, memory_order_relaxed);
    pthread_mutex_unlock(&ep->lock);
    tcp_ring(ep);
    return TUTTI_OK;
}

static tutti_status_t tcp_send(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    return submit(tep, op, 0);
}

static tutti_status_t tcp_recv(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    return submit(tep, op, 1);
}

static int tcp_progress(tutti_tp_ep_t *tep)
{
    tcp_ep_t *ep = (tcp_ep_t *)tep;
    unsigned now;
    int n;

    /* With no op in flight there is nothing to move here (a message that
     * comes first waits for its receive), and no system call is made: a
     * group whose other peers are on shm polls this endpoint on every
     * pass.  Otherwise this tells the engine a member polls (it then
     * leaves the data sockets to it); where the engine or another caller
     * holds the lock, they move the bytes. */
    if (atomic_load_explicit(&ep->submitted, memory_order_relaxed) !=
            atomic_load_explicit(&ep->completed, memory_order_relaxed)) {
        atomic_store_explicit(&ep->last_poll_ns, tcp_now_ns(),
                              memory_order_relaxed);
        if (pthread_mutex_trylock(&ep->io) == 0) {
            if (atomic_load_explicit(&ep->queued, memory_order_relaxed))
                tcp_take_ops(ep);
            tcp_poll_data(ep);
            pthread_mutex_unlock(&ep->io);
        }
    }
    now = atomic_load_explicit(&ep->completed, memory_order_acquire);
    n = (int)(now - ep->reported_completed);
    ep->reported_completed = now;
    if (ep->err_st != TUTTI_OK) { /* a racy peek; the lock decides */
        char text[512];
        tutti_status_t st;
        pthread_mutex_lock(&ep->lock);
        st = ep->err_st;
        ep->err_st = TUTTI_OK;
        snprintf(text, sizeof(text), "%s", ep->err_text);
        pthread_mutex_unlock(&ep->lock);
        if (st != TUTTI_OK)
            ep->core->error(st, "tcp", "%s", text);
    }
    return n;
}

/* The failure text is written once, by whoever holds the I/O lock, before
 * the operations it fails complete (their release store publishes it). */
static const char *tcp_peer_error(tutti_tp_ep_t *tep, int peer)
{
    tcp_ep_t *ep = (tcp_ep_t *)tep;
    if (peer < 0 || peer >= ep->size || !ep->peers[peer].serve ||
        ep->peers[peer].fail_text[0] == '\0')
        return NULL;
    return ep->peers[peer].fail_text;
}

static int tcp_peer_alive(tutti_tp_ep_t *tep, int peer)
{
    tcp_ep_t *ep = (tcp_ep_t *)tep;
    if (peer < 0 || peer >= ep->size || !ep->peers[peer].serve)
        return -1;
    return !atomic_load(&ep->peers[peer].closed);
}

/* Lets the peers read what was sent before the sockets go: a close with
 * unread bytes would reset the connection and lose data in flight. */
static void drain_and_close(tcp_ep_t *ep)
{
    double until = ep->core->now() + 0.2;
    char sink[4096];
    int open = 0;
    for (int r = 0; r < ep->size; r++) {
        for (unsigned i = 0; i < ep->set.connections; i++) {
            conn_t *c = ep->peers[r].conns[i];
            if (c != NULL && c->fd >= 0) {
                shutdown(c->fd, SHUT_WR);
                open++;
            }
        }
    }
    while (open > 0 && ep->core->now() < until) {
        open = 0;
        for (int r = 0; r < ep->size; r++) {
            for (unsigned i = 0; i < ep->set.connections; i++) {
                conn_t *c = ep->peers[r].conns[i];
                if (c == NULL || c->fd < 0)
                    continue;
                ssize_t n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                    tcp_conn_close(ep, c);
                else
                    open++;
            }
        }
        if (open > 0) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

static void tcp_disconnect(tutti_tp_ep_t *tep)
{
    tcp_ep_t *ep = (tcp_ep_t *)tep;
    if (ep == NULL)
        return;
    tcp_engine_remove(ep);
    while (ep->pending != NULL)
        tcp_pending_drop(ep, ep->pending, NULL);
    for (conn_t *c = ep->new_out, *n; c; c = n) {
        n = c->next_pending;
        close(c->fd);
        tcp_conn_free(c);
    }
    if (ep->peers != NULL) {
        drain_and_close(ep);
        for (int r = 0; r < ep->size; r++) {
            peer_t *p = &ep->peers[r];
            for (unsigned i = 0; i < TCP_CONNS_MAX; i++) {
                if (p->conns[i] != NULL) {
                    tcp_conn_close(ep, p->conns[i]);
                    tcp_conn_free(p->conns[i]);
                }
            }
            while (p->unexp != NULL) {
                unexp_t *u = p->unexp;
                p->unexp = u->next;
                tcp_unexp_free(ep, u);
            }
        }
    }
    if (ep->lsc.fd >= 0)
        close(ep->lsc.fd);
    if (ep->evc.fd >= 0)
        close(ep->evc.fd);
    if (ep->epfd >= 0)
        close(ep->epfd);
    if (ep->dsc.fd >= 0)
        close(ep->dsc.fd);
    pthread_mutex_destroy(&ep->lock);
    pthread_mutex_destroy(&ep->io);
    free(ep->peers);
    explicit_bzero(&ep->cred, sizeof(ep->cred));
    free(ep);
}

/* Says how many sockets joined, as counted (tcp.connections per peer). */
static void log_joined(tcp_ep_t *ep)
{
    unsigned sockets = 0;
    int peers = 0;
    pthread_mutex_lock(&ep->lock);
    for (int r = 0; r < ep->size; r++) {
        sockets += ep->peers[r].joined;
        peers += ep->peers[r].serve;
    }
    pthread_mutex_unlock(&ep->lock);
    ep->core->log(3, "tcp", "rank %d of group 0x%llx: joined with %d "
                  "peer(s) by %u socket(s)", ep->rank,
                  (unsigned long long)ep->group_key, peers, sockets);
}

static tutti_status_t tcp_connect(const tutti_tp_group_t *g,
                                  tutti_tp_ep_t **ep_out)
{
    const tutti_tp_core_ops_t *core = g->core;
    double deadline = core->now() + g->timeout;
    tcp_reg_t reg, *peers = NULL;
    unsigned char *want = NULL;
    tutti_status_t st = TUTTI_ERR_NO_MEMORY;
    const char *garble = getenv("TUTTI_TCP_TEST_GARBLE");
    tcp_ep_t *ep = calloc(1, sizeof(*ep));

    if (ep == NULL)
        return core->error(st, "tcp", "out of memory for an endpoint");
    ep->core = core;
    ep->rank = g->rank;
    ep->size = g->group_size;
    ep->task = g->task;
    ep->group_key = g->group_key;
    ep->rank_task = g->rank_task;
    ep->epfd = ep->evc.fd = ep->lsc.fd = ep->dsc.fd = -1;
    pthread_mutex_init(&ep->io, NULL);
    pthread_mutex_init(&ep->lock, NULL);
    snprintf(ep->job, sizeof(ep->job), "%s", g->job_id);
    char name[64];
    snprintf(name, sizeof(name), "group 0x%llx rank %d: ",
             (unsigned long long)g->group_key, g->rank);
    tcp_guard_init(&ep->guard, core, name);
    ep->peers = calloc((size_t)g->group_size, sizeof(peer_t));
    peers = calloc((size_t)g->group_size, sizeof(tcp_reg_t));
    want = calloc((size_t)g->group_size, 1);
    if (ep->peers == NULL || peers == NULL || want == NULL)
        goto err;
    if (garble != NULL && atoi(garble) == g->rank && *garble != '\0' &&
        g->group_key != CTRL_GROUP_KEY) {
        ep->garble = 3;
        ep->truncate = strstr(garble, ":truncate") != NULL;
        ep->oversize = strstr(garble, ":oversize") != NULL;
    }
    const char *hook = getenv("TUTTI_TEST_CORRUPT");
    int hook_rank;
    unsigned long long hook_at;
    if (hook != NULL && sscanf(hook, "%d:%llu", &hook_rank, &hook_at) == 2 &&
        hook_rank == g->rank && g->group_key != CTRL_GROUP_KEY) {
        ep->corrupt_armed = 1;
        ep->corrupt_at = hook_at;
    }
    ep->verify = g->size >= offsetof(tutti_tp_group_t, verify) +
                                sizeof(g->verify) &&
                 g->verify == TUTTI_TP_VERIFY_CHECKSUM;
    ep->mac = g->size >= offsetof(tutti_tp_group_t, verify) +
                             sizeof(g->verify) &&
              g->verify == TUTTI_TP_VERIFY_MAC;
    ep->check = ep->verify || ep->mac || ep->corrupt_armed;
    if (tcp_mac_lib_init() != 0) {
        st = core->error(TUTTI_ERR_INTERNAL, "tcp", "libsodium cannot "
                         "start (no randomness?)");
        goto err;
    }
    /* Filled from the rows below by the core, which loads this module only
     * if its transport ABI is 2.1 or later: group->settings exists. */
    if (g->settings == NULL) {
        st = core->error(TUTTI_ERR_MODULE, "tcp", "the core handed no "
                         "settings; this module needs a core of transport "
                         "ABI 2.1 or later");
        goto err;
    }
    ep->set = *(const tcp_settings_t *)g->settings;
    if ((st = tcp_cred_of(g, &ep->cred)) != TUTTI_OK)
        goto err;
    ep->cred.job_id = ep->job;
    for (int r = 0; r < g->group_size; r++) {
        ep->peers[r].serve = r != g->rank && (g->serve == NULL || g->serve[r]);
        want[r] = ep->peers[r].serve && r > g->rank;
        if (ep->peers[r].serve && r < g->rank)
            ep->in_expect += (unsigned)ep->set.connections;
    }
    memset(&reg, 0, sizeof(reg));
    if ((st = tcp_listen(core, &ep->set, tcp_loopback_only(g, &ep->set),
                         &ep->lsc.fd, &reg)) != TUTTI_OK ||
        (st = tcp_engine_add(ep, g)) != TUTTI_OK)
        goto err;
    for (uint32_t i = 0; i < reg.naddr; i++) {
        char a[80];
        tcp_addr_str(&reg.addrs[i], a, sizeof(a));
        core->log(3, "tcp", "rank %d of group 0x%llx: listening on %s",
                  g->rank, (unsigned long long)g->group_key, a);
    }
    reg.group_key = g->group_key;
    reg.rank = g->rank;
    reg.group_size = g->group_size;
    reg.nconn = (uint32_t)ep->set.connections;
    if (gethostname(reg.host, sizeof(reg.host) - 1) != 0)
        snprintf(reg.host, sizeof(reg.host), "unknown");
    if ((st = tcp_rendezvous(g, &ep->set, &ep->cred, &reg, want, deadline,
                             peers)) != TUTTI_OK)
        goto err;
    for (int r = g->rank + 1; r < g->group_size; r++) {
        if (want[r] && (st = tcp_open_to(ep, r, &peers[r], reg.host,
                                         deadline)) != TUTTI_OK)
            goto err;
    }
    if ((st = tcp_wait_joined(ep, deadline)) != TUTTI_OK)
        goto err;
    log_joined(ep);
    free(peers);
    free(want);
    *ep_out = (tutti_tp_ep_t *)ep;
    return TUTTI_OK;

err:
    free(peers);
    free(want);
    tcp_disconnect((tutti_tp_ep_t *)ep);
    return st;
}

/* No reachable: every peer. */
static const tutti_tp_ops_t tcp_ops = {
    .size = sizeof(tutti_tp_ops_t), .name = "tcp", .connect = tcp_connect,
    .send = tcp_send, .recv = tcp_recv, .progress = tcp_progress,
    .disconnect = tcp_disconnect, .peer_alive = tcp_peer_alive,
    .peer_error = tcp_peer_error};

/* Linux's rules for interface names: below IFNAMSIZ (the row's max), not
 * "." or "..", no '/', ':' or white space.  "" means any interface. */
static int ifname_ok(const char *s)
{
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (; *s != '\0'; s++)
        if (!isgraph((unsigned char)*s) || *s == '/' || *s == ':')
            return 0;
    return 1;
}


static const tutti_setting_t tcp_settings[] = {
    {.name = "interface",
     .env = "TUTTI_TCP_IFNAME",
     .default_value = "",
     .doc = "interface to listen on and advertise, \"\" for any",
     .type = TUTTI_SETTING_STRING,
     .offset = offsetof(tcp_settings_t, interface),
     .max = sizeof(((tcp_settings_t *)0)->interface),
     .check = ifname_ok,
     .expected = "a network interface name of 1 to 15 characters without "
                 "'/', ':' or spaces, e.g. eth0, or \"\" for any"},
    {.name = "family",
     .default_value = "any",
     .doc = "address family to listen on",
     .type = TUTTI_SETTING_CHOICE,
     .offset = offsetof(tcp_settings_t, family),
     .choices = tcp_families},
    {.name = "ports",
     .default_value = "0",
     .doc = "listening ports; each endpoint takes the first free one",
     .type = TUTTI_SETTING_RANGE,
     .offset = offsetof(tcp_settings_t, ports),
     .min = 1,
     .max = 65535,
     .flags = TUTTI_SETTING_ZERO_ANY,
     .expected = "0 (any free port) or a range LO-HI of ports from 1 to "
                 "65535, e.g. 29500-29599"},
    {.name = "connections",
     .default_value = "2",
     .doc = "sockets per peer pair; large messages are striped over them",
     .type = TUTTI_SETTING_UINT,
     .offset = offsetof(tcp_settings_t, connections),
     .min = 1,
     .max = TCP_CONNS_MAX},
    {.name = "unexpected",
     .default_value = "2G",
     .doc = "bytes of messages that came before their receives an "
            "endpoint holds aside, at most; a peer sending more fails",
     .type = TUTTI_SETTING_SIZE,
     .offset = offsetof(tcp_settings_t, unexpected),
     .min = 64 << 10,
     .max = MSG_MAX},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("tcp", "0.2.0", tcp_ops, tcp_settings,
                                tcp_settings_t);
