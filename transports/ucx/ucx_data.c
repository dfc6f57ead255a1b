/*
 * ucx transport: moving messages.  Every message is one UCP active
 * message: a ucx_hdr_t (key, length, the sender's rank and token, a
 * checksum where the group verifies) and the bytes.  UCX sends small ones
 * eagerly and large ones by rendezvous (it registers the buffers and the
 * receiver gets them by RDMA read where the network has it, or its own
 * pipelines where not); the threshold is UCX's (ucx.rndv_thresh).
 *
 * The receiver matches by key per peer, as the core's channels do: an
 * eager message whose receive is posted is copied or reduced into it from
 * UCX's buffer; one that comes first is copied aside (up to
 * ucx.unexpected bytes per endpoint).  A rendezvous message is fetched
 * straight into the receive buffer once its receive is posted (UCX keeps
 * its descriptor until then), through a staging buffer where it reduces.
 * A frame whose header is not a member's (its rank out of the group, not
 * served, or its token not the one that rank traded through the control
 * plane) is a stranger's: dropped, and logged.  A frame whose length
 * differs from its receive's, or whose checksum does not match, fails its
 * sender: its receives end with TUTTI_ERR_PEER and a line naming it.
 *
 * Every callback of UCX runs inside ucp_worker_progress(), which is
 * called with the endpoint's lock held: in progress(), sleep() and
 * disconnect.  Requests (the send's header must live until UCX is done
 * with it) come from a pool the endpoint keeps until it disconnects.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "ucx_int.h"

#define REQ_CHUNK 64
#define PROGRESS_PASSES 64

struct ucx_chunk {
    struct ucx_chunk *next;
    ucx_req_t reqs[REQ_CHUNK];
};

static ucx_req_t *req_get(ucx_ep_t *ep)
{
    if (ep->free_reqs == NULL) {
        struct ucx_chunk *c = calloc(1, sizeof(*c));
        if (c == NULL)
            return NULL;
        c->next = ep->chunks;
        ep->chunks = c;
        for (int i = 0; i < REQ_CHUNK; i++) {
            c->reqs[i].next = ep->free_reqs;
            ep->free_reqs = &c->reqs[i];
        }
    }
    ucx_req_t *r = ep->free_reqs;
    ep->free_reqs = r->next;
    r->ep = ep;
    r->stage = NULL;
    return r;
}

static void req_put(ucx_ep_t *ep, ucx_req_t *r)
{
    r->op = NULL;
    r->stage = NULL;
    r->next = ep->free_reqs;
    ep->free_reqs = r;
}

/* Messages that come before their receives (the common case of a small
 * collective: the peer's message is there first) are held in blocks the
 * endpoint keeps for the next, in classes of 256 bytes to UNEXP_MAX by
 * powers of two, at most UNEXP_KEEP per class, so that the data path
 * allocates nothing in the steady state; larger ones (rarely eager) get
 * their own.  A rendezvous message holds only its descriptor. */
static unsigned unexp_class(size_t len)
{
    unsigned c = 0;
    while (c < UNEXP_CLASSES && ((size_t)UNEXP_SMALL << c) < len)
        c++;
    return c; /* UNEXP_CLASSES: none */
}

static ucx_unexp_t *unexp_get(ucx_ep_t *ep, size_t len)
{
    unsigned c = unexp_class(len);
    ucx_unexp_t *u;
    if (c < UNEXP_CLASSES && ep->free_unexp[c] != NULL) {
        u = ep->free_unexp[c];
        ep->free_unexp[c] = u->next;
        ep->kept_unexp[c]--;
    } else {
        u = malloc(sizeof(ucx_unexp_t) +
                   (c < UNEXP_CLASSES ? (size_t)UNEXP_SMALL << c : len));
    }
    if (u != NULL)
        u->cls = c;
    return u;
}

static void unexp_put(ucx_ep_t *ep, ucx_unexp_t *u)
{
    unsigned c = u->cls;
    if (c < UNEXP_CLASSES && ep->kept_unexp[c] < UNEXP_KEEP) {
        u->next = ep->free_unexp[c];
        ep->free_unexp[c] = u;
        ep->kept_unexp[c]++;
    } else {
        free(u);
    }
}

/* The op is the caller's again once its status is stored: touch it no
 * more.  Lock held. */
