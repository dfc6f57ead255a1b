/*
 * tcp transport: sockets and addresses, the job secret and the connection
 * handshake (a challenge-response: the secret is a key, never sent), as the rendezvous (tcp_rendezvous.c) and the endpoints
 * (tp_tcp.c and its parts) use them.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* ---- the job secret ----------------------------------------------------- */

/* What to do about a secret file, for the messages. */
#define SECRET_FILE_HOW "make one with: head -c 32 /dev/urandom > %s; " \
                        "chmod 600 %s"

/* TUTTI_JOB_SECRET as this process found it: taken out of the environment
 * once read, so that children and core dumps do not inherit it, and kept
 * here for the endpoints made later (the module is never unloaded, -z
 * nodelete).  A new value set in the environment replaces it. */
static struct {
    pthread_mutex_t lock;
    size_t len;                     /* 0: none taken */
    unsigned char secret[TCP_SECRET_MAX];
} env_secret = {PTHREAD_MUTEX_INITIALIZER, 0, {0}};

/* 16 x log2(@p x), rounded down, for x >= 1: the square-and-halve way,
 * four bits of fraction. */
static unsigned log2_16(unsigned x)
{
    unsigned r = 0;
    uint64_t y;
    while (x >> (r + 1))
        r++;
    y = ((uint64_t)x << 16) >> r; /* in [1, 2), 16 bits of fraction */
    r <<= 4;
    for (int b = 3; b >= 0; b--) {
        y = (y * y) >> 16;
        if (y >= (UINT64_C(2) << 16)) {
            y >>= 1;
            r |= 1u << b;
        }
    }
    return r;
}

/* 0 if the @p n bytes of @p s vary enough to be a secret; else -1 and
 * @p why says what they lack.  The estimate gives each character that
 * neither repeats the one before nor steps one from it log2 of the
 * alphabet it is drawn from (the classes present: digits, lower case,
 * upper case, other printable, or every byte value), so "aaaa..." and
 * "abcd..." count for little while random bytes or hex digits (64 of them
 * from tutti-run) pass with a wide margin. */
static int secret_weak(const unsigned char *s, size_t n, char *why,
                       size_t wl)
{
    unsigned char seen[256] = {0};
    unsigned distinct = 0, counted = 0, pool, bits16;
    int digit = 0, lower = 0, upper = 0, punct = 0, other = 0;

    for (size_t i = 0; i < n; i++) {
        int c = s[i];
        distinct += !seen[c];
        seen[c] = 1;
        counted += i == 0 || abs(c - (int)s[i - 1]) > 1;
        /* ASCII classes, whatever the locale says */
        if (c >= '0' && c <= '9')
            digit = 1;
        else if (c >= 'a' && c <= 'z')
            lower = 1;
        else if (c >= 'A' && c <= 'Z')
            upper = 1;
        else if (c >= ' ' && c <= '~')
            punct = 1;
        else
            other = 1;
    }
    pool = other ? 256
                 : 10u * digit + 26u * lower + 26u * upper + 33u * punct;
    bits16 = counted * log2_16(pool > 0 ? pool : 1);
    if (distinct < TCP_SECRET_DISTINCT) {
        snprintf(why, wl, "holds only %u distinct characters, expected at "
                 "least %d", distinct, TCP_SECRET_DISTINCT);
        return -1;
    }
    if (bits16 < TCP_SECRET_BITS * 16) {
        snprintf(why, wl, "is worth about %u bits (%u of its %zu characters "
                 "neither repeat nor step one from the one before, from %u "
                 "symbols), expected %d or more", bits16 / 16, counted, n,
                 pool, TCP_SECRET_BITS);
        return -1;
    }
    return 0;
}

/* Where the kernel placed the environment at exec, [start, end): what
 * /proc/PID/environ shows, and a core dump holds (fields 50 and 51 of
 * /proc/self/stat); 0, or -1 where it cannot be told. */
