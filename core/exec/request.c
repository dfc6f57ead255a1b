/*
 * A request's life (exec.h): taken from the group's free list (or a new
 * one, from the process's pool of shells), queued
 * behind its instance's running execution, launched by priority once its
 * instance is resolved and what it waits for launched, completed with the
 * core's post-scaling and the caller's callback.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "exec/exec.h"

/* Bytes of a request's pending_from and pending_to, rounded up for the
 * size_t after. */
static size_t pending_bytes(int size)
{
    size_t n = 2 * (size_t)size * sizeof(uint16_t);
    return (n + sizeof(size_t) - 1) / sizeof(size_t) * sizeof(size_t);
}

/* Shells of the requests of left groups (exec.h, TUTTI__HANDLE_*): never
 * given back to malloc, so a stale handle's state word stays readable. */
static pthread_mutex_t shells_lock = PTHREAD_MUTEX_INITIALIZER;
static tutti_request_t *shells;

/* A new request of @p g: a shell from the pool or malloc, its per-rank
 * arrays its own; on the group's list of every request. */
static tutti_request_t *request_new(tutti_group_t *g)
{
    tutti_request_t *r;
    pthread_mutex_lock(&shells_lock);
    if ((r = shells) != NULL)
        shells = r->all_next;
    pthread_mutex_unlock(&shells_lock);
    if (r == NULL && (r = calloc(1, sizeof(*r))) == NULL)
        return NULL;
    r->pending_from = malloc(pending_bytes(g->size) +
                             (size_t)g->size * sizeof(size_t));
    if (r->pending_from == NULL) {
        pthread_mutex_lock(&shells_lock);
        r->all_next = shells;
        shells = r;
        pthread_mutex_unlock(&shells_lock);
        return NULL;
    }
    r->recv_counts = (size_t *)((char *)r->pending_from +
                                pending_bytes(g->size));
    r->ev_issue = NULL; /* a new request: kept across reuses */
    r->all_next = g->all_requests;
    g->all_requests = r;
    return r;
}

tutti_request_t *tutti__request_get(tutti_group_t *g)
{
    tutti_request_t *r = g->free_list;
    if (r != NULL)
        g->free_list = r->next;
    else if ((r = request_new(g)) == NULL)
        return NULL;
    memset(r->pending_from, 0, 2 * (size_t)g->size * sizeof(uint16_t));
    r->link = (tutti__exec_link_t){.peers = &g->peers,
                                   .pending_from = r->pending_from,
                                   .pending_to = r->pending_from + g->size};
    r->state = TUTTI__HANDLE_LIVE;
    r->stage = NULL;
    r->stream = NULL;
    r->phase = 0;
    r->in_order = 0;
    r->order_next = NULL;
    r->order_prev = NULL;
    r->group = g;
    r->status = TUTTI_INPROGRESS;
    r->launch_order = 0;
    r->tl_seq = 0;
    r->tl_phase = 0;
    r->num_wait_for = 0;
    r->cb = NULL;
    r->cb_arg = NULL;
    r->next = NULL;
    r->prev = NULL;
    r->listed = 0;
    r->gate_seq = 0; /* a pooled shell may come from a left CUDA group */
    r->hold_error = TUTTI_OK;
    r->wait_idle = 0;
    r->wait_idle_since = 0;
    if (r->error != NULL)
        r->error[0] = '\0';
    return r;
}

void tutti__request_release_all(tutti_group_t *g)
{
    tutti_request_t *r = g->all_requests, *last = NULL;
    if (r == NULL)
        return;
    for (; r != NULL; r = r->all_next) {
        tutti__cuda_request_free(g, r);
        r->ev_issue = NULL;
        free(r->pending_from);
        r->pending_from = NULL;
        r->recv_counts = NULL;
        r->state = TUTTI__HANDLE_LEFT;
        last = r;
    }
    pthread_mutex_lock(&shells_lock);
    last->all_next = shells;
    shells = g->all_requests;
    pthread_mutex_unlock(&shells_lock);
    g->all_requests = NULL;
    g->free_list = NULL;
}

