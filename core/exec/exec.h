/*
 * The executor's objects (internal): a group (one member's view of it),
 * its instances, and their executions' requests; and what the executor's
 * files call of each other.
 *
 * An instance is resolved on its first execution: parameters checked, an
 * implementation chosen by the coordinator, its init_context run.  Later
 * executions reuse all of that; a request comes from the group's free list,
 * so steady-state calls allocate nothing.  Executions of one instance run
 * one after another (they share the implementation's state); executions of
 * different instances progress together.  Progress is driven by whichever
 * thread tests or waits.
 *
 *   group.c     joining and leaving a group
 *   instance.c  an instance's record, its checks and its implementation
 *   request.c   a request's life: queued, launched, completed
 *   progress.c  the progress pass, health, decisions, waits, time limits
 *   execute.c   tutti_execute() and the request API
 *   blocking.c  the blocking helpers
 *   p2p.c       point-to-point: messages between two members
 *   coll.c      what each collective reads and writes; scaling
 *   flight.c    the flight recorder
 *   timeline.c  the timeline (TUTTI_TIMELINE): a trace file per task
 */
#ifndef TUTTI_CORE_EXEC_EXEC_H
#define TUTTI_CORE_EXEC_EXEC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <tutti/module.h>
#include <tutti/transport.h>
#include <tutti/tutti.h>

#include "device/device.h"
#include "device/stage.h"
#include "exec/coll.h"
#include "exec/flight.h"
#include "exec/timeline.h"
#include "job/job.h"
#include "job/member.h"
#include "plugin/registry.h"
#include "plugin/services.h"

#define TUTTI_INSTANCE_BUCKETS 64   /* a group's first table; it doubles */
/* Idle progress polls a wait spins before it yields the processor: on a
 * host with a processor per member, and on one with more members (then
 * it sleeps instead where the transport can wake it). */
#define TUTTI__SPIN_POLLS 1024
#define TUTTI__SPIN_POLLS_OVERSUBSCRIBED 1
/* Where waits sleep (tutti_tp_group_t.sleep): how long a wait yields
 * before it sleeps, and the longest it sleeps before it looks at the
 * group's health and time limit again (seconds). */
#define TUTTI__SLEEP_AFTER 0.001
#define TUTTI__SLEEP_MAX 0.001

/* What a handle's state word says (tutti_group_t and tutti_request_t).
 * Their memory is never given back to malloc while the process runs (a
 * left group's shell and its requests go to pools that later joins take
 * from), so a stale handle's state word can always be read: a call on it
 * is refused with TUTTI_ERR_INVALID_ARG instead of reading freed memory.
 * A shell taken again by a later join names the new object, as a closed
 * file descriptor's number does once reused. */
enum {
    TUTTI__HANDLE_FREE = 0x66726565,    /* request: on its group's free list */
    TUTTI__HANDLE_LIVE = 0x6c697665,    /* joined group; issued request */
    TUTTI__HANDLE_LEFT = 0x6c656674,    /* left group or its requests */
    TUTTI__HANDLE_JOINING = 0x6a6f696e  /* group: tutti_group_join runs */
};

typedef struct tutti__instance tutti__instance_t;

/* The leading bytes of tutti_instance_params_t that an instance fixes
 * (size to permutation); the fields from step on may change per call. */
#define TUTTI__PARAMS_FIXED offsetof(tutti_instance_params_t, step)
_Static_assert(TUTTI__PARAMS_FIXED % 8 == 0,
               "the fixed fields are compared as 64-bit words");

/* A module's state for one group (tutti_alg_group_ops_t). */
typedef struct {
    int made;                       /* init_group ran and succeeded */
    int aborted;                    /* abort_group ran */
    void *state;
} tutti__group_state_t;