static int env_block(uintptr_t *start, uintptr_t *end)
{
    char buf[1024], *p;
    unsigned long long v[2];
    FILE *f = fopen("/proc/self/stat", "re");
    size_t n;
    if (f == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if ((p = strrchr(buf, ')')) == NULL)
        return -1;
    for (int field = 2; field < 50; field++) { /* to the space before
                                                   field 50 */
        p = strchr(p + 1, ' ');
        if (p == NULL)
            return -1;
    }
    if (sscanf(p, " %llu %llu", &v[0], &v[1]) != 2 || v[0] >= v[1])
        return -1;
    *start = (uintptr_t)v[0];
    *end = (uintptr_t)v[1];
    return 0;
}

/* Takes variable @p name, whose value getenv() gave as @p value, out of
 * the environment; where its text lies in the block of the exec, the
 * text is wiped too.  A string setenv() or putenv() placed elsewhere is
 * only unlinked: it may be the caller's. */
static void env_take_out(const char *name, char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    uintptr_t start, end, at = (uintptr_t)value - nl - 1;
    unsetenv(name);
    if (env_block(&start, &end) == 0 && at >= start &&
        (uintptr_t)value + vl < end)
        explicit_bzero((char *)at, nl + 1 + vl);
}

/* The secret of TUTTI_JOB_SECRET, if set, into env_secret (held), checked
 * and taken out of the environment. */
static tutti_status_t take_env_secret(const tutti_tp_core_ops_t *core)
{
    char *sec = getenv("TUTTI_JOB_SECRET"), why[200];
    size_t n;

    if (sec == NULL || *sec == '\0')
        return TUTTI_OK;
    n = strlen(sec);
    if (n < TCP_SECRET_MIN || n > TCP_SECRET_MAX)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_JOB_SECRET "
                           "has %zu characters; expected %d to %d "
                           "(tutti-run makes one; else: export "
                           "TUTTI_JOB_SECRET=$(head -c 32 /dev/urandom | "
                           "od -An -tx1 | tr -d ' \\n'))", n,
                           TCP_SECRET_MIN, TCP_SECRET_MAX);
    if (secret_weak((const unsigned char *)sec, n, why, sizeof(why)) != 0)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_JOB_SECRET is "
                           "too easy to guess: it %s (tutti-run makes a "
                           "random one; else: export "
                           "TUTTI_JOB_SECRET=$(head -c 32 /dev/urandom | "
                           "od -An -tx1 | tr -d ' \\n'))", why);
    explicit_bzero(env_secret.secret, sizeof(env_secret.secret));
    memcpy(env_secret.secret, sec, n);
    env_secret.len = n;
    env_take_out("TUTTI_JOB_SECRET", sec);
    return TUTTI_OK;
}

/* The secret in TUTTI_SECRET_FILE @p file into @p out: a regular file
 * (not a link) of this user that group and others cannot use. */
static tutti_status_t read_secret_file(const tutti_tp_core_ops_t *core,
                                       const char *file, tcp_cred_t *out)
{
    unsigned char buf[TCP_SECRET_MAX + 2];
    char why[200];
    struct stat st;
    size_t n = 0;
    tutti_status_t ret = TUTTI_ERR_CONFIG;
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
                            O_NOCTTY);

    if (fd < 0 && errno == ELOOP)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_SECRET_FILE "
                           "'%s' is a symbolic link; expected the file "
                           "itself, of your own, that only you can read ("
                           SECRET_FILE_HOW ")", file, file, file);
    if (fd < 0)
        return core->error(TUTTI_ERR_IO, "tcp", "TUTTI_SECRET_FILE '%s': %s",
                           file, strerror(errno));
    if (fstat(fd, &st) != 0) {
        ret = core->error(TUTTI_ERR_IO, "tcp", "TUTTI_SECRET_FILE '%s': "
                          "fstat: %s", file, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        ret = core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_SECRET_FILE '%s' "
                          "is not a regular file (mode %06o); expected a "
                          "file that only you can read (" SECRET_FILE_HOW
                          ")", file, (unsigned)st.st_mode, file, file);
    } else if (st.st_uid != geteuid()) {
        ret = core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_SECRET_FILE '%s' "
                          "is owned by uid %u, not by uid %u that this "
                          "process runs as; expected a file of your own ("
                          SECRET_FILE_HOW ")", file, (unsigned)st.st_uid,
                          (unsigned)geteuid(), file, file);
    } else if ((st.st_mode & 077) != 0) {
        ret = core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_SECRET_FILE '%s' "
                          "has mode %04o: group or others may read or "
                          "write it; expected mode 0600 (chmod 600 %s), "
                          "or a new secret: " SECRET_FILE_HOW, file,
                          (unsigned)(st.st_mode & 07777), file, file, file);
    } else {
        ret = TUTTI_OK;
        while (n < sizeof(buf)) {
            ssize_t got = read(fd, buf + n, sizeof(buf) - n);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                ret = core->error(TUTTI_ERR_IO, "tcp", "TUTTI_SECRET_FILE "
                                  "'%s': %s", file, strerror(errno));
            if (got <= 0)
                break;
            n += (size_t)got;
        }
    }
    close(fd);
    while (n > 0 && isspace(buf[n - 1]))
        n--; /* a trailing newline is not part of it */
    if (ret == TUTTI_OK && (n < TCP_SECRET_MIN || n > TCP_SECRET_MAX))
        ret = core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_SECRET_FILE '%s' "
                          "holds %s%zu bytes; expected %d to %d ("
                          SECRET_FILE_HOW ")", file,
                          n > TCP_SECRET_MAX ? "over " : "", n,
                          TCP_SECRET_MIN, TCP_SECRET_MAX, file, file);
    if (ret == TUTTI_OK && secret_weak(buf, n, why, sizeof(why)) != 0)
        ret = core->error(TUTTI_ERR_CONFIG, "tcp", "TUTTI_SECRET_FILE '%s' "
                          "is too easy to guess: it %s (" SECRET_FILE_HOW
                          ")", file, why, file, file);
    if (ret == TUTTI_OK) {
        memcpy(out->secret, buf, n);
        out->secret_len = n;
    }
    explicit_bzero(buf, sizeof(buf));
    return ret;
}

