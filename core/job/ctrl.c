/* Control plane: fixed frames over the process transport. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "job/ctrl.h"
#include "plugin/services.h"

/* Reserved keys: no host group or instance uses them (helper instance keys
 * have the top bit set and differ from this one). */
#define CTRL_GROUP_KEY 0xc0c0c0c0c0c0c0c0ULL
#define CTRL_INSTANCE 0xc7c7c7c7c7c7c7c7ULL

typedef struct send_rec {
    tutti_tp_op_t op;
    tutti__ctrl_msg_t msg;
    struct send_rec *next;
} send_rec_t;

typedef struct {
    tutti_tp_op_t op;
    tutti__ctrl_msg_t msg;
    uint32_t seq;             /* next sequence number expected */
} recv_slot_t;

struct tutti__ctrl {
    tutti__ctrl_params_t p;       /* task, num_tasks, lock, handler... */
    const tutti_tp_ops_t *tp;
    tutti_tp_ep_t *ep;
    int *task_ids;
    int *task_host;           /* for the transports' reachable() */
    uint32_t *out_seq;        /* per destination task */
    recv_slot_t *in;          /* one posted receive per source task */
    send_rec_t *sending;      /* frames in flight */
    pthread_t thread;
    int running;
    atomic_int stop;
    unsigned char *dead;      /* tasks already reported gone */
    double next_health;       /* when to look at the peers again */
};

#define HEALTH_PERIOD 0.25 /* seconds between liveness checks */

/* Reports each task whose process is gone, once. */
static void check_peers(tutti__ctrl_t *c)
{
    double now = tutti__now();
    if (c->tp->peer_alive == NULL || now < c->next_health)
        return;
    c->next_health = now + HEALTH_PERIOD;
    for (int t = 0; t < c->p.num_tasks; t++) {
        if (t == c->p.task || c->dead[t] || c->tp->peer_alive(c->ep, t))
            continue;
        c->dead[t] = 1;
        tutti__ctrl_msg_t m;
        memset(&m, 0, offsetof(tutti__ctrl_msg_t, payload));
        m.type = TUTTI_CTRL_TASK_DEAD;
        m.from_task = t;
        m.device_index = -1;
        c->p.handle(c->p.arg, &m);
    }
}

static const char *const type_names[TUTTI_CTRL_TYPES] = {
    [TUTTI_CTRL_JOIN] = "JOIN",
    [TUTTI_CTRL_JOIN_CANCEL] = "JOIN_CANCEL",
    [TUTTI_CTRL_GROUP] = "GROUP",
    [TUTTI_CTRL_GROUP_ERR] = "GROUP_ERR",
    [TUTTI_CTRL_INST] = "INST",
    [TUTTI_CTRL_INST_OK] = "INST_OK",
    [TUTTI_CTRL_INST_ERR] = "INST_ERR",
    [TUTTI_CTRL_INST_TIMEOUT] = "INST_TIMEOUT",
    [TUTTI_CTRL_ABORT] = "ABORT",
    [TUTTI_CTRL_TASK_DEAD] = "TASK_DEAD",
    [TUTTI_CTRL_BYE] = "BYE",
    [TUTTI_CTRL_SUM] = "SUM",
    [TUTTI_CTRL_SUM_DONE] = "SUM_DONE",
    [TUTTI_CTRL_XCHG] = "XCHG",
};

const char *tutti__ctrl_type_name(uint32_t type)
{
    return type < TUTTI_CTRL_TYPES ? type_names[type] : NULL;
}

/* Who may send a frame of @p type, and to whom: the coordinator's answers
 * come from it alone, the members' requests go to it alone. */
static int from_coordinator_only(uint32_t type)
{
    return type == TUTTI_CTRL_GROUP || type == TUTTI_CTRL_GROUP_ERR ||
           type == TUTTI_CTRL_INST_OK || type == TUTTI_CTRL_INST_ERR ||
           type == TUTTI_CTRL_SUM_DONE;
}

