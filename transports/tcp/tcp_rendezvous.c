/*
 * tcp transport: the rendezvous, where the members of a job learn each
 * other's listen addresses.
 *
 * The rendezvous server is a thread of task 0's module, started by its
 * first endpoint and kept for the life of the process (the module is
 * linked -z nodelete, so unloading never pulls its code from under the
 * thread): groups made later meet there too.  It keeps, per (group key,
 * rank), the last registration, and answers look-ups; it talks only to
 * connections that opened with this job's id and secret.  Requests and
 * answers are fixed-size frames, each tagged under the connection's
 * session key (tcp_mac.h) and checked field by field: a registration
 * names its rank within its group, its addresses and sockets within their
 * bounds and a host name that ends; at most RDV_REGS_MAX are kept.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_int.h"
#include "tcp_mac.h"
#include "tcp_rdvfile.h"

#define RDV_REQ_MAGIC 0x52564452u /* "RDVR" */
#define RDV_REP_MAGIC 0x50564452u /* "RDVP" */
#define RDV_REG 1u
#define RDV_GET 2u
#define RDV_REGS_MAX 65536        /* registrations one rendezvous keeps */
#define RDV_GROUP_MAX (1 << 20)   /* ranks of a group, at most */

typedef struct {
    uint32_t magic, type;
    uint64_t group_key;
    int32_t rank, pad;
    tcp_reg_t reg;
    unsigned char tag[TCP_TAG];   /* of the bytes before it */
} rdv_req_t;

typedef struct {
    uint32_t magic, found;
    tcp_reg_t reg;
    unsigned char tag[TCP_TAG];
} rdv_rep_t;