struct tutti_request {
    /* What every execution writes or reads, packed into the first lines
     * (with 10,000 in flight they come from the last-level cache): */
    uint32_t state;                 /* TUTTI__HANDLE_*: checked first */
    tutti_status_t status;          /* INPROGRESS until complete */
    int priority;
    int listed;                     /* on the ready or active list */
    int in_order;                   /* on the issue-order list */
    int phase;                      /* where a CUDA execution stands */
    tutti_group_t *group;
    tutti__instance_t *inst;
    struct tutti_request *next;     /* ready, active, queued or free list */
    struct tutti_request *prev;     /* ready and active lists */
    struct tutti_request *order_next; /* the group's issue-order list */
    struct tutti_request *order_prev;
    uint64_t launch_order;          /* 0 until launched */
    uint64_t flight_seq;            /* its flight recorder entry */
    uint64_t bytes;                 /* its input's bytes, as checked at
                                       issue (the flight recorder's and the
                                       timeline's) */
    uint64_t tl_seq;                /* its timeline event, or 0 */
    uint64_t tl_phase;              /* its phase's timeline event, or 0 */
    double timeout;                 /* seconds without progress allowed */
    size_t num_wait_for;            /* wait_for's, at the end */
    tutti_request_cb_t cb;
    void *cb_arg;
    tutti__stage_t *stage;          /* taken from the group's pool, or NULL */
    void *stream;                   /* CUDA: the caller's cudaStream_t */
    char *error;                    /* detail of a failed execution: made
                                       at the shell's first failure, kept
                                       (tutti__request_set_error) */
    tutti__exec_link_t link;        /* exec.core_private points here */
    tutti_alg_exec_t exec;
    /* Less often: */
    struct tutti_request *all_next; /* every request of the group, or the
                                       pool of shells */
    size_t *recv_counts;            /* group_size, after pending_from */
    uint16_t *pending_from;         /* receives outstanding, per rank (one
                                       allocation with recv_counts, freed
                                       when the group is left) */
    /* CUDA groups (cuda_exec.c): */
    const void *dev_send;           /* the caller's buffers (staged path) */
    void *dev_recv;
    void *ev_issue;                 /* a hold's event (made on first use) */
    uint32_t gate_seq;              /* the hold's gate number, or 0 */
    tutti_status_t hold_error;      /* the hold after launch failed */
    unsigned wait_idle;             /* tutti_request_wait_for's idle count */
    double wait_idle_since;         /* and since when, across its calls */
    uint64_t wait_for[TUTTI_MAX_WAIT_FOR];
};

struct tutti__instance {
    /* What every execution reads or writes, first (with 10,000 in flight
     * they come from the last-level cache): */
    tutti__instance_t *next;         /* hash chain */
    uint64_t key;                    /* params.instance_key, beside next */
    tutti_request_t *running;        /* execution in flight */
    tutti_request_t *ready;          /* next one, in the group's ready list */
    tutti_request_t *queue_head, *queue_tail; /* behind those two */
    const tutti__impl_entry_t *impl;
    void *state;
    uint64_t next_step;
    uint64_t launched_through;       /* highest step launched + 1 */
    int *permutation;                /* permute: group_size entries */
    int resolved;                    /* the coordinator decided */
    uint64_t tl_seq;                 /* its resolution's timeline event */
    tutti_status_t failed;           /* resolution refused it: why */
    /* Facts of the instance, found once at its first execution: */
    int per_rank;                    /* counts given per execution */
    int prepared;                    /* the core may stage or scale input */
    int postscaled;                  /* the core scales the output */
    int warm;                        /* seen holds a checked call's fields
                                        (execute.c: the warm path) */
    size_t in_elems, out_elems;      /* without per-rank counts: elements
                                        this member reads from sendbuf and
                                        writes to recvbuf */
    uint64_t in_bytes;               /* in_elems' bytes */
    /* The fixed fields (TUTTI__PARAMS_FIXED bytes) of the last execution
     * that passed every check, as its caller gave them: */
    uint64_t seen[TUTTI__PARAMS_FIXED / 8];
    /* How it runs (cuda_exec.c): */
    int mode;                        /* TUTTI__MODE_* */
    int ordered;                     /* launches in issue order */
    tutti_instance_params_t params;  /* as first executed */
    tutti_alg_instance_t alg;
    /* Less often: */
    double timeout_asked;            /* when we told it we gave up */
    char *failure;                   /* failed's detail (malloc'd), or NULL */
    tutti__dstage_t *dstage;         /* CUDA: its stream and gate word;
                                        staged: buffers, events */
    void *dev_stage;                 /* device: pre-scaled input */
    size_t dev_stage_len;
    void *dev_done;                  /* device: event after post-scaling */
    char algorithm[TUTTI_NAME_MAX];  /* chosen implementation */
    char asked[TUTTI_NAME_MAX];      /* the name the first call gave, if any
                                        (perhaps a former name, an alias) */
};

