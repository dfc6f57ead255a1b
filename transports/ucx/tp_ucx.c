/*
 * ucx transport module: members on any hosts, over UCX's UCP (InfiniBand,
 * RoCE, shared memory, tcp: whatever UCX finds and UCX_TLS allows).
 *
 * Each endpoint (one member of one group) has a UCP worker of its own, in
 * a UCP context the process shares among endpoints of the same settings;
 * a UCP endpoint per served peer, created from the peer's worker address.
 * UCX cannot find peers by itself: the addresses travel over the job's
 * control plane (core->exchange, ABI 2.6), each with the member's process
 * id and a random token its messages carry (ucx_data.c).  So ucx does not
 * serve the control plane's own connections (reachable() says no where
 * the group has no plane); the core gives those to the next transport of
 * the list, tcp in the end.  It declines groups whose `verify` is mac
 * too: UCX's bytes cross the network untagged, and the core's choice
 * then falls to tcp, which tags them.
 *
 * Settings: the rows below (section `ucx:`), each passed to UCX as its
 * own variable where set (ucx.tls as UCX_TLS, ucx.devices as
 * UCX_NET_DEVICES, ucx.rndv_thresh as UCX_RNDV_THRESH); where a row is
 * empty, UCX reads its UCX_* variable from the environment as usual.
 *
 * Waits: progress() drives ucp_worker_progress(); where the group's
 * waits sleep (an oversubscribed host) the worker takes UCX's wakeup
 * feature and sleep() arms it and polls its event fd.
 *
 * Faults: every UCP endpoint has UCX's peer error handling; an endpoint
 * UCX reports failed (a peer's process gone, its host unreachable, a
 * timeout of UCX's keepalive) fails that peer's operations with
 * TUTTI_ERR_PEER and a line naming it.  peer_alive() says 0 for such a
 * peer, or for one on this host whose process id is gone.
 *
 * Test hook, not for production: TUTTI_UCX_TEST_STRANGER=R makes rank R of
 * every group send each peer, just before its first message to it, one
 * under the same key and length, of other bytes, with a token not its
 * own: a stranger posing as rank R, which the peer must drop.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <ucs/debug/log_def.h>

#include "ucx_int.h"

#define ADDR_MAGIC 0x58435554u /* "TUCX" */
#define ADDR_VERSION 1
#define ADDR_FAILED 0x4c494146u /* "FAIL": a member UCX would not start for */

/* What a member trades through the control plane. */
typedef struct {
    uint32_t magic, version;
    int32_t pid;
    uint32_t addr_len;
    uint64_t token;
    unsigned char addr[]; /* the worker's address, addr_len bytes */
} ucx_blob_t;

#define ADDR_MAX (TUTTI_TP_EXCHANGE_MAX - sizeof(ucx_blob_t))

/* ---- contexts, one per settings in a process ----------------------------- */

struct ucx_ctx {
    struct ucx_ctx *next;
    ucp_context_h h;
    int wakeup;
    char key[300];
};

static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static ucx_ctx_t *ctx_list;

static tutti_status_t modify(const tutti_tp_core_ops_t *core,
                             ucp_config_t *cfg, const char *row,
                             const char *var, const char *value)
{
    if (value[0] == '\0')
        return TUTTI_OK;
    ucs_status_t st = ucp_config_modify(cfg, var, value);
    if (st == UCS_OK)
        return TUTTI_OK;
    return core->error(TUTTI_ERR_CONFIG, "ucx", "ucx.%s: '%s': UCX refuses "
                       "it as UCX_%s (%s)", row, value, var,
                       ucs_status_string(st));
}

/* A UCP context for @p set, shared with the endpoints of the same, and
 * kept once made: the next group of the process takes it again rather
 * than starting UCX anew (ucp_init reads UCX's configuration and opens
 * every device it finds).  The module is never unloaded (-z nodelete);
 * the process's end releases the contexts. */
