/*
 * Per-peer transport choice: the endpoint a group (or the control plane)
 * talks through when its members span processes.
 *
 * Peers in this process go through the built-in local transport; every
 * other peer through the first transport of the configured list
 * (`transports:`, TUTTI_TRANSPORTS) that is loaded and whose reachable()
 * accepts it.  Each chosen transport connects the set of peers it serves;
 * operations are dispatched by peer, and progress visits every transport.
 * A group entirely inside one process skips this and uses the local
 * transport directly.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "transport/local.h"
#include "transport/mux.h"

#define MUX_MAX 8 /* transports one endpoint may use */

typedef struct {
    const tutti_tp_ops_t *ops;
    const void *settings;  /* its module's, for connect */
    tutti_tp_ep_t *ep;
    unsigned char *serve;
} mux_child_t;

typedef struct {
    mux_child_t child[MUX_MAX];
    int nchild;
    int size;
    unsigned char *via;   /* per rank: index of its child */
} mux_ep_t;

/* ---- choosing
 * ----------------------------------------------------------------- */

static void mux_disconnect(tutti_tp_ep_t *tep)
{
    mux_ep_t *m = (mux_ep_t *)tep;
    if (m == NULL)
        return;
    for (int i = 0; i < m->nchild; i++) {
        if (m->child[i].ep != NULL)
            m->child[i].ops->disconnect(m->child[i].ep);
        free(m->child[i].serve);
    }
    free(m->via);
    free(m);
}

/* The child for transport @p ops, added if new. */
static tutti_status_t child_of(mux_ep_t *m, const tutti_tp_ops_t *ops,
                               int *index_out)
{
    for (int i = 0; i < m->nchild; i++) {
        if (m->child[i].ops == ops) {
            *index_out = i;
            return TUTTI_OK;
        }
    }
    if (m->nchild == MUX_MAX)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "transport", "transport "
                            "'%s' would be the %dth of one endpoint; at most "
                            "%d serve one group member", ops->name,
                            MUX_MAX + 1, MUX_MAX);
    m->child[m->nchild].ops = ops;
    m->child[m->nchild].serve = calloc((size_t)m->size, 1);
    if (m->child[m->nchild].serve == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "transport", "out of memory "
                            "for the peers of transport '%s'", ops->name);
    *index_out = m->nchild++;
    return TUTTI_OK;
}

/* Assigns every peer a transport; the error names the first peer none can
 * reach. */
static tutti_status_t assign(const tutti__tp_list_t *list, mux_ep_t *m,
                             const tutti_tp_group_t *g)
{
    /* local first, so every member lists its transports in one order */
    for (int r = 0; r < g->group_size; r++) {
        if (r != g->rank && g->rank_task[r] == g->task) {
            int c = 0;
            tutti_status_t st = child_of(m, &tutti__tp_local_ops, &c);
            if (st != TUTTI_OK)
                return st;
            break;
        }
    }
    for (int r = 0; r < g->group_size; r++) {
        const tutti_tp_ops_t *use = NULL;
        const void *settings = NULL;
        if (r == g->rank)
            continue;
        if (g->rank_task[r] == g->task) {
            use = &tutti__tp_local_ops;
        } else {
            for (int i = 0; i < list->count && use == NULL; i++) {
                const tutti_tp_ops_t *t = list->ops[i];
                tutti_tp_group_t tg = *g;
                tg.settings = list->settings[i];
                if (t->reachable == NULL || t->reachable(&tg, r)) {
                    use = t;
                    settings = list->settings[i];
                }
            }
        }
        if (use == NULL)
            return tutti__error(TUTTI_ERR_CONFIG, "transport", "group 0x%llx "
                                "rank %d: no transport of the list (%s, from "
                                "%s) can reach rank %d (task %d); loaded "
                                "transports are listed by tutti-info",
                                (unsigned long long)g->group_key, g->rank,
                                list->first, list->source,
                                r, g->rank_task[r]);
        int c = 0;
        tutti_status_t st = child_of(m, use, &c);
        if (st != TUTTI_OK)
            return st;
        m->child[c].settings = settings;
        m->child[c].serve[r] = 1;
        m->via[r] = (unsigned char)c;
    }
    return TUTTI_OK;
}