tutti_status_t tutti__request_check(const tutti_request_t *r,
                                     const char *call)
{
    if (r == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: request is "
                            "NULL", call);
    if (r->state == TUTTI__HANDLE_LIVE)
        return TUTTI_OK;
    return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: request %p %s",
                        call, (const void *)r,
                        r->state == TUTTI__HANDLE_FREE
                            ? "was freed (tutti_request_free)"
                        : r->state == TUTTI__HANDLE_LEFT
                            ? "belongs to a group that was left"
                            : "is not a request tutti_execute gave");
}

/* The lists are ordered by priority, highest first, in issue order within
 * one: a new request goes after the last of a priority at least its own,
 * found from the tail, so the usual case (equal priorities) is O(1). */
void tutti__request_list_insert(tutti__req_list_t *l, tutti_request_t *r)
{
    tutti_request_t *after = l->tail;
    while (after != NULL && after->priority < r->priority)
        after = after->prev;
    r->prev = after;
    r->next = after ? after->next : l->head;
    if (r->next)
        r->next->prev = r;
    else
        l->tail = r;
    if (after)
        after->next = r;
    else
        l->head = r;
    r->listed = 1;
    l->count++;
}

void tutti__request_list_remove(tutti__req_list_t *l, tutti_request_t *r)
{
    if (!r->listed)
        return;
    if (l->cursor == r)
        l->cursor = r->next;
    l->count--;
    if (r->prev)
        r->prev->next = r->next;
    else
        l->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    r->next = r->prev = NULL;
    r->listed = 0;
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
    if (inst->resolved)
        tutti__request_list_insert(&next->group->ready, next);
}

/* A stage buffer from the group's pool for @p r's prepared input; a new
 * one only when every buffer is taken by an execution in flight. */
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
    r->order_prev = g->order_tail;
    r->in_order = 1;
    if (g->order_tail)
        g->order_tail->order_next = r;
    else
        g->order_head = r;
    g->order_tail = r;
}

static void order_remove(tutti_group_t *g, tutti_request_t *r)
{
    if (!r->in_order)
        return;
    if (r->order_prev)
        r->order_prev->order_next = r->order_next;
    else
        g->order_head = r->order_next;
    if (r->order_next)
        r->order_next->order_prev = r->order_prev;
    else
        g->order_tail = r->order_prev;
    r->in_order = 0;
    r->order_next = r->order_prev = NULL;
}

/* Whether @p r, of an ordered implementation, comes first among the
 * executions issued before it that are ordered or not yet resolved (and
 * so may turn out ordered): then every member launches them in the order
 * its caller issued them, which NCCL's communicators need.  Executions of
 * instances resolved unordered leave the list at resolution
 * (tutti__request_resolved), so this looks at the head. */
static int order_first(tutti_group_t *g, const tutti_request_t *r)
{
    for (tutti_request_t *x = g->order_head; x; x = x->order_next) {
        if (x->inst->resolved && !x->inst->ordered)
            continue;
        return x == r;
    }
    return 1;
}

void tutti__request_resolved(tutti_group_t *g, tutti__instance_t *inst)
{
    if (!inst->ordered) {
        if (inst->ready)
            order_remove(g, inst->ready);
        for (tutti_request_t *q = inst->queue_head; q; q = q->next)
            order_remove(g, q);
    }
    if (inst->ready != NULL && !inst->ready->listed)
        tutti__request_list_insert(&g->ready, inst->ready);
}

