/*
 * A member's side of the coordinator's work (internal): joining a group
 * (tutti__member_join gives the table of who is in it), proposing an
 * instance on its first execution, and the decisions that come back.  The
 * executor keeps one tutti__job_member_t per group; decisions are queued
 * on it under the job's lock and taken by the member's thread.
 */
#ifndef TUTTI_CORE_JOB_MEMBER_H
#define TUTTI_CORE_JOB_MEMBER_H

#include <stdatomic.h>
#include <stdint.h>

#include <tutti/module.h>
#include <tutti/tutti.h>

#include "job/job.h"
#include "job/wire.h"

/* A formed group as the coordinator tells each member. */
typedef struct {
    int size;
    int num_tasks;                  /* distinct tasks among the members */
    tutti_locality_t *members;      /* in rank order; caller frees */
    int num_hosts;
    char (*hosts)[TUTTI_HOST_NAME_MAX]; /* caller frees */
    uint32_t *pci;                  /* CUDA groups: per rank, the GPU's
                                       PCI bus id (tutti__pci_code); else
                                       NULL.  Caller frees */
} tutti__group_table_t;

/* What the coordinator decided for an instance. */
typedef struct tutti__decision {
    uint64_t instance_key;
    tutti_status_t status;
    char algorithm[TUTTI_NAME_MAX];
    char detail[512];               /* error text, or the rule that chose */
    uint32_t details_len;           /* what init_params wrote */
    unsigned char details[TUTTI_DETAILS_MAX];
    uint32_t group_details_len;     /* the module's init_group_params */
    unsigned char group_details[TUTTI_GROUP_DETAILS_MAX];
    struct tutti__decision *next;
} tutti__decision_t;

/* One group member as the job sees it: where its decisions go. */
typedef struct tutti__job_member {
    uint64_t group_key;
    int device_index;
    int rank, size;                 /* once the group formed */
    tutti_device_type_t device_type;
    int num_tasks;
    tutti__decision_t *decisions;   /* under the job's lock */
    atomic_int has_decisions;       /* set (release) when one was queued */
    struct tutti__job_member *next;
} tutti__job_member_t;

/* A join waiting for the coordinator's table of its group, under the
 * job's lock: what the member asked for, and what came. */
typedef struct tutti__join_wait {
    uint64_t key;
    int size;                       /* the group size it joins with */
    tutti_device_type_t device_type;
    int device_index;
    int done;
    tutti_status_t status;
    char error[TUTTI_CTRL_PAYLOAD];
    tutti__group_table_t table;     /* when status is TUTTI_OK */
    struct tutti__join_wait *next;
} tutti__join_wait_t;

/** Registers the handlers of the frames members receive. */
tutti_status_t tutti__member_init(tutti__job_t *job);
/** Frees what the members' side keeps (after tutti__job_stop()). */
void tutti__member_fini(tutti__job_t *job);

/** Joins group @p key as device @p device_index of @p type (whose GPU,
 *  for CUDA, has the PCI bus id @p pci, a tutti__pci_code): waits until
 *  every member joined (or @p timeout passes, naming who had come) and
 *  fills @p table_out, ranks in @p ring_order or @p device_order.
 *  Refusals name the field and values. */
tutti_status_t tutti__member_join(tutti__job_t *job, uint64_t key, int size,
                                  tutti_device_type_t type, int device_index,
                                  const int *ring_order, int device_order,
                                  uint32_t pci, double timeout,
                                  tutti__group_table_t *table_out);
/** Lets the coordinator's GROUP or GROUP_ERR for @p w's group and device
 *  reach @p w (key, size, device type and index set, the rest zero), as
 *  tutti__member_join() does before it sends its JOIN; lock held.  A
 *  table that does not fit what @p w asked for fails it with
 *  TUTTI_ERR_PEER, naming the field, its value and what was expected. */
void tutti__member_wait_add(tutti__job_t *job, tutti__join_wait_t *w);
/** Stops it (the caller frees what its table holds); lock held. */
void tutti__member_wait_remove(tutti__job_t *job, tutti__join_wait_t *w);
/** Lets decisions for @p m's group reach it. */
tutti_status_t tutti__member_add(tutti__job_t *job, tutti__job_member_t *m);
/** Stops them and frees those not taken. */
void tutti__member_remove(tutti__job_t *job, tutti__job_member_t *m);
/** An instance's first execution on @p m: tells the coordinator what this
 *  member asks for; the decision comes back later. */
tutti_status_t tutti__member_propose(tutti__job_t *job,
                                     const tutti__job_member_t *m,
                                     const tutti_instance_params_t *p);
/** Takes @p m's decisions (a list, newest first); the caller frees each. */
tutti__decision_t *tutti__member_take(tutti__job_t *job,
                                      tutti__job_member_t *m);
/** Waited too long for the others' first execution of @p instance_key:
 *  asks the coordinator which ranks never came (it refuses the instance on
 *  every member). */
void tutti__member_timeout(tutti__job_t *job, const tutti__job_member_t *m,
                           uint64_t instance_key);

#endif
