/*
 * tcp transport module: what its files share.  tcp_net.c holds the
 * socket helpers, the job secret and the connection handshake;
 * tcp_rendezvous.c the rendezvous (server and client), tcp_rdvfile.c its
 * one-host file, tcp_hmac.c the MAC of the handshake, tcp_guard.c what
 * guards both kinds of listener against connections that never
 * authenticate; tp_tcp.c the settings' rows, and with its parts
 * (tcp_ep.h) the endpoints and the data path.
 * Outside transports/tcp only tests/mp/test_tcp.c includes this header,
 * for the handshake's layout.
 */
#ifndef TUTTI_TP_TCP_INT_H
#define TUTTI_TP_TCP_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <tutti/transport.h>

#define TCP_MAGIC 0x50435454u       /* "TTCP": every handshake */
#define TCP_VERSION 2u              /* 2: challenge-response, no secret
                                       on the wire */
#define TCP_KIND_RDV 1u             /* a connection to the rendezvous */
#define TCP_KIND_DATA 2u            /* a connection between two members */
#define TCP_JOB_MAX 64              /* job id bytes, NUL included */
#define TCP_SECRET_MAX 128          /* secret bytes */
#define TCP_SECRET_MIN 16
#define TCP_NONCE 32                /* random bytes each side adds */
#define TCP_MAC 32                  /* HMAC-SHA256 */
#define TCP_HOST_MAX 64
#define TCP_ADDRS_MAX 8             /* listen addresses one endpoint offers */
#define TCP_HS_TIMEOUT 3.0          /* seconds a new connection may stay
                                       silent before its handshake */
#define TCP_CONNS_MAX 16            /* sockets per peer pair, at most (the
                                       connections setting's bound) */
#define TCP_SECRET_DISTINCT 8       /* distinct bytes a secret holds, at
                                       least */
#define TCP_SECRET_BITS 64          /* its estimated entropy, at least */

/* What one listener takes from connections that have not authenticated
 * yet (tcp_guard.c).  Beyond the limits a new connection is accepted and
 * closed at once, so that it leaves the backlog; the connections the
 * job itself still has to open come on top of them. */
#define TCP_PENDING_MAX 64          /* in their handshake, per listener */
#define TCP_PENDING_PER_SOURCE 8    /* ...from one address */
#define TCP_WARN_BURST 8            /* refusals logged one by one, then
                                       summed until a quiet period */
#define TCP_WARN_PERIOD 1.0         /* seconds: one summary line at most */
#define TCP_ACCEPT_PAUSE 0.1        /* seconds a listener rests when accept
                                       fails for want of descriptors or
                                       memory */

/** First bytes on every connection, from the side that opened it, in
 *  host order (the members of one job share an architecture; a peer of
 *  the other byte order fails the magic check and is refused).  The secret
 *  never crosses the wire: the side that accepted answers with a
 *  tcp_chal_t, the opener checks it and answers with a tcp_proof_t; each
 *  MAC covers both nonces, the job id, the group key, the ranks and the
 *  direction (tcp_net.c), so neither can be replayed or reflected. */
typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t kind;                  /* TCP_KIND_* */
    uint64_t group_key;
    int32_t from_rank, to_rank;     /* -1 on the rendezvous */
    uint32_t conn_index, nconn;     /* data: which socket of the pair */
    char job_id[TCP_JOB_MAX];       /* zero-padded */
    unsigned char nonce[TCP_NONCE]; /* the opener's */
} tcp_hs_t;

/** The accepting side's answer to a tcp_hs_t: its nonce, and its proof
 *  that it holds the secret. */
typedef struct {
    unsigned char nonce[TCP_NONCE];
    unsigned char mac[TCP_MAC];
} tcp_chal_t;

/** The opener's proof, sent once the tcp_chal_t checked out. */
typedef struct {
    unsigned char mac[TCP_MAC];
} tcp_proof_t;

/** Answer to a data handshake from a member with the right secret. */
enum {
    TCP_ACK_OK = 0x4f4b4f4b,        /* joined */
    TCP_ACK_NCONN = 0x4e434f4e,     /* tcp.connections differs */
    TCP_ACK_DUP = 0x44555021        /* that socket is already joined */
};

/** One address a member listens on. */
typedef struct {
    uint16_t family;                /* AF_INET or AF_INET6 */
    uint16_t port;                  /* host order */
    uint32_t scope;                 /* IPv6 scope id */
    unsigned char addr[16];
} tcp_addr_t;

