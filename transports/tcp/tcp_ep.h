/*
 * tcp transport module: the endpoint and its data path, as tp_tcp.c and
 * the files of its parts share them (the wire frame, the sockets of a
 * peer, the endpoint whose sockets its I/O lock guards).  tcp_int.h
 * holds what the rendezvous and the handshake share; nothing outside
 * transports/tcp includes this header.
 */
#ifndef TUTTI_TP_TCP_EP_H
#define TUTTI_TP_TCP_EP_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/checksum.h"
#include "tcp_int.h"
#include "tcp_mac.h"

#define FRAME_MAGIC 0x46545454u     /* "TTTF" */
#define RING 256                    /* pieces queued per socket */
#define STAGE_BYTES (64u << 10)     /* reduce-on-receive staging */
#define MSG_MAX (UINT64_C(1) << 40)
#define FRAME_SUM 1u                /* sum holds the body's checksum */
#define FRAME_MAC 2u                /* tag holds the frame's MAC */
#define INBUF 4096                  /* reads of less go through conn.in */

/** The header of every frame on a data socket; its bytes follow. */
typedef struct {
    uint32_t magic;
    uint32_t frag_len;
    tutti_wire_key_t key;
    uint64_t msg_len;
    uint64_t frag_off;
    uint32_t sum;                   /* FRAME_SUM: of the body (verify) */
    uint32_t flags;                 /* FRAME_SUM, FRAME_MAC or 0 */
    unsigned char tag[TCP_TAG];     /* FRAME_MAC: of the header (this
                                       field zero) and the body, as the
                                       connection's next frame */
} frame_t;

/* The tag ends the header: the receiver tags the bytes before it and
 * TCP_TAG zeros, as the sender tagged the header with a zero tag. */
_Static_assert(offsetof(frame_t, tag) + TCP_TAG == sizeof(frame_t),
               "frame_t: the tag is its last field, without padding");

/** A message that came before its receive was posted. */
typedef struct unexp {
    struct unexp *next;
    tutti_wire_key_t key;
    uint64_t msg_len, got;
    tutti_tp_op_t *op;              /* a receive waiting for the rest */
    char data[];
} unexp_t;

/** A piece of a send, queued on one socket. */
typedef struct {
    tutti_tp_op_t *op;
    uint64_t off, len;
} piece_t;

/** What a conn_t is: the wake-up eventfd, the listener, an accepted or
 *  opened connection in its handshake, a joined data socket, or the epoll
 *  set of the data sockets (watched in the endpoint's own set). */
enum { C_EVENT, C_LISTEN, C_IN, C_OUT, C_DATA, C_DATASET };

/** One socket of the endpoint, as whoever holds its I/O lock sees it. */
typedef struct conn {
    int kind, fd, peer, index;
    double deadline;
    char from[64];
    tcp_addr_t src;                 /* accepted: the opener's address, port
                                       0 (the listener's limits count by
                                       it) */
    size_t hs_got;                  /* bytes of the awaited part */
    int hs_step;                    /* 0: awaiting the opening (accepted)
                                       or the challenge (opened); 1: the
                                       proof (accepted) or the answer */
    struct {
        tcp_hs_t hs;                /* the opening, sent or received */
        tcp_chal_t chal;            /* the challenge, sent or received */
        union {
            tcp_proof_t proof;
            uint32_t ack;
        } in;
    } hs;
    struct conn *next_pending;
    tcp_mac_t mac_out, mac_in;      /* under the session key, once the
                                       handshake passed */
    /* sending */
    piece_t ring[RING];
    unsigned head, tail;
    frame_t shdr;
    size_t ssent;
    int shdr_ready, writable;
    /* receiving */
    char in[INBUF];                 /* read ahead: a small frame's header
                                       and body in one recv() */
    size_t in_at, in_len;           /* its unread bytes */
    int drained;                    /* a recv() came back short: the socket
                                       was empty; read it again after its
                                       next event only */
    int ended;                      /* an event said the peer closed or
                                       failed: no event follows, so read
                                       on until recv() says which */
    frame_t rhdr;
    tutti__csum_t rsum;             /* verify: of the body read so far */
    size_t rgot;
    int in_body;
    int held;                 /* a header no receive matches: not read on */
    uint64_t body_got, rdone;
    tutti_tp_op_t *rop;
    unexp_t *rux;
    size_t stage_have;
    char *stage;
} conn_t;

