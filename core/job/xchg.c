/*
 * Addresses traded through the control plane: a transport that cannot
 * find its peers by itself (ucx: a worker's address is bytes its library
 * makes) hands the core its own, and each served peer's task gets an XCHG
 * frame with it, member to member, no coordinator between.  A frame may
 * come before its receiver connects: it waits in the job's list, taken
 * by the exchange it belongs to (group key, transport, both ranks).  The
 * sending task must be the one the group says runs the sender's rank, so
 * that one task cannot speak for another's member.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "job/xchg.h"

#define XCHG_WHAT_MAX 16
#define XCHG_PENDING_MAX 4096 /* frames held for exchanges not yet made */

typedef struct {
    uint64_t group_key;
    char what[XCHG_WHAT_MAX];
    int32_t from_rank, to_rank;
    uint32_t len, reserved;
    unsigned char data[TUTTI_TP_EXCHANGE_MAX];
} xchg_payload_t;

_Static_assert(sizeof(xchg_payload_t) <= TUTTI_CTRL_PAYLOAD,
               "an address fits one control frame");

struct tutti__xchg_item {
    struct tutti__xchg_item *next;
    uint64_t group_key;
    char what[XCHG_WHAT_MAX];
    int from_task, from_rank, to_rank;
    uint32_t len;
    unsigned char data[];
};

static int pending(const tutti__job_t *job)
{
    int n = 0;
    for (const struct tutti__xchg_item *i = job->xchg; i; i = i->next)
        n++;
    return n;
}

static void xchg_frame(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    const xchg_payload_t *p = (const xchg_payload_t *)msg->payload;
    if (msg->len < offsetof(xchg_payload_t, data) ||
        p->len > TUTTI_TP_EXCHANGE_MAX ||
        msg->len < offsetof(xchg_payload_t, data) + p->len ||
        p->from_rank < 0 || p->to_rank < 0 ||
        memchr(p->what, '\0', sizeof(p->what)) == NULL) {
        tutti__log(TUTTI_LOG_ERROR, "xchg", "control frame XCHG from task "
                   "%d dropped: malformed (payload of %u bytes, address "
                   "of %u, at most %d)", msg->from_task, msg->len, p->len,
                   TUTTI_TP_EXCHANGE_MAX);
        return;
    }
    if (pending(job) >= XCHG_PENDING_MAX) {
        tutti__log(TUTTI_LOG_ERROR, "xchg", "control frame XCHG from task "
                   "%d dropped: %d addresses already wait for exchanges "
                   "not made", msg->from_task, XCHG_PENDING_MAX);
        return;
    }
    struct tutti__xchg_item *it = malloc(sizeof(*it) + p->len);
    if (it == NULL) {
        tutti__log(TUTTI_LOG_ERROR, "xchg", "control frame XCHG from task "
                   "%d dropped: no memory", msg->from_task);
        return;
    }
    it->group_key = p->group_key;
    memcpy(it->what, p->what, sizeof(it->what));
    it->from_task = msg->from_task;
    it->from_rank = p->from_rank;
    it->to_rank = p->to_rank;
    it->len = p->len;
    memcpy(it->data, p->data, p->len);
    it->next = job->xchg;
    job->xchg = it;
    tutti__job_wake(job);
}

void tutti__xchg_init(tutti__job_t *job)
{
    tutti__job_on(job, TUTTI_CTRL_XCHG, xchg_frame);
}

void tutti__xchg_fini(tutti__job_t *job)
{
    while (job->xchg != NULL) {
        struct tutti__xchg_item *it = job->xchg;
        job->xchg = it->next;
        free(it);
    }
}

static int served(const tutti_tp_group_t *g, int r)
{
    return r != g->rank && (g->serve == NULL || g->serve[r]);
}

/* Takes the addresses of @p g that came, into @p peers; returns how many
 * served peers still owe theirs.  Lock held. */
