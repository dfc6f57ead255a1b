/*
 * The job's health (health.h): aborts, tasks gone, and the goodbyes that
 * tell a task that exits after its context from one that died.
 */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "job/health.h"

void tutti__health_abort(tutti__job_t *job, tutti_status_t status,
                         const char *reason)
{
    if (job->abort_status == TUTTI_OK) {
        snprintf(job->abort_reason, sizeof(job->abort_reason), "%s", reason);
        job->abort_status = status;
        tutti__log(TUTTI_LOG_ERROR, "context", "%s", reason);
        atomic_fetch_add_explicit(&job->health_epoch, 1,
                                  memory_order_release);
    }
    tutti__job_wake(job);
}

static void task_dead(tutti__job_t *job, int task)
{
    if (task < 0 || task >= job->num_tasks)
        return;
    tutti__log(TUTTI_LOG_ERROR, "context", "task %d is gone: its process "
               "exited or was killed", task);
    atomic_store_explicit(&job->task_dead[task], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&job->health_epoch, 1, memory_order_release);
}

static void on_abort(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    char text[TUTTI_CTRL_PAYLOAD];
    tutti__job_copy_text(text, sizeof(text), msg->payload,
                         sizeof(msg->payload));
    tutti__health_abort(job, TUTTI_ERR_ABORTED, text);
}

static void on_task_dead(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    /* A task that destroyed its context and then exited is not news. */
    if (job->said_bye[msg->from_task])
        return;
    task_dead(job, msg->from_task);
    if (msg->from_task == TUTTI__COORDINATOR_TASK)
        tutti__health_abort(job, TUTTI_ERR_PEER, "task 0, which coordinates "
                            "this job's groups, is gone: its process exited "
                            "or was killed");
    tutti__job_wake(job);
}

static void on_bye(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    if (!job->said_bye[msg->from_task]) {
        job->said_bye[msg->from_task] = 1;
        job->byes++;
    }
    tutti__job_wake(job);
}

static const tutti__job_route_t health_routes[] = {
    {TUTTI_CTRL_ABORT, on_abort},
    {TUTTI_CTRL_TASK_DEAD, on_task_dead},
    {TUTTI_CTRL_BYE, on_bye},
};

void tutti__health_init(tutti__job_t *job)
{
    /* Its state is the job's own (health fields): nothing to allocate. */
    tutti__job_part(job, job, "job's health", health_routes,
                    sizeof(health_routes) / sizeof(health_routes[0]));
}

void tutti__health_abort_all(tutti__job_t *job, const char *reason)
{
    tutti__ctrl_msg_t m;
    pthread_mutex_lock(&job->lock);
    tutti__health_abort(job, TUTTI_ERR_ABORTED, reason);
    tutti__job_msg_init(&m, TUTTI_CTRL_ABORT, 0, 0, -1);
    snprintf(m.payload, sizeof(m.payload), "%s", reason);
    m.len = (uint32_t)strlen(m.payload) + 1;
    tutti__job_broadcast(job, &m);
    pthread_mutex_unlock(&job->lock);
}

static int tasks_gone(const tutti__job_t *job)
{
    int n = 0;
    for (int t = 0; t < job->num_tasks; t++)
        n += atomic_load_explicit(&job->task_dead[t], memory_order_relaxed);
    return n;
}

void tutti__health_finish(tutti__job_t *job)
{
    struct timespec until;
    tutti__ctrl_msg_t m;
    if (job->ctrl == NULL || job->num_tasks == 1)
        return;
    pthread_mutex_lock(&job->lock);
    tutti__job_msg_init(&m, TUTTI_CTRL_BYE, 0, 0, -1);
    tutti__job_broadcast(job, &m);
    if (job->task == TUTTI__COORDINATOR_TASK) {
        tutti__job_deadline(&until, job->cfg->timeout);
        while (job->byes + tasks_gone(job) < job->num_tasks - 1 &&
               tutti__job_wait(job, &until) == 0)
            ;
        if (job->byes + tasks_gone(job) < job->num_tasks - 1)
            tutti__log(TUTTI_LOG_WARN, "job", "context destroyed while %d "
                       "other tasks still had theirs",
                       job->num_tasks - 1 - job->byes - tasks_gone(job));
    }
    pthread_mutex_unlock(&job->lock);
}
