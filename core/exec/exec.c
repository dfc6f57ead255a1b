/*
 * Executor: groups, instances, executions and their requests.
 *
 * An instance is resolved on its first execution: parameters checked, an
 * implementation selected, its init_params and init_context run.  Later
 * executions reuse all of that; a request comes from the group's free list,
 * so steady-state calls allocate nothing.  Executions of one instance run
 * one after another (they share the implementation's state); executions of
 * different instances progress together.  Progress is driven by whichever
 * thread tests or waits.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/size.h"
#include "context.h"
#include "base/log.h"
#include "base/reduce.h"
#include "job/resolve.h"

_Static_assert(sizeof(tutti_tp_op_t) <= sizeof(tutti_xfer_t),
               "tutti_xfer_t must hold a transport op");

/* ---- services for modules --------------------------------------------------- */

static tutti_status_t core_xfer(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                                tutti_xfer_t *xfer, tutti_tp_op_t **op_out)
{
    tutti_request_t *req = exec->core_private;
    tutti_group_t *g = req->group;
    tutti_tp_op_t *op = (tutti_tp_op_t *)xfer;

    if (g->ep == NULL || peer < 0 || peer >= g->size || peer == g->rank)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec",
                            "%s: rank %d cannot transfer to peer %d in a "
                            "group of %d", req->inst->algorithm, g->rank,
                            peer, g->size);
    memset(op, 0, sizeof(*op));
    op->key.instance = req->inst->params.instance_key;
    op->key.step = (uint32_t)exec->step;
    op->key.tag = tag;
    op->peer = peer;
    *op_out = op;
    return TUTTI_OK;
}

static tutti_status_t core_send(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                                const void *buf, size_t len, tutti_xfer_t *xfer)
{
    tutti_tp_op_t *op = NULL;
    tutti_status_t st = core_xfer(exec, peer, tag, xfer, &op);
    if (st != TUTTI_OK)
        return st;
    op->sbuf = buf;
    op->len = len;
    tutti_group_t *g = ((tutti_request_t *)exec->core_private)->group;
    return g->tp->send(g->ep, op);
}

static tutti_status_t core_recv(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                                void *buf, size_t len,
                                const tutti_recv_reduce_t *reduce,
                                tutti_xfer_t *xfer)
{
    tutti_tp_op_t *op = NULL;
    tutti_status_t st = core_xfer(exec, peer, tag, xfer, &op);
    if (st != TUTTI_OK)
        return st;
    op->rbuf = buf;
    op->len = len;
    if (reduce != NULL) {
        op->reduce.fn = tutti__reduce;
        op->reduce.dtype = exec->inst->dtype;
        op->reduce.op = exec->inst->op;
        op->reduce.local = reduce->local;
    }
    tutti_request_t *req = exec->core_private;
    tutti_group_t *g = req->group;
    st = g->tp->recv(g->ep, op);
    if (st == TUTTI_OK)
        req->pending_from[peer]++;
    return st;
}

/* A transfer failed: a transport that completes operations from its own
 * thread records why on a progress call (perhaps the one of this pass), so
 * make one now; if no detail was recorded on this thread, say at least
 * which transfer failed. */
static tutti_status_t transfer_failed(tutti_alg_exec_t *exec,
                                      const tutti_tp_op_t *op)
{
    tutti_request_t *req = exec->core_private;
    tutti_group_t *g = req->group;
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
 * flight recorder's account of who was heard from. */
static tutti_status_t core_test(tutti_alg_exec_t *exec, tutti_xfer_t *xfer)
{
    tutti_tp_op_t *op = (tutti_tp_op_t *)xfer;
    if (op->status != TUTTI_INPROGRESS && op->is_recv == 1) {
        tutti_request_t *req = exec->core_private;
        op->is_recv = 2;
        req->pending_from[op->peer]--;
        if (op->peer < 64)
            req->heard_from |= 1ULL << op->peer;
    }
    if (op->status < 0)
        return transfer_failed(exec, op);
    return op->status;
}

static tutti_status_t core_param_size(const tutti_alg_instance_t *inst,
                                      const char *name, uint64_t dflt,
                                      uint64_t *value_out)
{
    const tutti__rule_t *rule = inst->rule_params;
    *value_out = dflt;
    for (size_t i = 0; rule && i < rule->num_params; i++) {
        if (strcmp(rule->params[i].key, name) != 0)
            continue;
        if (tutti__parse_size(rule->params[i].value, value_out) != TUTTI_OK)
            return tutti__error(TUTTI_ERR_CONFIG, "exec",
                                "%s:%d: params.%s = '%s': expected a size "
                                "such as 64K or 1M", rule->file, rule->line,
                                name, rule->params[i].value);
    }
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
    if (level > tutti__log_level)
        return;
    va_start(ap, fmt);
    tutti__log_vwrite(level, module, fmt, ap);
    va_end(ap);
}

const tutti_core_ops_t tutti__core_ops = {
    sizeof(tutti_core_ops_t), core_send, core_recv, core_test, tutti__reduce,
    core_param_size, core_error, core_log,
};

/* ---- groups --------------------------------------------------------------------- */

int tutti_group_rank(const tutti_group_t *group)
{
    return group->rank;
}

int tutti_group_size(const tutti_group_t *group)
{
    return group->size;
}

tutti_status_t tutti_group_locality(const tutti_group_t *group, int rank,
                                    tutti_locality_t *locality_out)
{
    if (rank < 0 || rank >= group->size)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "group 0x%llx: "
                            "rank %d outside 0..%d",
                            (unsigned long long)group->key, rank,
                            group->size - 1);
    *locality_out = group->localities[rank];
    return TUTTI_OK;
}

const char *tutti_group_host(const tutti_group_t *group, int host)
{
    return host >= 0 && host < group->num_hosts ? group->hosts[host] : NULL;
}

/* This member's place in the group the coordinator formed; the group
 * takes the table's locality and host arrays. */