tutti_status_t tutti__tp_mux_connect(const tutti__tp_list_t *list,
                                     const tutti_tp_group_t *g,
                                     const tutti_tp_ops_t **ops_out,
                                     tutti_tp_ep_t **ep_out)
{
    tutti_status_t st = TUTTI_ERR_NO_MEMORY;
    mux_ep_t *m = calloc(1, sizeof(*m));
    char line[512];
    size_t n = 0;

    if (m == NULL)
        return st;
    m->size = g->group_size;
    if ((m->via = calloc((size_t)g->group_size, 1)) == NULL)
        goto err;
    if ((st = assign(list, m, g)) != TUTTI_OK)
        goto err;
    line[0] = '\0';
    for (int i = 0; i < m->nchild; i++) {
        tutti_tp_group_t cg = *g;
        int peers = 0;
        cg.serve = m->child[i].serve;
        cg.settings = m->child[i].settings;
        for (int r = 0; r < g->group_size; r++)
            peers += m->child[i].serve[r];
        if ((st = m->child[i].ops->connect(&cg, &m->child[i].ep)) != TUTTI_OK)
            goto err;
        if (n < sizeof(line))
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s to %d "
                                  "peer(s)", i ? ", " : "",
                                  m->child[i].ops->name, peers);
    }
    tutti__log(TUTTI_LOG_DEBUG, "transport", "group 0x%llx rank %d: %s",
               (unsigned long long)g->group_key, g->rank, line);
    if (m->nchild == 1) {
        /* One transport serves every peer: no dispatch on the data path. */
        *ops_out = m->child[0].ops;
        *ep_out = m->child[0].ep;
        free(m->child[0].serve);
        free(m->via);
        free(m);
        return TUTTI_OK;
    }
    *ops_out = &tutti__tp_mux_ops;
    *ep_out = (tutti_tp_ep_t *)m;
    return TUTTI_OK;

err:
    mux_disconnect((tutti_tp_ep_t *)m);
    return st;
}

/* ---- dispatch
 * ------------------------------------------------------------------ */

static tutti_status_t mux_send(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    mux_ep_t *m = (mux_ep_t *)tep;
    mux_child_t *c = &m->child[m->via[op->peer]];
    return c->ops->send(c->ep, op);
}

static tutti_status_t mux_recv(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    mux_ep_t *m = (mux_ep_t *)tep;
    mux_child_t *c = &m->child[m->via[op->peer]];
    return c->ops->recv(c->ep, op);
}

static int mux_progress(tutti_tp_ep_t *tep)
{
    mux_ep_t *m = (mux_ep_t *)tep;
    int moved = 0;
    for (int i = 0; i < m->nchild; i++) {
        int n = m->child[i].ops->progress(m->child[i].ep);
        if (n < 0)
            return n;
        moved += n;
    }
    return moved;
}

static int mux_peer_alive(tutti_tp_ep_t *tep, int peer)
{
    mux_ep_t *m = (mux_ep_t *)tep;
    if (peer < 0 || peer >= m->size)
        return -1;
    mux_child_t *c = &m->child[m->via[peer]];
    if (c->ops == &tutti__tp_local_ops)
        return 1; /* this process */
    return c->ops->peer_alive ? c->ops->peer_alive(c->ep, peer) : -1;
}

static const char *mux_peer_error(tutti_tp_ep_t *tep, int peer)
{
    mux_ep_t *m = (mux_ep_t *)tep;
    if (peer < 0 || peer >= m->size)
        return NULL;
    mux_child_t *c = &m->child[m->via[peer]];
    if (c->ops->size < sizeof(tutti_tp_ops_t) || c->ops->peer_error == NULL)
        return NULL;
    return c->ops->peer_error(c->ep, peer);
}

static tutti_status_t mux_connect_unused(const tutti_tp_group_t *g,
                                         tutti_tp_ep_t **ep_out)
{
    (void)g;
    (void)ep_out;
    return TUTTI_ERR_INTERNAL; /* tutti__tp_mux_connect() connects */
}

const tutti_tp_ops_t tutti__tp_mux_ops = {
    .size = sizeof(tutti_tp_ops_t), .name = "mux",
    .connect = mux_connect_unused, .send = mux_send, .recv = mux_recv,
    .progress = mux_progress, .disconnect = mux_disconnect,
    .peer_alive = mux_peer_alive, .peer_error = mux_peer_error};