static tutti_status_t ctx_get(const tutti_tp_core_ops_t *core,
                              const ucx_settings_t *set, int wakeup,
                              ucx_ctx_t **out)
{
    char key[300];
    snprintf(key, sizeof(key), "%s|%s|%s|%d", set->tls, set->devices,
             set->rndv_thresh, wakeup);
    pthread_mutex_lock(&ctx_mu);
    for (ucx_ctx_t *c = ctx_list; c != NULL; c = c->next) {
        if (strcmp(c->key, key) == 0) {
            pthread_mutex_unlock(&ctx_mu);
            *out = c;
            return TUTTI_OK;
        }
    }
    ucp_config_t *cfg = NULL;
    tutti_status_t st = TUTTI_OK;
    ucx_ctx_t *c = calloc(1, sizeof(*c));
    ucs_status_t us = c == NULL ? UCS_ERR_NO_MEMORY
                                : ucp_config_read(NULL, NULL, &cfg);
    if (us != UCS_OK)
        st = core->error(TUTTI_ERR_MODULE, "ucx", "UCX cannot read its "
                         "configuration (UCX_* variables): %s",
                         ucs_status_string(us));
    if (st == TUTTI_OK)
        st = modify(core, cfg, "tls", "TLS", set->tls);
    if (st == TUTTI_OK)
        st = modify(core, cfg, "devices", "NET_DEVICES", set->devices);
    if (st == TUTTI_OK)
        st = modify(core, cfg, "rndv_thresh", "RNDV_THRESH",
                    set->rndv_thresh);
    if (st == TUTTI_OK) {
        ucp_params_t prm = {
            .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
            .features = UCP_FEATURE_AM | (wakeup ? UCP_FEATURE_WAKEUP : 0),
            .name = "tutti"};
        us = ucp_init(&prm, cfg, &c->h);
        if (us != UCS_OK)
            st = core->error(TUTTI_ERR_MODULE, "ucx", "UCX cannot start "
                             "(ucp_init: %s); UCX_TLS and UCX_NET_DEVICES "
                             "(or ucx.tls, ucx.devices) may name nothing "
                             "this host has", ucs_status_string(us));
    }
    if (cfg != NULL)
        ucp_config_release(cfg);
    if (st != TUTTI_OK) {
        free(c);
        pthread_mutex_unlock(&ctx_mu);
        return st;
    }
    c->wakeup = wakeup;
    snprintf(c->key, sizeof(c->key), "%s", key);
    c->next = ctx_list;
    ctx_list = c;
    pthread_mutex_unlock(&ctx_mu);
    *out = c;
    return TUTTI_OK;
}

/* ---- peers ---------------------------------------------------------------- */

static void ep_err_cb(void *arg, ucp_ep_h uep, ucs_status_t status)
{
    ucx_peer_t *p = arg;
    ucx_ep_t *ep = p->ep;
    (void)uep;
    ucx_fail_peer(ep, p, "rank %d: UCX reports the connection with rank "
                  "%d failed: %s (its process may have ended, or its host "
                  "become unreachable)", ep->rank, p->rank,
                  ucs_status_string(status));
}

static const char *ucx_peer_error(tutti_tp_ep_t *tep, int peer)
{
    ucx_ep_t *ep = (ucx_ep_t *)tep;
    if (peer < 0 || peer >= ep->size || !ep->peers[peer].serve ||
        ep->peers[peer].fail_text[0] == '\0')
        return NULL;
    return ep->peers[peer].fail_text;
}

static int ucx_peer_alive(tutti_tp_ep_t *tep, int peer)
{
    ucx_ep_t *ep = (ucx_ep_t *)tep;
    if (peer < 0 || peer >= ep->size || !ep->peers[peer].serve)
        return -1;
    ucx_peer_t *p = &ep->peers[peer];
    if (__atomic_load_n(&p->failed, __ATOMIC_RELAXED))
        return 0;
    if (p->same_host && p->pid > 0)
        return kill(p->pid, 0) == 0 || errno != ESRCH;
    return -1;
}

/* Only groups with a control plane (not the plane's own), whose bytes
 * need no tag. */
