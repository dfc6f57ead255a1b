/*
 * Control plane (internal): small fixed-size messages between the tasks of
 * a job, for resolution (joins, instance agreement) and, later, aborts.
 *
 * Tasks are connected by the process transport at context creation.  A
 * control thread per context receives messages and hands each to the
 * resolver; sending may happen from any thread.  A message to one's own
 * task is handled in place, so a single-task job needs no thread.  Nothing
 * here is on the data path.
 */
#ifndef TUTTI_CORE_CTRL_H
#define TUTTI_CORE_CTRL_H

#include <pthread.h>
#include <stdint.h>

#include <tutti/tutti.h>

#include "transport/mux.h"

#define TUTTI_CTRL_FRAME 4096
#define TUTTI__COORDINATOR_TASK 0 /* forms groups, decides instances */
#define TUTTI_CTRL_PAYLOAD (TUTTI_CTRL_FRAME - 40)

typedef enum {
    TUTTI_CTRL_JOIN = 1,      /* member -> coordinator */
    TUTTI_CTRL_JOIN_CANCEL,   /* member gave up waiting */
    TUTTI_CTRL_GROUP,         /* coordinator -> member: the group formed */
    TUTTI_CTRL_GROUP_ERR,     /* coordinator -> member: it cannot form */
    TUTTI_CTRL_INST,          /* member -> coordinator: first execution */
    TUTTI_CTRL_INST_OK,       /* coordinator -> task: what runs */
    TUTTI_CTRL_INST_ERR,      /* coordinator -> task: members disagree */
    TUTTI_CTRL_INST_TIMEOUT,  /* member waited too long for the others */
    TUTTI_CTRL_ABORT,         /* any task -> every task: give up */
    TUTTI_CTRL_TASK_DEAD,     /* the control thread saw from_task's process
                                 gone (never on the wire) */
    TUTTI_CTRL_BYE,           /* task -> every task: context destroyed */
    TUTTI_CTRL_SUM,           /* task -> coordinator: its value of a sum */
    TUTTI_CTRL_SUM_DONE,      /* coordinator -> every task: the total */
    TUTTI_CTRL_XCHG,          /* task -> task: a transport's address of
                                 one member for another (xchg.c) */
    TUTTI_CTRL_TYPES
} tutti__ctrl_type_t;

typedef struct {
    uint32_t type;
    uint32_t len;             /* payload bytes used */
    uint64_t group_key;
    uint64_t instance_key;
    int32_t from_task;
    int32_t device_index;     /* member a reply is for, or -1 */
    int32_t status;
    int32_t reserved;
    char payload[TUTTI_CTRL_PAYLOAD];
} tutti__ctrl_msg_t;

_Static_assert(sizeof(tutti__ctrl_msg_t) == TUTTI_CTRL_FRAME, "frame size");

typedef struct tutti__ctrl tutti__ctrl_t;

/** The name of frame type @p type ("GROUP"), NULL for none. */
const char *tutti__ctrl_type_name(uint32_t type);

/** A frame received by task @p task from task @p from on the wire, made
 *  safe to hand to the handlers: from_task set to @p from (the connection
 *  names the sender), the unused payload zeroed.  0, with the whole log
 *  line in @p why ("control frame GROUP from task 1 dropped: ..."), for a
 *  frame no task sends (type unknown or internal, a payload longer than
 *  the frame, a sender outside 0..@p num_tasks - 1) or one this pair may
 *  not exchange: GROUP, GROUP_ERR, INST_OK, INST_ERR and SUM_DONE come
 *  only from task 0, the coordinator; JOIN, JOIN_CANCEL, INST,
 *  INST_TIMEOUT and SUM go only to it; ABORT, BYE and XCHG go from any
 *  task to any task. */
int tutti__ctrl_accept(tutti__ctrl_msg_t *msg, int from, int task,
                       int num_tasks, char *why, size_t len);

/** Connect this task to every other task and start the control thread
 *  (none for a single task).  @p handle is called for every message that
 *  arrives, from the control thread, with the context's resolver lock held. */
/* Handles one frame, with the params' lock held. */
typedef void (*tutti__ctrl_handler_t)(void *arg, const tutti__ctrl_msg_t *msg);

/* What the control plane needs of the job it serves. */
typedef struct {
    int task, num_tasks;
    int local_num_tasks;       /* tasks on this host, -1: not known */
    const char *job_id;
    const void *store;         /* the job's store, or NULL */
    const char *secret;        /* agreed through it, or NULL */
    double timeout;            /* seconds, for connecting */
    const void *config;        /* handed to transports */
    const tutti__tp_list_t *transports;
    pthread_mutex_t *lock;     /* held while frames are handled */
    tutti__ctrl_handler_t handle;
    void *arg;
} tutti__ctrl_params_t;

tutti_status_t tutti__ctrl_start(const tutti__ctrl_params_t *params,
                                 tutti__ctrl_t **ctrl_out);
void tutti__ctrl_stop(tutti__ctrl_t *ctrl);

/** One pass of the control plane from a thread that waits for it (a
 *  member waiting for a resolution): skipped if another thread is at it.
 *  Returns how much moved. */
int tutti__ctrl_poll(tutti__ctrl_t *ctrl);

/** Send @p msg to every other task. */
tutti_status_t tutti__ctrl_broadcast(tutti__ctrl_t *ctrl,
                                     tutti__ctrl_msg_t *msg);

/** Send @p msg (its header's from_task is filled in) to @p task.  To this
 *  task, the handler runs in place.  Call with the resolver lock held. */
tutti_status_t tutti__ctrl_send(tutti__ctrl_t *ctrl, int task,
                                tutti__ctrl_msg_t *msg);

#endif
