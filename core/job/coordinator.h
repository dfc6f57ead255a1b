/*
 * The coordinator (internal): task 0 forms every group and decides every
 * instance for all members (coordinator.c).
 */
#ifndef TUTTI_CORE_JOB_COORDINATOR_H
#define TUTTI_CORE_JOB_COORDINATOR_H

#include "job/job.h"

/** Registers the handlers of the frames the coordinator receives (every
 *  task does: only task 0 is sent any). */
tutti_status_t tutti__coord_init(tutti__job_t *job);
/** Frees the coordinator's state (after tutti__job_stop()). */
void tutti__coord_fini(tutti__job_t *job);

#endif
