/*
 * tcp transport: sockets, the job secret, the handshake, and the
 * rendezvous where members learn each other's listen addresses.
 *
 * The rendezvous server is a thread of task 0's module, started by its
 * first endpoint and kept for the life of the process (the module is
 * linked -z nodelete, so unloading never pulls its code from under the
 * thread): groups made later meet there too.  It keeps, per (group key,
 * rank), the last registration, and answers look-ups; it talks only to
 * connections that opened with this job's id and secret.  Requests and
 * answers are fixed-size frames, checked by magic.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_int.h"

#define RDV_REQ_MAGIC 0x52564452u /* "RDVR" */
#define RDV_REP_MAGIC 0x50564452u /* "RDVP" */
#define RDV_REG 1u
#define RDV_GET 2u

typedef struct {
    uint32_t magic, type;
    uint64_t group_key;
    int32_t rank, pad;
    tcp_reg_t reg;
} rdv_req_t;

typedef struct {
    uint32_t magic, found;
    tcp_reg_t reg;
} rdv_rep_t;

/* ---- small helpers -------------------------------------------------------- */

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void tcp_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tcp_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int set_blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

static void set_io_timeout(int fd, double seconds)
{
    struct timeval tv = {(time_t)seconds,
                         (suseconds_t)((seconds - (time_t)seconds) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int tcp_write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tcp_read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void tcp_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
        snprintf(buf, len, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        port = ntohs(in6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) { /* a dual-stack socket */
            inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host, sizeof(host));
            snprintf(buf, len, "%s:%u", host, port);
            return;
        }
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(buf, len, "[%s]:%u", host, port);
    } else {
        snprintf(buf, len, "(unknown address)");
    }
}

void tcp_peer_str(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
        snprintf(buf, len, "(unknown address)");
    else
        tcp_sockaddr_str((struct sockaddr *)&ss, buf, len);
}

static socklen_t addr_to_sockaddr(const tcp_addr_t *a,
                                  struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET) {
        struct sockaddr_in *in = (void *)ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(a->port);
        memcpy(&in->sin_addr, a->addr, 4);
        return sizeof(*in);
    }
    struct sockaddr_in6 *in6 = (void *)ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(a->port);
    in6->sin6_scope_id = a->scope;
    memcpy(&in6->sin6_addr, a->addr, 16);
    return sizeof(*in6);
}

