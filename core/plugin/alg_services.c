/*
 * The services algorithm modules get (tutti_core_ops_t, module.h): post and
 * complete transfers through the group's transport, reduce, read a rule's
 * parameters, record errors and log.  An execution's core_private is the
 * executor's tutti__exec_link_t (services.h), so this file knows nothing of
 * groups or requests.
 */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "base/log.h"
#include "base/reduce.h"
#include "base/size.h"
#include "config/config.h"
#include "plugin/services.h"

/* flags took what was padding: a transport module built before it sees
 * every other field where it was. */
_Static_assert(sizeof(void *) != 8 ||
                   offsetof(tutti_tp_op_t, sbuf) == 40,
               "tutti_tp_op_t's layout");
_Static_assert(sizeof(tutti_tp_op_t) <= sizeof(tutti_xfer_t),
               "tutti_xfer_t must hold a transport op");

/* The transport op in @p xfer for @p len bytes with @p peer under @p tag. */
static tutti_status_t core_xfer(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                                size_t len, tutti_xfer_t *xfer,
                                tutti_tp_op_t **op_out)
{
    const tutti__exec_link_t *link = exec->core_private;
    const tutti__peer_link_t *g = link->peers;
    tutti_tp_op_t *op = (tutti_tp_op_t *)xfer;

    if (g->ep == NULL || peer < 0 || peer >= g->size || peer == g->rank)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec",
                            "%s: rank %d cannot transfer to peer %d in a "
                            "group of %d", link->algorithm, g->rank, peer,
                            g->size);
    memset(op, 0, sizeof(*op));
    op->key.instance = link->instance_key;
    op->key.step = (uint32_t)exec->step;
    op->key.tag = tag;
    op->peer = peer;
    op->len = len;
    *op_out = op;
    return TUTTI_OK;
}

/* Posts a send of @p len bytes at @p buf with op flags @p flags. */
static tutti_status_t post_send(tutti_alg_exec_t *exec, int peer,
                                uint32_t tag, const void *buf, size_t len,
                                uint32_t flags, tutti_xfer_t *xfer)
{
    const tutti__exec_link_t *link = exec->core_private;
    tutti_tp_op_t *op = NULL;
    tutti_status_t st = core_xfer(exec, peer, tag, len, xfer, &op);
    if (st == TUTTI_OK) {
        op->sbuf = buf;
        op->flags = flags;
        st = link->peers->tp->send(link->peers->ep, op);
    }
    if (st == TUTTI_OK)
        link->pending_to[peer]++;
    return st;
}

static tutti_status_t core_send(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                                const void *buf, size_t len, tutti_xfer_t *xfer)
{
    return post_send(exec, peer, tag, buf, len, 0, xfer);
}

static tutti_status_t core_send_block(tutti_alg_exec_t *exec, int peer,
                                      uint32_t tag, const void *buf,
                                      size_t len, tutti_xfer_t *xfer)
{
    return post_send(exec, peer, tag, buf, len, TUTTI_TP_OP_WHOLE, xfer);
}

static tutti_status_t core_recv(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                                void *buf, size_t len,
                                const tutti_recv_reduce_t *reduce,
                                tutti_xfer_t *xfer)
{
    tutti_tp_op_t *op = NULL;
    tutti_status_t st = core_xfer(exec, peer, tag, len, xfer, &op);
    if (st != TUTTI_OK)
        return st;
    op->rbuf = buf;
    if (reduce != NULL) {
        op->reduce.fn = tutti__reduce;
        op->reduce.dtype = exec->inst->dtype;
        op->reduce.op = exec->inst->op;
        op->reduce.local = reduce->local;
    }
    tutti__exec_link_t *link = exec->core_private;
    const tutti__peer_link_t *g = link->peers;
    st = g->tp->recv(g->ep, op);
    if (st == TUTTI_OK)
        link->pending_from[peer]++;
    return st;
}

/* A transfer failed: a transport that completes operations from its own
 * thread records why on a progress call (perhaps the one of this pass), so
 * make one now; if no detail was recorded on this thread, say at least
 * which transfer failed. */
static tutti_status_t transfer_failed(tutti_alg_exec_t *exec,
                                      const tutti_tp_op_t *op)
{
    const tutti__peer_link_t *g =
        ((const tutti__exec_link_t *)exec->core_private)->peers;
    const char *why = NULL;
    if (g->ep != NULL && g->tp->size >= sizeof(tutti_tp_ops_t) &&
        g->tp->peer_error != NULL)
        why = g->tp->peer_error(g->ep, op->peer);
    if (why != NULL)
        return tutti__error(op->status, "exec", "%s", why);
    if (g->ep != NULL)
        g->tp->progress(g->ep);
    if (tutti_last_error()[0] == '\0')
        tutti__error(op->status, "exec", "group 0x%llx rank %d: %s rank %d "
                     "(instance 0x%llx step %u tag %u) failed: %s",
                     (unsigned long long)g->key, g->rank,
                     op->is_recv ? "receive from" : "send to", op->peer,
                     (unsigned long long)op->key.instance, op->key.step,
                     op->key.tag, tutti_strerror(op->status));
    return op->status;
}

/* A receive seen complete is counted off once (is_recv 1 -> 2), for the
 * flight recorder's account of who was heard from; a send seen taken too
 * (0 -> 3, once the transport is done with it), for its account of whom
 * a stalled execution's sends wait for. */
static tutti_status_t core_test(tutti_alg_exec_t *exec, tutti_xfer_t *xfer)
{
    tutti_tp_op_t *op = (tutti_tp_op_t *)xfer;
    /* A transport that completes operations from its own thread stores
     * the status last, with release: this acquire makes what it wrote
     * before (the bytes received) visible, and the op ours again. */
    tutti_status_t status = __atomic_load_n(&op->status, __ATOMIC_ACQUIRE);
    if (status == TUTTI_OK && op->is_recv == 0) {
        tutti__exec_link_t *link = exec->core_private;
        op->is_recv = 3;
        link->pending_to[op->peer]--;
    }
    if (status != TUTTI_INPROGRESS && op->is_recv == 1) {
        tutti__exec_link_t *link = exec->core_private;
        op->is_recv = 2;
        link->pending_from[op->peer]--;
        if (op->peer < 64)
            link->heard_from |= 1ULL << op->peer;
    }
    if (status < 0)
        return transfer_failed(exec, op);
    return status;
}

static tutti_status_t core_param_size(const tutti_alg_instance_t *inst,
                                      const char *name, uint64_t dflt,
                                      uint64_t *value_out)
{
    const tutti__rule_t *rule = inst->rule_params;
    *value_out = dflt;
    /* Values were checked to be sizes, and parsed, with the file. */
    for (size_t i = 0; rule && i < rule->num_params; i++)
        if (strcmp(rule->params[i].key, name) == 0)
            *value_out = rule->params[i].size;
    return TUTTI_OK;
}

static tutti_status_t core_error(tutti_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tutti__verror(status, "module", fmt, ap);
    va_end(ap);
    return status;
}

static void core_log(int level, const char *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tutti__module_vlog(level, module, fmt, ap);
    va_end(ap);
}

const tutti_core_ops_t tutti__core_ops = {
    .size = sizeof(tutti_core_ops_t),
    .send = core_send,
    .send_block = core_send_block,
    .recv = core_recv,
    .test = core_test,
    .reduce = tutti__reduce,
    .param_size = core_param_size,
    .error = core_error,
    .log = core_log,
    .phase = NULL, /* only the timeline records phases (exec/timeline.c) */
};