/** A member this endpoint talks to, and its sockets. */
typedef struct {
    conn_t *conns[TCP_CONNS_MAX];
    unsigned joined, rr;
    int serve, failed, reported;
    int left;                       /* closed at a frame boundary: receives
                                       stay posted, the core's liveness
                                       check (peer_alive) ends them */
    atomic_int closed;              /* the remote end closed */
    tutti_tp_op_t *posted_h, *posted_t, *active, *wait_h, *wait_t;
    unexp_t *unexp;
    char why[320];
    char addr[64];
    char fail_text[512];            /* why its operations failed */
} peer_t;

/** An endpoint: what connect() returns as a tutti_tp_ep_t. */
typedef struct tcp_ep {
    const tutti_tp_core_ops_t *core;
    int rank, size, task;
    uint64_t group_key;
    const int *rank_task;
    tcp_settings_t set;
    tcp_cred_t cred;
    char job[TCP_JOB_MAX];
    peer_t *peers;
    int epfd;                       /* its own: evc, lsc, the sockets in
                                       their handshake, dsc; watched by the
                                       engine (tcp_progress.c) */
    conn_t evc, lsc;                /* the eventfd and the listener */
    conn_t dsc;                     /* dsc.fd: the data sockets' epoll set */
    conn_t *pending;                /* connections in their handshake */
    tcp_guard_t guard;              /* the listener's limits and warnings */
    unsigned in_expect, in_joined;  /* sockets the lower ranks open to this
                                       one; those of them joined */
    /* The engine's, under its lock: */
    struct tcp_ep *eng_next;        /* the registered endpoints */
    int running;                    /* registered */
    int woke;                       /* epfd had events this round */
    int retry;                      /* a member held the I/O lock */
    int watching;                   /* dsc is in epfd (not parked) */
    /* io guards the sockets and every list of the data path: whoever
     * holds it (the engine, or an API call that got it with trylock)
     * moves bytes.  lock guards what follows it; take io first. */
    pthread_mutex_t io;
    pthread_mutex_t lock;
    tutti_tp_op_t *sub_h, *sub_t;   /* ops queued by send()/recv() */
    atomic_int queued;              /* sub_h is not empty */
    _Atomic uint64_t last_poll_ns;  /* tcp_now_ns() of the last progress() */
    conn_t *new_out;                /* sockets connect() opened */
    atomic_uint submitted;          /* ops send()/recv() took */
    atomic_uint completed;          /* ...and of those, ops completed */
    unsigned reported_completed;
    tutti_status_t setup_err;       /* under lock */
    char err_text[512];             /* under lock: for progress() */
    tutti_status_t err_st;
    int garble;                     /* frames to send before garbling */
    int truncate;                   /* ...or cutting the frame short */
    int oversize;                   /* ...or claiming too long a message */
    unsigned frames_sent;
    uint64_t unexp_bytes;           /* held aside now (tcp.unexpected) */
    int verify;                     /* group->verify: bodies summed */
    int mac;                        /* group->verify is mac: frames
                                       tagged */
    /* TUTTI_TEST_CORRUPT=R:N: rank R flips byte N of the first message of
     * more than N bytes it receives, after the sender summed it. */
    int corrupt_armed;
    uint64_t corrupt_at;
    int check;                      /* verify, mac or corrupt_armed */
} tcp_ep_t;

/* ---- tcp_complete.c ----------------------------------------------------- */

/** Ends @p op with @p st; the op is the caller's again from then on. */
void tcp_complete(tcp_ep_t *ep, tutti_tp_op_t *op, tutti_status_t st);

/** Keeps the first error's text for progress() to record. */
void tcp_note_error(tcp_ep_t *ep, tutti_status_t st, const char *text);

/** Closes @p c's socket, if open, and stops watching it. */
void tcp_conn_close(tcp_ep_t *ep, conn_t *c);

/** Frees @p c (closed), wiping its keys. */
void tcp_conn_free(conn_t *c);

/** Frees @p u, a message held aside, and gives its bytes back to the
 *  endpoint's tcp.unexpected budget. */
