/*
 * tutti_context_sum() over the control plane (internal): the context hands
 * this file its frames once the resolver runs.
 */
#ifndef TUTTI_CORE_JOB_SUM_H
#define TUTTI_CORE_JOB_SUM_H

#include "context.h"

/** Take the control plane's sum frames; before tutti__resolver_start(),
 *  so that no frame comes before its handler. */
void tutti__job_sum_init(tutti_context_t *ctx);

#endif
