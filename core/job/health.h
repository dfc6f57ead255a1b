/*
 * The job's health (internal): an abort, by a task or the control plane,
 * and tasks whose processes are gone.  Executions read job->abort_status
 * and job->task_dead once job->health_epoch moved.
 */
#ifndef TUTTI_CORE_JOB_HEALTH_H
#define TUTTI_CORE_JOB_HEALTH_H

#include "job/job.h"

/** Registers the handlers of ABORT, TASK_DEAD and BYE frames. */
void tutti__health_init(tutti__job_t *job);
/** Marks the job aborted on this task (the first reason stays) and wakes
 *  every wait; lock held. */
void tutti__health_abort(tutti__job_t *job, tutti_status_t status,
                         const char *reason);
/** tutti_abort(): marks this task aborted and tells every other task. */
void tutti__health_abort_all(tutti__job_t *job, const char *reason);
/** Says goodbye to every task before the context goes, so no one reports
 *  this task's exit as a failure; task 0 also waits for everyone's. */
void tutti__health_finish(tutti__job_t *job);

#endif
