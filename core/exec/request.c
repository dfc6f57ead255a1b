/*
 * A request's life (exec.h): taken from the group's free list, queued
 * behind its instance's running execution, launched by priority once its
 * instance is resolved and what it waits for launched, completed with the
 * core's post-scaling and the caller's callback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "exec/exec.h"

/* Bytes of a request's pending_from, rounded up for the size_t after. */
static size_t pending_bytes(int size)
{
    size_t n = (size_t)size * sizeof(uint16_t);
    return (n + sizeof(size_t) - 1) / sizeof(size_t) * sizeof(size_t);
}

tutti_request_t *tutti__request_get(tutti_group_t *g)
{
    tutti_request_t *r = g->free_list;
    if (r != NULL)
        g->free_list = r->next;
    else if ((r = malloc(sizeof(*r) + pending_bytes(g->size) +
                         (size_t)g->size * sizeof(size_t))) == NULL)
        return NULL;
    else
        r->ev_issue = NULL; /* a new request: kept across reuses */
    memset(r->pending_from, 0, (size_t)g->size * sizeof(uint16_t));
    r->recv_counts = (size_t *)((char *)r->pending_from +
                                pending_bytes(g->size));
    r->link = (tutti__exec_link_t){.peers = &g->peers,
                                   .pending_from = r->pending_from};
    r->stage = NULL;
    r->stream = NULL;
    r->phase = 0;
    r->in_order = 0;
    r->order_next = NULL;
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
void tutti__request_list_insert(tutti_request_t **head, tutti_request_t *r)
{
    tutti_request_t **pp = head;
    while (*pp && (*pp)->priority >= r->priority)
        pp = &(*pp)->next;
    r->next = *pp;
    *pp = r;
}

void tutti__request_list_remove(tutti_request_t **head, tutti_request_t *r)
{
    for (tutti_request_t **pp = head; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            r->next = NULL;
            return;
        }
    }
}

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
        tutti__request_complete(next, inst->failed);
        return;
    }
    inst->ready = next;
    tutti__request_list_insert(&next->group->ready_head, next);
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

void tutti__request_order_add(tutti_group_t *g, tutti_request_t *r)
{
    r->order_next = NULL;
    r->in_order = 1;
    if (g->order_tail)
        g->order_tail->order_next = r;
    else
        g->order_head = r;
    g->order_tail = r;
}

static void order_remove(tutti_group_t *g, tutti_request_t *r)
{
    tutti_request_t *prev = NULL;
    if (!r->in_order)
        return;
    for (tutti_request_t *x = g->order_head; x; prev = x, x = x->order_next) {
        if (x != r)
            continue;
        if (prev)
            prev->order_next = r->order_next;
        else
            g->order_head = r->order_next;
        if (g->order_tail == r)
            g->order_tail = prev;
        break;
    }
    r->in_order = 0;
    r->order_next = NULL;
}

/* Whether @p r, of an ordered implementation, comes first among the
 * executions issued before it that are ordered or not yet resolved (and
 * so may turn out ordered): then every member launches them in the order
 * its caller issued them, which NCCL's communicators need. */
static int order_first(tutti_group_t *g, const tutti_request_t *r)
{
    for (tutti_request_t *x = g->order_head; x; x = x->order_next) {
        if (x->inst->resolved && !x->inst->ordered)
            continue;
        return x == r;
    }
    return 1;
}

tutti_status_t tutti__request_prepare(tutti_request_t *r)
{
    tutti_group_t *g = r->group;
    tutti_status_t st = stage_take(g, r);
    if (st == TUTTI_OK)
        st = tutti__coll_prepare(&r->inst->params, g->rank, g->size,
                                 r->stage, &r->exec);
    return st;
}

void tutti__request_complete(tutti_request_t *r, tutti_status_t st)
{
    tutti__instance_t *inst = r->inst;
    tutti_group_t *g = r->group;
    /* CUDA executions scale (and release the caller's stream) in
     * cuda_exec.c. */
    if (st == TUTTI_OK && inst->postscaled && inst->mode == TUTTI__MODE_HOST)
        st = tutti__coll_postscale(&inst->params, g->rank, g->size, &r->exec);
    if (inst->mode != TUTTI__MODE_HOST)
        tutti__cuda_end(r); /* a held call's stream goes on */
    order_remove(g, r);
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
            tutti__group_abort_modules(g, r->error);
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
    order_remove(g, r);
    if (inst->mode != TUTTI__MODE_HOST)
        st = tutti__cuda_start(r);
    else if (inst->prepared && (st = tutti__request_prepare(r)) != TUTTI_OK)
        ;
    else
        st = ops->run(inst->state, &r->exec);
    if (st == TUTTI_INPROGRESS)
        tutti__request_list_insert(&g->active_head, r);
    else
        tutti__request_complete(r, st);
}

/* Resolved, not behind another execution of its instance, and every
 * instance it waits for launched this step on this member. */
static int launchable(tutti_group_t *g, const tutti_request_t *r)
{
    const tutti__instance_t *inst = r->inst;
    if (!inst->resolved || inst->running != NULL)
        return 0;
    if (inst->ordered && !order_first(g, r))
        return 0;
    for (size_t i = 0; i < r->num_wait_for; i++) {
        const tutti__instance_t *dep = tutti__instance_find(g, r->wait_for[i]);
        if (dep == NULL || dep->launched_through <= r->exec.step)
            return 0;
    }
    return 1;
}

/* Launches what is ready, highest priority first; a launch may make
 * others ready, so the walk starts over after each.  Returns launches. */
int tutti__request_launch_ready(tutti_group_t *g)
{
    int n = 0;
    tutti_request_t *r = g->ready_head;
    while (r != NULL) {
        if (!launchable(g, r)) {
            r = r->next;
            continue;
        }
        tutti__request_list_remove(&g->ready_head, r);
        r->inst->ready = NULL;
        request_start(r);
        n++;
        r = g->ready_head;
    }
    return n;
}