static void sockaddr_to_addr(const struct sockaddr *sa, uint16_t port,
                             tcp_addr_t *a)
{
    memset(a, 0, sizeof(*a));
    a->family = sa->sa_family;
    a->port = port;
    if (sa->sa_family == AF_INET)
        memcpy(a->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    else {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        memcpy(a->addr, &in6->sin6_addr, 16);
        a->scope = in6->sin6_scope_id;
    }
}

void tcp_addr_str(const tcp_addr_t *a, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    addr_to_sockaddr(a, &ss);
    tcp_sockaddr_str((struct sockaddr *)&ss, buf, len);
}

/* ---- settings and secret --------------------------------------------------- */

tutti_status_t tcp_settings_read(const tutti_tp_group_t *g,
                                 tcp_settings_t *out)
{
    const tutti_tp_core_ops_t *core = g->core;
    char buf[64];
    const char *v;
    tcp_settings_t s;

    memset(&s, 0, sizeof(s));
    s.nconn = 2;
    v = core->config_get(g->config, "tcp.interface", buf, sizeof(buf));
    if (v != NULL)
        snprintf(s.ifname, sizeof(s.ifname), "%s", v);
    v = core->config_get(g->config, "tcp.family", buf, sizeof(buf));
    s.family = v == NULL || strcmp(v, "any") == 0 ? AF_UNSPEC
               : strcmp(v, "ipv4") == 0           ? AF_INET
                                                  : AF_INET6;
    v = core->config_get(g->config, "tcp.ports", buf, sizeof(buf));
    if (v != NULL && strcmp(v, "0") != 0) {
        unsigned lo, hi;
        if (sscanf(v, "%u-%u", &lo, &hi) != 2 || lo == 0 || lo > hi ||
            hi > 65535)
            return core->error(TUTTI_ERR_CONFIG, "tcp", "tcp.ports is '%s'; "
                               "expected 0 or LO-HI", v);
        s.port_lo = (uint16_t)lo;
        s.port_hi = (uint16_t)hi;
    }
    v = core->config_get(g->config, "tcp.connections", buf, sizeof(buf));
    if (v != NULL) {
        unsigned long n = strtoul(v, NULL, 10);
        if (n < 1 || n > 16)
            return core->error(TUTTI_ERR_CONFIG, "tcp", "tcp.connections is "
                               "'%s'; expected 1 to 16", v);
        s.nconn = (uint32_t)n;
    }
    *out = s;
    return TUTTI_OK;
}

tutti_status_t tcp_cred_read(const tutti_tp_core_ops_t *core,
                             const char *job_id, tcp_cred_t *out)
{
    const char *sec = getenv("TUTTI_JOB_SECRET");
    const char *file = getenv("TUTTI_SECRET_FILE");
    char buf[TCP_SECRET_MAX + 2];
    size_t n;

    memset(out, 0, sizeof(*out));
    if (strlen(job_id) >= TCP_JOB_MAX)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "job id '%s' is longer "
                           "than %d characters", job_id, TCP_JOB_MAX - 1);
    out->job_id = job_id;
    if (sec != NULL && *sec != '\0') {
        n = strlen(sec);
        if (n < TCP_SECRET_MIN || n > TCP_SECRET_MAX)
            return core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_JOB_SECRET "
                               "has %zu characters; expected %d to %d "
                               "(tutti-run makes one)", n, TCP_SECRET_MIN,
                               TCP_SECRET_MAX);
        memcpy(out->secret, sec, n);
        out->secret_len = n;
        return TUTTI_OK;
    }
    if (file == NULL || *file == '\0')
        return core->error(TUTTI_ERR_CONFIG, "tcp", "no job secret: the tcp "
                           "transport needs TUTTI_JOB_SECRET (tutti-run sets "
                           "one) or TUTTI_SECRET_FILE naming a file that "
                           "holds %d to %d bytes, the same for every task",
                           TCP_SECRET_MIN, TCP_SECRET_MAX);
    FILE *f = fopen(file, "rb");
    if (f == NULL)
        return core->error(TUTTI_ERR_IO, "tcp", "TUTTI_SECRET_FILE '%s': %s",
                           file, strerror(errno));
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        n--; /* a trailing newline is not part of it */
    if (n < TCP_SECRET_MIN || n > TCP_SECRET_MAX)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_SECRET_FILE '%s' "
                           "holds %s%zu bytes; expected %d to %d", file,
                           n > TCP_SECRET_MAX ? "over " : "", n,
                           TCP_SECRET_MIN, TCP_SECRET_MAX);
    memcpy(out->secret, buf, n);
    out->secret_len = n;
    return TUTTI_OK;
}

void tcp_hs_fill(tcp_hs_t *hs, const tcp_cred_t *cred, uint32_t kind,
                 uint64_t group_key, int from, int to, uint32_t index,
                 uint32_t nconn)
{
    memset(hs, 0, sizeof(*hs));
    hs->magic = TCP_MAGIC;
    hs->version = TCP_VERSION;
    hs->kind = (uint16_t)kind;
    hs->group_key = group_key;
    hs->from_rank = from;
    hs->to_rank = to;
    hs->conn_index = index;
    hs->nconn = nconn;
    snprintf(hs->job_id, sizeof(hs->job_id), "%s", cred->job_id);
    memcpy(hs->secret, cred->secret, sizeof(hs->secret));
}

const char *tcp_hs_check(const tcp_hs_t *hs, const tcp_cred_t *cred,
                         uint32_t kind)
{
    unsigned char diff = 0;
    if (hs->magic != TCP_MAGIC)
        return "not a tutti handshake (bad magic)";
    if (hs->version != TCP_VERSION)
        return "protocol version differs";
    if (hs->kind != kind)
        return kind == TCP_KIND_RDV ? "a data handshake at the rendezvous"
                                    : "a rendezvous handshake on a data port";
    if (memchr(hs->job_id, '\0', sizeof(hs->job_id)) == NULL ||
        strcmp(hs->job_id, cred->job_id) != 0)
        return "wrong job id";
    for (size_t i = 0; i < TCP_SECRET_MAX; i++) /* constant time */
        diff |= (unsigned char)(hs->secret[i] ^ cred->secret[i]);
    return diff != 0 ? "wrong secret" : NULL;
}