static tutti_status_t place_member(tutti_group_t *g, tutti__group_table_t *t)
{
    g->localities = t->members;
    g->hosts = t->hosts;
    g->num_hosts = t->num_hosts;
    t->members = NULL;
    t->hosts = NULL;
    g->rank = -1;
    for (int i = 0; i < t->size; i++) {
        g->rank_task[i] = g->localities[i].task;
        if (g->localities[i].task == g->ctx->task &&
            g->localities[i].device_index == g->device_index)
            g->rank = i;
    }
    g->num_tasks = t->num_tasks;
    if (g->rank < 0)
        return tutti__error(TUTTI_ERR_INTERNAL, "group", "group 0x%llx: the "
                            "coordinator's table lacks task %d device %d",
                            (unsigned long long)g->key, g->ctx->task,
                            g->device_index);
    return TUTTI_OK;
}

/* Inside one task the local transport connects everyone directly; across
 * tasks each peer gets its transport (tp_mux.c). */
static tutti_status_t connect_group(tutti_group_t *g)
{
    tutti_context_t *ctx = g->ctx;
    int *hosts = malloc((size_t)g->size * sizeof(int));
    if (hosts == NULL)
        return TUTTI_ERR_NO_MEMORY;
    for (int r = 0; r < g->size; r++)
        hosts[r] = g->localities[r].host;
    tutti_tp_group_t tg = {sizeof(tg), ctx->job_id, g->key, g->rank, g->size,
                           g->rank_task, ctx->task, g->timeout, &ctx->cfg, 0,
                           0, &tutti__tp_core_ops, NULL, hosts};
    tutti_status_t st;
    if (g->num_tasks == 1) {
        g->tp = &tutti__tp_local_ops;
        st = g->tp->connect(&tg, &g->ep);
    } else {
        st = tutti__tp_mux_connect(ctx, &tg, &g->tp, &g->ep);
    }
    free(hosts);
    return st;
}

static tutti_status_t check_group_params(const tutti_context_t *ctx,
                                         const tutti_group_params_t *p)
{
    if (p == NULL || p->size < sizeof(*p))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "group params "
                            "missing or older than this library (size %zu)",
                            p ? p->size : 0);
    if (p->group_size < 1 || p->device_index < 0)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group",
                            "group 0x%llx: group size %d, device index %d: "
                            "expected size >= 1 and index >= 0",
                            (unsigned long long)p->group_key, p->group_size,
                            p->device_index);
    if ((unsigned)p->device_type >= TUTTI_DEVICE_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "group 0x%llx: "
                            "device type %d: expected a tutti_device_type_t",
                            (unsigned long long)p->group_key,
                            (int)p->device_type);
    (void)ctx;
    return TUTTI_OK;
}

tutti_status_t tutti_group_join(tutti_context_t *ctx,
                                const tutti_group_params_t *params,
                                tutti_group_t **group_out)
{
    tutti__group_table_t table;
    tutti_status_t st;
    tutti_group_t *g;

    tutti__error_clear();
    if ((st = check_group_params(ctx, params)) != TUTTI_OK)
        return st;
    g = calloc(1, sizeof(*g));
    if (g == NULL)
        return TUTTI_ERR_NO_MEMORY;
    g->ctx = ctx;
    g->key = params->group_key;
    g->size = params->group_size;
    g->device_type = params->device_type;
    g->device_index = params->device_index;
    g->timeout = params->timeout > 0 ? params->timeout : ctx->cfg.timeout;
    /* More members on this host than processors: a waiting member must
     * give its processor to the peer it waits for at once, not spin. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    g->spin_limit = cpus > 0 && params->group_size > cpus ? 1 : 1024;
    snprintf(g->device_name, sizeof(g->device_name), "task:%d/%s:%d",
             ctx->task, tutti_device_type_name(g->device_type),
             g->device_index);
    g->rank_task = malloc((size_t)g->size * sizeof(int));
    if (g->rank_task == NULL) {
        st = TUTTI_ERR_NO_MEMORY;
        goto err_free;
    }
    st = tutti__resolve_group(ctx, g->key, g->size, g->device_type,
                              g->device_index, params->ring_order,
                              g->timeout, &table);
    if (st != TUTTI_OK)
        goto err_free;
    st = place_member(g, &table);
    if (st != TUTTI_OK)
        goto err_free;
    /* Checked after the coordinator saw every member agree on the type,
     * so a mixed group fails everywhere alike. */
    if (g->device_type != TUTTI_DEVICE_CPU) {
        st = tutti__error(TUTTI_ERR_UNSUPPORTED, "group", "group 0x%llx: "
                          "device type '%s': this build runs cpu devices "
                          "only", (unsigned long long)g->key,
                          tutti_device_type_name(g->device_type));
        goto err_free;
    }
    tutti__log_set_thread_member(g->rank, g->device_name);
    if (g->size > 1 && (st = connect_group(g)) != TUTTI_OK)
        goto err_free;
    g->health_seen = -1; /* look at the context's health on first use */
    if ((st = tutti__resolver_add_group(ctx, g)) != TUTTI_OK)
        goto err_disconnect;
    tutti__log(TUTTI_LOG_DEBUG, "group", "joined group 0x%llx as rank %d of "
               "%d over %d tasks (%s transport)", (unsigned long long)g->key,
               g->rank, g->size, g->num_tasks, g->tp ? g->tp->name : "no");
    pthread_mutex_lock(&ctx->lock);
    ctx->num_groups++;
    pthread_mutex_unlock(&ctx->lock);
    *group_out = g;
    return TUTTI_OK;

err_disconnect:
    if (g->ep)
        g->tp->disconnect(g->ep);
err_free:
    free(g->localities);
    free(g->hosts);
    free(g->rank_task);
    free(g);
    return st;
}

static void instance_free(tutti__instance_t *inst)
{
    const tutti_alg_ops_t *ops = inst->impl ? inst->impl->impl->ops : NULL;
    if (ops && inst->state)
        ops->fini_context(inst->state);
    free(inst->permutation);
    free(inst);
}