static int to_coordinator_only(uint32_t type)
{
    return type == TUTTI_CTRL_JOIN || type == TUTTI_CTRL_JOIN_CANCEL ||
           type == TUTTI_CTRL_INST || type == TUTTI_CTRL_INST_TIMEOUT ||
           type == TUTTI_CTRL_SUM;
}

int tutti__ctrl_accept(tutti__ctrl_msg_t *msg, int from, int task,
                       int num_tasks, char *why, size_t len)
{
    const char *name = tutti__ctrl_type_name(msg->type);
    /* The connection names the sender, whatever the frame says. */
    msg->from_task = from;
    if (from < 0 || from >= num_tasks) {
        snprintf(why, len, "control frame from task %d dropped: expected a "
                 "task of 0..%d", from, num_tasks - 1);
        return 0;
    }
    if (name == NULL || msg->type == TUTTI_CTRL_TASK_DEAD) {
        snprintf(why, len, "control frame from task %d dropped: type %u is "
                 "not one a task sends", from, msg->type);
        return 0;
    }
    if (msg->len > TUTTI_CTRL_PAYLOAD) {
        snprintf(why, len, "control frame %s from task %d dropped: payload "
                 "of %u bytes, at most %d", name, from, msg->len,
                 TUTTI_CTRL_PAYLOAD);
        return 0;
    }
    if (from_coordinator_only(msg->type) && from != TUTTI__COORDINATOR_TASK) {
        snprintf(why, len, "control frame %s from task %d dropped: only "
                 "task %d (the coordinator) sends it", name, from,
                 TUTTI__COORDINATOR_TASK);
        return 0;
    }
    if (to_coordinator_only(msg->type) && task != TUTTI__COORDINATOR_TASK) {
        snprintf(why, len, "control frame %s from task %d dropped: only "
                 "task %d (the coordinator) takes it, this is task %d", name,
                 from, TUTTI__COORDINATOR_TASK, task);
        return 0;
    }
    /* Handlers read the payload as a struct: what the sender left unused
     * reads as zeros, never as a previous frame's bytes. */
    memset(msg->payload + msg->len, 0, TUTTI_CTRL_PAYLOAD - msg->len);
    return 1;
}

/* An op's status as its transport last stored it: a transport with a
 * thread of its own (tcp) stores it with release, after the bytes. */
static tutti_status_t op_status(const tutti_tp_op_t *op)
{
    return __atomic_load_n(&op->status, __ATOMIC_ACQUIRE);
}

static tutti_status_t post_recv(tutti__ctrl_t *c, int task)
{
    recv_slot_t *r = &c->in[task];
    memset(&r->op, 0, sizeof(r->op));
    r->op.key = (tutti_wire_key_t){CTRL_INSTANCE, r->seq, 0};
    r->op.peer = task;
    r->op.rbuf = &r->msg;
    r->op.len = sizeof(r->msg);
    return c->tp->recv(c->ep, &r->op);
}

/* Frees frames whose sends completed; returns how many. */
static int reap_sends(tutti__ctrl_t *c)
{
    int n = 0;
    send_rec_t **pp = &c->sending;
    while (*pp) {
        send_rec_t *s = *pp;
        tutti_status_t st = op_status(&s->op);
        if (st == TUTTI_INPROGRESS) {
            pp = &s->next;
            continue;
        }
        if (st != TUTTI_OK)
            tutti__log(TUTTI_LOG_ERROR, "ctrl", "control frame to task %d "
                       "failed: %s", s->op.peer, tutti_strerror(st));
        *pp = s->next;
        free(s);
        n++;
    }
    return n;
}

/* No more frames can come from @p task: nothing this task waits for from
 * it would ever arrive, so the context fails at once, saying why. */
static void lost_peer(tutti__ctrl_t *c, int task, tutti_status_t st)
{
    tutti__ctrl_msg_t m;
    memset(&m, 0, offsetof(tutti__ctrl_msg_t, payload));
    m.type = TUTTI_CTRL_ABORT;
    m.from_task = c->p.task;
    m.device_index = -1;
    snprintf(m.payload, sizeof(m.payload), "task %d: the control plane "
             "cannot receive from task %d any more: %s", c->p.task, task,
             tutti_strerror(st));
    m.len = (uint32_t)strlen(m.payload) + 1;
    c->p.handle(c->p.arg, &m);
}