/* ---- small helpers -------------------------------------------------------- */

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void set_io_timeout(int fd, double seconds)
{
    struct timeval tv = {(time_t)seconds,
                         (suseconds_t)((seconds - (time_t)seconds) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* ---- rendezvous server ------------------------------------------------------- */

typedef struct {
    int fd;
    int joined;               /* handshake passed */
    int step;                 /* before: 0, its opening; 1, its proof */
    size_t got;
    double deadline;
    tcp_hs_t hs;
    tcp_chal_t chal;          /* what we answered its opening with */
    tcp_mac_t mac_in, mac_out; /* once joined */
    union {
        tcp_proof_t proof;
        rdv_req_t req;
    } in;
    char from[64];
    tcp_addr_t src;           /* its address, port 0 (for the limits) */
} rdv_client_t;

static struct {
    pthread_mutex_t lock;
    int started;
    int fd;
    const tutti_tp_core_ops_t *core;
    tcp_cred_t cred;
    char job[TCP_JOB_MAX];
    tcp_reg_t *regs;
    size_t nregs;
    rdv_client_t *clients;
    size_t nclients;
    tcp_guard_t guard;        /* the listener's limits and warnings */
    atomic_int expect;        /* ranks of the largest group met here: they
                                 may come at once, on top of the limits */
} rdv = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static void rdv_drop(size_t i, const char *reason)
{
    rdv_client_t *c = &rdv.clients[i];
    if (reason != NULL)
        tcp_guard_refuse(&rdv.guard, c->from, reason, 0);
    close(c->fd);
    tcp_wipe(&c->mac_in, sizeof(c->mac_in));
    tcp_wipe(&c->mac_out, sizeof(c->mac_out));
    rdv.clients[i] = rdv.clients[--rdv.nclients];
}

/* NULL if @p r is a registration a member could have sent for
 * @p group_key, else what is wrong with it. */
static const char *reg_problem(const tcp_reg_t *r, uint64_t group_key)
{
    if (r->group_key != group_key)
        return "a registration for another group than its request's";
    if (r->group_size < 1 || r->group_size > RDV_GROUP_MAX)
        return "a group size out of range";
    if (r->rank < 0 || r->rank >= r->group_size)
        return "a rank outside its group";
    if (r->nconn < 1 || r->nconn > TCP_CONNS_MAX)
        return "a socket count out of range";
    if (r->naddr < 1 || r->naddr > TCP_ADDRS_MAX)
        return "an address count out of range";
    if (memchr(r->host, '\0', sizeof(r->host)) == NULL)
        return "a host name without its end";
    return NULL;
}

/* Stores or answers one request; NULL, or why the client is dropped. */
static const char *rdv_serve(rdv_client_t *c)
{
    static char why[160];
    rdv_req_t *q = &c->in.req;
    rdv_rep_t rep;
    const char *bad;
    memset(&rep, 0, sizeof(rep));
    rep.magic = RDV_REP_MAGIC;
    tcp_mac_begin(&c->mac_in);
    tcp_mac_update(&c->mac_in, q, offsetof(rdv_req_t, tag));
    if (!tcp_mac_check(&c->mac_in, q->tag))
        return "a request that failed its MAC (altered on the way, or not "
               "from the member that passed the handshake)";
    if (q->magic != RDV_REQ_MAGIC)
        return "a request with a bad magic";
    if (q->type != RDV_REG && q->type != RDV_GET)
        return "a request of unknown type";
    if (q->type == RDV_REG &&
        (bad = reg_problem(&q->reg, q->group_key)) != NULL) {
        snprintf(why, sizeof(why), "registration of rank %d of group "
                 "0x%llx: %s", q->reg.rank,
                 (unsigned long long)q->group_key, bad);
        return why;
    }
    for (size_t i = 0; i < rdv.nregs; i++) {
        if (rdv.regs[i].group_key != q->group_key ||
            rdv.regs[i].rank != (q->type == RDV_REG ? q->reg.rank : q->rank))
            continue;
        if (q->type == RDV_REG) {
            rdv.regs[i] = q->reg; /* a newer endpoint of that rank */
            return NULL;
        }
        rep.found = 1;
        rep.reg = rdv.regs[i];
        break;
    }
    if (q->type == RDV_REG) {
        if (rdv.nregs == RDV_REGS_MAX)
            return "one registration more than the rendezvous keeps (its "
                   "groups' ranks, at most 65536)";
        tcp_reg_t *grown = realloc(rdv.regs, (rdv.nregs + 1) * sizeof(*grown));
        if (grown == NULL)
            return "no memory for its registration";
        rdv.regs = grown;
        rdv.regs[rdv.nregs++] = q->reg;
        return NULL;
    }
    tcp_mac_of(&c->mac_out, &rep, offsetof(rdv_rep_t, tag), rep.tag);
    if (tcp_write_full(c->fd, &rep, sizeof(rep)) != 0) /* small: fits */
        return "closed before its answer";
    return NULL;
}

/* Reads what client @p i sent; returns 0 to keep it. */
static int rdv_read(size_t i)
{
    rdv_client_t *c = &rdv.clients[i];
    for (;;) {
        size_t want = c->joined ? sizeof(rdv_req_t)
                      : c->step == 0 ? sizeof(tcp_hs_t) : sizeof(tcp_proof_t);
        void *to = !c->joined && c->step == 0 ? (void *)&c->hs
                                              : (void *)&c->in;
        ssize_t n = recv(c->fd, (char *)to + c->got, want - c->got, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) {
            char why[96];
            if (!c->joined) {
                snprintf(why, sizeof(why), "closed after %zu of %zu "
                         "handshake bytes", c->got, want);
                rdv_drop(i, why);
            } else {
                rdv_drop(i, NULL); /* a member done with its look-ups */
            }
            return -1;
        }
        c->got += (size_t)n;
        if (c->got < want)
            continue;
        c->got = 0;
        if (!c->joined && c->step == 0) {
            const char *why = tcp_hs_check(&c->hs, &rdv.cred, TCP_KIND_RDV);
            if (why == NULL && tcp_chal_make(&c->hs, &rdv.cred, &c->chal) != 0)
                why = "no random bytes for the challenge (getrandom)";
            if (why == NULL && send(c->fd, &c->chal, sizeof(c->chal),
                                    MSG_NOSIGNAL) != (ssize_t)sizeof(c->chal))
                why = "closed before the challenge";
            if (why != NULL) {
                rdv_drop(i, why);
                return -1;
            }
            c->step = 1;
        } else if (!c->joined) {
            if (tcp_proof_check(&c->hs, &rdv.cred, &c->chal,
                                &c->in.proof) != 0) {
                rdv_drop(i, "secret mismatch (its proof is not of this "
                            "job's secret)");
                return -1;
            }
            unsigned char key[TCP_KEY];
            tcp_session_key(&c->hs, &c->chal, &c->in.proof, &rdv.cred, key);
            tcp_mac_setup(&c->mac_out, &c->mac_in, key, TCP_DIR_ACCEPTER);
            tcp_wipe(key, sizeof(key));
            c->joined = 1;
        } else {
            const char *why = rdv_serve(c);
            if (why != NULL) {
                rdv_drop(i, why);
                return -1;
            }
        }
    }
}

static void rdv_accept(void)
{
    tcp_addr_t src;
    char from[64], why[160];
    int fd;

    while ((fd = tcp_guard_accept(&rdv.guard, rdv.fd, &src, from,
                                  sizeof(from))) >= 0) {
        unsigned all = 0, same = 0;
        unsigned extra = (unsigned)atomic_load(&rdv.expect);
        const char *over;
        for (size_t i = 0; i < rdv.nclients; i++) {
            if (!rdv.clients[i].joined) {
                all++;
                same += tcp_addr_same_host(&rdv.clients[i].src, &src);
            }
        }
        if ((over = tcp_guard_over(all, same, extra, why, sizeof(why))) !=
            NULL) {
            close(fd);
            tcp_guard_refuse(&rdv.guard, from, over, 1);
            continue;
        }
        rdv_client_t *grown = realloc(rdv.clients, (rdv.nclients + 1) *
                                                       sizeof(*grown));
        if (grown == NULL) {
            close(fd);
            tcp_guard_refuse(&rdv.guard, from, "no memory for its "
                             "handshake", 0);
            continue;
        }
        rdv.clients = grown;
        rdv_client_t *c = &rdv.clients[rdv.nclients++];
        memset(c, 0, sizeof(*c));
        c->fd = fd;
        c->src = src;
        c->deadline = rdv.core->now() + TCP_HS_TIMEOUT;
        snprintf(c->from, sizeof(c->from), "%s", from);
        /* What came with it: an opening, or the end of one that already
         * left, which frees its descriptor at once. */
        rdv_read(rdv.nclients - 1);
    }
}

static void *rdv_main(void *arg)
{
    struct pollfd *p = NULL;
    size_t cap = 0;
    (void)arg;
    prctl(PR_SET_NAME, "tutti-rdv"); /* as top and /proc name it */
    for (;;) {
        size_t n = rdv.nclients + 1;
        if (n > cap) {
            struct pollfd *grown = realloc(p, n * sizeof(*p));
            if (grown == NULL) {
                nap_ms(100);
                continue;
            }
            p = grown;
            cap = n;
        }
        /* A listener that rests is left out: polled level-triggered, a
         * backlog it cannot take would wake this loop at once, again and
         * again. */
        int wait = tcp_guard_due_ms(&rdv.guard);
        p[0] = (struct pollfd){tcp_guard_resting(&rdv.guard) ? -1 : rdv.fd,
                               POLLIN, 0};
        for (size_t i = 0; i < rdv.nclients; i++)
            p[i + 1] = (struct pollfd){rdv.clients[i].fd, POLLIN, 0};
        if (poll(p, n, wait >= 0 && wait < 500 ? wait : 500) < 0 &&
            errno != EINTR)
            nap_ms(100);
        double now = rdv.core->now();
        /* Backwards, since dropping moves the last client into the hole. */
        for (size_t i = rdv.nclients; i-- > 0;) {
            if (p[i + 1].revents != 0) {
                if (rdv_read(i) != 0)
                    continue;
            }
            if (!rdv.clients[i].joined && now > rdv.clients[i].deadline)
                rdv_drop(i, "no handshake within the deadline");
        }
        if (p[0].revents & POLLIN)
            rdv_accept();
        tcp_guard_tick(&rdv.guard);
    }
    return NULL;
}

/* "host:port" or "[v6]:port" of TUTTI_RENDEZVOUS. */
static int split_hostport(const char *s, char *host, size_t hl, char *port,
                          size_t pl)
{
    const char *colon = strrchr(s, ':');
    size_t n;
    if (colon == NULL || colon[1] == '\0' || strspn(colon + 1, "0123456789") !=
                                                 strlen(colon + 1))
        return -1;
    n = (size_t)(colon - s);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    if (n == 0 || n >= hl || strlen(colon + 1) >= pl)
        return -1;
    memcpy(host, s, n);
    host[n] = '\0';
    snprintf(port, pl, "%s", colon + 1);
    return 0;
}

/* The rendezvous file: TUTTI_RENDEZVOUS_FILE (shared between hosts),
 * else this job's in the user's private directory; 0, or -1 with why
 * (the directory is not private). */
static int rdv_file_path(const char *job, char *buf, size_t len, int *shared,
                         char *why, size_t wl)
{
    const char *f = getenv("TUTTI_RENDEZVOUS_FILE");
    char dir[TCP_RDV_PATH_MAX];
    *shared = f != NULL && *f != '\0';
    if (*shared) {
        snprintf(buf, len, "%s", f);
        return 0;
    }
    if (tcp_rdv_dir(dir, sizeof(dir), why, wl) != 0)
        return -1;
    tcp_rdv_path(dir, job, buf, len);
    return 0;
}

/* The default file is this job's alone: remove it when task 0 ends. */
static char rdv_default_file[TCP_RDV_PATH_MAX];
static void rdv_unlink_default(void)
{
    if (rdv_default_file[0] != '\0')
        unlink(rdv_default_file);
}

/* Writes "<address> <port>" to the rendezvous file: the shared one
 * atomically replaced (a later job's task 0 takes it over, mode 0644),
 * the private one created anew with this process's pid and start time
 * (mode 0600). */
static tutti_status_t rdv_publish(const tcp_reg_t *reg)
{
    char path[TCP_RDV_PATH_MAX];
    char addr[INET6_ADDRSTRLEN], why[TCP_RDV_PATH_MAX * 2];
    const tcp_addr_t *a = &reg->addrs[0];
    int shared;
    tcp_addr_t lo;

    if (rdv_file_path(rdv.job, path, sizeof(path), &shared, why,
                      sizeof(why)) != 0)
        return rdv.core->error(TUTTI_ERR_IO, "tcp", "task 0: %s", why);
    if (!shared) { /* one host: loopback of the listener's family */
        memset(&lo, 0, sizeof(lo));
        lo.family = a->family;
        lo.port = a->port;
        if (lo.family == AF_INET) {
            lo.addr[0] = 127;
            lo.addr[3] = 1;
        } else {
            lo.addr[15] = 1;
        }
        for (uint32_t i = 0; i < reg->naddr; i++) {
            if (reg->addrs[i].family == AF_INET) { /* 127.0.0.1 if any v4 */
                memset(&lo, 0, sizeof(lo));
                lo.family = AF_INET;
                lo.port = a->port;
                lo.addr[0] = 127;
                lo.addr[3] = 1;
                break;
            }
        }
        a = &lo;
    }
    inet_ntop(a->family, a->addr, addr, sizeof(addr));
    if (!shared) {
        if (tcp_rdv_create(path, addr, a->port, why, sizeof(why)) != 0)
            return rdv.core->error(TUTTI_ERR_IO, "tcp", "task 0: %s", why);
        if (rdv_default_file[0] == '\0') {
            snprintf(rdv_default_file, sizeof(rdv_default_file), "%s", path);
            atexit(rdv_unlink_default);
        }
        return TUTTI_OK;
    }
    if (tcp_rdv_write_shared(path, addr, a->port, why, sizeof(why)) != 0)
        return rdv.core->error(TUTTI_ERR_IO, "tcp", "%s "
                               "(TUTTI_RENDEZVOUS_FILE)", why);
    return TUTTI_OK;
}

/* The store's key of the rendezvous ("tutti/" before it). */
#define RDV_STORE_KEY "tcp/rendezvous"

/* Says where the rendezvous listens, "<address> <port>", in the job's
 * store: the listener's first address, or loopback where it listens
 * there alone. */
static tutti_status_t rdv_publish_store(const tutti_tp_group_t *g,
                                        const void *store,
                                        const tcp_reg_t *reg)
{
    char addr[INET6_ADDRSTRLEN], text[INET6_ADDRSTRLEN + 16];
    const tcp_addr_t *a = &reg->addrs[0];
    inet_ntop(a->family, a->addr, addr, sizeof(addr));
    int n = snprintf(text, sizeof(text), "%s %u", addr, (unsigned)a->port);
    return g->core->store_set(store, RDV_STORE_KEY, text, (size_t)n);
}

/* The server listening on the port of TUTTI_RENDEZVOUS, every address. */
static tutti_status_t rdv_listen_env(const char *env, const tcp_settings_t *s,
                                     int *fd_out)
{
    char host[256], port[16];
    tcp_settings_t any = *s;
    tcp_reg_t reg;
    if (split_hostport(env, host, sizeof(host), port, sizeof(port)) != 0)
        return rdv.core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_RENDEZVOUS="
                               "'%s'; expected host:port, e.g. "
                               "node01:29400 or [fe80::1]:29400", env);
    any.interface[0] = '\0';
    any.ports[0] = any.ports[1] = (uint16_t)atoi(port);
    if (any.ports[0] == 0)
        return rdv.core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_RENDEZVOUS="
                               "'%s': port 0; expected a port from 1 to "
                               "65535", env);
    tutti_status_t st = tcp_listen(rdv.core, &any, 0, fd_out, &reg);
    if (st != TUTTI_OK)
        return rdv.core->error(st, "tcp", "task 0 cannot listen on "
                               "TUTTI_RENDEZVOUS=%s (port in use by another "
                               "job?)", env);
    return TUTTI_OK;
}

static tutti_status_t rdv_start(const tutti_tp_group_t *g,
                                const tcp_settings_t *s, const tcp_cred_t *cred)
{
    const char *env = getenv("TUTTI_RENDEZVOUS");
    const char *file = getenv("TUTTI_RENDEZVOUS_FILE");
    tutti_status_t st = TUTTI_OK;
    pthread_t th;
    pthread_attr_t at;
    tcp_reg_t reg;

    pthread_mutex_lock(&rdv.lock);
    if (g->group_size > atomic_load(&rdv.expect))
        atomic_store(&rdv.expect, g->group_size);
    if (rdv.started) {
        if (strcmp(rdv.job, g->job_id) != 0)
            st = g->core->error(TUTTI_ERR_CONFIG, "tcp", "this process runs "
                                "the rendezvous of job '%s' and cannot serve "
                                "job '%s' too", rdv.job, g->job_id);
        pthread_mutex_unlock(&rdv.lock);
        return st;
    }
    rdv.core = g->core;
    rdv.cred = *cred;
    snprintf(rdv.job, sizeof(rdv.job), "%s", g->job_id);
    rdv.cred.job_id = rdv.job;
    tcp_guard_init(&rdv.guard, g->core, "rendezvous: ");
    /* The private file serves this host alone and names loopback: the
     * server listens there only, whatever tcp.interface says. */
    const void *store = tcp_store(g);
    if (store != NULL) {
        /* Met through a store: a port the system picks, said there;
         * loopback alone where the job runs on this host. */
        if ((st = tcp_listen(g->core, s, tcp_loopback_only(g, s), &rdv.fd,
                             &reg)) == TUTTI_OK)
            st = rdv_publish_store(g, store, &reg);
    } else if (env != NULL && *env != '\0') {
        st = rdv_listen_env(env, s, &rdv.fd);
    } else if ((st = tcp_listen(g->core, s, file == NULL || *file == '\0',
                                &rdv.fd, &reg)) == TUTTI_OK) {
        st = rdv_publish(&reg);
    }
    if (st == TUTTI_OK) {
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, rdv_main, NULL) != 0)
            st = g->core->error(TUTTI_ERR_INTERNAL, "tcp", "cannot start the "
                                "rendezvous thread");
        pthread_attr_destroy(&at);
    }
    if (st != TUTTI_OK && rdv.fd >= 0) {
        close(rdv.fd);
        rdv.fd = -1;
    }
    if (st != TUTTI_OK)
        explicit_bzero(&rdv.cred, sizeof(rdv.cred));
    rdv.started = st == TUTTI_OK;
    pthread_mutex_unlock(&rdv.lock);
    return st;
}

