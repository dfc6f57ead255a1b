/*
 * Context, group, instance and request internals.
 */
#ifndef TUTTI_CORE_CONTEXT_H
#define TUTTI_CORE_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>

#include <tutti/module.h>
#include <tutti/transport.h>
#include <tutti/tutti.h>

#include "exec/coll.h"
#include "config/config.h"
#include "job/ctrl.h"
#include "exec/flight.h"
#include "plugin/registry.h"

#define TUTTI_JOB_ID_MAX 64

typedef struct tutti__resolver tutti__resolver_t;
typedef struct tutti__decision tutti__decision_t;
#define TUTTI_INSTANCE_BUCKETS 64

/* tutti_context_sum()'s state (job_sum.c), under resolver_lock. */
typedef struct {
    uint64_t seq;            /* this task's next round */
    int busy, done;          /* a call waits; its total arrived */
    uint64_t result;
    uint64_t coord_seq;      /* task 0: the round it adds */
    int coord_arrived;
    uint64_t coord_total;
} tutti__job_sum_t;

struct tutti_context {
    tutti__config_t cfg;
    tutti__registry_t reg;
    tutti__strlist_t module_dirs;   /* searched, in order */
    int task, num_tasks;
    int local_num_tasks;            /* tasks on this host, -1: not known */
    char job_id[TUTTI_JOB_ID_MAX];
    pthread_mutex_t lock;
    int num_groups;
    pthread_mutex_t resolver_lock;  /* resolver state and control sends */
    tutti__resolver_t *resolver;
    /* Health, written under resolver_lock, read by members at any time:
     * health_epoch moves (release) after abort_status or task_dead did. */
    atomic_int health_epoch;
    tutti_status_t abort_status;    /* TUTTI_OK, or what executions fail with */
    char abort_reason[512];
    atomic_int *task_dead;          /* one flag per task */
    tutti__job_sum_t sum;
    /* Frames for the control plane's users above the resolver (by type),
     * set before it starts; run with resolver_lock held. */
    tutti__ctrl_handler_t ctrl_handlers[TUTTI_CTRL_TYPES];
};

/* Marks the context aborted (the first reason stays); wakes joins. */
void tutti__context_abort(tutti_context_t *ctx, tutti_status_t status,
                          const char *reason);
/* Marks @p task dead; groups with a member there fail. */
void tutti__context_task_dead(tutti_context_t *ctx, int task);

typedef struct tutti__instance tutti__instance_t;

struct tutti_request {
    tutti_group_t *group;
    tutti__instance_t *inst;
    tutti_alg_exec_t exec;
    tutti_status_t status;          /* INPROGRESS until complete */
    int priority;
    double timeout;                 /* seconds without progress allowed */
    uint64_t launch_order;          /* 0 until launched */
    uint64_t wait_for[TUTTI_MAX_WAIT_FOR];
    size_t num_wait_for;
    tutti_request_cb_t cb;
    void *cb_arg;
    struct tutti_request *next;     /* ready, active, queued or free list */
    char error[512];                /* detail of a failed execution */
    uint64_t flight_seq;            /* its flight recorder entry */
    uint64_t heard_from;            /* ranks < 64 a receive completed from */
    tutti__stage_t *stage;          /* taken from the group's pool, or NULL */
    size_t *recv_counts;            /* group_size, after pending_from */
    uint16_t pending_from[];        /* receives outstanding, per rank */
};

struct tutti__instance {
    tutti_instance_params_t params;  /* as first executed */
    char algorithm[TUTTI_NAME_MAX];  /* chosen implementation */
    const tutti__impl_entry_t *impl;
    tutti_alg_instance_t alg;
    void *state;
    uint64_t next_step;
    tutti_request_t *running;        /* execution in flight */
    tutti_request_t *ready;          /* next one, in the group's ready list */
    tutti_request_t *queue_head, *queue_tail; /* behind those two */
    uint64_t launched_through;       /* highest step launched + 1 */
    tutti__instance_t *next;         /* hash chain */
    int resolved;                    /* the coordinator decided */
    double timeout_asked;            /* when we told it we gave up */
    tutti_status_t failed;           /* resolution refused it: why */
    char failure[512];
    int *permutation;                /* permute: group_size entries */
    int prepared;                    /* the core may stage or scale input */
    int postscaled;                  /* the core scales the output */
};

struct tutti_group {
    tutti_context_t *ctx;
    uint64_t key;
    int rank, size;
    tutti_device_type_t device_type;
    int device_index;
    char device_name[48];
    int *rank_task;
    int num_tasks;                    /* distinct tasks among members */
    tutti_locality_t *localities;     /* per rank (device resolver) */
    int num_hosts;
    char (*hosts)[64];
    double timeout;
    unsigned spin_limit;              /* idle polls before yielding */
    const tutti_tp_ops_t *tp;
    tutti_tp_ep_t *ep;
    tutti__instance_t *instances[TUTTI_INSTANCE_BUCKETS];
    tutti_request_t *ready_head;      /* waiting to launch, by priority */
    tutti_request_t *active_head;     /* launched, by priority */
    uint64_t launches;
    tutti_request_t *free_list;
    tutti__stage_t *stages;           /* free stage buffers (coll.h) */
    tutti__decision_t *decisions;     /* from the resolver (its lock) */
    atomic_int has_decisions;
    int health_seen;                  /* ctx->health_epoch last checked */
    tutti__flight_t flight;
    tutti_status_t failed;            /* an execution failed mid-way */
    char failure[512];                /* its detail */
};

/* Built-in transports: local, and the per-peer dispatch over local and
 * the transport modules (tp_mux.c), with the services modules get. */
extern const tutti_tp_ops_t tutti__tp_local_ops;
extern const tutti_tp_ops_t tutti__tp_mux_ops;
extern const tutti_tp_core_ops_t tutti__tp_core_ops;
/* Connects every peer of @p g through its transport: @p ops_out is the
 * per-peer dispatch, or the one transport when one serves every peer. */
tutti_status_t tutti__tp_mux_connect(const tutti_context_t *ctx,
                                     const tutti_tp_group_t *g,
                                     const tutti_tp_ops_t **ops_out,
                                     tutti_tp_ep_t **ep_out);

/* The core's services for modules. */
extern const tutti_core_ops_t tutti__core_ops;

#endif