void tcp_unexp_free(tcp_ep_t *ep, unexp_t *u);

/** Fails peer @p peer: closes its sockets and ends each of its operations
 *  once, with TUTTI_ERR_PEER (with TUTTI_OK for sends to a peer that
 *  left); @p fmt says why. */
void tcp_peer_fail(tcp_ep_t *ep, int peer, int remote_closed,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- tcp_send.c --------------------------------------------------------- */

/** Queues send @p op on its peer's sockets, or behind the sends that wait
 *  for room; completes it at once where the peer has failed. */
void tcp_post_send(tcp_ep_t *ep, tutti_tp_op_t *op);

/** Sends what socket @p c can take now. */
void tcp_do_send(tcp_ep_t *ep, conn_t *c);

/* ---- tcp_recv.c --------------------------------------------------------- */

/** Posts receive @p op: takes the message that came before it, or queues
 *  it for its peer's fragments and reads on where a header waited. */
void tcp_post_recv(tcp_ep_t *ep, tutti_tp_op_t *op);

/** Reads what socket @p c holds now, as far as receives take it. */
void tcp_do_recv(tcp_ep_t *ep, conn_t *c);

/* ---- tcp_join.c --------------------------------------------------------- */

/** Watches @p c's socket on epoll set @p epfd (edge-triggered, both
 *  ways); 0 or -1 with errno. */
int tcp_watch(int epfd, conn_t *c);

/** Drops @p c, a connection in its handshake, and frees it; logs
 *  @p reason where it is not NULL. */
void tcp_pending_drop(tcp_ep_t *ep, conn_t *c, const char *reason);

/** Reads the handshake (accepted) or its answer (opened) on @p c; joins
 *  the socket to its peer once complete, or refuses it. */
void tcp_read_pending(tcp_ep_t *ep, conn_t *c);

/** Accepts every connection waiting on the listener. */
void tcp_accept_all(tcp_ep_t *ep);

/** Drops the connections whose handshake is past its deadline. */
void tcp_expire_pending(tcp_ep_t *ep);

/** Opens the sockets to @p peer (a higher rank, registered as @p reg)
 *  and hands them to the progress engine, which waits for their answers. */
tutti_status_t tcp_open_to(tcp_ep_t *ep, int peer, const tcp_reg_t *reg,
                           const char *my_host, double deadline);

/** Waits until every served peer has all its sockets joined. */
tutti_status_t tcp_wait_joined(tcp_ep_t *ep, double deadline);

/* ---- tcp_progress.c ----------------------------------------------------- */

/** Appends @p op, whose next is NULL, to the list from @p head to
 *  @p tail (ops submitted by send()/recv(), posted, or waiting for a peer,
 *  in order). */
static inline void tcp_op_append(tutti_tp_op_t **head, tutti_tp_op_t **tail,
                                 tutti_tp_op_t *op)
{
    if (*tail != NULL)
        (*tail)->next = op;
    else
        *head = op;
    *tail = op;
}

/** Wakes the engine for this endpoint, to take what was queued (the
 *  API's side, the join's and the engine itself ring it). */
static inline void tcp_ring(tcp_ep_t *ep)
{
    uint64_t one = 1;
    if (write(ep->evc.fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        ep->core->log(0, "tcp", "waking the progress engine: %s",
                      strerror(errno));
}

/** Makes @p ep's epoll sets and eventfd, watches them and the listener
 *  (already open), and registers the endpoint with the process's progress
 *  engine (starting it with the first). */
tutti_status_t tcp_engine_add(tcp_ep_t *ep, const tutti_tp_group_t *g);

/** Takes @p ep out of the engine (no-op if it never joined): from the
 *  return on, the engine never touches it; the last one out stops and
 *  joins the engine's thread. */
void tcp_engine_remove(tcp_ep_t *ep);

/** Posts the ops send()/recv() queued while another held the I/O lock;
 *  the caller holds it. */
void tcp_take_ops(tcp_ep_t *ep);

/** CLOCK_MONOTONIC in nanoseconds. */
uint64_t tcp_now_ns(void);

/** Moves what the data sockets have ready (epoll_wait with no wait), as
 *  the engine does; the caller holds the I/O lock. */
void tcp_poll_data(tcp_ep_t *ep);

#endif