/* ---- listening -------------------------------------------------------------- */

static int usable(const struct ifaddrs *ifa, const tcp_settings_t *s)
{
    int fam;
    if (ifa->ifa_addr == NULL || !(ifa->ifa_flags & IFF_UP))
        return 0;
    fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6)
        return 0;
    if (s->family != AF_UNSPEC && fam != s->family)
        return 0;
    if (s->ifname[0] != '\0' && strcmp(ifa->ifa_name, s->ifname) != 0)
        return 0;
    if (fam == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)(void *)ifa->ifa_addr)
                                   ->sin6_addr))
        return 0; /* needs a scope the peer cannot know */
    return 1;
}

/* Addresses of usable interfaces, loopback last; the address to bind:
 * the interface's first, else the wildcard. */
static int gather_addrs(const tcp_settings_t *s, tcp_reg_t *reg,
                        struct sockaddr_storage *bind_ss, socklen_t *bind_len)
{
    struct ifaddrs *ifs = NULL;
    int loop_pass;
    reg->naddr = 0;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (loop_pass = 0; loop_pass < 2; loop_pass++) {
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (!usable(i, s) || !!(i->ifa_flags & IFF_LOOPBACK) != loop_pass)
                continue;
            if (reg->naddr == TCP_ADDRS_MAX)
                break;
            if (reg->naddr == 0 && s->ifname[0] != '\0') {
                size_t l = i->ifa_addr->sa_family == AF_INET
                               ? sizeof(struct sockaddr_in)
                               : sizeof(struct sockaddr_in6);
                memcpy(bind_ss, i->ifa_addr, l);
                *bind_len = (socklen_t)l;
            }
            sockaddr_to_addr(i->ifa_addr, 0, &reg->addrs[reg->naddr++]);
        }
    }
    freeifaddrs(ifs);
    return 0;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