/* ---- rendezvous client ---------------------------------------------------------- */

/* Where the rendezvous is now: from TUTTI_RENDEZVOUS or the file.  0;
 * -1: not yet; -2: never (why says so: a file or directory another user
 * owns, a link). */
static int rdv_where(const tutti_tp_group_t *g, double deadline,
                     tcp_addr_t *a, char *desc, size_t dl, char *why,
                     size_t wl)
{
    const char *env = getenv("TUTTI_RENDEZVOUS");
    const void *store = tcp_store(g);
    char host[256], port[16], path[TCP_RDV_PATH_MAX];
    struct addrinfo hints, *res = NULL;

    if (store != NULL) {
        char text[INET6_ADDRSTRLEN + 16];
        size_t len = 0;
        unsigned p = 0;
        double left = deadline - g->core->now();
        snprintf(desc, dl, "the store's key tutti/" RDV_STORE_KEY);
        tutti_status_t st = g->core->store_get(store, RDV_STORE_KEY, text,
                                               sizeof(text) - 1, &len,
                                               left > 0 ? left : 0);
        if (st == TUTTI_ERR_TIMEOUT)
            return -1; /* not said in time: the caller gives up */
        if (st != TUTTI_OK) { /* the store failed (the core logged how) */
            snprintf(why, wl, "%s: the store's get failed (status %d, "
                     "logged before)", desc, (int)st);
            return -2;
        }
        text[len] = '\0';
        if (sscanf(text, "%255s %u", host, &p) != 2 || p == 0 || p > 65535) {
            snprintf(why, wl, "%s holds '%.64s'; expected '<address> "
                     "<port>'", desc, text);
            return -2;
        }
        snprintf(port, sizeof(port), "%u", p);
    } else if (env != NULL && *env != '\0') {
        snprintf(desc, dl, "TUTTI_RENDEZVOUS=%s", env);
        if (split_hostport(env, host, sizeof(host), port, sizeof(port)) != 0)
            return -1;
    } else {
        unsigned p = 0;
        int shared;
        if (rdv_file_path(g->job_id, path, sizeof(path), &shared, why, wl) != 0)
            return -2;
        snprintf(desc, dl, "rendezvous file %s", path);
        int st = tcp_rdv_read(path, !shared, host, &p, why, wl);
        if (st == TCP_RDV_REFUSED)
            return -2;
        if (st != TCP_RDV_OK)
            return -1; /* not written yet, or a dead job's */
        snprintf(port, sizeof(port), "%u", p);
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL)
        return -1;
    tcp_sockaddr_to_addr(res->ai_addr,
                         ntohs(res->ai_family == AF_INET
                                   ? ((struct sockaddr_in *)(void *)
                                          res->ai_addr)->sin_port
                                   : ((struct sockaddr_in6 *)(void *)
                                          res->ai_addr)->sin6_port),
                         a);
    freeaddrinfo(res);
    return 0;
}

