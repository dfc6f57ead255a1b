/*
 * ucx transport (internal): the endpoint's types and what its files share.
 * tp_ucx.c connects and disconnects, ucx_data.c moves messages.
 */
#ifndef TUTTI_TP_UCX_INT_H
#define TUTTI_TP_UCX_INT_H

#include <pthread.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include <tutti/transport.h>

#define UCX_AM_ID 7           /* the active message every message travels as */
#define UCX_MSG_MAX (1ull << 40) /* bytes of one message, at most (1 TiB) */
#define UCX_TEXT 256
#define UNEXP_SMALL 256        /* the smallest blocks kept for messages
                                  ahead of their receives (ucx_data.c) */
#define UNEXP_CLASSES 9        /* ... by powers of two to 64 KiB */
#define UNEXP_KEEP 32          /* blocks kept per class, at most */

/* The settings' struct, filled by the core from the rows (tp_ucx.c). */
typedef struct {
    char tls[128];       /* UCX_TLS for the module's contexts, "" UCX's */
    char devices[128];   /* UCX_NET_DEVICES, "" UCX's */
    char rndv_thresh[32]; /* UCX_RNDV_THRESH, "" UCX's */
    uint64_t unexpected; /* bytes held aside for receives not yet posted */
} ucx_settings_t;

/* Before every message's bytes.  token is the sender's, as it traded it
 * through the control plane: a frame whose token is not its rank's is a
 * stranger's and is dropped. */
typedef struct {
    uint64_t instance;
    uint32_t step, tag;
    uint64_t len;
    uint64_t token;
    int32_t from;
    uint32_t sum;        /* CRC32C of the bytes where the group verifies */
} ucx_hdr_t;

/* A message that came before its receive: eager bytes copied aside, or a
 * rendezvous descriptor UCX keeps until it is fetched. */
typedef struct ucx_unexp {
    struct ucx_unexp *next;
    ucx_hdr_t hdr;
    void *desc;          /* rendezvous: UCX's descriptor, else NULL */
    uint32_t cls, pad;   /* its block's class (ucx_data.c); data 16-byte
                            aligned */
    unsigned char data[]; /* eager: hdr.len bytes */
} ucx_unexp_t;

/* One send or rendezvous receive in flight (a pool, never freed before
 * disconnect: UCX reads the header until the send completes). */
typedef struct ucx_req {
    struct ucx_req *next;
    struct ucx_ep *ep;
    tutti_tp_op_t *op;
    ucx_hdr_t hdr;       /* a send's header; a receive's sender's */
    void *stage;         /* a reducing receive's bytes, else NULL */
} ucx_req_t;

typedef struct {
    ucp_ep_h uep;
    int serve;
    int same_host;
    int pid;
    uint64_t token;              /* the peer's */
    int failed;                  /* its endpoint reported an error */
    int forged;                  /* the test hook sent it its message */
    char fail_text[UCX_TEXT];
    tutti_tp_op_t *posted_h, *posted_t; /* receives waiting for it */
    ucx_unexp_t *unexp_h, *unexp_t;
    struct ucx_ep *ep;
    int rank;
} ucx_peer_t;

typedef struct ucx_ctx ucx_ctx_t; /* a process's UCP context (tp_ucx.c) */

typedef struct ucx_ep {
    const tutti_tp_core_ops_t *core;
    int rank, size;
    uint64_t group_key;
    ucx_settings_t set;
    ucx_ctx_t *ctx;
    ucp_worker_h worker;
    int efd;                     /* the worker's event fd, -1: none */
    int sleep;                   /* group->sleep and an event fd */
    int verify;                  /* checksums on every message */
    int forge;                   /* TUTTI_UCX_TEST_STRANGER names this
                                    rank (tp_ucx.c) */
    uint64_t token;              /* this member's */
    ucx_peer_t *peers;
    pthread_mutex_t lock;        /* everything below, and the worker */
    unsigned completed, reported;
    ucx_req_t *free_reqs;
    struct ucx_chunk *chunks;    /* what free_reqs came from */
    uint64_t unexp_bytes;
    ucx_unexp_t *free_unexp[UNEXP_CLASSES]; /* blocks to reuse */
    unsigned kept_unexp[UNEXP_CLASSES];
    void *stage;                 /* reducing receives' staging (kept) */
    size_t stage_cap;
    int stage_busy;
    tutti_status_t err_st;       /* an endpoint's failure, for progress */
    char err_text[UCX_TEXT];
} ucx_ep_t;

/* ucx_data.c */
tutti_status_t ucx_send(tutti_tp_ep_t *tep, tutti_tp_op_t *op);
tutti_status_t ucx_recv(tutti_tp_ep_t *tep, tutti_tp_op_t *op);
int ucx_progress(tutti_tp_ep_t *tep);
int ucx_sleep(tutti_tp_ep_t *tep, double seconds);
/** UCX's active-message handler of the endpoint @p arg. */
ucs_status_t ucx_am_cb(void *arg, const void *header, size_t header_len,
                       void *data, size_t len,
                       const ucp_am_recv_param_t *param);
/** Fails @p peer (its endpoint's error, or a frame it should not have
 *  sent): its receives end with TUTTI_ERR_PEER and @p why.  Lock held. */
void ucx_fail_peer(ucx_ep_t *ep, ucx_peer_t *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** The operations in flight are the core's no more (disconnect): UCX's
 *  callbacks that come for them touch them not.  Lock held. */
void ucx_data_detach(ucx_ep_t *ep);
/** Frees what disconnect leaves: unexpected messages, the request pool.
 *  Lock held, the worker's requests done. */
void ucx_data_free(ucx_ep_t *ep);

#endif
