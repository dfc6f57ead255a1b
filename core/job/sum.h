/*
 * tutti_context_sum() over the control plane (internal): every task sends
 * its value to task 0, which tells every task the total (sum.c).
 */
#ifndef TUTTI_CORE_JOB_SUM_H
#define TUTTI_CORE_JOB_SUM_H

#include <stdint.h>

#include "job/job.h"

/** Takes the control plane's sum frames; before tutti__job_start(), so
 *  that no frame comes before its handler. */
void tutti__sum_init(tutti__job_t *job);
/** Adds @p value over every task of the job: tutti_context_sum()'s body
 *  (arguments checked by the caller). */
tutti_status_t tutti__sum(tutti__job_t *job, uint64_t value,
                          uint64_t *sum_out);

#endif