static int ucx_reachable(const tutti_tp_group_t *g, int peer)
{
    (void)peer;
    if (g->size < offsetof(tutti_tp_group_t, plane) + sizeof(g->plane) ||
        g->plane == NULL ||
        g->core->size < offsetof(tutti_tp_core_ops_t, exchange) +
                            sizeof(g->core->exchange))
        return 0;
    return g->verify != TUTTI_TP_VERIFY_MAC;
}

/* ---- connect and disconnect ------------------------------------------------ */

#define CLOSE_SECONDS 2.0

static void ucx_disconnect(tutti_tp_ep_t *tep)
{
    ucx_ep_t *ep = (ucx_ep_t *)tep;
    if (ep == NULL)
        return;
    pthread_mutex_lock(&ep->lock);
    ucx_data_detach(ep);
    if (ep->worker != NULL && ep->peers != NULL) {
        void **reqs = calloc((size_t)ep->size, sizeof(void *));
        for (int r = 0; r < ep->size; r++) {
            ucx_peer_t *p = &ep->peers[r];
            if (p->uep == NULL)
                continue;
            ucp_request_param_t prm = {
                .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                .flags = p->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0};
            void *req = ucp_ep_close_nbx(p->uep, &prm);
            p->uep = NULL;
            if (req != NULL && !UCS_PTR_IS_ERR(req) && reqs != NULL)
                reqs[r] = req;
        }
        /* A flushing close waits for the peer to take what was sent;
         * one that does not answer is given up. */
        double until = ep->core->now() + CLOSE_SECONDS;
        for (int open = 1; open && reqs != NULL;) {
            ucp_worker_progress(ep->worker);
            open = 0;
            for (int r = 0; r < ep->size; r++) {
                if (reqs[r] == NULL)
                    continue;
                if (ucp_request_check_status(reqs[r]) != UCS_INPROGRESS) {
                    ucp_request_free(reqs[r]);
                    reqs[r] = NULL;
                } else if (ep->core->now() > until) {
                    ucp_request_cancel(ep->worker, reqs[r]);
                    ucp_request_free(reqs[r]);
                    reqs[r] = NULL;
                } else {
                    open = 1;
                }
            }
        }
        free(reqs);
    }
    ucx_data_free(ep);
    if (ep->worker != NULL)
        ucp_worker_destroy(ep->worker);
    pthread_mutex_unlock(&ep->lock);
    pthread_mutex_destroy(&ep->lock);
    free(ep->peers);
    free(ep);
}

/* This member's blob: its worker's address, process id and token. */
static tutti_status_t own_blob(ucx_ep_t *ep, ucx_blob_t **out, size_t *len)
{
    ucp_address_t *addr;
    size_t alen;
    ucs_status_t us = ucp_worker_get_address(ep->worker, &addr, &alen);
    if (us != UCS_OK)
        return ep->core->error(TUTTI_ERR_MODULE, "ucx", "rank %d: UCX "
                               "gives no worker address: %s", ep->rank,
                               ucs_status_string(us));
    if (alen > ADDR_MAX) {
        ucp_worker_release_address(ep->worker, addr);
        return ep->core->error(TUTTI_ERR_MODULE, "ucx", "rank %d: UCX's "
                               "worker address takes %zu bytes, at most "
                               "%zu travel; narrow UCX_TLS or UCX_NET_"
                               "DEVICES (ucx.tls, ucx.devices)", ep->rank,
                               alen, (size_t)ADDR_MAX);
    }
    ucx_blob_t *b = calloc(1, sizeof(*b) + alen);
    if (b == NULL) {
        ucp_worker_release_address(ep->worker, addr);
        return ep->core->error(TUTTI_ERR_NO_MEMORY, "ucx", "no memory");
    }
    *b = (ucx_blob_t){ADDR_MAGIC, ADDR_VERSION, (int32_t)getpid(),
                      (uint32_t)alen, ep->token};
    memcpy(b->addr, addr, alen);
    ucp_worker_release_address(ep->worker, addr);
    *out = b;
    *len = sizeof(*b) + alen;
    return TUTTI_OK;
}