/* tutti__instance_t.mode. */
enum {
    TUTTI__MODE_HOST = 0,   /* cpu group: host memory throughout */
    TUTTI__MODE_DEVICE,     /* CUDA group, an implementation on device
                               memory and the caller's stream */
    TUTTI__MODE_STAGED      /* CUDA group, a host implementation on pinned
                               copies */
};

/* A priority list of requests: highest first, in issue order within a
 * priority; doubly linked with a tail, so that the usual insertion (a
 * priority no higher than the last's) and any removal cost O(1).  The
 * progress pass walks the active list from a cursor (progress.c): a
 * removal moves the cursor on when it removes the request under it. */
typedef struct {
    tutti_request_t *head, *tail;
    tutti_request_t *cursor;          /* next to visit, or NULL: the head */
    size_t count;
} tutti__req_list_t;

struct tutti_group {
    _Atomic uint32_t state;           /* TUTTI__HANDLE_*: checked first */
    tutti_group_t *shell_next;        /* the pool of shells, or the live
                                         groups of the process */
    tutti__job_t *job;
    tutti__job_member_t member;       /* where the coordinator's decisions go */
    tutti__peer_link_t peers;         /* the transport, once connected */
    tutti__timeline_t *tl;            /* NULL: no timeline */
    const tutti_core_ops_t *core_ops; /* its executions' services: the
                                         core's, or the timeline's */
    uint64_t key;
    int rank, size;
    tutti_device_type_t device_type;
    int device_index;
    char device_name[48];
    int *rank_task;
    int num_tasks;                    /* distinct tasks among members */
    tutti_locality_t *localities;     /* per rank (device resolver) */
    int num_hosts;
    char (*hosts)[TUTTI_HOST_NAME_MAX];
    char (*pci)[TUTTI__PCI_BUS_ID_LEN]; /* per rank: its GPU's bus id */
    const char **pci_ids;             /* pointers into pci, for modules */
    const tutti__cuda_ops_t *cuda;    /* CUDA groups: the operations */
    tutti__group_state_t *mod_state;  /* per registry module: its group
                                         state (ABI 1.3), made on demand */
    double timeout;
    unsigned spin_limit;              /* idle polls before yielding or
                                         sleeping */
    int sleeps;                       /* oversubscribed host, and the
                                         transport can wake a sleeper */
    tutti__instance_t **instances;    /* hash table, num_buckets chains */
    size_t num_buckets, num_instances;
    tutti__req_list_t ready;          /* waiting to launch (resolved), by
                                         priority */
    tutti__req_list_t active;         /* launched, by priority */
    uint64_t launches;
    tutti_request_t *free_list;
    tutti_request_t *all_requests;    /* every request it made (all_next) */
    tutti_request_t *order_head, *order_tail; /* executions issued while
                                         their instance was unresolved or
                                         ordered, not yet launched: an
                                         ordered one launches only when no
                                         such execution is before it */
    tutti__stage_t *stages;           /* free stage buffers (coll.h) */
    int health_seen;                  /* job->health_epoch last checked */
    tutti__flight_t flight;
    tutti_status_t failed;            /* an execution failed mid-way */
    char failure[512];                /* its detail */
    int setting_up;                   /* the join's set-up calls run
                                         (cuda_setup.c): no stream held */
};

/* A request's failure detail: here, not in request.c, since both
 * request.c and cuda_exec.c (which request.c calls) keep and read it. */
#define TUTTI__REQUEST_ERROR_MAX 512

/** Keeps @p text as @p r's failure detail (a failure is the only time a
 *  request allocates: its buffer stays with it for later ones). */
