/*
 * The job's control plane as its users see it (job.h): a table of frame
 * handlers, sends and waits under the job's lock.  The frames themselves
 * travel through ctrl.c.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/type_names.h"
#include "job/job.h"

tutti_status_t tutti__job_init(tutti__job_t *job, int task, int num_tasks,
                               int local_num_tasks, const char *job_id,
                               const tutti__config_t *cfg,
                               const tutti__registry_t *reg)
{
    memset(job, 0, sizeof(*job));
    job->task = task;
    job->num_tasks = num_tasks;
    job->local_num_tasks = local_num_tasks;
    snprintf(job->job_id, sizeof(job->job_id), "%s", job_id);
    job->cfg = cfg;
    job->reg = reg;
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->cond, NULL);
    pthread_mutex_init(&job->groups_lock, NULL);
    job->task_dead = calloc((size_t)num_tasks, sizeof(atomic_int));
    job->said_bye = calloc((size_t)num_tasks, 1);
    job->sum.coord_from = calloc((size_t)num_tasks, 1);
    if (job->task_dead == NULL || job->said_bye == NULL ||
        job->sum.coord_from == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "job", "no memory for the "
                            "state of %d tasks", num_tasks);
    tutti_status_t st = tutti__registry_tp_list(reg, cfg, &job->transports);
    job->ctrl_transports = job->transports;
    tutti__registry_tp_list_add(reg, cfg, "tcp", &job->ctrl_transports);
    return st;
}

void tutti__job_on(tutti__job_t *job, uint32_t type,
                   tutti__job_handler_t handler)
{
    if (type < TUTTI_CTRL_TYPES)
        job->handlers[type] = handler;
}

tutti_status_t tutti__job_part(tutti__job_t *job, const void *state,
                               const char *what,
                               const tutti__job_route_t *routes, size_t n)
{
    if (state == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "job", "no memory for the "
                            "%s", what);
    for (size_t i = 0; i < n; i++)
        tutti__job_on(job, routes[i].type, routes[i].handler);
    return TUTTI_OK;
}

void tutti__job_dispatch(void *arg, const tutti__ctrl_msg_t *msg)
{
    tutti__job_t *job = arg;
    if (msg->type < TUTTI_CTRL_TYPES && job->handlers[msg->type] != NULL) {
        job->handlers[msg->type](job, msg);
        return;
    }
    tutti__log(TUTTI_LOG_ERROR, "job", "control frame of unknown type %u "
               "from task %d", msg->type, msg->from_task);
}

tutti_status_t tutti__job_start(tutti__job_t *job)
{
    tutti__ctrl_params_t p = {
        .task = job->task,
        .num_tasks = job->num_tasks,
        .local_num_tasks = job->local_num_tasks,
        .job_id = job->job_id,
        .store = job->store,
        .secret = job->secret,
        .timeout = job->cfg->timeout,
        .config = job->cfg,
        .transports = &job->ctrl_transports,
        .lock = &job->lock,
        .handle = tutti__job_dispatch,
        .arg = job,
    };
    return tutti__ctrl_start(&p, &job->ctrl);
}

void tutti__job_stop(tutti__job_t *job)
{
    tutti__ctrl_stop(job->ctrl);
    job->ctrl = NULL;
}

void tutti__job_fini(tutti__job_t *job)
{
    tutti__job_stop(job);
    pthread_cond_destroy(&job->cond);
    pthread_mutex_destroy(&job->lock);
    pthread_mutex_destroy(&job->groups_lock);
    free(job->task_dead);
    free(job->said_bye);
    free(job->sum.coord_from);
    job->task_dead = NULL;
    job->said_bye = NULL;
    job->sum.coord_from = NULL;
}

void tutti__job_msg_init(tutti__ctrl_msg_t *m, uint32_t type, uint64_t gkey,
                         uint64_t ikey, int device_index)
{
    memset(m, 0, offsetof(tutti__ctrl_msg_t, payload));
    m->type = type;
    m->group_key = gkey;
    m->instance_key = ikey;
    m->device_index = device_index;
}

tutti_status_t tutti__job_send(tutti__job_t *job, int task,
                               tutti__ctrl_msg_t *msg)
{
    if (job->ctrl == NULL)
        return tutti__error(TUTTI_ERR_INTERNAL, "job", "control frame of "
                            "type %u to task %d: the control plane is not "
                            "running", msg->type, task);
    job->frames_sent += task != job->task;
    tutti_status_t st = tutti__ctrl_send(job->ctrl, task, msg);
    if (st != TUTTI_OK)
        tutti__log(TUTTI_LOG_WARN, "job", "control frame of type %u to "
                   "task %d not sent: %s", msg->type, task,
                   tutti_strerror(st));
    return st;
}

void tutti__job_broadcast(tutti__job_t *job, tutti__ctrl_msg_t *msg)
{
    msg->from_task = job->task;
    if (job->ctrl == NULL)
        return;
    job->frames_sent += (uint64_t)(job->num_tasks - 1);
    tutti__ctrl_broadcast(job->ctrl, msg);
}

int tutti__job_wait(tutti__job_t *job, const struct timespec *until)
{
    return pthread_cond_timedwait(&job->cond, &job->lock, until);
}

void tutti__job_wake(tutti__job_t *job)
{
    pthread_cond_broadcast(&job->cond);
}

int tutti__job_poll(tutti__job_t *job)
{
    return job->ctrl != NULL ? tutti__ctrl_poll(job->ctrl) : 0;
}

void tutti__job_deadline(struct timespec *ts, double seconds)
{
    tutti__deadline(ts, seconds);
}

void tutti__job_copy_text(char *dst, size_t dst_len, const char *src,
                          size_t src_len)
{
    size_t n = strnlen(src, src_len < dst_len ? src_len : dst_len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

const char *tutti__job_dev_name(int type)
{
    const char *n = tutti__device_type_name((tutti_device_type_t)type);
    return n ? n : "?";
}