void tutti_group_leave(tutti_group_t *g)
{
    if (g == NULL)
        return;
    if (g->active_head != NULL)
        tutti__log(TUTTI_LOG_WARN, "group", "group 0x%llx left with "
                   "executions in flight", (unsigned long long)g->key);
    for (int b = 0; b < TUTTI_INSTANCE_BUCKETS; b++) {
        while (g->instances[b]) {
            tutti__instance_t *next = g->instances[b]->next;
            instance_free(g->instances[b]);
            g->instances[b] = next;
        }
    }
    while (g->free_list) {
        tutti_request_t *next = g->free_list->next;
        free(g->free_list);
        g->free_list = next;
    }
    while (g->stages) {
        tutti__stage_t *next = g->stages->next;
        free(g->stages->buf);
        free(g->stages);
        g->stages = next;
    }
    tutti__resolver_remove_group(g->ctx, g);
    if (g->ep)
        g->tp->disconnect(g->ep);
    pthread_mutex_lock(&g->ctx->lock);
    g->ctx->num_groups--;
    pthread_mutex_unlock(&g->ctx->lock);
    free(g->localities);
    free(g->hosts);
    free(g->rank_task);
    free(g);
}

/* ---- instances ---------------------------------------------------------------- */

static unsigned bucket_of(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (unsigned)(key % TUTTI_INSTANCE_BUCKETS);
}

static tutti__instance_t *instance_find(tutti_group_t *g, uint64_t key)
{
    for (tutti__instance_t *i = g->instances[bucket_of(key)]; i; i = i->next) {
        if (i->params.instance_key == key)
            return i;
    }
    return NULL;
}

static tutti_status_t check_instance_params(const tutti_group_t *g,
                                            const tutti_instance_params_t *p)
{
    if (p == NULL || p->size < sizeof(*p))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "instance params "
                            "missing or older than this library (size %zu)",
                            p ? p->size : 0);
    return tutti__coll_check_instance(p, g->size);
}

/* Sets up the implementation the coordinator chose for @p inst, with the
 * details its init_params wrote there. */
static tutti_status_t setup_impl(tutti_group_t *g, tutti__instance_t *inst,
                                 const tutti__decision_t *d)
{
    const char *name = d->algorithm, *why = d->detail;
    const tutti_instance_params_t *p = &inst->params;
    inst->impl = tutti__registry_find(&g->ctx->reg, name);
    if (inst->impl == NULL)
        return tutti__error(TUTTI_ERR_NOT_FOUND, "select", "implementation "
                            "'%s' chosen for instance 0x%llx is not loaded on "
                            "task %d", name,
                            (unsigned long long)p->instance_key, g->ctx->task);
    snprintf(inst->algorithm, sizeof(inst->algorithm), "%s", name);
    tutti__log(TUTTI_LOG_DEBUG, "select", "instance 0x%llx: %s %s x %zu -> "
               "%s (%s)", (unsigned long long)p->instance_key,
               tutti_collective_name(p->collective),
               tutti_dtype_name(p->dtype), p->count, name, why);
    /* avg reaches the implementation as sum: the core divides after. */
    tutti_op_t op = p->op == TUTTI_OP_AVG ? TUTTI_OP_SUM : p->op;
    inst->alg = (tutti_alg_instance_t){
        sizeof(inst->alg), p->collective, p->dtype, op, p->count, p->root,
        g->rank, g->size, g->num_tasks, g->device_type, p->instance_key,
        NULL, g->localities, inst->permutation};
    const tutti_alg_ops_t *ops = inst->impl->impl->ops;
    return ops->init_context(&inst->alg, &tutti__core_ops, d->details,
                             d->details_len, &inst->state);
}

/* Records a new instance; the coordinator decides what runs it. */
static tutti_status_t instance_new(tutti_group_t *g,
                                   const tutti_instance_params_t *p,
                                   tutti__instance_t **inst_out)
{
    tutti__instance_t *inst = calloc(1, sizeof(*inst));
    if (inst == NULL)
        return TUTTI_ERR_NO_MEMORY;
    inst->params = *p;
    inst->params.size = sizeof(inst->params);
    inst->params.algorithm = NULL;
    inst->params.permutation = NULL;
    inst->params.counts = NULL;
    inst->params.wait_for = NULL;
    if (p->collective == TUTTI_COLL_PERMUTE) {
        inst->permutation = malloc((size_t)g->size * sizeof(int));
        if (inst->permutation == NULL) {
            free(inst);
            return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "instance 0x%llx: "
                                "out of memory for a permutation of %d",
                                (unsigned long long)p->instance_key, g->size);
        }
        memcpy(inst->permutation, p->permutation,
               (size_t)g->size * sizeof(int));
        inst->params.permutation = inst->permutation;
    }
    inst->prepared = tutti__coll_prepared(p);
    inst->postscaled = tutti__coll_postscaled(p);
    if (p->algorithm) {
        snprintf(inst->algorithm, sizeof(inst->algorithm), "%s", p->algorithm);
        inst->params.algorithm = inst->algorithm;
    }
    tutti_status_t st = tutti__resolve_instance(g, p);
    if (st != TUTTI_OK) {
        free(inst->permutation);
        free(inst);
        return st;
    }
    unsigned b = bucket_of(p->instance_key);
    inst->next = g->instances[b];
    g->instances[b] = inst;
    *inst_out = inst;
    return TUTTI_OK;
}

/* A later execution must repeat what the first one asked for. */
static tutti_status_t check_same(const tutti__instance_t *inst,
                                 const tutti_instance_params_t *p)
{
    const tutti_instance_params_t *f = &inst->params;
    const char *what = NULL;
    long long was = 0, now = 0;

    if (f->collective != p->collective)
        what = "collective", was = f->collective, now = p->collective;
    else if (f->dtype != p->dtype)
        what = "dtype", was = f->dtype, now = p->dtype;
    else if (f->count != p->count)
        what = "count", was = (long long)f->count, now = (long long)p->count;
    else if (f->op != p->op && (p->collective == TUTTI_COLL_ALLREDUCE ||
                                p->collective == TUTTI_COLL_REDUCE ||
                                p->collective == TUTTI_COLL_REDUCE_SCATTER))
        what = "op", was = f->op, now = p->op;
    else if (f->root != p->root && (p->collective == TUTTI_COLL_BROADCAST ||
                                    p->collective == TUTTI_COLL_REDUCE ||
                                    p->collective == TUTTI_COLL_GATHER))
        what = "root", was = f->root, now = p->root;
    else if (f->pre_scale != p->pre_scale || f->post_scale != p->post_scale)
        return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx was "
                            "first executed with pre_scale %g, post_scale %g "
                            "and now with %g, %g",
                            (unsigned long long)f->instance_key, f->pre_scale,
                            f->post_scale, p->pre_scale, p->post_scale);
    else if (inst->permutation != NULL &&
             (p->permutation == NULL ||
              memcmp(inst->permutation, p->permutation,
                     (size_t)inst->alg.group_size * sizeof(int)) != 0))
        return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx was "
                            "first executed with another permutation",
                            (unsigned long long)f->instance_key);
    else if (p->algorithm && strcmp(p->algorithm, inst->algorithm) != 0)
        return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx "
                            "runs %s; this call asks for %s",
                            (unsigned long long)f->instance_key,
                            inst->algorithm, p->algorithm);
    if (what == NULL)
        return TUTTI_OK;
    return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx was "
                        "first executed with %s %lld and now with %lld",
                        (unsigned long long)f->instance_key, what, was, now);
}