/* One session: register, then look up every wanted rank.  0: all found;
 * 1: try again; -1: a rank never registered; -2: the other side is not
 * this job's rendezvous (or no nonce), or a registration it holds is not
 * one a member sends; why says what went wrong.  The session's MAC state
 * goes in @p mac (the caller wipes it). */
static int rdv_session(const tutti_tp_group_t *g, const tcp_cred_t *cred,
                       const tcp_reg_t *reg, const unsigned char *want,
                       double deadline, tcp_reg_t *peers, char *why,
                       size_t wl, tcp_mac_t mac[2])
{
    char desc[TCP_RDV_PATH_MAX + 64];
    tcp_addr_t a;
    tcp_hs_t hs;
    tcp_chal_t chal;
    tcp_proof_t proof;
    rdv_req_t q;
    rdv_rep_t rep;
    unsigned char key[TCP_KEY];
    tcp_mac_t *mac_out = &mac[0], *mac_in = &mac[1];
    int fd, r = 0, nap = 2;

    int where = rdv_where(g, deadline, &a, desc, sizeof(desc), why, wl);
    if (where == -2)
        return -2;
    if (where != 0) {
        snprintf(why, wl, "%s not readable or not host:port yet", desc);
        return 1;
    }
    char err[128];
    if ((fd = tcp_connect_addr(&a, 2.0, err, sizeof(err))) < 0) {
        snprintf(why, wl, "%s: connect: %s", desc, err);
        return 1;
    }
    set_io_timeout(fd, 5.0);
    if (tcp_hs_fill(&hs, cred, TCP_KIND_RDV, g->group_key, g->rank, -1, 0,
                    0) != 0) {
        snprintf(why, wl, "no random bytes for the handshake (getrandom): "
                 "%s", strerror(errno));
        close(fd);
        return -2;
    }
    memset(&q, 0, sizeof(q));
    q.magic = RDV_REQ_MAGIC;
    q.type = RDV_REG;
    q.group_key = g->group_key;
    q.reg = *reg;
    if (tcp_write_full(fd, &hs, sizeof(hs)) != 0 ||
        tcp_read_full(fd, &chal, sizeof(chal)) != 0)
        goto lost;
    /* Nothing that depends on the secret goes out before the other side
     * proved it holds it: an impostor learns only our nonce. */
    if (tcp_chal_check(&hs, cred, &chal, &proof) != 0) {
        char peer[64];
        tcp_peer_str(fd, peer, sizeof(peer));
        if (snprintf(why, wl, "the rendezvous at %s (%s): secret mismatch "
                     "(another job's or user's rendezvous, or "
                     "TUTTI_JOB_SECRET differs between the tasks)", peer,
                     desc) >= (int)wl)
            why[wl - 1] = '\0'; /* cut: the start names the peer */
        close(fd);
        return -2;
    }
    tcp_session_key(&hs, &chal, &proof, cred, key);
    tcp_mac_setup(mac_out, mac_in, key, TCP_DIR_OPENER);
    tcp_wipe(key, sizeof(key));
    tcp_mac_of(mac_out, &q, offsetof(rdv_req_t, tag), q.tag);
    if (tcp_write_full(fd, &proof, sizeof(proof)) != 0 ||
        tcp_write_full(fd, &q, sizeof(q)) != 0)
        goto lost;
    q.type = RDV_GET;
    while (r < g->group_size) {
        if (!want[r] || peers[r].nconn != 0) {
            r++;
            continue;
        }
        q.rank = r;
        tcp_mac_of(mac_out, &q, offsetof(rdv_req_t, tag), q.tag);
        if (tcp_write_full(fd, &q, sizeof(q)) != 0 ||
            tcp_read_full(fd, &rep, sizeof(rep)) != 0)
            goto lost;
        tcp_mac_begin(mac_in);
        tcp_mac_update(mac_in, &rep, offsetof(rdv_rep_t, tag));
        if (!tcp_mac_check(mac_in, rep.tag)) {
            snprintf(why, wl, "%s answered with a frame that failed its MAC "
                     "(altered on the way)", desc);
            close(fd);
            return -2;
        }
        if (rep.magic != RDV_REP_MAGIC) {
            snprintf(why, wl, "%s answered with a garbled frame", desc);
            close(fd);
            return 1;
        }
        const char *bad = rep.found ? reg_problem(&rep.reg, g->group_key)
                                    : NULL;
        if (bad == NULL && rep.found &&
            (rep.reg.rank != r || rep.reg.group_size != g->group_size))
            bad = "a registration of another rank or group size";
        if (bad != NULL) {
            snprintf(why, wl, "%s: the registration of rank %d (task %d) "
                     "holds %s", desc, r, g->rank_task[r], bad);
            close(fd);
            return -2;
        }
        if (rep.found) {
            peers[r] = rep.reg;
            r++;
            nap = 2;
            continue;
        }
        if (g->core->now() > deadline) {
            snprintf(why, wl, "rank %d (task %d) has not registered at %s",
                     r, g->rank_task[r], desc);
            close(fd);
            return -1;
        }
        nap_ms(nap);
        nap = nap < 50 ? nap * 2 : 50;
    }
    close(fd);
    return 0;
lost:
    snprintf(why, wl, "%s closed the connection (a stale file, or a "
             "rendezvous of another job or secret: TUTTI_JOB_SECRET must be "
             "the same for every task)", desc);
    close(fd);
    return 1;
}