/* While an endpoint with peer error handling is tried: UCX's line that no
 * path has it (its shared memory in 1.13; select.c) is not an error
 * here, and a real failure is reported by the second try. */
static ucs_log_func_rc_t quiet_trial(const char *file, unsigned line,
                                     const char *function,
                                     ucs_log_level_t level,
                                     const ucs_log_component_config_t *comp,
                                     const char *message, va_list ap)
{
    (void)line;
    (void)function;
    (void)comp;
    (void)message;
    (void)ap;
    return level <= UCS_LOG_LEVEL_ERROR && strstr(file, "select.c") != NULL
               ? UCS_LOG_FUNC_RC_STOP
               : UCS_LOG_FUNC_RC_CONTINUE;
}

/* A UCP endpoint to @p p at @p addr: with peer error handling where UCX
 * has it on some path between the two (tcp, RDMA), else without (its
 * shared memory): a peer gone is then seen by its process id, through
 * peer_alive(), on this host, which is where shared memory reaches. */
static ucs_status_t open_peer(ucx_ep_t *ep, ucx_peer_t *p,
                              const ucp_address_t *addr)
{
    ucp_ep_params_t prm = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = addr,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = ep_err_cb, .arg = p}};
    /* Tried for every peer: whether some path has it depends on the
     * peer (another host: tcp or RDMA; this host under UCX_TLS=sm: none),
     * so one peer's answer says nothing of the next. */
    ucs_log_push_handler(quiet_trial);
    ucs_status_t us = ucp_ep_create(ep->worker, &prm, &p->uep);
    ucs_log_pop_handler();
    if (us != UCS_ERR_UNREACHABLE)
        return us;
    prm.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    us = ucp_ep_create(ep->worker, &prm, &p->uep);
    if (us == UCS_OK && !p->same_host)
        ep->core->log(2, "ucx", "rank %d: the UCX path to rank %d on "
                      "another host has no peer error handling; its end "
                      "is seen only by the group's timeout", ep->rank,
                      p->rank);
    else if (us == UCS_OK)
        ep->core->log(4, "ucx", "rank %d: UCX's path to rank %d has no "
                      "peer error handling (shared memory); a peer gone "
                      "is seen by its process id", ep->rank, p->rank);
    return us;
}

/* UCP endpoints to the served peers from their blobs. */
static tutti_status_t open_peers(ucx_ep_t *ep, const tutti_tp_group_t *g,
                                 const unsigned char *blobs,
                                 const size_t *lens)
{
    for (int r = 0; r < ep->size; r++) {
        ucx_peer_t *p = &ep->peers[r];
        if (!p->serve)
            continue;
        const ucx_blob_t *b =
            (const ucx_blob_t *)(blobs + (size_t)r * TUTTI_TP_EXCHANGE_MAX);
        if (lens[r] == sizeof(uint32_t) && b->magic == ADDR_FAILED)
            return ep->core->error(TUTTI_ERR_PEER, "ucx", "rank %d: rank "
                                   "%d could not start UCX (its own error "
                                   "says why)", ep->rank, r);
        if (lens[r] < sizeof(*b) || b->magic != ADDR_MAGIC ||
            b->version != ADDR_VERSION ||
            b->addr_len != lens[r] - sizeof(*b))
            return ep->core->error(TUTTI_ERR_PEER, "ucx", "rank %d: the "
                                   "address rank %d traded is not a ucx "
                                   "module's of this version (%zu bytes)",
                                   ep->rank, r, lens[r]);
        p->token = b->token;
        p->pid = b->pid;
        p->same_host = g->rank_host == NULL ||
                       g->rank_host[r] == g->rank_host[g->rank];
        ucs_status_t us = open_peer(ep, p, (const ucp_address_t *)b->addr);
        if (us != UCS_OK)
            return ep->core->error(TUTTI_ERR_PEER, "ucx", "rank %d: no UCX "
                                   "endpoint to rank %d: %s (UCX_TLS may "
                                   "leave no way between them)", ep->rank,
                                   r, ucs_status_string(us));
    }
    return TUTTI_OK;
}