static void complete(ucx_ep_t *ep, tutti_tp_op_t *op, tutti_status_t st)
{
    if (st == TUTTI_OK)
        op->done = op->len;
    __atomic_store_n(&op->status, st, __ATOMIC_RELEASE);
    ep->completed++;
}

static int key_is(const tutti_tp_op_t *op, const ucx_hdr_t *h)
{
    return op->key.instance == h->instance && op->key.step == h->step &&
           op->key.tag == h->tag;
}

static size_t elem_size(const tutti_tp_op_t *op)
{
    size_t es = tutti_dtype_size(op->reduce.dtype);
    return es != 0 ? es : 1;
}

void ucx_fail_peer(ucx_ep_t *ep, ucx_peer_t *p, const char *fmt, ...)
{
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->fail_text, sizeof(p->fail_text), fmt, ap);
        va_end(ap);
        p->failed = 1;
        if (p->posted_h != NULL && ep->err_st == TUTTI_OK) {
            ep->err_st = TUTTI_ERR_PEER;
            snprintf(ep->err_text, sizeof(ep->err_text), "%s", p->fail_text);
        }
        ep->core->log(p->posted_h != NULL ? 1 : 3, "ucx", "%s",
                      p->fail_text);
    }
    while (p->posted_h != NULL) {
        tutti_tp_op_t *op = p->posted_h;
        p->posted_h = op->next;
        complete(ep, op, TUTTI_ERR_PEER);
    }
    p->posted_t = NULL;
    while (p->unexp_h != NULL) {
        ucx_unexp_t *u = p->unexp_h;
        p->unexp_h = u->next;
        if (u->desc != NULL)
            ucp_am_data_release(ep->worker, u->desc);
        else
            ep->unexp_bytes -= u->hdr.len;
        unexp_put(ep, u);
    }
    p->unexp_t = NULL;
}

/* The checks every message passes before its bytes land: its length is
 * its receive's, its checksum (where verified) its bytes'.  0, or -1
 * with the sender failed and @p op completed. */
static int len_ok(ucx_ep_t *ep, ucx_peer_t *p, tutti_tp_op_t *op,
                  const ucx_hdr_t *h)
{
    if (h->len == op->len)
        return 0;
    ucx_fail_peer(ep, p, "rank %d: a message of %llu bytes from rank %d "
                  "under key %llx/%u/%u, whose receive takes %zu; the "
                  "ranks disagree on the collective", ep->rank,
                  (unsigned long long)h->len, p->rank,
                  (unsigned long long)h->instance, h->step, h->tag,
                  op->len);
    complete(ep, op, TUTTI_ERR_PEER);
    return -1;
}

static int sum_ok(ucx_ep_t *ep, ucx_peer_t *p, tutti_tp_op_t *op,
                  const ucx_hdr_t *h, const void *data)
{
    if (!ep->verify)
        return 0;
    uint32_t got = tutti__csum(data, (size_t)h->len);
    if (got == h->sum)
        return 0;
    ucx_fail_peer(ep, p, "rank %d: checksum mismatch in the %llu bytes "
                  "from rank %d under key %llx/%u/%u: sent 0x%08x, "
                  "received 0x%08x", ep->rank, (unsigned long long)h->len,
                  p->rank, (unsigned long long)h->instance, h->step, h->tag,
                  h->sum, got);
    complete(ep, op, TUTTI_ERR_PEER);
    return -1;
}

/* A reducing rendezvous receive lands in a staging buffer (and an eager
 * one whose bytes UCX holds unaligned is copied to one): the endpoint's
 * own, grown to the largest message and kept, where no other receive
 * holds it (one at a time is the common case: a pipeline's pieces), else
 * one of its own for this message. */
static void *stage_get(ucx_ep_t *ep, size_t len)
{
    if (ep->stage_busy)
        return malloc(len > 0 ? len : 1);
    if (ep->stage_cap < len) {
        void *b = malloc(len);
        if (b == NULL)
            return NULL;
        free(ep->stage);
        ep->stage = b;
        ep->stage_cap = len;
    }
    ep->stage_busy = 1;
    return ep->stage;
}

static void stage_put(ucx_ep_t *ep, void *b)
{
    if (b != NULL && b == ep->stage)
        ep->stage_busy = 0;
    else
        free(b);
}

