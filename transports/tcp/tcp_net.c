/*
 * tcp transport: sockets and addresses, the job secret and the connection
 * handshake (a challenge-response: the secret is a key, never sent), as the rendezvous (tcp_rendezvous.c) and the endpoints
 * (tp_tcp.c and its parts) use them.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_hmac.h"
#include "tcp_int.h"

/* tcp.family's choices (the settings row in tp_tcp.c) and the address
 * family of each, beside the code that opens sockets of them. */
const char *const tcp_families[] = {"any", "ipv4", "ipv6", NULL};
const int tcp_family_af[] = {AF_UNSPEC, AF_INET, AF_INET6};
_Static_assert(sizeof(tcp_family_af) / sizeof(tcp_family_af[0]) ==
                   sizeof(tcp_families) / sizeof(tcp_families[0]) - 1,
               "an address family for each choice of tcp.family");

/* ---- small helpers ------------------------------------------------------ */

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

/* Moves exactly @p len bytes through a blocking socket, either way. */
static int move_full(int fd, char *p, size_t len, int sending)
{
    while (len > 0) {
        ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL)
                            : recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tcp_write_full(int fd, const void *buf, size_t len)
{
    return move_full(fd, (char *)(uintptr_t)buf, len, 1);
}

int tcp_read_full(int fd, void *buf, size_t len)
{
    return move_full(fd, buf, len, 0);
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

void tcp_sockaddr_to_addr(const struct sockaddr *sa, uint16_t port,
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

/* ---- secret and handshake ----------------------------------------------- */

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

static int random_bytes(unsigned char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = getrandom(buf, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int tcp_hs_fill(tcp_hs_t *hs, const tcp_cred_t *cred, uint32_t kind,
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
    return random_bytes(hs->nonce, sizeof(hs->nonce));
}

const char *tcp_hs_check(const tcp_hs_t *hs, const tcp_cred_t *cred,
                         uint32_t kind)
{
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
    return NULL;
}

/* Which side a MAC speaks for: an answer is never valid as the other. */
enum { DIR_ACCEPTER = 1, DIR_OPENER = 2 };

/* HMAC-SHA256(secret, label, direction, the whole opening (the opener's
 * nonce, job id, group key, both ranks, socket index, kind), the
 * accepting side's nonce). */
static void hs_mac(const tcp_hs_t *hs, const tcp_cred_t *cred,
                   const unsigned char nonce_a[TCP_NONCE], unsigned char dir,
                   unsigned char out[TCP_MAC])
{
    static const char label[] = "tutti-tcp-2";
    tcp_hmac_t m;
    tcp_hmac_init(&m, cred->secret, cred->secret_len);
    tcp_hmac_update(&m, label, sizeof(label));
    tcp_hmac_update(&m, &dir, 1);
    tcp_hmac_update(&m, hs, sizeof(*hs));
    tcp_hmac_update(&m, nonce_a, TCP_NONCE);
    tcp_hmac_final(&m, out);
}

int tcp_chal_make(const tcp_hs_t *hs, const tcp_cred_t *cred,
                  tcp_chal_t *out)
{
    if (random_bytes(out->nonce, sizeof(out->nonce)) != 0)
        return -1;
    hs_mac(hs, cred, out->nonce, DIR_ACCEPTER, out->mac);
    return 0;
}

int tcp_chal_check(const tcp_hs_t *hs, const tcp_cred_t *cred,
                   const tcp_chal_t *ch, tcp_proof_t *proof_out)
{
    unsigned char want[TCP_MAC];
    hs_mac(hs, cred, ch->nonce, DIR_ACCEPTER, want);
    if (!tcp_equal_ct(want, ch->mac, TCP_MAC))
        return -1;
    hs_mac(hs, cred, ch->nonce, DIR_OPENER, proof_out->mac);
    return 0;
}

int tcp_proof_check(const tcp_hs_t *hs, const tcp_cred_t *cred,
                    const tcp_chal_t *ch, const tcp_proof_t *p)
{
    unsigned char want[TCP_MAC];
    hs_mac(hs, cred, ch->nonce, DIR_OPENER, want);
    return tcp_equal_ct(want, p->mac, TCP_MAC) ? 0 : -1;
}

/* ---- listening ---------------------------------------------------------- */

static int usable(const struct ifaddrs *ifa, const tcp_settings_t *s)
{
    int fam, want = tcp_family_af[s->family];
    if (ifa->ifa_addr == NULL || !(ifa->ifa_flags & IFF_UP))
        return 0;
    fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6)
        return 0;
    if (want != AF_UNSPEC && fam != want)
        return 0;
    if (s->interface[0] != '\0' && strcmp(ifa->ifa_name, s->interface) != 0)
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
            if (reg->naddr == 0 && s->interface[0] != '\0') {
                size_t l = i->ifa_addr->sa_family == AF_INET
                               ? sizeof(struct sockaddr_in)
                               : sizeof(struct sockaddr_in6);
                memcpy(bind_ss, i->ifa_addr, l);
                *bind_len = (socklen_t)l;
            }
            tcp_sockaddr_to_addr(i->ifa_addr, 0, &reg->addrs[reg->naddr++]);
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
    int family = tcp_family_af[s->family];
    unsigned port, port_hi = (unsigned)s->ports[1];

    memset(&ss, 0, sizeof(ss));
    if (gather_addrs(s, reg, &ss, &sl) != 0)
        return core->error(TUTTI_ERR_IO, "tcp", "listing network "
                           "interfaces: %s", strerror(errno));
    if (reg->naddr == 0)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "no usable address on "
                           "interface '%s' (tcp.interface) of family %s "
                           "(tcp.family); expected an interface that is up "
                           "with such an address",
                           s->interface[0] ? s->interface : "(any)",
                           tcp_families[s->family]);
    if (sl == 0) { /* any interface: the wildcard of the family */
        int fam = family == AF_INET ? AF_INET : AF_INET6;
        int probe = socket(fam, SOCK_STREAM, 0);
        if (probe < 0 && fam == AF_INET6 && family == AF_UNSPEC)
            fam = AF_INET; /* no IPv6 in this kernel */
        if (probe >= 0)
            close(probe);
        ss.ss_family = (sa_family_t)fam;
        sl = fam == AF_INET ? sizeof(struct sockaddr_in)
                            : sizeof(struct sockaddr_in6);
    }
    for (port = (unsigned)s->ports[0]; port <= port_hi; port++) {
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            break;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ss.ss_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
                       family == AF_INET6 ? &one : &zero, sizeof(int));
        set_port(&ss, (uint16_t)port);
        if (bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
            listen(fd, SOMAXCONN) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
        if (port_hi == 0)
            break;
    }
    if (fd < 0) {
        if (port_hi != 0)
            return core->error(TUTTI_ERR_IO, "tcp", "no port of %u-%u "
                               "(tcp.ports) could be bound: %s",
                               (unsigned)s->ports[0], port_hi, strerror(err));
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