/* ---- requests and progress ------------------------------------------------------- */

/* Bytes of a request's pending_from, rounded up for the size_t after. */
static size_t pending_bytes(int size)
{
    size_t n = (size_t)size * sizeof(uint16_t);
    return (n + sizeof(size_t) - 1) / sizeof(size_t) * sizeof(size_t);
}

static tutti_request_t *request_get(tutti_group_t *g)
{
    tutti_request_t *r = g->free_list;
    if (r != NULL)
        g->free_list = r->next;
    else if ((r = malloc(sizeof(*r) + pending_bytes(g->size) +
                         (size_t)g->size * sizeof(size_t))) == NULL)
        return NULL;
    memset(r->pending_from, 0, (size_t)g->size * sizeof(uint16_t));
    r->recv_counts = (size_t *)((char *)r->pending_from +
                                pending_bytes(g->size));
    r->heard_from = 0;
    r->stage = NULL;
    r->group = g;
    r->status = TUTTI_INPROGRESS;
    r->launch_order = 0;
    r->num_wait_for = 0;
    r->cb = NULL;
    r->cb_arg = NULL;
    r->next = NULL;
    r->error[0] = '\0';
    return r;
}

/* Lists are short (executions in flight on one member): plain walks. */
static void insert_by_priority(tutti_request_t **head, tutti_request_t *r)
{
    tutti_request_t **pp = head;
    while (*pp && (*pp)->priority >= r->priority)
        pp = &(*pp)->next;
    r->next = *pp;
    *pp = r;
}

static void list_remove(tutti_request_t **head, tutti_request_t *r)
{
    for (tutti_request_t **pp = head; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            r->next = NULL;
            return;
        }
    }
}

static void request_complete(tutti_request_t *r, tutti_status_t st);
static void dump_flight(const tutti_group_t *g, const char *why);
static int rank_list(const tutti_request_t *r, int pending, char *buf,
                     size_t len);

/* Moves the next execution of @p inst (if any) to the ready list, or
 * refuses it when the instance was refused. */
static void promote_next(tutti__instance_t *inst)
{
    tutti_request_t *next = inst->queue_head;
    if (next == NULL)
        return;
    inst->queue_head = next->next;
    if (inst->queue_head == NULL)
        inst->queue_tail = NULL;
    if (inst->failed != TUTTI_OK) {
        request_complete(next, inst->failed);
        return;
    }
    inst->ready = next;
    insert_by_priority(&next->group->ready_head, next);
}

/* A stage buffer from the group's pool for @p r's prepared input; a new
 * one only when every buffer is taken by an execution in flight. */
static tutti_status_t stage_take(tutti_group_t *g, tutti_request_t *r)
{
    tutti__stage_t *s = g->stages;
    if (s != NULL)
        g->stages = s->next;
    else if ((s = calloc(1, sizeof(*s))) == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "group 0x%llx: no "
                            "memory for a stage buffer",
                            (unsigned long long)g->key);
    s->next = NULL;
    r->stage = s;
    return TUTTI_OK;
}

static void stage_give_back(tutti_group_t *g, tutti_request_t *r)
{
    if (r->stage == NULL)
        return;
    r->stage->next = g->stages;
    g->stages = r->stage;
    r->stage = NULL;
}

static void request_complete(tutti_request_t *r, tutti_status_t st)
{
    tutti__instance_t *inst = r->inst;
    tutti_group_t *g = r->group;
    if (st == TUTTI_OK && inst->postscaled)
        st = tutti__coll_postscale(&inst->params, g->rank, g->size, &r->exec);
    stage_give_back(g, r);
    if (st != TUTTI_OK) {
        snprintf(r->error, sizeof(r->error), "%s", tutti_last_error());
        /* Transfers of a failed execution may still be queued: the group
         * cannot be trusted with another one.  (One that never launched
         * posted nothing, and a too-small buffer is found before data
         * moves, with every transfer complete: the group stays usable.) */
        if (g->failed == TUTTI_OK && r->launch_order != 0 &&
            st != TUTTI_ERR_TOO_SMALL) {
            g->failed = st;
            snprintf(g->failure, sizeof(g->failure), "%s", r->error);
        }
    }
    r->status = st;
    tutti__flight_finish(&g->flight, r->flight_seq, st);
    if (inst->running == r)
        inst->running = NULL;
    if (r->cb)
        r->cb(r, st, r->cb_arg);
    if (inst->running == NULL && inst->ready == NULL)
        promote_next(inst);
}

static void request_start(tutti_request_t *r)
{
    tutti__instance_t *inst = r->inst;
    tutti_group_t *g = r->group;
    const tutti_alg_ops_t *ops = inst->impl->impl->ops;
    inst->running = r;
    r->launch_order = ++g->launches;
    tutti__flight_launch(&g->flight, r->flight_seq);
    if (r->exec.step + 1 > inst->launched_through)
        inst->launched_through = r->exec.step + 1;
    tutti_status_t st = TUTTI_OK;
    if (inst->prepared && (st = stage_take(g, r)) == TUTTI_OK)
        st = tutti__coll_prepare(&inst->params, g->rank, g->size, r->stage,
                                 &r->exec);
    if (st == TUTTI_OK)
        st = ops->run(inst->state, &r->exec);
    if (st == TUTTI_INPROGRESS)
        insert_by_priority(&g->active_head, r);
    else
        request_complete(r, st);
}