/* One pass: move frames, hand complete ones to the resolver. */
static int ctrl_progress(tutti__ctrl_t *c)
{
    int n = c->tp->progress(c->ep);
    for (int t = 0; t < c->p.num_tasks; t++) {
        recv_slot_t *r = &c->in[t];
        tutti_status_t done = t == c->p.task ? TUTTI_INPROGRESS
                                              : op_status(&r->op);
        if (done == TUTTI_INPROGRESS)
            continue;
        char why[200];
        if (done == TUTTI_OK &&
            tutti__ctrl_accept(&r->msg, t, c->p.task, c->p.num_tasks, why,
                               sizeof(why)))
            c->p.handle(c->p.arg, &r->msg);
        else if (done == TUTTI_OK)
            tutti__log(TUTTI_LOG_ERROR, "ctrl", "%s", why);
        else
            tutti__log(TUTTI_LOG_ERROR, "ctrl", "control frame from task %d "
                       "failed: %s", t, tutti_strerror(done));
        r->seq++;
        tutti_status_t st = post_recv(c, t);
        if (st != TUTTI_OK)
            lost_peer(c, t, st);
        n++;
    }
    return n + reap_sends(c);
}

static void *ctrl_main(void *arg)
{
    tutti__ctrl_t *c = arg;
    unsigned quiet = 0;
    tutti__log_set_task(c->p.task);
    while (!atomic_load_explicit(&c->stop, memory_order_acquire)) {
        pthread_mutex_lock(c->p.lock);
        int n = ctrl_progress(c);
        check_peers(c);
        pthread_mutex_unlock(c->p.lock);
        /* Threads that wait for a resolution drive the control plane
         * themselves (tutti__ctrl_poll); this thread serves the rest (the
         * coordinator's work, liveness) and must not steal the data path's
         * cores: a little faster for 2 ms after traffic, then 1 ms. */
        quiet = n > 0 ? 0 : quiet + 1;
        struct timespec nap = {0, quiet < 20 ? 100000 : 1000000};
        nanosleep(&nap, NULL);
    }
    return NULL;
}

int tutti__ctrl_poll(tutti__ctrl_t *c)
{
    int n = 0;
    if (c->ep == NULL || pthread_mutex_trylock(c->p.lock) != 0)
        return 0;
    n = ctrl_progress(c);
    pthread_mutex_unlock(c->p.lock);
    return n;
}