/* Copies or reduces an eager message's bytes into its receive. */
static void deliver(ucx_ep_t *ep, ucx_peer_t *p, tutti_tp_op_t *op,
                    const ucx_hdr_t *h, const void *data)
{
    if (len_ok(ep, p, op, h) != 0 || sum_ok(ep, p, op, h, data) != 0)
        return;
    if (op->len > 0 && op->reduce.fn != NULL) {
        /* UCX's buffer holds the bytes after its own header, at any
         * address: the reduction reads whole elements, aligned. */
        void *aligned = NULL;
        if (((uintptr_t)data & 7) != 0) {
            if ((aligned = stage_get(ep, op->len)) == NULL) {
                ucx_fail_peer(ep, p, "rank %d: no memory to reduce %zu "
                              "bytes from rank %d", ep->rank, op->len,
                              p->rank);
                complete(ep, op, TUTTI_ERR_NO_MEMORY);
                return;
            }
            data = memcpy(aligned, data, op->len);
        }
        op->reduce.fn(op->reduce.dtype, op->reduce.op, op->rbuf,
                      op->reduce.local, data, op->len / elem_size(op));
        stage_put(ep, aligned);
    } else if (op->len > 0) {
        memcpy(op->rbuf, data, op->len);
    }
    complete(ep, op, TUTTI_OK);
}

static void fetched(ucx_req_t *r, ucs_status_t status)
{
    ucx_ep_t *ep = r->ep;
    ucx_peer_t *p = &ep->peers[r->hdr.from];
    tutti_tp_op_t *op = r->op;
    if (op == NULL) { /* disconnecting: the op is no longer ours */
    } else if (status != UCS_OK) {
        ucx_fail_peer(ep, p, "rank %d: fetching %llu bytes from rank %d "
                      "under key %llx/%u/%u failed: %s", ep->rank,
                      (unsigned long long)r->hdr.len, p->rank,
                      (unsigned long long)r->hdr.instance, r->hdr.step,
                      r->hdr.tag, ucs_status_string(status));
        complete(ep, op, TUTTI_ERR_PEER);
    } else {
        const void *data = r->stage != NULL ? r->stage : op->rbuf;
        if (sum_ok(ep, p, op, &r->hdr, data) == 0) {
            if (r->stage != NULL)
                op->reduce.fn(op->reduce.dtype, op->reduce.op, op->rbuf,
                              op->reduce.local, r->stage,
                              op->len / elem_size(op));
            complete(ep, op, TUTTI_OK);
        }
    }
    stage_put(ep, r->stage);
    req_put(ep, r);
}

static void fetch_cb(void *request, ucs_status_t status, size_t length,
                     void *user_data)
{
    (void)length;
    fetched(user_data, status);
    ucp_request_free(request);
}

/* Gets a rendezvous message's bytes into its receive. */
static void fetch(ucx_ep_t *ep, ucx_peer_t *p, tutti_tp_op_t *op,
                  const ucx_hdr_t *h, void *desc)
{
    if (len_ok(ep, p, op, h) != 0) {
        ucp_am_data_release(ep->worker, desc);
        return;
    }
    ucx_req_t *r = req_get(ep);
    void *stage = op->reduce.fn != NULL ? stage_get(ep, op->len) : NULL;
    if (r == NULL || (op->reduce.fn != NULL && stage == NULL)) {
        if (r != NULL)
            req_put(ep, r);
        stage_put(ep, stage);
        ucp_am_data_release(ep->worker, desc);
        ucx_fail_peer(ep, p, "rank %d: no memory to receive %zu bytes "
                      "from rank %d", ep->rank, op->len, p->rank);
        complete(ep, op, TUTTI_ERR_NO_MEMORY);
        return;
    }
    r->op = op;
    r->hdr = *h;
    r->stage = stage;
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.recv_am = fetch_cb,
        .user_data = r};
    void *req = ucp_am_recv_data_nbx(ep->worker, desc,
                                     stage != NULL ? stage : op->rbuf,
                                     op->len, &prm);
    if (req == NULL)
        fetched(r, UCS_OK);
    else if (UCS_PTR_IS_ERR(req))
        fetched(r, UCS_PTR_STATUS(req));
}

