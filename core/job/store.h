/*
 * Meeting through the application's key-value store (tutti_store_t,
 * tutti.h), internal: the job id, the tcp transport's secret and which
 * tasks share a host, agreed at tutti_context_create(); and the store's
 * calls for the transports (tutti_tp_core_ops_t store_set, store_get),
 * under keys that begin with "tutti/".
 */
#ifndef TUTTI_CORE_JOB_STORE_H
#define TUTTI_CORE_JOB_STORE_H

#include <stddef.h>

#include <tutti/tutti.h>

#include "job/bootstrap.h"

#define TUTTI__STORE_SECRET 64 /* hex digits of 32 random bytes */

typedef struct {
    const tutti_store_t *user;  /* NULL: the job met without a store */
    double timeout;             /* seconds a task may be missing */
    char secret[TUTTI__STORE_SECRET + 1]; /* task 0's, agreed */
} tutti__store_t;

/**
 * Meets the other tasks of @p b's job through @p s: task 0 publishes the
 * job id (made at random where @p b has none) and a random secret; every
 * task publishes its host; each reads them all, waiting at most
 * s->timeout in all.  Fills @p b's job id, local task and count.  A task
 * that never appeared fails with TUTTI_ERR_TIMEOUT naming it and the key.
 */
tutti_status_t tutti__store_meet(tutti__store_t *s, tutti__bootstrap_t *b);

/** Sets "tutti/@p key" (a transport's); errors recorded, naming it. */
tutti_status_t tutti__store_set(const void *store, const char *key,
                                const void *value, size_t len);
/** Waits up to @p timeout for "tutti/@p key" and reads it; errors
 *  (TUTTI_ERR_TIMEOUT where it never came) recorded, naming it. */
tutti_status_t tutti__store_get(const void *store, const char *key,
                                void *buf, size_t cap, size_t *len_out,
                                double timeout);

/** Wipes the secret. */
void tutti__store_clear(tutti__store_t *s);

#endif