/* Resolved, not behind another execution of its instance, and every
 * instance it waits for launched this step on this member. */
static int launchable(tutti_group_t *g, const tutti_request_t *r)
{
    const tutti__instance_t *inst = r->inst;
    if (!inst->resolved || inst->running != NULL)
        return 0;
    for (size_t i = 0; i < r->num_wait_for; i++) {
        const tutti__instance_t *dep = instance_find(g, r->wait_for[i]);
        if (dep == NULL || dep->launched_through <= r->exec.step)
            return 0;
    }
    return 1;
}

/* Launches what is ready, highest priority first; a launch may make
 * others ready, so the walk starts over after each.  Returns launches. */
static int launch_ready(tutti_group_t *g)
{
    int n = 0;
    tutti_request_t *r = g->ready_head;
    while (r != NULL) {
        if (!launchable(g, r)) {
            r = r->next;
            continue;
        }
        list_remove(&g->ready_head, r);
        r->inst->ready = NULL;
        request_start(r);
        n++;
        r = g->ready_head;
    }
    return n;
}

/* The resolver answered for an instance: set it up (the ready list then
 * launches it), or refuse everything that waits for it. */
static void apply_decision(tutti_group_t *g, const tutti__decision_t *d)
{
    tutti__instance_t *inst = instance_find(g, d->instance_key);
    tutti_status_t st = d->status;
    if (inst == NULL || inst->resolved || inst->failed != TUTTI_OK)
        return;
    if (st == TUTTI_OK)
        st = setup_impl(g, inst, d);
    else
        tutti__error(st, "resolve", "%s", d->detail);
    if (d->status == TUTTI_ERR_TIMEOUT)
        dump_flight(g, d->detail);
    if (st == TUTTI_OK) {
        inst->resolved = 1;
        return;
    }
    inst->failed = st;
    snprintf(inst->failure, sizeof(inst->failure), "%s", tutti_last_error());
    tutti_request_t *r = inst->ready;
    if (r != NULL) {
        list_remove(&g->ready_head, r);
        inst->ready = NULL;
        request_complete(r, st);
    }
}

static void take_decisions(tutti_group_t *g)
{
    tutti__decision_t *d = tutti__resolver_take(g);
    while (d) {
        tutti__decision_t *next = d->next;
        apply_decision(g, d);
        free(d);
        d = next;
    }
}

/* Appends the ranks @p pick selects to @p buf as "1,4,5"; returns count. */
static int rank_list(const tutti_request_t *r, int pending, char *buf,
                     size_t len)
{
    size_t n = 0;
    int count = 0;
    buf[0] = '\0';
    for (int k = 0; k < r->group->size && n + 12 < len; k++) {
        int hit = pending ? r->pending_from[k] > 0
                          : k < 64 && (r->heard_from >> k) & 1;
        if (!hit)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%d", count ? "," : "", k);
        count++;
    }
    return count;
}

/* Who the executions in flight on @p g were waiting for, and who they had
 * heard from: the part of a hang one member can see. */
static void peers_text(const tutti_group_t *g, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const tutti_request_t *r = g->active_head; r && n + 64 < len;
         r = r->next) {
        char waiting[128], heard[128];
        rank_list(r, 1, waiting, sizeof(waiting));
        rank_list(r, 0, heard, sizeof(heard));
        n += (size_t)snprintf(buf + n, len - n, "%sinstance 0x%llx step "
                              "%llu: waiting for rank(s) %s; heard from "
                              "rank(s) %s", n ? "; " : "",
                              (unsigned long long)r->inst->params.instance_key,
                              (unsigned long long)r->exec.step,
                              waiting[0] ? waiting : "none",
                              heard[0] ? heard : "none");
    }
}

static void dump_flight(const tutti_group_t *g, const char *why)
{
    char who[96], peers[1024];
    snprintf(who, sizeof(who), "group 0x%llx rank %d (%s)",
             (unsigned long long)g->key, g->rank, g->device_name);
    peers_text(g, peers, sizeof(peers));
    tutti__flight_dump(&g->flight, who, why, peers);
}

/* Fails every execution of @p g not yet complete with @p st and @p text;
 * later calls are refused with them too. */
static void fail_group(tutti_group_t *g, tutti_status_t st, const char *text)
{
    if (g->failed == TUTTI_OK)
        dump_flight(g, text);
    if (g->failed == TUTTI_OK) {
        g->failed = st;
        snprintf(g->failure, sizeof(g->failure), "%s", text);
    }
    while (g->active_head != NULL || g->ready_head != NULL) {
        tutti_request_t *r = g->active_head ? g->active_head : g->ready_head;
        list_remove(r == g->active_head ? &g->active_head : &g->ready_head, r);
        if (r->inst->ready == r)
            r->inst->ready = NULL;
        tutti__error_quiet(st, "%s", text);
        request_complete(r, st); /* may promote the next: failed in turn */
    }
}

/* Abort, or a member's task gone: fail the group once, naming why. */
static void check_health(tutti_group_t *g)
{
    tutti_context_t *ctx = g->ctx;
    char text[512];
    int epoch = atomic_load_explicit(&ctx->health_epoch, memory_order_acquire);
    if (epoch == g->health_seen)
        return;
    g->health_seen = epoch;
    if (ctx->abort_status != TUTTI_OK) {
        snprintf(text, sizeof(text), "group 0x%llx: %.440s",
                 (unsigned long long)g->key, ctx->abort_reason);
        fail_group(g, ctx->abort_status, text);
        return;
    }
    for (int r = 0; r < g->size; r++) {
        int t = g->rank_task[r];
        if (!atomic_load_explicit(&ctx->task_dead[t], memory_order_relaxed))
            continue;
        snprintf(text, sizeof(text), "group 0x%llx rank %d: task %d (rank "
                 "%d) is gone: its process exited or was killed",
                 (unsigned long long)g->key, g->rank, t, r);
        fail_group(g, TUTTI_ERR_PEER, text);
        return;
    }
}

