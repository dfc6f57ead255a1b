/*
 * The job as this process takes part in it (internal): who this task is,
 * the control plane and the handlers of its frames, the job's health, and
 * what the coordinator and the members keep.  job.c runs the control plane
 * for the others: coordinator.c (task 0 forms groups and decides
 * instances), member.c (this task's side of both), health.c (abort, tasks
 * gone, goodbyes) and sum.c each register the frames they handle, and send
 * through job.c.  The executor reads identity and health and keeps one
 * member record (member.h) per group.
 */
#ifndef TUTTI_CORE_JOB_JOB_H
#define TUTTI_CORE_JOB_JOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <tutti/tutti.h>

#include "config/config.h"
#include "job/ctrl.h"
#include "plugin/registry.h"
#include "transport/mux.h"

#define TUTTI_JOB_ID_MAX 64

typedef struct tutti__job tutti__job_t;
typedef struct tutti__coord tutti__coord_t;     /* coordinator.c */
typedef struct tutti__members tutti__members_t; /* member.c */

/* Handles one frame, with the job's lock held. */
typedef void (*tutti__job_handler_t)(tutti__job_t *job,
                                     const tutti__ctrl_msg_t *msg);

/* tutti_context_sum()'s state (sum.c), under the job's lock. */
typedef struct {
    uint64_t seq;            /* this task's next round */
    int busy, done;          /* a call waits; its total arrived */
    uint64_t result;
    uint64_t coord_seq;      /* task 0: the round it adds */
    int coord_arrived;       /* the tasks whose value it has */
    unsigned char *coord_from; /* per task: its value came this round
                                  (made by tutti__job_init) */
    uint64_t coord_total;
} tutti__job_sum_t;

struct tutti__job {
    int task, num_tasks;
    int local_num_tasks;            /* tasks on this host, -1: not known */
    char job_id[TUTTI_JOB_ID_MAX];
    const void *store;              /* tutti__store_t met through, or NULL */
    const char *secret;             /* agreed through it, or NULL */
    const tutti__config_t *cfg;     /* the context's */
    const tutti__registry_t *reg;   /* the context's modules */
    tutti__tp_list_t transports;    /* for peers in other processes */
    tutti__tp_list_t ctrl_transports; /* the control plane's: the same, tcp
                                         last (ucx needs the plane) */

    pthread_mutex_t lock;           /* everything below, and control sends */
    pthread_cond_t cond;            /* a frame someone waits for came */
    tutti__ctrl_t *ctrl;
    tutti__job_handler_t handlers[TUTTI_CTRL_TYPES];
    uint64_t frames_sent;           /* to other tasks */
    tutti__coord_t *coord;
    tutti__members_t *members;
    tutti__job_sum_t sum;
    struct tutti__xchg_item *xchg;  /* addresses come ahead of their
                                       exchange (xchg.c) */
    int byes;                       /* tasks whose contexts went */
    unsigned char *said_bye;        /* per task */

    /* Health, written under the lock, read by members at any time:
     * health_epoch moves (release) after abort_status or task_dead did. */
    atomic_int health_epoch;
    tutti_status_t abort_status;    /* TUTTI_OK, or what executions fail with */
    char abort_reason[512];
    atomic_int *task_dead;          /* one flag per task */

    pthread_mutex_t groups_lock;
    int num_groups;                 /* joined and not left */
};

/** Hands @p msg to the handler of its type (the job, as void *, in
 *  @p arg); runs with the job's lock held, in the control thread or in
 *  place. */
void tutti__job_dispatch(void *arg, const tutti__ctrl_msg_t *msg);
/** Sets up @p job for task @p task of @p num_tasks (identity, config and
 *  modules as given); the frames' handlers are registered next, then
 *  tutti__job_start() connects the control plane. */
tutti_status_t tutti__job_init(tutti__job_t *job, int task, int num_tasks,
                               int local_num_tasks, const char *job_id,
                               const tutti__config_t *cfg,
                               const tutti__registry_t *reg);
/** Frames of @p type go to @p handler from now on. */
void tutti__job_on(tutti__job_t *job, uint32_t type,
                   tutti__job_handler_t handler);

/* One frame type and its handler. */
typedef struct {
    uint32_t type;
    tutti__job_handler_t handler;
} tutti__job_route_t;

/** A part of the job takes its frames: @p state (its own, allocated by the
 *  caller; NULL means out of memory, reported naming @p what) and the
 *  @p n routes.  Returns TUTTI_ERR_NO_MEMORY or TUTTI_OK. */
tutti_status_t tutti__job_part(tutti__job_t *job, const void *state,
                               const char *what,
                               const tutti__job_route_t *routes, size_t n);
/** Connects the control plane to every task (a thread serves it). */
tutti_status_t tutti__job_start(tutti__job_t *job);
/** Stops the control plane: no handler runs after it returns, so the
 *  coordinator's and members' state can then be freed. */
void tutti__job_stop(tutti__job_t *job);
/** Frees what init made (after tutti__job_stop(), or a failed start). */
void tutti__job_fini(tutti__job_t *job);

/** A frame header: @p type, keys, the member it is for (-1: the task). */
void tutti__job_msg_init(tutti__ctrl_msg_t *m, uint32_t type, uint64_t gkey,
                         uint64_t ikey, int device_index);
/** Sends @p msg to @p task (to itself: handled in place), lock held.  A
 *  failure is logged here (callers answering from the control thread have
 *  no one to return it to) and returned. */
tutti_status_t tutti__job_send(tutti__job_t *job, int task,
                               tutti__ctrl_msg_t *msg);
/** Sends @p msg to every other task, lock held. */
void tutti__job_broadcast(tutti__job_t *job, tutti__ctrl_msg_t *msg);
/** Waits for a frame someone waits for, lock held; pthread_cond_timedwait's
 *  return. */
int tutti__job_wait(tutti__job_t *job, const struct timespec *until);
/** Wakes the threads in tutti__job_wait(), lock held. */
void tutti__job_wake(tutti__job_t *job);
/** Moves control frames from the calling thread (it waits for one);
 *  returns how many. */
int tutti__job_poll(tutti__job_t *job);
/** @p ts = now + @p seconds on CLOCK_REALTIME, for tutti__job_wait(). */
void tutti__job_deadline(struct timespec *ts, double seconds);
/** Copies text from a frame, which a peer may not have terminated. */
void tutti__job_copy_text(char *dst, size_t dst_len, const char *src,
                          size_t src_len);
/** The name of device type @p type, "?" if not one. */
const char *tutti__job_dev_name(int type);

#endif