static int take(tutti__job_t *job, const tutti_tp_group_t *g,
                const char *what, unsigned char *got, void *peers,
                size_t stride, size_t *lens)
{
    struct tutti__xchg_item **pp = &job->xchg;
    while (*pp != NULL) {
        struct tutti__xchg_item *it = *pp;
        int r = it->from_rank;
        if (it->group_key != g->group_key || it->to_rank != g->rank ||
            strcmp(it->what, what) != 0 || r >= g->group_size ||
            !served(g, r) || got[r]) {
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        if (it->from_task != g->rank_task[r]) {
            tutti__log(TUTTI_LOG_ERROR, "xchg", "group 0x%llx rank %d: "
                       "%s address of rank %d dropped: it came from task "
                       "%d, and rank %d is task %d's",
                       (unsigned long long)g->group_key, g->rank, what, r,
                       it->from_task, r, g->rank_task[r]);
        } else if (it->len > stride) {
            tutti__log(TUTTI_LOG_ERROR, "xchg", "group 0x%llx rank %d: "
                       "%s address of rank %d dropped: %u bytes, the "
                       "transport takes at most %zu",
                       (unsigned long long)g->group_key, g->rank, what, r,
                       it->len, stride);
        } else {
            memcpy((unsigned char *)peers + (size_t)r * stride, it->data,
                   it->len);
            lens[r] = it->len;
            got[r] = 1;
        }
        free(it);
    }
    int owed = 0;
    for (int r = 0; r < g->group_size; r++)
        owed += served(g, r) && !got[r];
    return owed;
}

/* Why the exchange cannot finish: an abort, or a served peer's task gone;
 * TUTTI_OK if it may. */
static tutti_status_t cannot_finish(const tutti__job_t *job,
                                    const tutti_tp_group_t *g,
                                    const char *what)
{
    if (job->abort_status != TUTTI_OK)
        return tutti__error(job->abort_status, "xchg", "group 0x%llx rank "
                            "%d: %s addresses: %s",
                            (unsigned long long)g->group_key, g->rank, what,
                            job->abort_reason);
    for (int r = 0; r < g->group_size; r++)
        if (served(g, r) &&
            atomic_load_explicit(&job->task_dead[g->rank_task[r]],
                                 memory_order_relaxed))
            return tutti__error(TUTTI_ERR_PEER, "xchg", "group 0x%llx rank "
                                "%d: %s addresses: rank %d's task %d is "
                                "gone: its process exited or was killed",
                                (unsigned long long)g->group_key, g->rank,
                                what, r, g->rank_task[r]);
    return TUTTI_OK;
}

/* "1, 3, 5" of the served ranks not in @p got, at most a few. */
static void owed_list(const tutti_tp_group_t *g, const unsigned char *got,
                      char *buf, size_t len)
{
    size_t at = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int r = 0; r < g->group_size && at + 16 < len; r++) {
        if (!served(g, r) || got[r])
            continue;
        if (shown++ == 8) {
            snprintf(buf + at, len - at, ", ...");
            return;
        }
        at += (size_t)snprintf(buf + at, len - at, "%s%d",
                               shown > 1 ? ", " : "", r);
    }
}

tutti_status_t tutti__xchg(tutti__job_t *job, const tutti_tp_group_t *g,
                           const char *what, const void *mine, size_t len,
                           void *peers, size_t stride, size_t *lens)
{
    unsigned long long gk = (unsigned long long)g->group_key;
    if (len > TUTTI_TP_EXCHANGE_MAX || strlen(what) >= XCHG_WHAT_MAX)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "xchg", "group 0x%llx "
                            "rank %d: an address of %zu bytes named '%s'; "
                            "expected at most %d bytes and a name of at "
                            "most %d characters", gk, g->rank, len, what,
                            TUTTI_TP_EXCHANGE_MAX, XCHG_WHAT_MAX - 1);
    unsigned char *got = calloc((size_t)g->group_size, 1);
    tutti__ctrl_msg_t *m = malloc(sizeof(*m));
    if (got == NULL || m == NULL) {
        free(got);
        free(m);
        return tutti__error(TUTTI_ERR_NO_MEMORY, "xchg", "no memory to "
                            "trade addresses");
    }
    memset(lens, 0, (size_t)g->group_size * sizeof(*lens));
    tutti__job_msg_init(m, TUTTI_CTRL_XCHG, g->group_key, 0, -1);
    xchg_payload_t *p = (xchg_payload_t *)m->payload;
    memset(p, 0, offsetof(xchg_payload_t, data));
    p->group_key = g->group_key;
    snprintf(p->what, sizeof(p->what), "%s", what);
    p->from_rank = g->rank;
    p->len = (uint32_t)len;
    memcpy(p->data, mine, len);
    m->len = (uint32_t)(offsetof(xchg_payload_t, data) + len);

    tutti_status_t st = TUTTI_OK;
    struct timespec until;
    tutti__job_deadline(&until, g->timeout);
    pthread_mutex_lock(&job->lock);
    for (int r = 0; r < g->group_size && st == TUTTI_OK; r++) {
        if (!served(g, r))
            continue;
        p->to_rank = r;
        st = tutti__job_send(job, g->rank_task[r], m);
    }
    if (st != TUTTI_OK)
        st = tutti__error(st, "xchg", "group 0x%llx rank %d: its %s "
                          "address could not be sent", gk, g->rank, what);
    int owed = 1;
    while (st == TUTTI_OK &&
           (owed = take(job, g, what, got, peers, stride, lens)) > 0 &&
           (st = cannot_finish(job, g, what)) == TUTTI_OK &&
           tutti__job_wait(job, &until) == 0)
        ;
    if (st == TUTTI_OK && owed > 0)
        owed = take(job, g, what, got, peers, stride, lens);
    if (st == TUTTI_OK && owed > 0) {
        char ranks[128];
        owed_list(g, got, ranks, sizeof(ranks));
        st = tutti__error(TUTTI_ERR_TIMEOUT, "xchg", "group 0x%llx rank "
                          "%d: no %s address from rank(s) %s within %.1f s "
                          "(timeout); expected every served peer to "
                          "connect", gk, g->rank, what, ranks, g->timeout);
    }
    pthread_mutex_unlock(&job->lock);
    free(got);
    free(m);
    return st;
}