/* One pass of the progress engine; returns how much moved. */
static int group_progress(tutti_group_t *g)
{
    int moved = 0;
    if (atomic_load_explicit(&g->ctx->health_epoch, memory_order_relaxed) !=
        g->health_seen) {
        check_health(g);
        moved++;
    }
    if (atomic_load_explicit(&g->has_decisions, memory_order_acquire)) {
        take_decisions(g);
        moved++;
    }
    if (g->ready_head != NULL)
        moved += launch_ready(g);
    if (g->ep != NULL) {
        int n = g->tp->progress(g->ep);
        moved += n > 0 ? n : 0;
    }
    tutti_request_t *r = g->active_head;
    while (r != NULL) {
        tutti_request_t *next = r->next;
        const tutti_alg_ops_t *ops = r->inst->impl->impl->ops;
        tutti_status_t st = ops->progress(r->inst->state, &r->exec);
        if (st != TUTTI_INPROGRESS) {
            list_remove(&g->active_head, r);
            request_complete(r, st);
            moved++;
            next = g->active_head; /* completion may have changed the list */
        }
        r = next;
    }
    if (moved && g->ready_head != NULL)
        moved += launch_ready(g);
    return moved;
}

tutti_status_t tutti_execute(tutti_group_t *g,
                             const tutti_instance_params_t *params,
                             const void *sendbuf, void *recvbuf,
                             tutti_request_t **request_out)
{
    tutti_status_t st;
    tutti__instance_t *inst;
    tutti_request_t *r;

    if (g == NULL || request_out == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec",
                            "tutti_execute: group or request_out is NULL");
    check_health(g);
    if (g->failed != TUTTI_OK)
        return tutti__error(g->failed, "exec", "group 0x%llx rank %d failed "
                            "earlier and must be left: %s",
                            (unsigned long long)g->key, g->rank, g->failure);
    if (params == NULL || params->size < sizeof(*params))
        return check_instance_params(g, params);
    /* What is fixed for the instance is checked in full on its first
     * execution; later ones must repeat it (check_same), which costs a
     * few comparisons instead of the full check. */
    uint64_t bytes = 0;
    inst = instance_find(g, params->instance_key);
    if (inst == NULL) {
        if ((st = check_instance_params(g, params)) != TUTTI_OK ||
            (st = tutti__coll_check_exec(params, g->rank, g->size, sendbuf,
                                         recvbuf, &bytes)) != TUTTI_OK ||
            (st = instance_new(g, params, &inst)) != TUTTI_OK)
            return st;
    } else if (inst->failed != TUTTI_OK) {
        return tutti__error(inst->failed, "exec", "%s", inst->failure);
    } else if ((st = check_same(inst, params)) != TUTTI_OK ||
               (st = tutti__coll_check_exec(params, g->rank, g->size,
                                            sendbuf, recvbuf, &bytes)) !=
                   TUTTI_OK) {
        return st;
    }
    if (params->num_wait_for > TUTTI_MAX_WAIT_FOR ||
        (params->num_wait_for > 0 && params->wait_for == NULL))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "instance 0x%llx: "
                            "%zu wait_for keys: expected at most %d, in an "
                            "array", (unsigned long long)params->instance_key,
                            params->num_wait_for, TUTTI_MAX_WAIT_FOR);
    if ((r = request_get(g)) == NULL)
        return TUTTI_ERR_NO_MEMORY;
    r->inst = inst;
    r->priority = params->priority;
    r->timeout = params->timeout > 0 ? params->timeout : g->timeout;
    r->num_wait_for = params->num_wait_for;
    for (size_t i = 0; i < params->num_wait_for; i++)
        r->wait_for[i] = params->wait_for[i];
    uint64_t step = params->step == TUTTI_STEP_NEXT ? inst->next_step++
                                                    : params->step;
    r->exec = (tutti_alg_exec_t){sizeof(r->exec), &tutti__core_ops, &inst->alg,
                                 sendbuf, recvbuf, step, r, params->counts,
                                 params->send_count, params->recv_capacity,
                                 r->recv_counts,
                                 tutti__coll_recv_total(params, g->rank,
                                                        g->size)};
    /* reduce_scatter's per-rank counts are the call's, known to all. */
    if (tutti__coll_per_rank(params) &&
        params->collective == TUTTI_COLL_REDUCE_SCATTER)
        memcpy(r->recv_counts, params->counts, (size_t)g->size * sizeof(size_t));
    r->flight_seq = tutti__flight_issue(&g->flight, params->instance_key, step,
                                        inst->algorithm, bytes);
    if (inst->running == NULL && inst->ready == NULL) {
        inst->ready = r;
        insert_by_priority(&g->ready_head, r);
        launch_ready(g);
    } else {
        if (inst->queue_tail)
            inst->queue_tail->next = r;
        else
            inst->queue_head = r;
        inst->queue_tail = r;
    }
    *request_out = r;
    return TUTTI_OK;
}

/* Makes a failed request's detail the thread's last error. */
static tutti_status_t request_status(const tutti_request_t *r)
{
    if (r->status != TUTTI_OK && r->status != TUTTI_INPROGRESS)
        tutti__error_quiet(r->status, "%s", r->error);
    return r->status;
}

tutti_status_t tutti_request_test(tutti_request_t *r)
{
    if (r->status == TUTTI_INPROGRESS)
        group_progress(r->group);
    return request_status(r);
}

/* Fails every execution in flight on @p g with TUTTI_ERR_TIMEOUT. */
static void group_time_out(tutti_group_t *g, double idle)
{
    char why[160];
    snprintf(why, sizeof(why), "no progress for %.1f s (time limit %.1f s)",
             idle, g->timeout);
    if (g->active_head != NULL)
        dump_flight(g, why);
    while (g->active_head != NULL) {
        tutti_request_t *r = g->active_head;
        char waiting[128];
        list_remove(&g->active_head, r);
        int n = rank_list(r, 1, waiting, sizeof(waiting));
        tutti__error(TUTTI_ERR_TIMEOUT, "exec",
                     "group 0x%llx rank %d: instance 0x%llx step %llu (%s) "
                     "made no progress for %.1f s; waiting for rank%s %s",
                     (unsigned long long)g->key, g->rank,
                     (unsigned long long)r->inst->params.instance_key,
                     (unsigned long long)r->exec.step, r->inst->algorithm,
                     idle, n == 1 ? "" : "s", n ? waiting : "(none: sends "
                     "not taken)");
        request_complete(r, TUTTI_ERR_TIMEOUT);
    }
}