/** What a member tells the rendezvous, and what others learn of it. */
typedef struct {
    uint64_t group_key;
    int32_t rank, group_size;
    uint32_t nconn, naddr;
    tcp_addr_t addrs[TCP_ADDRS_MAX];
    char host[TCP_HOST_MAX];
} tcp_reg_t;

/** The process's secret and job, as the handshake carries them. */
typedef struct {
    unsigned char secret[TCP_SECRET_MAX];
    size_t secret_len;
    const char *job_id;
} tcp_cred_t;

/** What guards one listener (tcp_guard.c): its refusals, logged one by
 *  one up to TCP_WARN_BURST and then summed, one line per
 *  TCP_WARN_PERIOD, until a period passes without any; and its rest after
 *  accept failed for want of descriptors or memory.  Used by one thread
 *  at a time: the endpoint's I/O lock holder, or the rendezvous thread. */
typedef struct {
    const tutti_tp_core_ops_t *core;
    char name[64];                  /* what its lines start with */
    double since;                   /* start of the current period */
    unsigned logged;                /* lines of the current spell */
    unsigned long held;             /* refusals summed, not yet logged */
    unsigned long held_over;        /* ...of them over the limits */
    unsigned long pauses;           /* rests summed, not yet logged */
    double paused_until;            /* 0: accepting */
} tcp_guard_t;

/** The module's settings, tcp.interface, family, ports and connections,
 *  as the core fills them from the rows of tp_tcp.c. */
typedef struct {
    char interface[16];             /* IFNAMSIZ; "": any */
    int family;                     /* index in tcp_families */
    uint64_t ports[2];              /* 0, 0: any free port */
    uint64_t connections;           /* sockets per peer, 1 to
                                       TCP_CONNS_MAX */
    uint64_t unexpected;            /* bytes an endpoint holds aside for
                                       messages not yet received */
} tcp_settings_t;

/* ---- tp_tcp.c ----------------------------------------------------------- */

/** tcp.family's choices, and the address family of each in the same
 *  order (AF_UNSPEC for "any"): index them with tcp_settings_t.family. */
extern const char *const tcp_families[];
extern const int tcp_family_af[];

/* ---- tcp_net.c ---------------------------------------------------------- */

/** The job secret from TUTTI_JOB_SECRET or TUTTI_SECRET_FILE.  The
 *  variable is taken out of the environment once read (its text wiped
 *  where the process got it at exec) and kept for the endpoints made
 *  later in the process; the file must be a regular file of this user
 *  that group and others cannot use.  A secret too short or too uniform
 *  is refused, saying how to make one.  Wipe @p out with explicit_bzero
 *  when done. */
tutti_status_t tcp_cred_read(const tutti_tp_core_ops_t *core,
                             const char *job_id, tcp_cred_t *out);
/** The job's store (ABI 2.4 group->store, with a core that has
 *  store_get), or NULL: the job met without one. */
const void *tcp_store(const tutti_tp_group_t *g);
/** The job's credentials: the secret the store agreed (group->secret)
 *  where there is one, else tcp_cred_read()'s. */
tutti_status_t tcp_cred_of(const tutti_tp_group_t *g, tcp_cred_t *out);

/** Fill @p hs for a connection of @p kind, with a fresh nonce; 0, or -1
 *  when getrandom(2) gives none. */
int tcp_hs_fill(tcp_hs_t *hs, const tcp_cred_t *cred, uint32_t kind,
                uint64_t group_key, int from, int to, uint32_t index,
                uint32_t nconn);

/** NULL if @p hs is a handshake of @p kind of this job, else why not (a
 *  static string).  The secret is checked by the exchange that follows. */
const char *tcp_hs_check(const tcp_hs_t *hs, const tcp_cred_t *cred,
                         uint32_t kind);

/** The accepting side's answer to @p hs; 0, or -1 without randomness. */
int tcp_chal_make(const tcp_hs_t *hs, const tcp_cred_t *cred,
                  tcp_chal_t *out);

/** The opener's check of @p ch: 0 and its own proof in @p proof_out if
 *  the other side holds our secret, else -1 ("secret mismatch"). */
int tcp_chal_check(const tcp_hs_t *hs, const tcp_cred_t *cred,
                   const tcp_chal_t *ch, tcp_proof_t *proof_out);