static tutti_status_t check_op(ucx_ep_t *ep, tutti_tp_op_t *op, int is_recv)
{
    if (op->peer < 0 || op->peer >= ep->size || !ep->peers[op->peer].serve)
        return ep->core->error(TUTTI_ERR_INVALID_ARG, "ucx", "rank %d: peer "
                               "%d is not a member this transport connects "
                               "(group of %d)", ep->rank, op->peer, ep->size);
    if ((uint64_t)op->len > UCX_MSG_MAX)
        return ep->core->error(TUTTI_ERR_INVALID_ARG, "ucx", "rank %d: a "
                               "message of %zu bytes %s rank %d; expected "
                               "at most 1 TiB", ep->rank, op->len,
                               is_recv ? "from" : "for", op->peer);
    op->is_recv = is_recv;
    op->done = 0;
    op->status = TUTTI_INPROGRESS;
    op->next = NULL;
    return TUTTI_OK;
}

static void sent_cb(void *request, ucs_status_t status, void *user_data)
{
    ucx_req_t *r = user_data;
    ucx_ep_t *ep = r->ep;
    free(r->stage); /* a forged message's bytes (the test hook) */
    if (r->op != NULL) {
        ucx_peer_t *p = &ep->peers[r->op->peer];
        if (status != UCS_OK)
            ucx_fail_peer(ep, p, "rank %d: sending %zu bytes to rank %d "
                          "failed: %s", ep->rank, r->op->len, p->rank,
                          ucs_status_string(status));
        complete(ep, r->op, status == UCS_OK ? TUTTI_OK : TUTTI_ERR_PEER);
    }
    req_put(ep, r);
    ucp_request_free(request);
}

/* Sends @p r's message of @p len bytes at @p bytes to @p p under @p op's
 * key with @p token: UCX's request, NULL if it completed at once, or an
 * error pointer.  Lock held. */
static void *post(ucx_ep_t *ep, ucx_peer_t *p, ucx_req_t *r,
                  const tutti_tp_op_t *op, const void *bytes, uint64_t token)
{
    r->hdr = (ucx_hdr_t){.instance = op->key.instance, .step = op->key.step,
                         .tag = op->key.tag, .len = op->len, .token = token,
                         .from = ep->rank};
    if (ep->verify)
        r->hdr.sum = tutti__csum(bytes, op->len);
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = sent_cb,
        .user_data = r};
    return ucp_am_send_nbx(p->uep, UCX_AM_ID, &r->hdr, sizeof(r->hdr), bytes,
                           op->len, &prm);
}

/* The test hook (tp_ucx.c): before its first message to @p p, a message
 * under the same key and of the same length, of other bytes, posing as
 * this rank with a token not its own.  Lock held. */
static void send_forged(ucx_ep_t *ep, ucx_peer_t *p, const tutti_tp_op_t *op)
{
    ucx_req_t *r = req_get(ep);
    void *bytes = malloc(op->len > 0 ? op->len : 1);
    if (r == NULL || bytes == NULL) {
        if (r != NULL)
            req_put(ep, r);
        free(bytes);
        return;
    }
    memset(bytes, 0xa5, op->len);
    p->forged = 1;
    r->op = NULL;
    r->stage = bytes;
    void *req = post(ep, p, r, op, bytes, ~ep->token);
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        free(bytes);
        req_put(ep, r);
    }
}

static tutti_status_t send_locked(ucx_ep_t *ep, ucx_peer_t *p,
                                  tutti_tp_op_t *op)
{
    ucx_req_t *r = req_get(ep);
    if (r == NULL)
        return ep->core->error(TUTTI_ERR_NO_MEMORY, "ucx", "rank %d: no "
                               "memory for a send to rank %d", ep->rank,
                               op->peer);
    if (ep->forge && !p->forged)
        send_forged(ep, p, op);
    r->op = op;
    void *req = post(ep, p, r, op, op->sbuf, ep->token);
    if (req == NULL) {
        complete(ep, op, TUTTI_OK);
        req_put(ep, r);
    } else if (UCS_PTR_IS_ERR(req)) {
        ucx_fail_peer(ep, p, "rank %d: sending %zu bytes to rank %d "
                      "failed: %s", ep->rank, op->len, p->rank,
                      ucs_status_string(UCS_PTR_STATUS(req)));
        complete(ep, op, TUTTI_ERR_PEER);
        req_put(ep, r);
    }
    return TUTTI_OK;
}