tutti_status_t tutti__ctrl_start(const tutti__ctrl_params_t *params,
                                 tutti__ctrl_t **ctrl_out)
{
    tutti_status_t st = TUTTI_ERR_NO_MEMORY;
    tutti__ctrl_t *c = calloc(1, sizeof(*c));
    int n = params->num_tasks;

    if (c == NULL)
        return st;
    c->p = *params;
    c->tp = &tutti__tp_mux_ops;
    c->task_ids = malloc((size_t)n * sizeof(int));
    c->task_host = malloc((size_t)n * sizeof(int));
    c->out_seq = calloc((size_t)n, sizeof(uint32_t));
    c->in = calloc((size_t)n, sizeof(recv_slot_t));
    c->dead = calloc((size_t)n, 1);
    if (c->task_ids == NULL || c->task_host == NULL || c->out_seq == NULL ||
        c->in == NULL ||
        c->dead == NULL)
        goto err_free;
    for (int t = 0; t < n; t++)
        c->task_ids[t] = t;
    if (n > 1) {
        /* Which tasks share a host is learnt later, over this plane.  When
         * the launcher says not every task is on this host, each task
         * counts as a host of its own here, so the control plane uses a
         * transport that reaches any host (shm then serves data groups
         * only, where the hosts are known). */
        int split = c->p.local_num_tasks >= 0 && c->p.local_num_tasks < n;
        for (int t = 0; t < n; t++)
            c->task_host[t] = split ? t : 0;
        /* Control frames are tagged wherever they cross a network (the
         * coordinator's tables and answers must reach the members as it
         * sent them). */
        tutti_tp_group_t tg = {sizeof(tg), c->p.job_id, CTRL_GROUP_KEY,
                               c->p.task, n, c->task_ids, c->p.task,
                               c->p.timeout, c->p.config, 8, 4096,
                               &tutti__tp_core_ops, NULL, c->task_host,
                               NULL, TUTTI_TP_VERIFY_MAC, 0, c->p.store,
                               c->p.secret, NULL};
        if ((st = tutti__tp_mux_connect(c->p.transports, &tg, &c->tp,
                                        &c->ep)) != TUTTI_OK)
            goto err_free;
        for (int t = 0; t < n; t++) {
            if (t != c->p.task && (st = post_recv(c, t)) != TUTTI_OK)
                goto err_free;
        }
        /* Published before the thread starts: the frames it dispatches
         * at once (the coordinator's answers) are sent through it, and
         * were refused ("the control plane is not running") while the
         * thread ran ahead of this line. */
        c->running = 1;
        *ctrl_out = c;
        if (pthread_create(&c->thread, NULL, ctrl_main, c) != 0) {
            c->running = 0;
            *ctrl_out = NULL;
            st = tutti__error(TUTTI_ERR_INTERNAL, "ctrl", "cannot start the "
                              "control thread");
            goto err_free;
        }
    } else {
        *ctrl_out = c; /* no thread: a job of one task */
    }
    return TUTTI_OK;

err_free:
    tutti__ctrl_stop(c);
    return st;
}

void tutti__ctrl_stop(tutti__ctrl_t *c)
{
    if (c == NULL)
        return;
    if (c->running) {
        atomic_store_explicit(&c->stop, 1, memory_order_release);
        pthread_join(c->thread, NULL);
    }
    if (c->ep) {
        /* Let frames in flight reach their tasks before the channels go. */
        double until = tutti__now() + 1.0;
        while (c->sending && tutti__now() < until) {
            c->tp->progress(c->ep);
            reap_sends(c);
        }
        c->tp->disconnect(c->ep);
    }
    while (c->sending) {
        send_rec_t *next = c->sending->next;
        free(c->sending);
        c->sending = next;
    }
    free(c->task_ids);
    free(c->task_host);
    free(c->out_seq);
    free(c->in);
    free(c->dead);
    free(c);
}

tutti_status_t tutti__ctrl_broadcast(tutti__ctrl_t *c, tutti__ctrl_msg_t *msg)
{
    tutti_status_t first = TUTTI_OK;
    for (int t = 0; t < c->p.num_tasks; t++) {
        if (t == c->p.task || c->dead[t])
            continue;
        tutti_status_t st = tutti__ctrl_send(c, t, msg);
        if (first == TUTTI_OK)
            first = st;
    }
    return first;
}

tutti_status_t tutti__ctrl_send(tutti__ctrl_t *c, int task,
                                tutti__ctrl_msg_t *msg)
{
    msg->from_task = c->p.task;
    if (task == c->p.task) {
        c->p.handle(c->p.arg, msg);
        return TUTTI_OK;
    }
    send_rec_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return TUTTI_ERR_NO_MEMORY;
    /* The header and the payload's len bytes: the rest of the frame
     * stays zero, so no byte of the sender's stack past len travels. */
    size_t used = offsetof(tutti__ctrl_msg_t, payload) +
                  (msg->len < sizeof(msg->payload) ? msg->len
                                                   : sizeof(msg->payload));
    memcpy(&s->msg, msg, used);
    s->op.key = (tutti_wire_key_t){CTRL_INSTANCE, c->out_seq[task]++, 0};
    s->op.peer = task;
    s->op.sbuf = &s->msg;
    s->op.len = sizeof(s->msg);
    tutti_status_t st = c->tp->send(c->ep, &s->op);
    if (st != TUTTI_OK) {
        free(s);
        return st;
    }
    s->next = c->sending;
    c->sending = s;
    return TUTTI_OK;
}