/** The accepting side's check of the opener's proof @p p, @p ch being
 *  what it sent: 0 if the opener holds our secret, else -1. */
int tcp_proof_check(const tcp_hs_t *hs, const tcp_cred_t *cred,
                    const tcp_chal_t *ch, const tcp_proof_t *p);

/** "1.2.3.4:5" / "[::1]:5" for logs. */
void tcp_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len);
void tcp_peer_str(int fd, char *buf, size_t len);
void tcp_addr_str(const tcp_addr_t *a, char *buf, size_t len);

/** A non-blocking listening socket per @p s (port range, interface,
 *  family), or on the loopback address alone where @p loopback is set
 *  (127.0.0.1, ::1 for tcp.family ipv6); the addresses others may use to
 *  reach it go to @p reg. */
tutti_status_t tcp_listen(const tutti_tp_core_ops_t *core,
                          const tcp_settings_t *s, int loopback,
                          int *fd_out, tcp_reg_t *reg);

/** A blocking connection to @p a within @p timeout seconds, or -1. */
int tcp_connect_addr(const tcp_addr_t *a, double timeout, char *why,
                     size_t why_len);

/** Write/read exactly @p len bytes on a blocking socket; 0 or -1. */
int tcp_write_full(int fd, const void *buf, size_t len);
int tcp_read_full(int fd, void *buf, size_t len);

void tcp_nodelay(int fd);
int tcp_nonblock(int fd);

/** @p sa as a tcp_addr_t with @p port (host order). */
void tcp_sockaddr_to_addr(const struct sockaddr *sa, uint16_t port,
                          tcp_addr_t *a);

/* ---- tcp_guard.c -------------------------------------------------------- */

/** Whether @p g's listeners take the loopback address alone: every rank
 *  is on this host (rank_host NULL or all equal), no TUTTI_RENDEZVOUS or
 *  TUTTI_RENDEZVOUS_FILE says the job spans hosts, and tcp.interface is
 *  not set. */
int tcp_loopback_only(const tutti_tp_group_t *g, const tcp_settings_t *s);

/** Starts @p g for a listener whose lines start with @p name. */
void tcp_guard_init(tcp_guard_t *g, const tutti_tp_core_ops_t *core,
                    const char *name);

/** The next connection waiting on listener @p lfd (non-blocking, close on
 *  exec), its address in @p src (port 0) and as text in @p from; -1 when
 *  none waits or the listener rests.  Accept errors of one connection
 *  are skipped; where accept fails for want of descriptors or memory the
 *  listener rests TCP_ACCEPT_PAUSE and its connections wait in the
 *  backlog. */
int tcp_guard_accept(tcp_guard_t *g, int lfd, tcp_addr_t *src, char *from,
                     size_t from_len);

/** Why a new connection is over the limits, with @p all connections in
 *  their handshake, @p same of them from its address, and @p extra that
 *  the job itself still opens: @p why, written; NULL if it may stay. */
const char *tcp_guard_over(unsigned all, unsigned same, unsigned extra,
                           char *why, size_t wl);

/** Whether @p a and @p b are the same address (ports aside). */
int tcp_addr_same_host(const tcp_addr_t *a, const tcp_addr_t *b);

/** Logs, or sums, a refused connection from @p from; @p over: refused for
 *  the limits. */
void tcp_guard_refuse(tcp_guard_t *g, const char *from, const char *why,
                      int over);

/** Logs the sums of a period that ended. */
void tcp_guard_tick(tcp_guard_t *g);

/** Milliseconds until tcp_guard_tick() has a line to log or the listener
 *  may accept again; -1 when neither is pending. */
int tcp_guard_due_ms(const tcp_guard_t *g);

/** Whether the listener rests now. */
int tcp_guard_resting(const tcp_guard_t *g);

/* ---- tcp_rendezvous.c --------------------------------------------------- */

/**
 * Register @p reg at the job's rendezvous (starting its server first in
 * task 0) and look up each rank @p want names (group_size flags) until all
 * are known or @p deadline passes; their registrations go to
 * @p peers_out[rank].
 */
tutti_status_t tcp_rendezvous(const tutti_tp_group_t *g,
                              const tcp_settings_t *s, const tcp_cred_t *cred,
                              const tcp_reg_t *reg,
                              const unsigned char *want, double deadline,
                              tcp_reg_t *peers_out);

#endif