void tutti__request_complete(tutti_request_t *r, tutti_status_t st)
{
    tutti__instance_t *inst = r->inst;
    tutti_group_t *g = r->group;
    /* CUDA executions scale in cuda_exec.c. */
    if (st == TUTTI_OK && inst->postscaled && inst->mode == TUTTI__MODE_HOST)
        st = tutti__coll_postscale(&inst->params, g->rank, g->size, &r->exec);
    /* A held call's stream goes on, whatever ended it: the mode is still
     * HOST when the instance was refused or failed before its CUDA set-up
     * ran, so the hold decides, not the mode. */
    if (r->gate_seq != 0)
        tutti__cuda_end(r);
    order_remove(g, r);
    stage_give_back(g, r);
    if (st != TUTTI_OK) {
        tutti__request_set_error(r, tutti_last_error());
        /* Transfers of a failed execution may still be queued: the group
         * cannot be trusted with another one.  (One that never launched
         * posted nothing, and a too-small buffer is found before data
         * moves, with every transfer complete: the group stays usable.) */
        if (g->failed == TUTTI_OK && r->launch_order != 0 &&
            st != TUTTI_ERR_TOO_SMALL) {
            g->failed = st;
            snprintf(g->failure, sizeof(g->failure), "%s",
                     tutti__request_error(r));
            tutti__group_abort_modules(g, tutti__request_error(r));
        }
    }
    r->status = st;
    tutti__flight_finish(&g->flight, r->flight_seq, st);
    if (g->tl != NULL)
        tutti__timeline_exec_end(g->tl, r, st);
    if (inst->running == r)
        inst->running = NULL;
    if (r->cb) {
        /* The caller's code may take any time: a launch after it reads
         * the clock again. */
        tutti__flight_unstamp(&g->flight);
        r->cb(r, st, r->cb_arg);
    }
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
    if (g->tl != NULL)
        r->tl_seq = tutti__timeline_exec_begin(g->tl, r);
    if (r->exec.step + 1 > inst->launched_through)
        inst->launched_through = r->exec.step + 1;
    tutti_status_t st = TUTTI_OK;
    order_remove(g, r);
    if (inst->mode != TUTTI__MODE_HOST)
        st = tutti__cuda_start(r);
    else if (inst->params.count == 0)
        ; /* every member agreed on no elements: nothing moves anywhere */
    else if (inst->prepared &&
             (st = tutti__coll_prepare_pooled(&inst->params, g->rank, g->size,
                                              &g->stages, &r->stage,
                                              &r->exec)) != TUTTI_OK)
        ;
    else
        st = ops->run(inst->state, &r->exec);
    if (st == TUTTI_INPROGRESS)
        tutti__request_list_insert(&g->active, r);
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
 * others ready (and a callback may issue more), so the walk starts over
 * after each.  The ready list holds resolved executions only, so what is
 * passed over waits for another instance's launch (wait_for) or its turn
 * in issue order: the usual launch takes the head.  Returns launches. */
int tutti__request_launch_ready(tutti_group_t *g)
{
    int n = 0;
    tutti_request_t *r = g->ready.head;
    while (r != NULL) {
        if (!launchable(g, r)) {
            r = r->next;
            continue;
        }
        tutti__request_list_remove(&g->ready, r);
        r->inst->ready = NULL;
        request_start(r);
        n++;
        r = g->ready.head;
    }
    return n;
}

void tutti__request_enqueue(tutti_group_t *g, tutti_request_t *r,
                            uint64_t bytes)
{
    tutti__instance_t *inst = r->inst;
    r->bytes = bytes;
    r->flight_seq = tutti__flight_issue(&g->flight, inst->key, r->exec.step,
                                        inst->algorithm, bytes);
    if (inst->running != NULL || inst->ready != NULL) {
        if (inst->queue_tail)
            inst->queue_tail->next = r;
        else
            inst->queue_head = r;
        inst->queue_tail = r;
    } else if (inst->resolved && g->ready.head == NULL &&
               launchable(g, r)) {
        /* Alone on an empty ready list it would be the walk's first
         * launch: start it without the list, then launch what its run
         * or completion made ready, as the walk would go on to. */
        request_start(r);
        if (g->ready.head != NULL)
            tutti__request_launch_ready(g);
    } else {
        inst->ready = r;
        /* Unresolved, it waits off the ready list until the decision. */
        if (inst->resolved) {
            tutti__request_list_insert(&g->ready, r);
            tutti__request_launch_ready(g);
        }
    }
    /* The issue's clock reading served this call's launch, if any. */
    tutti__flight_unstamp(&g->flight);
}