static tutti_status_t start_worker(ucx_ep_t *ep)
{
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    ucs_status_t us = ucp_worker_create(ep->ctx->h, &wp, &ep->worker);
    if (us != UCS_OK)
        return ep->core->error(TUTTI_ERR_MODULE, "ucx", "rank %d: no UCX "
                               "worker: %s", ep->rank, ucs_status_string(us));
    ucp_am_handler_param_t ap = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                      UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = UCX_AM_ID,
        .flags = UCP_AM_FLAG_WHOLE_MSG,
        .cb = ucx_am_cb,
        .arg = ep};
    us = ucp_worker_set_am_recv_handler(ep->worker, &ap);
    if (us != UCS_OK)
        return ep->core->error(TUTTI_ERR_MODULE, "ucx", "rank %d: UCX "
                               "takes no message handler: %s", ep->rank,
                               ucs_status_string(us));
    if (ep->ctx->wakeup) {
        us = ucp_worker_get_efd(ep->worker, &ep->efd);
        ep->sleep = us == UCS_OK;
        if (us != UCS_OK)
            ep->core->log(3, "ucx", "rank %d: no event fd (%s); waits "
                          "yield the processor", ep->rank,
                          ucs_status_string(us));
    }
    return TUTTI_OK;
}

static tutti_status_t ucx_connect(const tutti_tp_group_t *g,
                                  tutti_tp_ep_t **ep_out)
{
    const tutti_tp_core_ops_t *core = g->core;
    if (!ucx_reachable(g, 0))
        return core->error(TUTTI_ERR_MODULE, "ucx", "rank %d of group "
                           "0x%llx: ucx needs the job's control plane "
                           "(transport ABI 2.6) to trade addresses, and "
                           "does not carry verify: mac", g->rank,
                           (unsigned long long)g->group_key);
    if (g->settings == NULL)
        return core->error(TUTTI_ERR_MODULE, "ucx", "the core handed no "
                           "settings; this module needs a core of "
                           "transport ABI 2.6 or later");
    ucx_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "ucx", "no memory");
    ep->core = core;
    ep->rank = g->rank;
    ep->size = g->group_size;
    ep->group_key = g->group_key;
    ep->efd = -1;
    ep->set = *(const ucx_settings_t *)g->settings;
    ep->verify = g->verify == TUTTI_TP_VERIFY_CHECKSUM;
    const char *hook = getenv("TUTTI_UCX_TEST_STRANGER");
    ep->forge = hook != NULL && *hook != '\0' && atoi(hook) == g->rank;
    pthread_mutex_init(&ep->lock, NULL);
    unsigned char *blobs = NULL;
    size_t *lens = NULL, blen = 0;
    ucx_blob_t *mine = NULL;
    tutti_status_t st = TUTTI_ERR_NO_MEMORY;
    int peers = 0;
    ep->peers = calloc((size_t)g->group_size, sizeof(ucx_peer_t));
    blobs = malloc((size_t)g->group_size * TUTTI_TP_EXCHANGE_MAX);
    lens = calloc((size_t)g->group_size, sizeof(size_t));
    if (ep->peers == NULL || blobs == NULL || lens == NULL) {
        core->error(st, "ucx", "no memory for a group of %d", g->group_size);
        goto err;
    }
    for (int r = 0; r < g->group_size; r++) {
        ucx_peer_t *p = &ep->peers[r];
        p->ep = ep;
        p->rank = r;
        p->serve = r != g->rank && (g->serve == NULL || g->serve[r]);
        peers += p->serve;
    }
    if (getrandom(&ep->token, sizeof(ep->token), 0) !=
        (ssize_t)sizeof(ep->token)) {
        st = core->error(TUTTI_ERR_INTERNAL, "ucx", "no randomness for a "
                         "token: %s", strerror(errno));
        goto err;
    }
    /* A member that cannot start UCX or open its endpoints still takes
     * part in both exchanges, saying it failed: its peers then fail at
     * once, naming it, rather than waiting for the group's timeout.  Only
     * a failed exchange (a peer gone, the time up) ends it early. */
    st = ctx_get(core, &ep->set, g->sleep, &ep->ctx);
    if (st == TUTTI_OK)
        st = start_worker(ep);
    if (st == TUTTI_OK)
        st = own_blob(ep, &mine, &blen);
    static const uint32_t failed = ADDR_FAILED;
    tutti_status_t xst = st == TUTTI_OK
        ? core->exchange(g, "ucx", mine, blen, blobs, TUTTI_TP_EXCHANGE_MAX,
                         lens)
        : core->exchange(g, "ucx", &failed, sizeof(failed), blobs,
                         TUTTI_TP_EXCHANGE_MAX, lens);
    if (xst != TUTTI_OK) {
        st = st != TUTTI_OK ? st : xst;
        goto err;
    }
    if (st == TUTTI_OK)
        st = open_peers(ep, g, blobs, lens);
    /* Every member's endpoints exist before anyone goes on: a member
     * that left its group at once would otherwise take its worker (and
     * its shared memory, which UCX attaches as the endpoint is made)
     * from under a peer still connecting. */
    unsigned char ready = st == TUTTI_OK ? 'R' : 'F';
    xst = core->exchange(g, "ucx-up", &ready, 1, blobs,
                         TUTTI_TP_EXCHANGE_MAX, lens);
    if (st == TUTTI_OK)
        st = xst;
    for (int r = 0; st == TUTTI_OK && r < g->group_size; r++)
        if (ep->peers[r].serve && lens[r] == 1 &&
            blobs[(size_t)r * TUTTI_TP_EXCHANGE_MAX] == 'F')
            st = core->error(TUTTI_ERR_PEER, "ucx", "rank %d: rank %d "
                             "could not open its UCX endpoints (its own "
                             "error says why)", g->rank, r);
    if (st != TUTTI_OK)
        goto err;
    core->log(3, "ucx", "rank %d of group 0x%llx: joined with %d peer(s) "
              "over UCX %s (address of %zu bytes)", g->rank,
              (unsigned long long)g->group_key, peers,
              ucp_get_version_string(), blen - sizeof(*mine));
    free(mine);
    free(blobs);
    free(lens);
    *ep_out = (tutti_tp_ep_t *)ep;
    return TUTTI_OK;