/* The request still waits for its instance's resolution and the time
 * limit passed: ask the coordinator which ranks never came (its answer
 * refuses the instance); if it does not answer, refuse it here. */
static void resolution_time_out(tutti_group_t *g, tutti__instance_t *inst)
{
    double now = tutti__now();
    if (inst->timeout_asked == 0) {
        inst->timeout_asked = now;
        tutti__resolve_timeout(g, inst->params.instance_key);
        return;
    }
    if (now - inst->timeout_asked < 2.0)
        return;
    tutti__decision_t d;
    memset(&d, 0, sizeof(d));
    d.instance_key = inst->params.instance_key;
    d.status = TUTTI_ERR_TIMEOUT;
    snprintf(d.detail, sizeof(d.detail), "instance 0x%llx of group 0x%llx: "
             "not every member executed it within %.1f s, and the "
             "coordinator (task 0) did not answer",
             (unsigned long long)inst->params.instance_key,
             (unsigned long long)g->key, g->timeout);
    apply_decision(g, &d);
}

/* A resolved execution that still waits for the instances it depends on. */
static void dependency_time_out(tutti_group_t *g, tutti_request_t *r)
{
    uint64_t missing = 0;
    for (size_t i = 0; i < r->num_wait_for; i++) {
        const tutti__instance_t *dep = instance_find(g, r->wait_for[i]);
        if (dep == NULL || dep->launched_through <= r->exec.step)
            missing = r->wait_for[i];
    }
    list_remove(&g->ready_head, r);
    r->inst->ready = NULL;
    tutti__error(TUTTI_ERR_TIMEOUT, "exec", "group 0x%llx rank %d: instance "
                 "0x%llx step %llu waited %.1f s for instance 0x%llx to "
                 "launch its step %llu on this member",
                 (unsigned long long)g->key, g->rank,
                 (unsigned long long)r->inst->params.instance_key,
                 (unsigned long long)r->exec.step, r->timeout,
                 (unsigned long long)missing,
                 (unsigned long long)r->exec.step);
    request_complete(r, TUTTI_ERR_TIMEOUT);
}

/* Nothing moved for longer than the group's time limit while @p r waits:
 * fail what it waits on, according to where it stands. */
static void request_time_out(tutti_request_t *r, double idle)
{
    tutti_group_t *g = r->group;
    tutti__instance_t *inst = r->inst;
    if (r->launch_order != 0)
        group_time_out(g, idle);
    else if (!inst->resolved && inst->failed == TUTTI_OK)
        resolution_time_out(g, inst);
    else if (inst->ready == r)
        dependency_time_out(g, r);
    else if (inst->running != NULL)
        group_time_out(g, idle); /* behind a running execution */
    else if (inst->ready != NULL)
        request_time_out(inst->ready, idle);
}

typedef struct {
    unsigned idle;
    double idle_since;
} wait_state_t;

/* One round of waiting for @p r: progress, then spin, yield, or fail what
 * has been idle past the time limit. */
static void wait_step(tutti_request_t *r, wait_state_t *w)
{
    tutti_group_t *g = r->group;
    if (r->launch_order == 0 && !r->inst->resolved)
        tutti__resolver_poll(g->ctx); /* its answer may be on the way */
    if (group_progress(g) > 0) {
        w->idle = 0;
        return;
    }
    if (++w->idle < g->spin_limit) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        return;
    }
    /* Idle for a while: let other processes on this core run, and watch
     * the clock. */
    sched_yield();
    if (w->idle == g->spin_limit)
        w->idle_since = tutti__now();
    else if ((w->idle & 255) == 0 &&
             tutti__now() - w->idle_since > r->timeout)
        request_time_out(r, tutti__now() - w->idle_since);
}

tutti_status_t tutti_request_wait(tutti_request_t *r)
{
    wait_state_t w = {0, 0};
    while (r->status == TUTTI_INPROGRESS)
        wait_step(r, &w);
    return request_status(r);
}

tutti_status_t tutti_request_wait_all(tutti_request_t *const *requests,
                                      size_t n)
{
    tutti_status_t first = TUTTI_OK;
    for (size_t i = 0; i < n; i++) {
        tutti_status_t st = tutti_request_wait(requests[i]);
        if (first == TUTTI_OK)
            first = st;
    }
    for (size_t i = 0; first != TUTTI_OK && i < n; i++) {
        if (requests[i]->status == first)
            return request_status(requests[i]);
    }
    return first;
}

tutti_status_t tutti_request_wait_any(tutti_request_t *const *requests,
                                      size_t n, size_t *index_out)
{
    wait_state_t w[TUTTI_MAX_WAIT_ANY] = {{0, 0}};
    if (n == 0 || n > TUTTI_MAX_WAIT_ANY)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "wait_any on %zu "
                            "requests: expected 1..%d", n,
                            TUTTI_MAX_WAIT_ANY);
    for (;;) {
        for (size_t i = 0; i < n; i++) {
            if (requests[i]->status != TUTTI_INPROGRESS) {
                *index_out = i;
                return request_status(requests[i]);
            }
        }
        for (size_t i = 0; i < n; i++)
            wait_step(requests[i], &w[i]);
    }
}

void tutti_request_info(const tutti_request_t *r, tutti_request_info_t *info)
{
    info->instance_key = r->inst->params.instance_key;
    info->step = r->exec.step;
    info->launch_order = r->launch_order;
    info->algorithm = r->inst->resolved ? r->inst->algorithm : "";
    info->recv_total = r->exec.recv_total;
    info->recv_counts = NULL;
    if (tutti__coll_per_rank(&r->inst->params) &&
        r->status != TUTTI_INPROGRESS)
        info->recv_counts = r->recv_counts;
}