/* @p out emptied and given @p job_id, which the handshake carries. */
static tutti_status_t cred_start(const tutti_tp_core_ops_t *core,
                                 const char *job_id, tcp_cred_t *out)
{
    memset(out, 0, sizeof(*out));
    if (strlen(job_id) >= TCP_JOB_MAX)
        return core->error(TUTTI_ERR_CONFIG, "tcp", "job id '%s' is longer "
                           "than %d characters", job_id, TCP_JOB_MAX - 1);
    out->job_id = job_id;
    return TUTTI_OK;
}

tutti_status_t tcp_cred_read(const tutti_tp_core_ops_t *core,
                             const char *job_id, tcp_cred_t *out)
{
    const char *file = getenv("TUTTI_SECRET_FILE");
    tutti_status_t st = cred_start(core, job_id, out);

    if (st != TUTTI_OK)
        return st;
    pthread_mutex_lock(&env_secret.lock);
    st = take_env_secret(core);
    if (st == TUTTI_OK && env_secret.len > 0) {
        memcpy(out->secret, env_secret.secret, env_secret.len);
        out->secret_len = env_secret.len;
    }
    pthread_mutex_unlock(&env_secret.lock);
    if (st != TUTTI_OK || out->secret_len > 0)
        return st;
    if (file == NULL || *file == '\0')
        return core->error(TUTTI_ERR_CONFIG, "tcp", "no job secret: the tcp "
                           "transport needs TUTTI_JOB_SECRET (tutti-run sets "
                           "one) or TUTTI_SECRET_FILE naming a file that "
                           "holds %d to %d bytes, the same for every task ("
                           SECRET_FILE_HOW ")", TCP_SECRET_MIN,
                           TCP_SECRET_MAX, "FILE", "FILE");
    return read_secret_file(core, file, out);
}

const void *tcp_store(const tutti_tp_group_t *g)
{
    if (g->size < offsetof(tutti_tp_group_t, secret) + sizeof(g->secret) ||
        g->store == NULL ||
        g->core->size < offsetof(tutti_tp_core_ops_t, store_get) +
                            sizeof(g->core->store_get))
        return NULL;
    return g->store;
}

tutti_status_t tcp_cred_of(const tutti_tp_group_t *g, tcp_cred_t *out)
{
    const char *sec = tcp_store(g) != NULL ? g->secret : NULL;
    size_t n = sec != NULL ? strlen(sec) : 0;
    if (n == 0)
        return tcp_cred_read(g->core, g->job_id, out);
    tutti_status_t st = cred_start(g->core, g->job_id, out);
    if (st != TUTTI_OK)
        return st;
    if (n < TCP_SECRET_MIN || n > TCP_SECRET_MAX)
        return g->core->error(TUTTI_ERR_PEER, "tcp", "the secret agreed "
                              "through the store has %zu characters; "
                              "expected %d to %d", n, TCP_SECRET_MIN,
                              TCP_SECRET_MAX);
    memcpy(out->secret, sec, n);
    out->secret_len = n;
    return TUTTI_OK;
}

/* ---- handshake ---------------------------------------------------------- */

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

/* The loopback address of the family tcp.family asks for (127.0.0.1,
 * ::1 for ipv6), to bind and to offer. */
static void loopback_addr(const tcp_settings_t *s, tcp_reg_t *reg,
                          struct sockaddr_storage *bind_ss,
                          socklen_t *bind_len)
{
    if (tcp_family_af[s->family] == AF_INET6) {
        struct sockaddr_in6 *in6 = (void *)bind_ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_addr = in6addr_loopback;
        *bind_len = sizeof(*in6);
    } else {
        struct sockaddr_in *in = (void *)bind_ss;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *bind_len = sizeof(*in);
    }
    tcp_sockaddr_to_addr((struct sockaddr *)bind_ss, 0, &reg->addrs[0]);
    reg->naddr = 1;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

tutti_status_t tcp_listen(const tutti_tp_core_ops_t *core,
                          const tcp_settings_t *s, int loopback,
                          int *fd_out, tcp_reg_t *reg)
{
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    int fd = -1, err = 0, one = 1, zero = 0;
    int family = tcp_family_af[s->family];
    unsigned port, port_hi = (unsigned)s->ports[1];

    memset(&ss, 0, sizeof(ss));
    if (loopback)
        loopback_addr(s, reg, &ss, &sl);
    else if (gather_addrs(s, reg, &ss, &sl) != 0)
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
        if (loopback) {
            char lo[64];
            tcp_addr_str(&reg->addrs[0], lo, sizeof(lo));
            return core->error(TUTTI_ERR_IO, "tcp", "cannot listen on %s, "
                               "the loopback address a job on one host "
                               "uses: %s", lo, strerror(err));
        }
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