err:
    free(mine);
    free(blobs);
    free(lens);
    ucx_disconnect((tutti_tp_ep_t *)ep);
    return st;
}

/* ---- what UCX finds here, for tutti-info ------------------------------------ */

/* "tcp/lo, posix/memory, ..." from UCP's description of @p h. */
static void resources(ucp_context_h h, char *out, size_t len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    out[0] = '\0';
    if (f == NULL)
        return;
    ucp_context_print_info(h, f);
    fclose(f);
    size_t at = 0;
    for (char *line = strtok(text, "\n"); line != NULL;
         line = strtok(NULL, "\n")) {
        if (strstr(line, "resource") == NULL)
            continue;
        const char *last = strrchr(line, ' ');
        if (last == NULL || at + strlen(last) + 3 >= len)
            continue;
        at += (size_t)snprintf(out + at, len - at, "%s%s", at ? ", " : "",
                               last + 1);
    }
    free(text);
}

static int ucx_describe(char *buf, size_t len)
{
    ucp_config_t *cfg;
    ucp_context_h h;
    ucp_params_t prm = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                        .features = UCP_FEATURE_AM};
    if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK) {
        snprintf(buf, len, "UCX %s: cannot read its configuration",
                 ucp_get_version_string());
        return -1;
    }
    ucs_status_t us = ucp_init(&prm, cfg, &h);
    ucp_config_release(cfg);
    if (us != UCS_OK) {
        snprintf(buf, len, "UCX %s: cannot start (%s)",
                 ucp_get_version_string(), ucs_status_string(us));
        return -1;
    }
    char res[1024];
    resources(h, res, sizeof(res));
    ucp_cleanup(h);
    const char *tls = getenv("UCX_TLS");
    const char *devs = getenv("UCX_NET_DEVICES");
    snprintf(buf, len, "UCX %s (UCX_TLS=%s, UCX_NET_DEVICES=%s)\n"
             "transports/devices: %s", ucp_get_version_string(),
             tls ? tls : "all", devs ? devs : "all",
             res[0] ? res : "none found");
    return 0;
}