tutti_status_t tcp_rendezvous(const tutti_tp_group_t *g,
                              const tcp_settings_t *s, const tcp_cred_t *cred,
                              const tcp_reg_t *reg,
                              const unsigned char *want, double deadline,
                              tcp_reg_t *peers_out)
{
    char why[2 * TCP_RDV_PATH_MAX + 256] = "";
    tutti_status_t st;
    tcp_mac_t mac[2];
    int rc;

    if (g->task == 0 && (st = rdv_start(g, s, cred)) != TUTTI_OK)
        return st;
    for (;;) {
        rc = rdv_session(g, cred, reg, want, deadline, peers_out, why,
                         sizeof(why), mac);
        tcp_wipe(mac, sizeof(mac));
        if (rc == 0)
            return TUTTI_OK;
        if (rc == -2)
            return g->core->error(TUTTI_ERR_PEER, "tcp", "group 0x%llx rank "
                                  "%d: %s", (unsigned long long)g->group_key,
                                  g->rank, why);
        if (rc < 0 || g->core->now() > deadline)
            break;
        g->core->log(3, "tcp", "rank %d: rendezvous: %s; retrying", g->rank,
                     why);
        nap_ms(20);
    }
    return g->core->error(TUTTI_ERR_TIMEOUT, "tcp", "group 0x%llx rank %d: "
                          "peers not found within %.0f s: %s",
                          (unsigned long long)g->group_key, g->rank,
                          g->timeout, why);
}
