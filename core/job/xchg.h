/*
 * Addresses traded through the control plane (internal): the transports'
 * exchange (tutti_tp_core_ops_t.exchange, ABI 2.6).
 */
#ifndef TUTTI_CORE_JOB_XCHG_H
#define TUTTI_CORE_JOB_XCHG_H

#include <tutti/transport.h>

#include "job/job.h"

/** Takes XCHG frames from now on. */
void tutti__xchg_init(tutti__job_t *job);
/** Frees the addresses that came for exchanges no one made (at the
 *  job's end, the control plane stopped). */
void tutti__xchg_fini(tutti__job_t *job);
/** The exchange of @p g (its plane is @p job) as transport.h says. */
tutti_status_t tutti__xchg(tutti__job_t *job, const tutti_tp_group_t *g,
                           const char *what, const void *mine, size_t len,
                           void *peers, size_t stride, size_t *lens);

#endif