static const tutti_tp_ops_t ucx_ops = {
    .size = sizeof(tutti_tp_ops_t), .name = "ucx", .connect = ucx_connect,
    .send = ucx_send, .recv = ucx_recv, .progress = ucx_progress,
    .disconnect = ucx_disconnect, .peer_alive = ucx_peer_alive,
    .reachable = ucx_reachable, .peer_error = ucx_peer_error,
    .sleep = ucx_sleep, .describe = ucx_describe};

/* UCX's lists of names: letters, digits and , : _ - . ^ (its "^" excludes). */
static int names_ok(const char *s)
{
    for (; *s != '\0'; s++)
        if (!(isalnum((unsigned char)*s) || strchr(",:_-.^", *s) != NULL))
            return 0;
    return 1;
}

static int thresh_ok(const char *s)
{
    if (s[0] == '\0' || strcmp(s, "auto") == 0 || strcmp(s, "inf") == 0)
        return 1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    (void)v;
    if (end == s || errno != 0)
        return 0;
    return end[0] == '\0' ||
           (strchr("KkMmGg", end[0]) != NULL &&
            (end[1] == '\0' || ((end[1] == 'b' || end[1] == 'B') &&
                                end[2] == '\0')));
}

static const tutti_setting_t ucx_settings[] = {
    {.name = "tls",
     .env = "TUTTI_UCX_TLS",
     .default_value = "",
     .doc = "UCX transports to use, as UCX_TLS (e.g. rc,sm or tcp); \"\" "
            "for UCX_TLS or UCX's own choice",
     .type = TUTTI_SETTING_STRING,
     .offset = offsetof(ucx_settings_t, tls),
     .max = sizeof(((ucx_settings_t *)0)->tls),
     .check = names_ok,
     .expected = "a UCX_TLS list: names of letters, digits and _ - . "
                 "separated by commas, ^ first to exclude, e.g. rc,sm"},
    {.name = "devices",
     .env = "TUTTI_UCX_DEVICES",
     .default_value = "",
     .doc = "network devices, as UCX_NET_DEVICES (e.g. mlx5_0:1); \"\" "
            "for UCX_NET_DEVICES or all",
     .type = TUTTI_SETTING_STRING,
     .offset = offsetof(ucx_settings_t, devices),
     .max = sizeof(((ucx_settings_t *)0)->devices),
     .check = names_ok,
     .expected = "a UCX_NET_DEVICES list: device[:port] names separated "
                 "by commas, e.g. mlx5_0:1,eth0"},
    {.name = "rndv_thresh",
     .env = "TUTTI_UCX_RNDV_THRESH",
     .default_value = "",
     .doc = "message size from which UCX moves by rendezvous (zero copy), "
            "as UCX_RNDV_THRESH; \"\" for UCX_RNDV_THRESH or auto",
     .type = TUTTI_SETTING_STRING,
     .offset = offsetof(ucx_settings_t, rndv_thresh),
     .max = sizeof(((ucx_settings_t *)0)->rndv_thresh),
     .check = thresh_ok,
     .expected = "auto, inf, or a size such as 8192 or 64K"},
    {.name = "unexpected",
     .env = "TUTTI_UCX_UNEXPECTED",
     .default_value = "2G",
     .doc = "bytes of messages that came before their receives an "
            "endpoint holds aside, at most; a peer sending more fails",
     .type = TUTTI_SETTING_SIZE,
     .offset = offsetof(ucx_settings_t, unexpected),
     .min = 64 << 10,
     .max = UCX_MSG_MAX},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("ucx", "0.1.0", ucx_ops, ucx_settings,
                                ucx_settings_t);