static void recv_locked(ucx_ep_t *ep, ucx_peer_t *p, tutti_tp_op_t *op)
{
    ucx_unexp_t **pp = &p->unexp_h, *prev = NULL;
    while (*pp != NULL && !key_is(op, &(*pp)->hdr)) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    ucx_unexp_t *u = *pp;
    if (u == NULL) {
        if (p->posted_t != NULL)
            p->posted_t->next = op;
        else
            p->posted_h = op;
        p->posted_t = op;
    } else {
        *pp = u->next;
        if (p->unexp_t == u)
            p->unexp_t = prev;
        if (u->desc != NULL) {
            fetch(ep, p, op, &u->hdr, u->desc);
        } else {
            ep->unexp_bytes -= u->hdr.len;
            deliver(ep, p, op, &u->hdr, u->data);
        }
        unexp_put(ep, u);
    }
}

static tutti_status_t submit(tutti_tp_ep_t *tep, tutti_tp_op_t *op,
                             int is_recv)
{
    ucx_ep_t *ep = (ucx_ep_t *)tep;
    tutti_status_t st = check_op(ep, op, is_recv);
    if (st != TUTTI_OK)
        return st;
    ucx_peer_t *p = &ep->peers[op->peer];
    pthread_mutex_lock(&ep->lock);
    if (p->failed)
        complete(ep, op, TUTTI_ERR_PEER);
    else if (is_recv)
        recv_locked(ep, p, op);
    else
        st = send_locked(ep, p, op);
    pthread_mutex_unlock(&ep->lock);
    return st;
}

tutti_status_t ucx_send(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    return submit(tep, op, 0);
}

tutti_status_t ucx_recv(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    return submit(tep, op, 1);
}

/* A stranger's frame: logged, dropped. */
static ucs_status_t stranger(ucx_ep_t *ep, const char *why, long from,
                             void *data, int rndv)
{
    ep->core->log(1, "ucx", "rank %d of group 0x%llx: a message claiming "
                  "rank %ld dropped: %s", ep->rank,
                  (unsigned long long)ep->group_key, from, why);
    if (rndv)
        ucp_am_data_release(ep->worker, data);
    return UCS_OK;
}

ucs_status_t ucx_am_cb(void *arg, const void *header, size_t header_len,
                       void *data, size_t len,
                       const ucp_am_recv_param_t *param)
{
    ucx_ep_t *ep = arg;
    int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    ucx_hdr_t h;
    if (header_len != sizeof(h))
        return stranger(ep, "its header is not a member's", -1, data, rndv);
    memcpy(&h, header, sizeof(h));
    if (h.from < 0 || h.from >= ep->size || !ep->peers[h.from].serve)
        return stranger(ep, "no member of this group by that rank is "
                        "served by ucx", h.from, data, rndv);
    ucx_peer_t *p = &ep->peers[h.from];
    if (h.token != p->token)
        return stranger(ep, "its token is not the one that rank traded "
                        "through the control plane", h.from, data, rndv);
    if (p->failed) {
        if (rndv)
            ucp_am_data_release(ep->worker, data);
        return UCS_OK;
    }
    if (h.len != len || h.len > UCX_MSG_MAX) {
        ucx_fail_peer(ep, p, "rank %d: a message from rank %d says %llu "
                      "bytes and carries %zu", ep->rank, p->rank,
                      (unsigned long long)h.len, len);
        if (rndv)
            ucp_am_data_release(ep->worker, data);
        return UCS_OK;
    }
    tutti_tp_op_t **pp = &p->posted_h, *prev = NULL;
    while (*pp != NULL && !key_is(*pp, &h)) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    tutti_tp_op_t *op = *pp;
    if (op != NULL) {
        *pp = op->next;
        if (p->posted_t == op)
            p->posted_t = prev;
        if (rndv)
            fetch(ep, p, op, &h, data);
        else
            deliver(ep, p, op, &h, data);
        return UCS_OK;
    }
    size_t keep = rndv ? 0 : len;
    if (ep->unexp_bytes + keep > ep->set.unexpected) {
        ucx_fail_peer(ep, p, "rank %d: rank %d sent %zu bytes ahead of "
                      "their receive, over the %llu held aside at most "
                      "(ucx.unexpected)", ep->rank, p->rank, len,
                      (unsigned long long)ep->set.unexpected);
        if (rndv)
            ucp_am_data_release(ep->worker, data);
        return UCS_OK;
    }
    ucx_unexp_t *u = unexp_get(ep, keep);
    if (u == NULL) {
        ucx_fail_peer(ep, p, "rank %d: no memory to hold %zu bytes from "
                      "rank %d", ep->rank, len, p->rank);
        if (rndv)
            ucp_am_data_release(ep->worker, data);
        return UCS_OK;
    }
    u->next = NULL;
    u->hdr = h;
    u->desc = rndv ? data : NULL;
    if (!rndv) {
        memcpy(u->data, data, len);
        ep->unexp_bytes += len;
    }
    if (p->unexp_t != NULL)
        p->unexp_t->next = u;
    else
        p->unexp_h = u;
    p->unexp_t = u;
    return rndv ? UCS_INPROGRESS : UCS_OK;
}