tutti_status_t tcp_listen(const tutti_tp_core_ops_t *core,
                          const tcp_settings_t *s, int *fd_out,
                          tcp_reg_t *reg)
{
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    int fd = -1, err = 0, one = 1, zero = 0;
    unsigned port;

    memset(&ss, 0, sizeof(ss));
    if (gather_addrs(s, reg, &ss, &sl) != 0)
        return core->error(TUTTI_ERR_IO, "tcp", "listing network "
                           "interfaces: %s", strerror(errno));
    if (reg->naddr == 0)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "no usable address on "
                           "interface '%s' (tcp.interface) of family %s "
                           "(tcp.family); expected an interface that is up "
                           "with such an address",
                           s->ifname[0] ? s->ifname : "(any)",
                           s->family == AF_INET    ? "ipv4"
                           : s->family == AF_INET6 ? "ipv6"
                                                   : "any");
    if (sl == 0) { /* any interface: the wildcard of the family */
        int fam = s->family == AF_INET ? AF_INET : AF_INET6;
        int probe = socket(fam, SOCK_STREAM, 0);
        if (probe < 0 && fam == AF_INET6 && s->family == AF_UNSPEC)
            fam = AF_INET; /* no IPv6 in this kernel */
        if (probe >= 0)
            close(probe);
        ss.ss_family = (sa_family_t)fam;
        sl = fam == AF_INET ? sizeof(struct sockaddr_in)
                            : sizeof(struct sockaddr_in6);
    }
    for (port = s->port_lo; port <= s->port_hi; port++) {
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            break;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ss.ss_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
                       s->family == AF_INET6 ? &one : &zero, sizeof(int));
        set_port(&ss, (uint16_t)port);
        if (bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
            listen(fd, SOMAXCONN) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
        if (s->port_hi == 0)
            break;
    }
    if (fd < 0) {
        if (s->port_hi != 0)
            return core->error(TUTTI_ERR_IO, "tcp", "no port of %u-%u "
                               "(tcp.ports) could be bound: %s",
                               (unsigned)s->port_lo, (unsigned)s->port_hi,
                               strerror(err));
        return core->error(TUTTI_ERR_IO, "tcp", "cannot listen: %s",
                           strerror(err));
    }
    sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    port = ntohs(ss.ss_family == AF_INET
                     ? ((struct sockaddr_in *)(void *)&ss)->sin_port
                     : ((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
    for (uint32_t i = 0; i < reg->naddr; i++)
        reg->addrs[i].port = (uint16_t)port;
    tcp_nonblock(fd);
    *fd_out = fd;
    return TUTTI_OK;
}

int tcp_connect_addr(const tcp_addr_t *a, double timeout, char *why,
                     size_t why_len)
{
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(a, &ss);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), err = 0;
    socklen_t el = sizeof(err);

    if (fd < 0) {
        snprintf(why, why_len, "socket: %s", strerror(errno));
        return -1;
    }
    tcp_nonblock(fd);
    if (connect(fd, (struct sockaddr *)&ss, sl) != 0) {
        struct pollfd p = {fd, POLLOUT, 0};
        if (errno != EINPROGRESS) {
            err = errno;
        } else if (poll(&p, 1, (int)(timeout * 1000)) != 1) {
            err = ETIMEDOUT;
        } else {
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
        }
    }
    if (err != 0) {
        snprintf(why, why_len, "%s", strerror(err));
        close(fd);
        return -1;
    }
    set_blocking(fd);
    tcp_nodelay(fd);
    return fd;
}

/* ---- rendezvous server ------------------------------------------------------- */

typedef struct {
    int fd;
    int joined;               /* handshake passed */
    size_t got;
    double deadline;
    union {
        tcp_hs_t hs;
        rdv_req_t req;
    } in;
    char from[64];
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
} rdv = {PTHREAD_MUTEX_INITIALIZER, 0, -1, NULL, {{0}, 0, NULL}, "", NULL,
         0, NULL, 0};

static void rdv_drop(size_t i, const char *reason)
{
    rdv_client_t *c = &rdv.clients[i];
    if (reason != NULL)
        rdv.core->log(1, "tcp", "rendezvous: refused connection from %s: %s",
                      c->from, reason);
    close(c->fd);
    rdv.clients[i] = rdv.clients[--rdv.nclients];
}

static void rdv_accept(void)
{
    for (;;) {
        int fd = accept4(rdv.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        rdv_client_t *grown = realloc(rdv.clients, (rdv.nclients + 1) *
                                                       sizeof(*grown));
        if (grown == NULL) {
            close(fd);
            return;
        }
        rdv.clients = grown;
        rdv_client_t *c = &rdv.clients[rdv.nclients++];
        memset(c, 0, sizeof(*c));
        c->fd = fd;
        c->deadline = rdv.core->now() + TCP_HS_TIMEOUT;
        tcp_peer_str(fd, c->from, sizeof(c->from));
    }
}

/* Stores or answers one request; 0, or -1 to drop the client. */
static int rdv_serve(rdv_client_t *c)
{
    rdv_req_t *q = &c->in.req;
    rdv_rep_t rep;
    memset(&rep, 0, sizeof(rep));
    rep.magic = RDV_REP_MAGIC;
    if (q->magic != RDV_REQ_MAGIC)
        return -1;
    for (size_t i = 0; i < rdv.nregs; i++) {
        if (rdv.regs[i].group_key != q->group_key ||
            rdv.regs[i].rank != (q->type == RDV_REG ? q->reg.rank : q->rank))
            continue;
        if (q->type == RDV_REG) {
            rdv.regs[i] = q->reg; /* a newer endpoint of that rank */
            return 0;
        }
        rep.found = 1;
        rep.reg = rdv.regs[i];
        break;
    }
    if (q->type == RDV_REG) {
        tcp_reg_t *grown = realloc(rdv.regs, (rdv.nregs + 1) * sizeof(*grown));
        if (grown == NULL)
            return -1;
        rdv.regs = grown;
        rdv.regs[rdv.nregs++] = q->reg;
        return 0;
    }
    if (q->type != RDV_GET)
        return -1;
    return tcp_write_full(c->fd, &rep, sizeof(rep)); /* small: fits */
}

/* Reads what client @p i sent; returns 0 to keep it. */
static int rdv_read(size_t i)
{
    rdv_client_t *c = &rdv.clients[i];
    size_t want = c->joined ? sizeof(rdv_req_t) : sizeof(tcp_hs_t);
    for (;;) {
        ssize_t n = recv(c->fd, (char *)&c->in + c->got, want - c->got, 0);
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
        if (!c->joined) {
            const char *why = tcp_hs_check(&c->in.hs, &rdv.cred, TCP_KIND_RDV);
            if (why != NULL) {
                rdv_drop(i, why);
                return -1;
            }
            c->joined = 1;
        } else if (rdv_serve(c) != 0) {
            rdv_drop(i, "malformed rendezvous request");
            return -1;
        }
        want = sizeof(rdv_req_t);
    }
}

static void *rdv_main(void *arg)
{
    struct pollfd *p = NULL;
    size_t cap = 0;
    (void)arg;
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
        p[0] = (struct pollfd){rdv.fd, POLLIN, 0};
        for (size_t i = 0; i < rdv.nclients; i++)
            p[i + 1] = (struct pollfd){rdv.clients[i].fd, POLLIN, 0};
        if (poll(p, n, 500) < 0 && errno != EINTR)
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

static void rdv_file_path(const char *job, char *buf, size_t len)
{
    const char *f = getenv("TUTTI_RENDEZVOUS_FILE");
    if (f != NULL && *f != '\0') {
        snprintf(buf, len, "%s", f);
        return;
    }
    snprintf(buf, len, "/tmp/tutti-rdv-%s", job);
    for (char *c = buf + strlen("/tmp/tutti-rdv-"); *c; c++) {
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
            *c = '_';
    }
}

/* The default file is this job's alone: remove it when task 0 ends. */
static char rdv_default_file[256];
static void rdv_unlink_default(void)
{
    if (rdv_default_file[0] != '\0')
        unlink(rdv_default_file);
}

/* Writes "<address> <port>" to the rendezvous file, atomically. */
static tutti_status_t rdv_publish(const tcp_reg_t *reg)
{
    char path[256], tmp[300], addr[INET6_ADDRSTRLEN];
    const tcp_addr_t *a = &reg->addrs[0];
    int shared = getenv("TUTTI_RENDEZVOUS_FILE") != NULL &&
                 *getenv("TUTTI_RENDEZVOUS_FILE") != '\0';
    tcp_addr_t lo;
    FILE *f;

    rdv_file_path(rdv.job, path, sizeof(path));
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
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%s %u\n", addr, (unsigned)a->port) < 0 ||
        fclose(f) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return rdv.core->error(TUTTI_ERR_IO, "tcp", "cannot write the "
                               "rendezvous file '%s'%s: %s", path,
                               shared ? " (TUTTI_RENDEZVOUS_FILE)" : "",
                               strerror(e));
    }
    if (!shared && rdv_default_file[0] == '\0') {
        snprintf(rdv_default_file, sizeof(rdv_default_file), "%s", path);
        atexit(rdv_unlink_default);
    }
    return TUTTI_OK;
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
    any.ifname[0] = '\0';
    any.port_lo = any.port_hi = (uint16_t)atoi(port);
    if (any.port_lo == 0)
        return rdv.core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_RENDEZVOUS="
                               "'%s': port 0; expected a port from 1 to "
                               "65535", env);
    tutti_status_t st = tcp_listen(rdv.core, &any, fd_out, &reg);
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
    tutti_status_t st = TUTTI_OK;
    pthread_t th;
    pthread_attr_t at;
    tcp_reg_t reg;

    pthread_mutex_lock(&rdv.lock);
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
    if (env != NULL && *env != '\0')
        st = rdv_listen_env(env, s, &rdv.fd);
    else if ((st = tcp_listen(g->core, s, &rdv.fd, &reg)) == TUTTI_OK)
        st = rdv_publish(&reg);
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
    rdv.started = st == TUTTI_OK;
    pthread_mutex_unlock(&rdv.lock);
    return st;
}

/* ---- rendezvous client ---------------------------------------------------------- */

/* Where the rendezvous is now: from TUTTI_RENDEZVOUS or the file. */
static int rdv_where(const char *job, tcp_addr_t *a, char *desc, size_t dl)
{
    const char *env = getenv("TUTTI_RENDEZVOUS");
    char host[256], port[16], path[256];
    struct addrinfo hints, *res = NULL;

    if (env != NULL && *env != '\0') {
        snprintf(desc, dl, "TUTTI_RENDEZVOUS=%s", env);
        if (split_hostport(env, host, sizeof(host), port, sizeof(port)) != 0)
            return -1;
    } else {
        FILE *f;
        unsigned p = 0;
        rdv_file_path(job, path, sizeof(path));
        snprintf(desc, dl, "rendezvous file %s", path);
        if ((f = fopen(path, "r")) == NULL)
            return -1;
        int ok = fscanf(f, "%255s %u", host, &p) == 2 && p > 0 && p < 65536;
        fclose(f);
        if (!ok)
            return -1;
        snprintf(port, sizeof(port), "%u", p);
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL)
        return -1;
    sockaddr_to_addr(res->ai_addr,
                     ntohs(res->ai_family == AF_INET
                               ? ((struct sockaddr_in *)(void *)res->ai_addr)
                                     ->sin_port
                               : ((struct sockaddr_in6 *)(void *)res->ai_addr)
                                     ->sin6_port),
                     a);
    freeaddrinfo(res);
    return 0;
}

/* One session: register, then look up every wanted rank.  0: all found;
 * 1: try again; why says what went wrong. */
static int rdv_session(const tutti_tp_group_t *g, const tcp_cred_t *cred,
                       const tcp_reg_t *reg, const unsigned char *want,
                       double deadline, tcp_reg_t *peers, char *why,
                       size_t wl)
{
    char desc[300];
    tcp_addr_t a;
    tcp_hs_t hs;
    rdv_req_t q;
    rdv_rep_t rep;
    int fd, r = 0, nap = 2;

    if (rdv_where(g->job_id, &a, desc, sizeof(desc)) != 0) {
        snprintf(why, wl, "%s not readable or not host:port yet", desc);
        return 1;
    }
    char err[128];
    if ((fd = tcp_connect_addr(&a, 2.0, err, sizeof(err))) < 0) {
        snprintf(why, wl, "%s: connect: %s", desc, err);
        return 1;
    }
    set_io_timeout(fd, 5.0);
    tcp_hs_fill(&hs, cred, TCP_KIND_RDV, g->group_key, g->rank, -1, 0, 0);
    memset(&q, 0, sizeof(q));
    q.magic = RDV_REQ_MAGIC;
    q.type = RDV_REG;
    q.group_key = g->group_key;
    q.reg = *reg;
    if (tcp_write_full(fd, &hs, sizeof(hs)) != 0 ||
        tcp_write_full(fd, &q, sizeof(q)) != 0)
        goto lost;
    q.type = RDV_GET;
    while (r < g->group_size) {
        if (!want[r] || peers[r].nconn != 0) {
            r++;
            continue;
        }
        q.rank = r;
        if (tcp_write_full(fd, &q, sizeof(q)) != 0 ||
            tcp_read_full(fd, &rep, sizeof(rep)) != 0)
            goto lost;
        if (rep.magic != RDV_REP_MAGIC) {
            snprintf(why, wl, "%s answered with a garbled frame", desc);
            close(fd);
            return 1;
        }
        if (rep.found && rep.reg.rank == r && rep.reg.nconn > 0 &&
            rep.reg.naddr > 0 && rep.reg.naddr <= TCP_ADDRS_MAX) {
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
    char why[512] = "";
    tutti_status_t st;
    int rc;

    if (g->task == 0 && (st = rdv_start(g, s, cred)) != TUTTI_OK)
        return st;
    for (;;) {
        rc = rdv_session(g, cred, reg, want, deadline, peers_out, why,
                         sizeof(why));
        if (rc == 0)
            return TUTTI_OK;
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
