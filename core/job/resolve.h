/*
 * Param resolver (internal).
 *
 * A coordinator (the resolver of task 0) forms groups and resolves
 * instances for the whole job.  Every member that joins a group sends its
 * group size, device and the fingerprints of its modules; once the group's
 * size is reached the coordinator checks that all agree, orders the members
 * (by task, then device index) and tells each its place.  On the first
 * execution of an instance every member sends its parameters; once all
 * have, the coordinator checks them field by field, picks the
 * implementation once for everyone, and tells every member task.  A
 * disagreement gives every member the same error naming the field, the
 * values and the ranks.
 */
#ifndef TUTTI_CORE_RESOLVE_H
#define TUTTI_CORE_RESOLVE_H

#include <time.h>

#include "context.h"
#include "job/ctrl.h"

typedef tutti_locality_t tutti__member_t;

#define TUTTI_HOST_NAME_MAX 64
#define TUTTI_MAX_HOSTS 8  /* hosts in one group (one control frame) */

typedef struct {
    int size;
    int num_tasks;                  /* distinct tasks among the members */
    tutti__member_t *members;       /* in rank order; caller frees */
    int num_hosts;
    char (*hosts)[TUTTI_HOST_NAME_MAX]; /* caller frees */
} tutti__group_table_t;

/** Start the control plane and resolver of a context. */
tutti_status_t tutti__resolver_start(tutti_context_t *ctx);
void tutti__resolver_stop(tutti_context_t *ctx);

/** Join: blocks until the coordinator formed the group or refused it, or
 *  until @p timeout seconds passed. */
tutti_status_t tutti__resolve_group(tutti_context_t *ctx, uint64_t key,
                                    int size, tutti_device_type_t type,
                                    int device_index, const int *ring_order,
                                    double timeout,
                                    tutti__group_table_t *table_out);

/** Register/unregister a joined group for instance decisions (without
 *  it, the group would never learn what runs its instances). */
tutti_status_t tutti__resolver_add_group(tutti_context_t *ctx,
                                         tutti_group_t *g);
void tutti__resolver_remove_group(tutti_context_t *ctx, tutti_group_t *g);

/** Send this member's parameters for the first execution of @p inst. */
tutti_status_t tutti__resolve_instance(tutti_group_t *g,
                                       const tutti_instance_params_t *p);

/** This member waited too long for the others to execute an instance for
 *  the first time: the coordinator answers every member with the ranks
 *  that never came (as a refusal of the instance). */
void tutti__resolve_timeout(tutti_group_t *g, uint64_t instance_key);

/** A decision delivered to a group: taken by its member thread. */
typedef struct tutti__decision {
    uint64_t instance_key;
    tutti_status_t status;
    char algorithm[TUTTI_NAME_MAX];
    char detail[512];               /* error text, or the rule that chose */
    uint32_t details_len;           /* what init_params wrote */
    unsigned char details[TUTTI_DETAILS_MAX];
    struct tutti__decision *next;
} tutti__decision_t;

/** Takes the decisions delivered to @p g (a list the caller frees). */
tutti__decision_t *tutti__resolver_take(tutti_group_t *g);

/** Before a context goes: other tasks tell the coordinator; the
 *  coordinator waits (up to the config's timeout) until every other task
 *  has said so or is gone, so it serves their resolution until then. */
void tutti__resolver_finish(tutti_context_t *ctx);

/** Tell every other task that this one aborts with @p text; wake this
 *  task's joins.  Call with the resolver lock held. */
void tutti__resolver_abort(tutti_context_t *ctx, const char *text);

/** Drive the control plane from a thread waiting for a decision. */
int tutti__resolver_poll(tutti_context_t *ctx);

/** For the other users of the control plane (job_sum.c), with the
 *  resolver lock held: send @p msg to @p task (in place to this one), or
 *  to every other task; wait for a wake-up until @p until (0, or the
 *  error of pthread_cond_timedwait); wake every waiter. */
tutti_status_t tutti__resolver_send(tutti_context_t *ctx, int task,
                                    tutti__ctrl_msg_t *msg);
void tutti__resolver_broadcast(tutti_context_t *ctx, tutti__ctrl_msg_t *msg);
int tutti__resolver_wait(tutti_context_t *ctx, const struct timespec *until);
void tutti__resolver_wake(tutti_context_t *ctx);


/** Control frames this context has sent (for measurements and tests). */
uint64_t tutti__resolver_frames_sent(const tutti_context_t *ctx);

#endif
