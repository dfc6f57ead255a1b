/*
 * A sum over the tasks of a job through the control plane (see
 * tutti_context_sum() in tutti.h): every task sends its value to the
 * coordinator (task 0), which adds them and sends the total to every task.
 * No algorithm module, selection rule or data transport takes part, so
 * tools can total their checks of those without trusting them.  A task has
 * one sum in flight at a time, and a task sends its next value only after
 * it learned the previous total, which needs every task's value: so the
 * coordinator only ever adds one round.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "job/sum.h"

typedef struct {
    uint64_t seq;   /* the round, counted by every task alike */
    uint64_t value; /* a task's value, or the total */
} sum_payload_t;

static tutti_status_t send_sum(tutti__job_t *job, int task,
                               uint32_t type, uint64_t seq, uint64_t value)
{
    tutti__ctrl_msg_t m;
    memset(&m, 0, offsetof(tutti__ctrl_msg_t, payload));
    m.type = type;
    m.device_index = -1;
    sum_payload_t p = {seq, value};
    memcpy(m.payload, &p, sizeof(p));
    m.len = sizeof(p);
    if (task >= 0)
        return tutti__job_send(job, task, &m);
    tutti__job_broadcast(job, &m);
    return TUTTI_OK;
}

static void total_arrived(tutti__job_t *job, uint64_t seq, uint64_t total)
{
    tutti__job_sum_t *s = &job->sum;
    if (!s->busy || seq != s->seq)
        return; /* a waiter that gave up; its round still completed */
    s->result = total;
    s->done = 1;
    tutti__job_wake(job);
}

static void sum_frame(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    tutti__job_sum_t *s = &job->sum;
    sum_payload_t p;
    memcpy(&p, msg->payload, sizeof(p));
    if (msg->type == TUTTI_CTRL_SUM_DONE) {
        total_arrived(job, p.seq, p.value);
        return;
    }
    /* The coordinator: one round at a time (see above). */
    if (p.seq != s->coord_seq) {
        tutti__log(TUTTI_LOG_ERROR, "resolve", "task %d sent its value of "
                   "sum round %llu while round %llu is open: tasks called "
                   "tutti_context_sum a different number of times",
                   msg->from_task, (unsigned long long)p.seq,
                   (unsigned long long)s->coord_seq);
        return;
    }
    /* A round counts tasks, not frames: a task's second value would
     * complete it without another's. */
    if (s->coord_from[msg->from_task]) {
        tutti__log(TUTTI_LOG_ERROR, "resolve", "task %d sent its value of "
                   "sum round %llu a second time; dropped", msg->from_task,
                   (unsigned long long)p.seq);
        return;
    }
    s->coord_from[msg->from_task] = 1;
    s->coord_total += p.value;
    if (++s->coord_arrived < job->num_tasks)
        return;
    uint64_t total = s->coord_total;
    s->coord_seq++;
    s->coord_arrived = 0;
    s->coord_total = 0;
    memset(s->coord_from, 0, (size_t)job->num_tasks);
    send_sum(job, -1, TUTTI_CTRL_SUM_DONE, p.seq, total);
    total_arrived(job, p.seq, total);
}

void tutti__sum_init(tutti__job_t *job)
{
    tutti__job_on(job, TUTTI_CTRL_SUM, sum_frame);
    tutti__job_on(job, TUTTI_CTRL_SUM_DONE, sum_frame);
}

/* Why this task cannot expect the total: an abort, or a task gone. */
static tutti_status_t cannot_finish(const tutti__job_t *job)
{
    if (job->abort_status != TUTTI_OK)
        return tutti__error(job->abort_status, "resolve", "sum over the "
                            "job's tasks: %s", job->abort_reason);
    for (int t = 0; t < job->num_tasks; t++)
        if (atomic_load_explicit(&job->task_dead[t], memory_order_relaxed))
            return tutti__error(TUTTI_ERR_PEER, "resolve", "sum over the "
                                "job's tasks: task %d is gone: its process "
                                "exited or was killed", t);
    return TUTTI_OK;
}

tutti_status_t tutti__sum(tutti__job_t *job, uint64_t value,
                          uint64_t *sum_out)
{
    tutti__job_sum_t *s;
    struct timespec until;
    tutti_status_t st;

    s = &job->sum;
    tutti__deadline(&until, job->cfg->timeout + 1);
    pthread_mutex_lock(&job->lock);
    if (s->busy) {
        pthread_mutex_unlock(&job->lock);
        return tutti__error(TUTTI_ERR_INVALID_ARG, "resolve", "task %d: "
                            "tutti_context_sum called while another call "
                            "of it waits on this context", job->task);
    }
    s->busy = 1;
    s->done = 0;
    st = send_sum(job, TUTTI__COORDINATOR_TASK, TUTTI_CTRL_SUM, s->seq, value);
    if (st != TUTTI_OK)
        tutti__error(st, "resolve", "task %d: sum over the job's tasks: its "
                     "value could not be sent to task 0", job->task);
    while (st == TUTTI_OK && !s->done &&
           (st = cannot_finish(job)) == TUTTI_OK &&
           tutti__job_wait(job, &until) == 0)
        ;
    if (s->done)
        st = TUTTI_OK;
    else if (st == TUTTI_OK) /* the wait timed out */
        st = tutti__error(TUTTI_ERR_TIMEOUT, "resolve", "task %d: sum over "
                          "the job's %d tasks: no total within %.1f s; not "
                          "every task called tutti_context_sum", job->task,
                          job->num_tasks, job->cfg->timeout);
    s->seq++;
    s->busy = 0;
    if (st == TUTTI_OK)
        *sum_out = s->result;
    pthread_mutex_unlock(&job->lock);
    return st;
}