/* Lock held.  Reports an endpoint's failure once, as the others do. */
static int progress_locked(ucx_ep_t *ep)
{
    for (int i = 0; i < PROGRESS_PASSES; i++)
        if (ucp_worker_progress(ep->worker) == 0)
            break;
    int n = (int)(ep->completed - ep->reported);
    ep->reported = ep->completed;
    if (ep->err_st != TUTTI_OK) {
        ep->core->error(ep->err_st, "ucx", "%s", ep->err_text);
        ep->err_st = TUTTI_OK;
    }
    return n;
}

int ucx_progress(tutti_tp_ep_t *tep)
{
    ucx_ep_t *ep = (ucx_ep_t *)tep;
    if (pthread_mutex_trylock(&ep->lock) != 0)
        return 0;
    int n = progress_locked(ep);
    pthread_mutex_unlock(&ep->lock);
    return n;
}

int ucx_sleep(tutti_tp_ep_t *tep, double seconds)
{
    ucx_ep_t *ep = (ucx_ep_t *)tep;
    if (!ep->sleep)
        return -1;
    pthread_mutex_lock(&ep->lock);
    int n = progress_locked(ep);
    ucs_status_t st = n > 0 ? UCS_OK : ucp_worker_arm(ep->worker);
    pthread_mutex_unlock(&ep->lock);
    if (n > 0)
        return n;
    if (st == UCS_ERR_BUSY)
        return 1; /* events wait: progress again before sleeping */
    if (st != UCS_OK)
        return -1;
    struct pollfd pfd = {.fd = ep->efd, .events = POLLIN};
    int ms = seconds <= 0 ? 0 : seconds > 1e6 ? 1000000000 :
             (int)(seconds * 1e3) + 1;
    if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
        return -1;
    return 0;
}

void ucx_data_detach(ucx_ep_t *ep)
{
    for (struct ucx_chunk *c = ep->chunks; c != NULL; c = c->next)
        for (int i = 0; i < REQ_CHUNK; i++)
            c->reqs[i].op = NULL;
}

void ucx_data_free(ucx_ep_t *ep)
{
    for (int r = 0; ep->peers != NULL && r < ep->size; r++) {
        ucx_peer_t *p = &ep->peers[r];
        p->posted_h = p->posted_t = NULL;
        while (p->unexp_h != NULL) {
            ucx_unexp_t *u = p->unexp_h;
            p->unexp_h = u->next;
            if (u->desc != NULL && ep->worker != NULL)
                ucp_am_data_release(ep->worker, u->desc);
            free(u);
        }
        p->unexp_t = NULL;
    }
    for (unsigned c = 0; c < UNEXP_CLASSES; c++) {
        while (ep->free_unexp[c] != NULL) {
            ucx_unexp_t *u = ep->free_unexp[c];
            ep->free_unexp[c] = u->next;
            free(u);
        }
        ep->kept_unexp[c] = 0;
    }
    /* What is left in flight was never called back: its staging too. */
    while (ep->chunks != NULL) {
        struct ucx_chunk *c = ep->chunks;
        ep->chunks = c->next;
        for (int i = 0; i < REQ_CHUNK; i++)
            if (c->reqs[i].stage != ep->stage)
                free(c->reqs[i].stage);
        free(c);
    }
    free(ep->stage);
    ep->stage = NULL;
    ep->free_reqs = NULL;
}