static inline void tutti__request_set_error(tutti_request_t *r,
                                            const char *text)
{
    if (r->error == NULL)
        r->error = malloc(TUTTI__REQUEST_ERROR_MAX);
    if (r->error != NULL)
        snprintf(r->error, TUTTI__REQUEST_ERROR_MAX, "%s", text);
}

/** @p r's failure detail, or "". */
static inline const char *tutti__request_error(const tutti_request_t *r)
{
    if (r->error == NULL)
        return r->status == TUTTI_OK || r->status == TUTTI_INPROGRESS
                   ? ""
                   : "(the failure's detail was lost: no memory to keep it)";
    return r->error;
}

/* group.c */
/** Whether @p g is a joined group's handle: TUTTI_OK, or
 *  TUTTI_ERR_INVALID_ARG naming @p call and what is wrong with it.  (Not
 *  inline: a body here calling into group.c would tie this header and
 *  group.c in a circle.) */
tutti_status_t tutti__group_check(const tutti_group_t *g, const char *call);
/** The same for a request handle (issued, not freed, its group joined;
 *  request.c). */
tutti_status_t tutti__request_check(const tutti_request_t *r,
                                    const char *call);
/** tutti_group_join()'s body, for the job @p job; its events go to
 *  @p timeline (NULL: none). */
tutti_status_t tutti__group_join(tutti__job_t *job,
                                 tutti__timeline_file_t *timeline,
                                 const tutti_group_params_t *params,
                                 tutti_group_t **group_out);
/** This member's place in the group the coordinator formed, from its
 *  table @p t (checked by the join): @p g takes the table's arrays (or,
 *  on failure, they are freed), its rank, its members' tasks and PCI bus
 *  ids; @p g's size, key, device index, job and per-rank arrays set. */
tutti_status_t tutti__group_place(tutti_group_t *g, tutti__group_table_t *t);

/* instance.c */
/** The bucket of @p key in a table of @p num_buckets (a power of two). */
static inline size_t tutti__instance_bucket(uint64_t key, size_t num_buckets)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)(key & (num_buckets - 1));
}

/** @p g's instance of @p key, or NULL.  Inline: every execution and
 *  every wait_for look one up. */
static inline tutti__instance_t *tutti__instance_find(tutti_group_t *g,
                                                      uint64_t key)
{
    tutti__instance_t *i =
        g->instances[tutti__instance_bucket(key, g->num_buckets)];
    while (i != NULL && i->key != key)
        i = i->next;
    return i;
}
/** The group's instance table (@p n buckets, a power of two). */
tutti_status_t tutti__instance_table(tutti_group_t *g, size_t n);
/** Checks what is fixed for an instance, and that @p p is a whole params
 *  struct; the error names @p call, the public function @p p came
 *  through. */
tutti_status_t tutti__instance_check(const tutti_group_t *g,
                                     const tutti_instance_params_t *p,
                                     const char *call);
/** Puts @p inst (its key set) into the group's table, which the caller
 *  has grown first where it was full (tutti__instance_table). */
void tutti__instance_insert(tutti_group_t *g, tutti__instance_t *inst);
/** Records a new instance and proposes it to the coordinator. */
tutti_status_t tutti__instance_new(tutti_group_t *g,
                                   const tutti_instance_params_t *p,
                                   tutti__instance_t **inst_out);
/** Whether @p name (perhaps an old name, an alias) names the
 *  implementation @p inst runs, or the one its first call asked for. */
int tutti__instance_same_impl(const tutti_group_t *g,
                              const tutti__instance_t *inst, const char *name);
/** A later execution must repeat what the first one asked for. */
tutti_status_t tutti__instance_check_same(const tutti_group_t *g,
                                          const tutti__instance_t *inst,
                                          const tutti_instance_params_t *p);
/** Sets up the implementation the coordinator chose, with the details its
 *  init_params wrote. */
tutti_status_t tutti__instance_setup(tutti_group_t *g, tutti__instance_t *inst,
                                     const tutti__decision_t *d);
void tutti__instance_free(tutti__instance_t *inst);

