/*
 * Progress (exec.h): one pass over a group (health, the coordinator's
 * decisions, launches, the transport, the running executions), and the
 * waits built on it, which spin briefly, then yield, and fail what made no
 * progress within the time limit, naming whom it waited for.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "exec/exec.h"

/* Appends the ranks @p pick selects to @p buf as "1,4,5"; returns count. */
enum { RANKS_HEARD, RANKS_AWAITED, RANKS_NOT_TAKING };

/* Appends the ranks @p which selects to @p buf as "1,4,5"; returns count:
 * those heard from, those a receive waits for, those a send waits for. */
static int rank_list(const tutti_request_t *r, int which, char *buf,
                     size_t len)
{
    size_t n = 0;
    int count = 0;
    buf[0] = '\0';
    for (int k = 0; k < r->group->size && n + 12 < len; k++) {
        int hit = which == RANKS_AWAITED     ? r->link.pending_from[k] > 0
                  : which == RANKS_NOT_TAKING ? r->link.pending_to[k] > 0
                  : k < 64 && (r->link.heard_from >> k) & 1;
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
    for (const tutti_request_t *r = g->active.head; r && n + 64 < len;
         r = r->next) {
        char waiting[128], taking[128], heard[128];
        rank_list(r, RANKS_AWAITED, waiting, sizeof(waiting));
        rank_list(r, RANKS_NOT_TAKING, taking, sizeof(taking));
        rank_list(r, RANKS_HEARD, heard, sizeof(heard));
        n += (size_t)snprintf(buf + n, len - n, "%sinstance 0x%llx step "
                              "%llu: waiting for rank(s) %s; sends to "
                              "rank(s) %s not taken; heard from rank(s) %s",
                              n ? "; " : "",
                              (unsigned long long)r->inst->params.instance_key,
                              (unsigned long long)r->exec.step,
                              waiting[0] ? waiting : "none",
                              taking[0] ? taking : "none",
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

/* The coordinator answered for an instance: set it up (the ready list then
 * launches it), or refuse everything that waits for it. */
static void apply_decision(tutti_group_t *g, const tutti__decision_t *d)
{
    tutti__instance_t *inst = tutti__instance_find(g, d->instance_key);
    tutti_status_t st = d->status;
    if (inst == NULL || inst->resolved || inst->failed != TUTTI_OK)
        return;
    if (st == TUTTI_OK)
        st = tutti__instance_setup(g, inst, d);
    else
        tutti__error(st, "resolve", "%s", d->detail);
    if (d->status == TUTTI_ERR_TIMEOUT)
        dump_flight(g, d->detail);
    if (inst->tl_seq != 0)
        tutti__timeline_resolve_end(g->tl, inst->tl_seq, st,
                                    st == TUTTI_OK ? inst->algorithm : NULL);
    if (st == TUTTI_OK) {
        inst->resolved = 1;
        tutti__request_resolved(g, inst);
        return;
    }
    inst->failed = st;
    free(inst->failure);
    inst->failure = strdup(tutti_last_error());
    tutti_request_t *r = inst->ready;
    if (r != NULL) {
        tutti__request_list_remove(&g->ready, r);
        inst->ready = NULL;
        tutti__request_complete(r, st);
    }
}

static void take_decisions(tutti_group_t *g)
{
    tutti__decision_t *d = tutti__member_take(g->job, &g->member);
    while (d) {
        tutti__decision_t *next = d->next;
        apply_decision(g, d);
        free(d);
        d = next;
    }
}

/* Fails every execution of @p g not yet complete with @p st and @p text;
 * later calls are refused with them too. */
static void fail_group(tutti_group_t *g, tutti_status_t st, const char *text)
{
    int first = g->failed == TUTTI_OK;
    if (first) {
        dump_flight(g, text);
        g->failed = st;
        snprintf(g->failure, sizeof(g->failure), "%s", text);
        tutti__group_abort_modules(g, text);
    }
    for (;;) {
        tutti_request_t *r = g->active.head ? g->active.head : g->ready.head;
        /* Executions of unresolved instances wait off the ready list, on
         * the issue-order list. */
        for (tutti_request_t *x = g->order_head; r == NULL && x;
             x = x->order_next)
            if (x->inst->ready == x)
                r = x;
        if (r == NULL)
            break;
        tutti__request_list_remove(
            r == g->active.head ? &g->active : &g->ready, r);
        if (r->inst->ready == r)
            r->inst->ready = NULL;
        tutti__error_quiet(st, "%s", text);
        tutti__request_complete(r,
                                st); /* may promote the next: failed in turn */
    }
    /* The timeline so far, with the failed executions, in case the task
     * does not live to leave the group. */
    if (first && g->tl != NULL)
        tutti__timeline_flush(g->tl);
}

/* Abort, or a member's task gone: fail the group once, naming why. */
void tutti__group_check_health(tutti_group_t *g)
{
    tutti__job_t *job = g->job;
    char text[512];
    int epoch = atomic_load_explicit(&job->health_epoch, memory_order_acquire);
    if (epoch == g->health_seen)
        return;
    g->health_seen = epoch;
    if (job->abort_status != TUTTI_OK) {
        snprintf(text, sizeof(text), "group 0x%llx: %.440s",
                 (unsigned long long)g->key, job->abort_reason);
        fail_group(g, job->abort_status, text);
        return;
    }
    for (int r = 0; r < g->size; r++) {
        int t = g->rank_task[r];
        if (!atomic_load_explicit(&job->task_dead[t], memory_order_relaxed))
            continue;
        snprintf(text, sizeof(text), "group 0x%llx rank %d: task %d (rank "
                 "%d) is gone: its process exited or was killed",
                 (unsigned long long)g->key, g->rank, t, r);
        fail_group(g, TUTTI_ERR_PEER, text);
        return;
    }
}

/* Executions a pass advances besides its caller's: every one while no
 * more are in flight, else this many, from where the last pass stopped.
 * A pass then costs the same at 10 or 10,000 in flight, and each
 * execution is still advanced at least every (in flight / SWEEP) passes;
 * one its caller waits for is advanced on every pass. */
#define SWEEP 8

/* Advances @p r, launched; returns 1 if it ended. */
static int advance(tutti_group_t *g, tutti_request_t *r)
{
    const tutti_alg_ops_t *ops = r->inst->impl->impl->ops;
    tutti_status_t st = r->inst->mode == TUTTI__MODE_HOST
                            ? ops->progress(r->inst->state, &r->exec)
                            : tutti__cuda_progress(r);
    if (st == TUTTI_INPROGRESS)
        return 0;
    tutti__request_list_remove(&g->active, r);
    tutti__request_complete(r, st);
    return 1;
}

/* Advances up to SWEEP executions of the active list (all with @p full),
 * from the head when they all fit, else from the cursor, round the list.
 * A completion's callback may issue or end others: the cursor stays on
 * the list (removal moves it on), and the visits are counted up front. */
static int sweep(tutti_group_t *g, int full)
{
    tutti__req_list_t *l = &g->active;
    size_t visits = l->count;
    int moved = 0;
    if (!full && visits > SWEEP)
        visits = SWEEP;
    else
        l->cursor = NULL;
    while (visits-- > 0 && l->head != NULL) {
        tutti_request_t *r = l->cursor ? l->cursor : l->head;
        l->cursor = r->next;
        moved += advance(g, r);
    }
    return moved;
}

int tutti__group_progress(tutti_group_t *g, tutti_request_t *focus, int full)
{
    int moved = 0;
    if (atomic_load_explicit(&g->job->health_epoch, memory_order_relaxed) !=
        g->health_seen) {
        tutti__group_check_health(g);
        moved++;
    }
    if (atomic_load_explicit(&g->member.has_decisions,
                             memory_order_acquire)) {
        take_decisions(g);
        moved++;
    }
    if (g->ready.head != NULL)
        moved += tutti__request_launch_ready(g);
    if (g->peers.ep != NULL) {
        int n = g->peers.tp->progress(g->peers.ep);
        moved += n > 0 ? n : 0;
    }
    /* Launched and listed: on the active list. */
    if (focus != NULL && focus->launch_order != 0 && focus->listed &&
        focus->status == TUTTI_INPROGRESS)
        moved += advance(g, focus);
    moved += sweep(g, full);
    if (moved && g->ready.head != NULL)
        moved += tutti__request_launch_ready(g);
    return moved;
}

/* Makes a failed request's detail the thread's last error. */
tutti_status_t tutti__request_status(const tutti_request_t *r)
{
    if (r->status != TUTTI_OK && r->status != TUTTI_INPROGRESS)
        tutti__error_quiet(r->status, "%s", tutti__request_error(r));
    return r->status;
}

tutti_status_t tutti_request_test(tutti_request_t *r)
{
    tutti_status_t st = tutti__request_check(r, "tutti_request_test");
    if (st != TUTTI_OK)
        return st;
    if (r->status == TUTTI_INPROGRESS)
        tutti__group_progress(r->group, r, 0);
    return tutti__request_status(r);
}

/* Fails every execution in flight on @p g with TUTTI_ERR_TIMEOUT. */
static void group_time_out(tutti_group_t *g, double idle)
{
    char why[160];
    snprintf(why, sizeof(why), "no progress for %.1f s (time limit %.1f s)",
             idle, g->timeout);
    if (g->active.head != NULL)
        dump_flight(g, why);
    while (g->active.head != NULL) {
        tutti_request_t *r = g->active.head;
        char waiting[128], taking[128], who[300];
        tutti__request_list_remove(&g->active, r);
        int n = rank_list(r, RANKS_AWAITED, waiting, sizeof(waiting));
        int m = rank_list(r, RANKS_NOT_TAKING, taking, sizeof(taking));
        snprintf(who, sizeof(who), "%s%s%s%s%s%s",
                 n ? (n == 1 ? "waiting for rank " : "waiting for ranks ")
                   : "",
                 n ? waiting : "", n && m ? "; " : "",
                 m ? (m == 1 ? "its sends to rank " : "its sends to ranks ")
                   : "",
                 m ? taking : "", m ? " not taken" : "");
        tutti__error(TUTTI_ERR_TIMEOUT, "exec",
                     "group 0x%llx rank %d: instance 0x%llx step %llu (%s) "
                     "made no progress for %.1f s; %s",
                     (unsigned long long)g->key, g->rank,
                     (unsigned long long)r->inst->params.instance_key,
                     (unsigned long long)r->exec.step, r->inst->algorithm,
                     idle, n || m ? who : "waiting for no transfer of its "
                     "own (the implementation's progress stalled)");
        tutti__request_complete(r, TUTTI_ERR_TIMEOUT);
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
        tutti__member_timeout(g->job, &g->member, inst->params.instance_key);
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
        const tutti__instance_t *dep = tutti__instance_find(g, r->wait_for[i]);
        if (dep == NULL || dep->launched_through <= r->exec.step)
            missing = r->wait_for[i];
    }
    tutti__request_list_remove(&g->ready, r);
    r->inst->ready = NULL;
    tutti__error(TUTTI_ERR_TIMEOUT, "exec", "group 0x%llx rank %d: instance "
                 "0x%llx step %llu waited %.1f s for instance 0x%llx to "
                 "launch its step %llu on this member",
                 (unsigned long long)g->key, g->rank,
                 (unsigned long long)r->inst->params.instance_key,
                 (unsigned long long)r->exec.step, r->timeout,
                 (unsigned long long)missing,
                 (unsigned long long)r->exec.step);
    tutti__request_complete(r, TUTTI_ERR_TIMEOUT);
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
        tutti__job_poll(g->job); /* its answer may be on the way */
    if (tutti__group_progress(g, r, 0) > 0) {
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
     * the clock.  Where the host has more members than processors and the
     * transport can wake this one, a wait idle for a millisecond (one that
     * only peers can end) sleeps until a peer's data comes, so it no
     * longer takes a processor's time from the members that have work.
     * Not sooner: on a 2-core VM waking a sleeper took about 15 us, and 8
     * B allreduces at 4 members took 17 us sleeping after 1 poll against
     * 4-5 yielding (bench/NOTES.md). */
    if (w->idle == g->spin_limit) {
        w->idle_since = tutti__now();
        sched_yield();
        return;
    }
    double idle = tutti__now() - w->idle_since;
    if (!g->sleeps || idle < TUTTI__SLEEP_AFTER || r->launch_order == 0 ||
        !r->inst->resolved ||
        g->peers.tp->sleep(g->peers.ep, TUTTI__SLEEP_MAX) < 0)
        sched_yield();
    if (idle > r->timeout) {
        /* Before failing anything, a pass over every execution. */
        if (tutti__group_progress(g, r, 1) > 0)
            w->idle = 0;
        else
            request_time_out(r, tutti__now() - w->idle_since);
    }
}

tutti_status_t tutti_request_wait(tutti_request_t *r)
{
    tutti_status_t st = tutti__request_check(r, "tutti_request_wait");
    if (st != TUTTI_OK)
        return st;
    /* A small execution often completed in tutti_execute: then no wait
     * state is set up. */
    if (r->status != TUTTI_INPROGRESS)
        return tutti__request_status(r);
    wait_state_t w = {0, 0};
    while (r->status == TUTTI_INPROGRESS)
        wait_step(r, &w);
    return tutti__request_status(r);
}

tutti_status_t tutti_request_wait_for(tutti_request_t *r, double timeout)
{
    tutti_status_t st = tutti__request_check(r, "tutti_request_wait_for");
    if (st != TUTTI_OK)
        return st;
    if (!(timeout >= 0))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_request_"
                            "wait_for: timeout is %g: expected seconds >= 0",
                            timeout);
    /* The idle count lives in the request, so that a caller waiting in
     * slices (checking for signals between them) meets the execution's
     * time limit as one long wait would. */
    wait_state_t w = {r->wait_idle, r->wait_idle_since};
    double deadline = tutti__now() + timeout;
    unsigned rounds = 0;
    while (r->status == TUTTI_INPROGRESS) {
        wait_step(r, &w);
        /* The clock read each round once idle (a yield or a sleep is
         * dearer), each 64th while spinning. */
        if ((w.idle >= r->group->spin_limit || (++rounds & 63) == 0) &&
            tutti__now() >= deadline)
            break;
    }
    r->wait_idle = w.idle;
    r->wait_idle_since = w.idle_since;
    return r->status == TUTTI_INPROGRESS ? TUTTI_INPROGRESS
                                         : tutti__request_status(r);
}

tutti_status_t tutti_request_wait_all(tutti_request_t *const *requests,
                                      size_t n)
{
    tutti_status_t first = TUTTI_OK;
    if (n > 0 && requests == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_request_"
                            "wait_all: requests is NULL (n %zu)", n);
    for (size_t i = 0; i < n; i++) {
        if (requests[i] != NULL &&
            requests[i]->state == TUTTI__HANDLE_LIVE)
            continue;
        char call[64];
        snprintf(call, sizeof(call), "tutti_request_wait_all: requests[%zu]",
                 i);
        if ((first = tutti__request_check(requests[i], call)) != TUTTI_OK)
            return first;
    }
    for (size_t i = 0; i < n; i++) {
        tutti_status_t st = tutti_request_wait(requests[i]);
        if (first == TUTTI_OK)
            first = st;
    }
    for (size_t i = 0; first != TUTTI_OK && i < n; i++) {
        if (requests[i]->status == first)
            return tutti__request_status(requests[i]);
    }
    return first;
}

tutti_status_t tutti_request_wait_any(tutti_request_t *const *requests,
                                      size_t n, size_t *index_out)
{
    wait_state_t w[TUTTI_MAX_WAIT_ANY] = {{0, 0}};
    if (n == 0 || n > TUTTI_MAX_WAIT_ANY)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_request_"
                            "wait_any: n is %zu: expected 1..%d requests", n,
                            TUTTI_MAX_WAIT_ANY);
    if (requests == NULL || index_out == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "tutti_request_"
                            "wait_any: %s is NULL",
                            requests ? "index_out" : "requests");
    for (size_t i = 0; i < n; i++) {
        if (requests[i] != NULL &&
            requests[i]->state == TUTTI__HANDLE_LIVE)
            continue;
        char call[64];
        snprintf(call, sizeof(call), "tutti_request_wait_any: requests[%zu]",
                 i);
        tutti_status_t st = tutti__request_check(requests[i], call);
        if (st != TUTTI_OK)
            return st;
    }
    for (;;) {
        for (size_t i = 0; i < n; i++) {
            if (requests[i]->status != TUTTI_INPROGRESS) {
                *index_out = i;
                return tutti__request_status(requests[i]);
            }
        }
        for (size_t i = 0; i < n; i++)
            wait_step(requests[i], &w[i]);
    }
}