void tutti_request_free(tutti_request_t *r)
{
    if (r == NULL)
        return;
    if (r->status == TUTTI_INPROGRESS) {
        tutti__log(TUTTI_LOG_ERROR, "exec", "tutti_request_free on a request "
                   "still in progress (instance 0x%llx); not freed",
                   (unsigned long long)r->inst->params.instance_key);
        return;
    }
    tutti_group_t *g = r->group;
    r->next = g->free_list;
    g->free_list = r;
}

void tutti_request_set_callback(tutti_request_t *r, tutti_request_cb_t cb,
                                void *arg)
{
    r->cb = cb;
    r->cb_arg = arg;
    if (r->status != TUTTI_INPROGRESS && cb != NULL)
        cb(r, r->status, arg);
}

/* ---- blocking helpers ---------------------------------------------------------------- */

/* Instance keys of the helpers: a hash of the arguments, top bit set so
 * they stay apart from keys hosts choose (document: use keys < 2^63). */
static uint64_t helper_key(const tutti_instance_params_t *p)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    uint64_t parts[5] = {(uint64_t)p->collective, (uint64_t)p->dtype,
                         (uint64_t)p->count, (uint64_t)p->op,
                         (uint64_t)(unsigned)p->root};
    for (int i = 0; i < 5; i++) {
        h ^= parts[i];
        h *= 0x100000001b3ULL;
    }
    return h | (1ULL << 63);
}

static tutti_status_t run_blocking(tutti_group_t *g,
                                   tutti_instance_params_t *p,
                                   const void *sendbuf, void *recvbuf)
{
    tutti_request_t *r;
    p->instance_key = helper_key(p);
    tutti_status_t st = tutti_execute(g, p, sendbuf, recvbuf, &r);
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_free(r);
    return st;
}

tutti_status_t tutti_allreduce(tutti_group_t *g, const void *sendbuf,
                               void *recvbuf, size_t count,
                               tutti_dtype_t dtype, tutti_op_t op)
{
    tutti_instance_params_t p;
    tutti_instance_params_init(&p);
    p.collective = TUTTI_COLL_ALLREDUCE;
    p.count = count;
    p.dtype = dtype;
    p.op = op;
    return run_blocking(g, &p, sendbuf, recvbuf);
}

tutti_status_t tutti_broadcast(tutti_group_t *g, void *buf, size_t count,
                               tutti_dtype_t dtype, int root)
{
    tutti_instance_params_t p;
    tutti_instance_params_init(&p);
    p.collective = TUTTI_COLL_BROADCAST;
    p.count = count;
    p.dtype = dtype;
    p.root = root;
    return run_blocking(g, &p, buf, buf);
}

/* The blocking helpers of rooted and gathering collectives. */
static tutti_status_t run_simple(tutti_group_t *g, tutti_collective_t coll,
                                 const void *sendbuf, void *recvbuf,
                                 size_t count, tutti_dtype_t dtype,
                                 tutti_op_t op, int root)
{
    tutti_instance_params_t p;
    tutti_instance_params_init(&p);
    p.collective = coll;
    p.count = count;
    p.dtype = dtype;
    p.op = op;
    p.root = root;
    return run_blocking(g, &p, sendbuf, recvbuf);
}

tutti_status_t tutti_reduce(tutti_group_t *g, const void *sendbuf,
                            void *recvbuf, size_t count, tutti_dtype_t dtype,
                            tutti_op_t op, int root)
{
    return run_simple(g, TUTTI_COLL_REDUCE, sendbuf, recvbuf, count, dtype,
                      op, root);
}

tutti_status_t tutti_allgather(tutti_group_t *g, const void *sendbuf,
                               void *recvbuf, size_t count,
                               tutti_dtype_t dtype)
{
    return run_simple(g, TUTTI_COLL_ALLGATHER, sendbuf, recvbuf, count, dtype,
                      TUTTI_OP_SUM, 0);
}

tutti_status_t tutti_gather(tutti_group_t *g, const void *sendbuf,
                            void *recvbuf, size_t count, tutti_dtype_t dtype,
                            int root)
{
    return run_simple(g, TUTTI_COLL_GATHER, sendbuf, recvbuf, count, dtype,
                      TUTTI_OP_SUM, root);
}

tutti_status_t tutti_reduce_scatter(tutti_group_t *g, const void *sendbuf,
                                    void *recvbuf, size_t count,
                                    tutti_dtype_t dtype, tutti_op_t op)
{
    return run_simple(g, TUTTI_COLL_REDUCE_SCATTER, sendbuf, recvbuf, count,
                      dtype, op, 0);
}

tutti_status_t tutti_alltoall(tutti_group_t *g, const void *sendbuf,
                              void *recvbuf, size_t count,
                              tutti_dtype_t dtype)
{
    return run_simple(g, TUTTI_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype,
                      TUTTI_OP_SUM, 0);
}

tutti_status_t tutti_allgatherv(tutti_group_t *g, const void *sendbuf,
                                size_t send_count, void *recvbuf,
                                size_t recv_capacity, tutti_dtype_t dtype,
                                size_t *recv_counts_out,
                                size_t *recv_total_out)
{
    tutti_instance_params_t p;
    tutti_request_t *r;
    tutti_request_info_t info;

    tutti_instance_params_init(&p);
    p.collective = TUTTI_COLL_ALLGATHER;
    p.count = TUTTI_COUNT_PER_RANK;
    p.dtype = dtype;
    p.send_count = send_count;
    p.recv_capacity = recv_capacity;
    p.instance_key = helper_key(&p);
    tutti_status_t st = tutti_execute(g, &p, sendbuf, recvbuf, &r);
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_info(r, &info);
    if ((st == TUTTI_OK || st == TUTTI_ERR_TOO_SMALL) && info.recv_counts) {
        if (recv_counts_out)
            memcpy(recv_counts_out, info.recv_counts,
                   (size_t)g->size * sizeof(size_t));
        if (recv_total_out)
            *recv_total_out = info.recv_total;
    }
    tutti_request_free(r);
    return st;
}

tutti_status_t tutti_barrier(tutti_group_t *g)
{
    unsigned char in = 0, out;
    return tutti_allreduce(g, &in, &out, 1, TUTTI_UINT8, TUTTI_OP_MAX);
}