/* request.c */
tutti_request_t *tutti__request_get(tutti_group_t *g);
void tutti__request_list_insert(tutti__req_list_t *l, tutti_request_t *r);
void tutti__request_list_remove(tutti__req_list_t *l, tutti_request_t *r);
/** @p inst was resolved: its waiting execution joins the ready list, and
 *  if it runs unordered, its executions leave the issue-order list. */
void tutti__request_resolved(tutti_group_t *g, tutti__instance_t *inst);
/** Every request of @p g goes back to the process's pool, marked left
 *  (tutti_group_leave). */
void tutti__request_release_all(tutti_group_t *g);
/** Ends @p r with @p st: post-scale, callback, and the next execution of
 *  its instance moves up. */
void tutti__request_complete(tutti_request_t *r, tutti_status_t st);
/** Puts @p r, just issued, on its group's issue-order list. */
void tutti__request_order_add(tutti_group_t *g, tutti_request_t *r);
/** Queues @p r, just issued (its inst and exec set), of @p bytes of
 *  input: behind its instance's executions, or on the ready list and
 *  launched when it can be; the flight recorder notes it. */
void tutti__request_enqueue(tutti_group_t *g, tutti_request_t *r,
                            uint64_t bytes);
/** Launches what is ready, highest priority first; returns launches. */
int tutti__request_launch_ready(tutti_group_t *g);


/* cuda_exec.c: executions on CUDA groups */
/** At the instance's first execution: CUDA groups take device memory of
 *  the member's GPU, cpu groups host memory (checked where CUDA is
 *  loaded). */
tutti_status_t tutti__cuda_check_buffers(const tutti_group_t *g,
                                         const tutti_instance_params_t *p,
                                         const void *sendbuf,
                                         const void *recvbuf);
/** A new instance of a CUDA group: its stream and gate word. */
tutti_status_t tutti__cuda_inst_new(tutti_group_t *g, tutti__instance_t *inst);
/** A request's CUDA event, before the request is freed for good. */
void tutti__cuda_request_free(tutti_group_t *g, tutti_request_t *r);
/** tutti_execute, before launching @p r: holds the caller's stream
 *  unless a device implementation may queue the work at once. */
tutti_status_t tutti__cuda_issue(tutti_request_t *r);
/** tutti_execute, after: holds it when the work was not queued. */
void tutti__cuda_issued(tutti_request_t *r);
/** After init_context: how the instance runs, and what that needs. */
tutti_status_t tutti__cuda_inst_setup(tutti_group_t *g,
                                      tutti__instance_t *inst);
void tutti__cuda_inst_free(tutti__instance_t *inst);
/** Launches @p r of a CUDA group: TUTTI_OK when done, TUTTI_INPROGRESS,
 *  or the error. */
tutti_status_t tutti__cuda_start(tutti_request_t *r);
/** Advances it; same returns. */
tutti_status_t tutti__cuda_progress(tutti_request_t *r);
/** @p r ended (any status): the caller's stream goes on. */
void tutti__cuda_end(tutti_request_t *r);

/* cuda_setup.c: a CUDA group's device modules set up during the join */
tutti_status_t tutti__cuda_group_setup(tutti_group_t *g);
/** The group failed: every module's group state stops its device work. */
void tutti__group_abort_modules(tutti_group_t *g, const char *why);

/* execute.c */
/** tutti_execute() for the library's own keys (the blocking helpers);
 *  errors name @p call, the public function called. */
tutti_status_t tutti__execute(tutti_group_t *g,
                              const tutti_instance_params_t *params,
                              const void *sendbuf, void *recvbuf,
                              const char *call, tutti_request_t **request_out);

/* progress.c */
/** One pass of the progress engine; returns how much moved.  It advances
 *  @p focus (the request its caller waits for or tests, or NULL) and a
 *  bounded share of the other executions in flight (all of them with
 *  @p full), so its cost does not grow with the number in flight. */
int tutti__group_progress(tutti_group_t *g, tutti_request_t *focus, int full);
/** Abort, or a member's task gone: fails the group once, naming why. */
void tutti__group_check_health(tutti_group_t *g);
/** Makes a failed request's detail the thread's last error; its status. */
tutti_status_t tutti__request_status(const tutti_request_t *r);

#endif
