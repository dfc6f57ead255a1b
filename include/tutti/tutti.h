/*
 * Tutti host (executor) API.
 *
 * A context holds the configuration, the loaded modules and this process's
 * place in the job (task index and count).  A group is a set of devices that
 * run collectives together; an instance is one logical collective in a
 * group, named by an instance key; each call of tutti_execute() is one
 * execution (step) of an instance.  Executions are asynchronous: they
 * return a request that is tested or waited on.  Progress is made by the
 * threads that test or wait, so a blocking call costs no thread hand-off.
 *
 * Threads: a context may be used from several threads; one group member
 * (device) must be driven by one thread at a time.
 *
 * Misuse: every call checks its pointers, handles and values.  A NULL
 * where an object is needed, a group used after tutti_group_leave() or a
 * request after tutti_request_free() (or after its group was left), a
 * value outside its enum, or a rank, host or index outside the group or
 * table is refused with TUTTI_ERR_INVALID_ARG (or the error the call
 * documents) and a tutti_last_error() naming the function, the argument
 * and its value; calls returning void or a value then just return (-1 or
 * NULL for values).  The memory of left groups and freed requests is kept
 * for later ones, so a handle's slot taken again by a later join or
 * execution names the new object, as a reused file descriptor does.
 * Every failing call sets tutti_last_error(), except the inline
 * tutti_dtype_name() and tutti_dtype_size() (tutti/types.h).  A NULL a
 * call documents as accepted ("NULL ok") is no failure.
 */
#ifndef TUTTI_TUTTI_H
#define TUTTI_TUTTI_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/status.h>
#include <tutti/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_VERSION_MAJOR 0
#define TUTTI_VERSION_MINOR 1
#define TUTTI_VERSION_PATCH 0

typedef struct tutti_context tutti_context_t;
typedef struct tutti_group tutti_group_t;
typedef struct tutti_request tutti_request_t;

/* ---- status and errors ------------------------------------------------ */

/** Short identifier of a status ("ERR_TIMEOUT"); static string. */
const char *tutti_status_name(tutti_status_t status);
/** One-line description of a status; static string. */
const char *tutti_strerror(tutti_status_t status);
/**
 * Detail of the last error recorded on the calling thread: what failed, with
 * the values involved (file:line, key, rank, module path, errno text).
 * Borrowed; valid until the next Tutti call on this thread.  Empty string if
 * no error was recorded.  The error is logged once where it is found,
 * except by the lookups a caller probes (the name and parse functions of
 * tutti/types.h, tutti_group_host(), tutti_group_pci_bus_id(), and the
 * TUTTI_ERR_NOT_FOUND of tutti_info_module() and tutti_info_impl()),
 * which only record it.
 */
const char *tutti_last_error(void);

/* ---- context ------------------------------------------------------------ */

/**
 * A key-value store every task of a job reaches (a framework's rendezvous
 * store, such as PyTorch's TCPStore; a shared file system; etcd), through
 * which tutti_context_create() meets the other tasks instead of the
 * environment, a rendezvous file or a fixed port.  Keys are text, values
 * bytes.  The calls may come from any thread of the process, one at a
 * time.  One context per store: keys start with "tutti/" (give each
 * context a store of its own, or one that prefixes its keys).
 */
typedef struct {
    size_t size;   /**< sizeof(tutti_store_t): tutti_store_init() sets it,
                        so that fields added later are read only where the
                        caller's struct has them */
    void *user;    /**< handed to every call */
    /** Sets @p key to the @p len bytes at @p value (a later set replaces
     *  it).  0 on success; any other value fails the caller. */
    int (*set)(void *user, const char *key, const void *value, size_t len);
    /** Waits until @p key is set, at most @p timeout seconds, then copies
     *  its value, at most @p cap bytes, to @p buf and its whole length to
     *  @p len_out.  0 on success, 1 when the time passed first, any other
     *  value on failure. */
    int (*get)(void *user, const char *key, void *buf, size_t cap,
               size_t *len_out, double timeout);
} tutti_store_t;

/** Fill @p store: size set, user, set and get NULL (the caller sets
 *  them). */
void tutti_store_init(tutti_store_t *store);

typedef struct {
    size_t size;             /**< sizeof(tutti_context_params_t) */
    const char *config_path; /**< NULL: $TUTTI_CONFIG, else installed default;
                                  "" : built-in defaults, no file */
    const char *module_path; /**< dirs searched first (colon list), or NULL */
    const char *log_level;   /**< overrides config and env, or NULL */
    int task;                /**< this process's task index, or -1: from env */
    int num_tasks;           /**< number of tasks in the job, or -1: from env */
    const char *job_id;      /**< job id shared by all tasks, or NULL: env */
    /* Added after 0.1 (read where size covers it): */
    const tutti_store_t *store; /**< meet through it (with task and
                                     num_tasks given), or NULL; read until
                                     tutti_context_destroy() */
} tutti_context_params_t;

/** Fill @p params with defaults (everything from config and env). */
void tutti_context_params_init(tutti_context_params_t *params);

/**
 * Create a context: read the configuration, load modules, learn this
 * process's task index and count (from @p params, else TUTTI_RANK/TUTTI_SIZE
 * as tutti-run sets them, else Open MPI's, Hydra's or Slurm's variables; a
 * single task when none is set).  @p params may be NULL.
 *
 * With params->store (and task and num_tasks given) the tasks meet through
 * the store: task 0 makes the job id (unless params->job_id or
 * TUTTI_JOB_ID gives one) and the tcp transport's secret (random, never
 * printed or logged), every task says which host it runs on, and task 0's
 * tcp rendezvous listens on a port the system picks and says where.  A
 * task that is not there within the configured timeout fails every other
 * task's call with TUTTI_ERR_TIMEOUT naming it (task 0's, for task 0).
 */
tutti_status_t tutti_context_create(const tutti_context_params_t *params,
                                    tutti_context_t **ctx_out);
/** Free everything the context holds; groups must have been left. NULL ok. */
void tutti_context_destroy(tutti_context_t *ctx);

/**
 * Abort: every pending and future execution of this context, and of the
 * contexts of every other task of the job, fails with TUTTI_ERR_ABORTED and
 * a detail naming this task and @p reason.  Other tasks learn it within
 * milliseconds through the control plane.  Afterwards only
 * tutti_group_leave() and tutti_context_destroy() are useful; a new context
 * may then be created.  @p reason may be NULL ("(no reason given)").
 */
tutti_status_t tutti_abort(tutti_context_t *ctx, const char *reason);

int tutti_context_task(const tutti_context_t *ctx);
int tutti_context_num_tasks(const tutti_context_t *ctx);

/**
 * Sum @p value over every task of the job into @p sum_out, through the
 * control plane: task 0 adds the values and tells every task.  No
 * algorithm module, selection rule or data transport takes part, so a
 * tool can total its checks of those (tutti-perf's #wrong) without
 * trusting them.  Every task calls it the same number of times, one call
 * at a time per context (another waiting call on the context is refused
 * with TUTTI_ERR_INVALID_ARG); the n-th calls of all tasks are added
 * together.  Blocks until the total arrives; fails with TUTTI_ERR_TIMEOUT
 * after the config's timeout, TUTTI_ERR_PEER if a task is gone,
 * TUTTI_ERR_ABORTED after an abort.  A round trip through task 0: a
 * check, not a data path.  The sum wraps modulo 2^64.
 */
tutti_status_t tutti_context_sum(tutti_context_t *ctx, uint64_t value,
                                 uint64_t *sum_out);

/* ---- groups ------------------------------------------------------------- */

/** tutti_group_params_t.device_order. */
typedef enum {
    TUTTI_ORDER_TASK = 0,   /**< by task, then device index (the default) */
    TUTTI_ORDER_TOPOLOGY    /**< by host, then the GPU's PCI bus id (CUDA
                                 groups; cpu members by task, then index),
                                 so a ring follows the machines' links */
} tutti_device_order_t;

typedef struct {
    size_t size;            /**< sizeof(tutti_group_params_t) */
    uint64_t group_key;     /**< chosen by the host, equal on all members */
    int group_size;         /**< number of devices in the group */
    tutti_device_type_t device_type;
    int device_index;       /**< this member's device index within its task */
    double timeout;         /**< seconds to wait for members and peers;
                                 <= 0: the config's timeout */
    const int *ring_order;  /**< NULL: ranks in device_order.
                                 Else group_size entries, the same on every
                                 member: rank r goes to the member at
                                 position ring_order[r] of the default
                                 order, by task then device index (a
                                 permutation of 0..size-1) */
    /* Since 0.2 (a caller whose size ends before it gets the default): */
    tutti_device_order_t device_order; /**< without ring_order: how ranks
                                 are ordered, the same on every member */
} tutti_group_params_t;

void tutti_group_params_init(tutti_group_params_t *params);

/**
 * Join a group as device task:<this task>/<type>:<device_index>.  A CUDA
 * member's device_index is its CUDA ordinal (as cudaSetDevice takes it);
 * the build must have CUDA and the device must exist, else the join fails
 * with TUTTI_ERR_UNSUPPORTED naming why.  Blocks
 * until every member has joined (or the timeout), in this task or any
 * other; no member needs to know the others.  Task 0's resolver forms the
 * group: it checks that every member gives the same size, device type,
 * ring_order and module builds, and refuses all of them alike if not.
 * Ranks are ordered by task, then device index, unless ring_order says
 * otherwise.  A device joins a group once: a second join of the same group
 * key as the same device while the first is joined is refused with
 * TUTTI_ERR_INVALID_ARG naming both.  Members of one task reach each other through the local
 * transport when the whole group is in one task, else through shm.
 */
tutti_status_t tutti_group_join(tutti_context_t *ctx,
                                const tutti_group_params_t *params,
                                tutti_group_t **group_out);
/** Leave the group; pending requests must be complete. NULL ok. */
void tutti_group_leave(tutti_group_t *group);

int tutti_group_rank(const tutti_group_t *group);
int tutti_group_size(const tutti_group_t *group);
/** Where rank @p rank of the group is (device resolver).  TUTTI_ERR_INVALID_ARG
 *  for a rank outside the group. */
tutti_status_t tutti_group_locality(const tutti_group_t *group, int rank,
                                    tutti_locality_t *locality_out);
/** Name of host number @p host of the group (as in tutti_locality_t), or
 *  NULL for a host outside the group (recorded, not logged: a caller may
 *  probe for a second host); borrowed for the group's life. */
const char *tutti_group_host(const tutti_group_t *group, int host);
/** PCI bus id of the GPU of rank @p rank ("0000:3b:00.0", as CUDA writes
 *  it), "" for a cpu member, NULL for a rank outside the group (recorded,
 *  not logged); borrowed for the group's life. */
const char *tutti_group_pci_bus_id(const tutti_group_t *group, int rank);

/* ---- executions ----------------------------------------------------------- */

/** tutti_instance_params_t.step: the next step of the instance's sequence. */
#define TUTTI_STEP_NEXT UINT64_MAX
/** Most instance keys one execution may wait for (num_wait_for). */
#define TUTTI_MAX_WAIT_FOR 8
/** Most requests tutti_request_wait_any() takes. */
#define TUTTI_MAX_WAIT_ANY 64

typedef struct {
    size_t size;                   /**< sizeof(tutti_instance_params_t) */
    uint64_t instance_key;         /**< equal on all members for one
                                        instance; below 2^63 (keys from
                                        2^63 up are the blocking helpers',
                                        refused: TUTTI_ERR_INVALID_ARG) */
    tutti_collective_t collective;
    tutti_dtype_t dtype;
    size_t count;                  /**< elements per rank (see each
                                        collective), or TUTTI_COUNT_PER_RANK */
    tutti_op_t op;                 /**< reductions only.  Integer sum and
                                        prod wrap modulo 2^N; integer avg is
                                        the wrapped sum divided by the group
                                        size, truncated toward zero.
                                        float16 and bfloat16 are computed in
                                        float32 and rounded to the type
                                        after each step; float min and max
                                        propagate NaN.  The order of
                                        floating additions is the
                                        implementation's */
    int root;                      /**< rooted collectives only */
    const char *algorithm;         /**< per-call choice, or NULL: selection */
    double pre_scale;              /**< reductions of floating types: each
                                        input is multiplied by it before the
                                        reduction.  0 (the default) or 1
                                        means no scaling, not a product with
                                        zero.  Integer types refuse any
                                        other value (ERR_INVALID_ARG) */
    double post_scale;             /**< likewise, the result after it; op
                                        avg first divides by the group size
                                        (the quotient correctly rounded:
                                        exact where representable) */
    const int *permutation;        /**< permute: group_size entries, the same
                                        on every member: rank r sends its
                                        buffer to rank permutation[r] */
    /* Per execution (may differ from call to call): */
    uint64_t step;                 /**< TUTTI_STEP_NEXT (default): the n-th
                                        execution is step n on every member;
                                        or an explicit step id, which every
                                        member must give in the same order */
    int priority;                  /**< among executions ready to launch on
                                        this member, higher launches (and is
                                        progressed) first; default 0 */
    const uint64_t *wait_for;      /**< instance keys whose execution of the
                                        same step must have launched on this
                                        member before this one launches */
    size_t num_wait_for;           /**< at most TUTTI_MAX_WAIT_FOR, else
                                        TUTTI_ERR_INVALID_ARG */
    double timeout;                /**< seconds this execution may go without
                                        progress; <= 0: the group's */
    /* Per-rank counts, per execution, when count is TUTTI_COUNT_PER_RANK: */
    const size_t *counts;          /**< reduce_scatter: group_size entries,
                                        the same on every member: elements of
                                        rank r's result.  alltoall: elements
                                        this member sends to each rank.  Read
                                        until the request completes */
    size_t send_count;             /**< allgather: elements this member
                                        contributes */
    size_t recv_capacity;          /**< allgather, alltoall: elements recvbuf
                                        holds (0 with recvbuf NULL: only learn
                                        the sizes, see tutti_request_info) */
    /* Since 0.2 (a caller whose size ends before it gets NULL): */
    void *stream;                  /**< CUDA groups: the cudaStream_t the
                                        execution is ordered on (NULL: the
                                        legacy default stream), see
                                        tutti_execute(); ignored for cpu */
} tutti_instance_params_t;

void tutti_instance_params_init(tutti_instance_params_t *params);

/**
 * Start one execution of an instance.  The first execution of an instance
 * key resolves it (checks, selects and sets up the implementation); later
 * executions reuse that and must pass the same parameters.  @p sendbuf and
 * @p recvbuf stay owned by the caller and must stay valid until the request
 * completes, and are aligned to the dtype's element size.  They may be
 * equal: the call is then in place, as each collective says.  Each member
 * decides that alone: some members may run a call in place while others
 * do not.  With n members and c = count:
 *   allreduce:      c elements in sendbuf, c out in recvbuf.  In place: the
 *                   buffer holds the input and gets the result.
 *   broadcast:      c elements; the root reads sendbuf, every rank writes
 *                   recvbuf (the root too, unless sendbuf == recvbuf).
 *   reduce:         c elements in sendbuf on every rank; the result goes to
 *                   the root's recvbuf (others' recvbuf is unused, may be
 *                   NULL).  In place at the root: its buffer holds its input.
 *   allgather:      c elements in sendbuf, n*c out in recvbuf, rank r's at
 *                   element r*c.  In place: rank r's input already sits at
 *                   its place in recvbuf.
 *   gather:         like allgather, but only the root's recvbuf is written
 *                   (others' may be NULL).  In place (sendbuf == recvbuf),
 *                   on any rank: its input sits at its block r*c.
 *   reduce_scatter: n*c elements in sendbuf; rank r's recvbuf gets the c
 *                   reduced elements of block r.  In place: the buffer holds
 *                   the n*c inputs and block r of it gets the result (the
 *                   other blocks are overwritten).
 *   alltoall:       n*c elements in sendbuf, block j (element j*c) going to
 *                   rank j; recvbuf gets n*c, block j from rank j.  In place:
 *                   the one buffer is read and then written.
 *   permute:        c elements of sendbuf go to rank permutation[rank]; the
 *                   c elements from the rank that names this one arrive in
 *                   recvbuf.  In place allowed.
 * Per-rank counts (count == TUTTI_COUNT_PER_RANK), given per execution:
 *   allgather:      this rank's send_count elements; recvbuf gets every
 *                   rank's, concatenated in rank order.
 *   reduce_scatter: counts[r] elements of rank r's block, the blocks
 *                   concatenated in sendbuf; rank r's recvbuf gets
 *                   counts[r].  In place: the result lands at block r.
 *   alltoall:       counts[j] elements to rank j, blocks concatenated in
 *                   sendbuf; recvbuf gets the blocks from every rank,
 *                   concatenated in rank order.  In place, the buffer is
 *                   read and then written (the core copies the input
 *                   aside first, into a buffer the instance keeps).
 * CUDA groups: sendbuf and recvbuf are device memory of the member's GPU
 * (checked once, at the instance's first execution: host memory there, or
 * device memory in a cpu group, is refused with TUTTI_ERR_INVALID_ARG).
 * The execution is ordered on params->stream as a kernel queued there
 * would be: it reads its input after the work queued on that stream before
 * the call, and work queued on the stream after the call sees its result.
 * The request completes once the result is in place.  An implementation
 * that runs on device memory (NCCL's) queues its work on the stream; any
 * other runs on pinned host buffers the instance keeps, the copies ordered
 * by events and the caller's stream held until the result is back, so no
 * thread blocks.  A call made while the stream is captured into a CUDA
 * graph is refused on that staged path (TUTTI_ERR_UNSUPPORTED).
 * The caller's stream is held (by a wait the host opens) during an
 * instance's first execution and during every staged one, until the
 * request completes; the host's part of it runs only inside
 * tutti_request_wait/test (or another member's call that progresses the
 * group).  Until then the caller must not block on that stream: no
 * cudaStreamSynchronize or cudaEventSynchronize of work queued after the
 * call, no synchronous cudaMemcpy, no cudaMemcpyAsync between the device
 * and pageable host memory (it returns only when done), no cudaFree,
 * cudaFreeHost or cudaDeviceSynchronize; with stream NULL, or a stream
 * created without cudaStreamNonBlocking, the same holds for every stream
 * that synchronizes with the legacy default stream.  Each would wait for
 * the held stream, which waits for the call that never comes: the
 * program hangs.  Queue what needs the result (kernels, copies to pinned
 * memory from cudaMallocHost) and wait or test first.
 * When the output's size is known only after the exchange (allgather and
 * alltoall with per-rank counts), recv_capacity gives recvbuf's size.  If
 * any member's buffer is too small, no data moves: every member's request
 * fails with TUTTI_ERR_TOO_SMALL naming the ranks short and what each
 * needs, except members that passed recvbuf NULL and capacity 0, whose
 * request completes with TUTTI_OK: they asked for the sizes only.  Either
 * way tutti_request_info() then tells each member its recv_total and
 * recv_counts, and the group stays usable.
 */
tutti_status_t tutti_execute(tutti_group_t *group,
                             const tutti_instance_params_t *params,
                             const void *sendbuf, void *recvbuf,
                             tutti_request_t **request_out);

/** TUTTI_OK when complete, TUTTI_INPROGRESS, or the execution's error. */
tutti_status_t tutti_request_test(tutti_request_t *request);
/** Block until complete; its status.  The calling thread spins, then
 *  yields the processor; on a host running more members of the group than
 *  it has processors, a wait idle for a millisecond sleeps until a peer's
 *  data wakes it (shm and local transports). */
tutti_status_t tutti_request_wait(tutti_request_t *request);
/** Like tutti_request_wait(), for at most @p timeout seconds (>= 0):
 *  TUTTI_INPROGRESS when the time passed first, the request still
 *  pending.  The execution's own time limit counts across calls, so a
 *  caller may wait in slices (to look at signals between them) and still
 *  meet it as one long wait would.  Since 0.2. */
tutti_status_t tutti_request_wait_for(tutti_request_t *request,
                                      double timeout);
/** Release a completed request.  NULL ok. */
void tutti_request_free(tutti_request_t *request);

/** Block until every one of @p n requests completed; TUTTI_OK, or the
 *  status of the first that failed (in array order). */
tutti_status_t tutti_request_wait_all(tutti_request_t *const *requests,
                                      size_t n);
/** Block until one of @p n requests completed; its index goes to
 *  @p index_out and its status is returned.  Requests already complete
 *  count at once (the lowest index).  @p n is 1..TUTTI_MAX_WAIT_ANY, else
 *  TUTTI_ERR_INVALID_ARG. */
tutti_status_t tutti_request_wait_any(tutti_request_t *const *requests,
                                      size_t n, size_t *index_out);

typedef struct {
    uint64_t instance_key;
    uint64_t step;            /**< the execution's step id */
    uint64_t launch_order;    /**< 1 for the first execution launched by this
                                   member, 2 for the next...; 0: not yet */
    const char *algorithm;    /**< implementation, or "" before resolution;
                                   borrowed for the request's life */
    size_t recv_total;        /**< once complete: elements this member
                                   received (allgather, gather root, alltoall,
                                   reduce_scatter; with per-rank counts too) */
    const size_t *recv_counts;/**< once complete, with per-rank counts:
                                   group_size entries, elements from (or, for
                                   reduce_scatter, of) each rank; else NULL.
                                   Borrowed for the request's life */
} tutti_request_info_t;

/** What a request is and where it stands. */
void tutti_request_info(const tutti_request_t *request,
                        tutti_request_info_t *info_out);

typedef void (*tutti_request_cb_t)(tutti_request_t *request,
                                   tutti_status_t status, void *arg);
/** Call @p cb from the progressing thread when the request completes
 *  (at once if it already has). */
void tutti_request_set_callback(tutti_request_t *request,
                                tutti_request_cb_t cb, void *arg);

/* Blocking helpers.  Each derives its instance key from its arguments. */
tutti_status_t tutti_allreduce(tutti_group_t *group, const void *sendbuf,
                               void *recvbuf, size_t count,
                               tutti_dtype_t dtype, tutti_op_t op);
tutti_status_t tutti_broadcast(tutti_group_t *group, void *buf, size_t count,
                               tutti_dtype_t dtype, int root);
tutti_status_t tutti_reduce(tutti_group_t *group, const void *sendbuf,
                            void *recvbuf, size_t count, tutti_dtype_t dtype,
                            tutti_op_t op, int root);
tutti_status_t tutti_allgather(tutti_group_t *group, const void *sendbuf,
                               void *recvbuf, size_t count,
                               tutti_dtype_t dtype);
tutti_status_t tutti_gather(tutti_group_t *group, const void *sendbuf,
                            void *recvbuf, size_t count, tutti_dtype_t dtype,
                            int root);
tutti_status_t tutti_reduce_scatter(tutti_group_t *group, const void *sendbuf,
                                    void *recvbuf, size_t count,
                                    tutti_dtype_t dtype, tutti_op_t op);
tutti_status_t tutti_alltoall(tutti_group_t *group, const void *sendbuf,
                              void *recvbuf, size_t count,
                              tutti_dtype_t dtype);
/**
 * Allgather with per-rank counts: this member gives @p send_count elements;
 * recvbuf (room for @p recv_capacity) gets every member's, in rank order.
 * With recvbuf NULL and capacity 0 it only learns the sizes.  Either way,
 * and on TUTTI_ERR_TOO_SMALL, @p recv_counts_out (group_size entries, or
 * NULL) and @p recv_total_out (or NULL) get what each member gives and the
 * total.
 */
tutti_status_t tutti_allgatherv(tutti_group_t *group, const void *sendbuf,
                                size_t send_count, void *recvbuf,
                                size_t recv_capacity, tutti_dtype_t dtype,
                                size_t *recv_counts_out,
                                size_t *recv_total_out);
tutti_status_t tutti_barrier(tutti_group_t *group);

/* ---- registered memory ---------------------------------------------------- */

/**
 * Buffers the other processes of this host can read in place.  A message
 * of shm.registered_min bytes or more (4K shipped) sent from registered
 * memory to a member of the same host in another process goes as a
 * descriptor of the buffer: the receiver maps the region once (through
 * /proc/<pid>/fd; cached, at most 16 regions per peer) and then copies
 * each such message, or reduces it into its own data, straight from the
 * sender's buffer, so each block is copied once where the slots copy it
 * twice; the send completes when the receiver has read it.  Whether a
 * buffer is registered is looked up per message, so registered,
 * unregistered and mixed members work together, each send going the way
 * its own buffer allows; receive buffers need no registration.  Other
 * transports (tcp, threads of one process) move registered memory as any
 * other.  The table is the process's: every context and group of it sees
 * the same regions.  Free or deregister a buffer only once no request
 * using it is in progress; a peer that mapped it keeps its pages until it
 * leaves the group or maps 16 newer regions of this process.
 */
/** Allocate @p size bytes (rounded up to pages, zero-filled) of shared
 *  memory, registered.  TUTTI_ERR_INVALID_ARG (size 0, ptr_out NULL),
 *  TUTTI_ERR_NO_MEMORY, or TUTTI_ERR_IO naming the system call. */
tutti_status_t tutti_mem_alloc(size_t size, void **ptr_out);
/** Free what tutti_mem_alloc returned (NULL: nothing).  Any other pointer:
 *  TUTTI_ERR_INVALID_ARG. */
tutti_status_t tutti_mem_free(void *ptr);
/** Register @p size bytes at @p ptr that the program already has, where
 *  the platform lets other processes map them: memory mapped MAP_SHARED
 *  from a file (a file of /dev/shm, a memfd, a file on disk), the pages
 *  that hold the range (the whole range within one mapping).  Private
 *  memory (malloc, the stack, a numpy array's own data, MAP_PRIVATE) is
 *  refused with TUTTI_ERR_UNSUPPORTED, naming the mapping: allocate it
 *  with tutti_mem_alloc instead.  A range inside a region registered
 *  already returns TUTTI_OK and adds nothing; one that overlaps a region
 *  without lying inside it is TUTTI_ERR_INVALID_ARG. */
tutti_status_t tutti_mem_register(void *ptr, size_t size);
/** Remove the registration that holds @p ptr (NULL: nothing);
 *  TUTTI_ERR_INVALID_ARG for memory of tutti_mem_alloc (free it) or
 *  none registered. */
tutti_status_t tutti_mem_deregister(void *ptr);
/** 1 if the @p size bytes at @p ptr (1 byte for size 0) lie in one
 *  registered region, else 0. */
int tutti_mem_registered(const void *ptr, size_t size);

/* ---- point-to-point ------------------------------------------------------- */

/**
 * Send @p count elements of @p dtype at @p buf to rank @p peer of the group,
 * under @p tag; the request completes once the bytes are sent or buffered
 * (the transport may keep them until the receiver posts), and @p buf may
 * then be reused.  The receiver posts tutti_irecv() (or tutti_recv()) from
 * this rank under the same tag, for the same number of bytes: a receive of
 * another length fails with TUTTI_ERR_TRUNCATED naming the sender, the
 * tag and both lengths, and like any failed execution fails the group.
 * Messages from one rank to another under one tag arrive in the order they
 * were sent; under distinct tags they may be received in any order.  Any
 * source (a receive from whichever rank sends first) and a message to the
 * member itself are refused (TUTTI_ERR_INVALID_ARG, naming the peer), and
 * so is a CUDA group (TUTTI_ERR_UNSUPPORTED).  Only the two ranks take
 * part: no other member calls anything.  The group's timeout limits a
 * wait as for any execution (TUTTI_ERR_TIMEOUT naming the peer awaited).
 * Since 0.2.
 */
tutti_status_t tutti_isend(tutti_group_t *group, const void *buf,
                           size_t count, tutti_dtype_t dtype, int peer,
                           uint32_t tag, tutti_request_t **request_out);
/** Receive @p count elements of @p dtype from rank @p peer under @p tag
 *  into @p buf (see tutti_isend()); tutti_request_info()'s recv_total
 *  is @p count, and its algorithm, as errors and the flight recorder,
 *  names the message: "recv from rank P tag T" ("send to rank P tag T"
 *  for a send).  Since 0.2. */
tutti_status_t tutti_irecv(tutti_group_t *group, void *buf, size_t count,
                           tutti_dtype_t dtype, int peer, uint32_t tag,
                           tutti_request_t **request_out);
/** tutti_isend(), waited for.  Since 0.2. */
tutti_status_t tutti_send(tutti_group_t *group, const void *buf, size_t count,
                          tutti_dtype_t dtype, int peer, uint32_t tag);
/** tutti_irecv(), waited for.  Since 0.2. */
tutti_status_t tutti_recv(tutti_group_t *group, void *buf, size_t count,
                          tutti_dtype_t dtype, int peer, uint32_t tag);

/* ---- introspection (tutti-info) ------------------------------------------- */

typedef struct {
    const char *name;        /**< module name from its descriptor */
    const char *version;
    const char *path;        /**< file it was loaded from, or refused */
    const char *reason;      /**< NULL when loaded; why it was refused */
    unsigned abi_major, abi_minor; /**< the module ABI, or for a transport
                                        module the transport ABI */
    const char *kind;        /**< "algorithm", "transport", or "" when the
                                  descriptor could not be read */
    const char *transport;   /**< a loaded transport module's transport
                                  name (as in `transports:`), else NULL */
} tutti_module_info_t;

typedef struct {
    const char *name;        /**< implementation name ("RingAllreduce") */
    const char *module;      /**< module that provides it */
    const char *description;
    uint32_t collectives;    /**< TUTTI_COLL_BIT mask */
    uint32_t device_types;   /**< TUTTI_DEVICE_BIT mask */
    uint32_t per_rank_collectives; /**< collectives it also runs with
                                        per-rank counts */
    const char *const *aliases;    /**< other names that select it,
                                        NULL-terminated, or NULL */
} tutti_impl_info_t;

/** Modules seen on the module path, loaded and refused; borrowed strings
 *  valid for the context's life.  Returns TUTTI_ERR_NOT_FOUND past the end. */
tutti_status_t tutti_info_module(const tutti_context_t *ctx, size_t index,
                                 tutti_module_info_t *info_out);
tutti_status_t tutti_info_impl(const tutti_context_t *ctx, size_t index,
                               tutti_impl_info_t *info_out);
/** What the loaded transport @p name says it finds on this host (the
 *  library under it, its version, devices), lines into @p buf of @p len
 *  bytes; "" for a transport that says nothing.  TUTTI_ERR_NOT_FOUND for
 *  a name no loaded module provides.  Since 0.2. */
tutti_status_t tutti_info_transport(const tutti_context_t *ctx,
                                    const char *name, char *buf, size_t len);

/** A query for tutti_info_explain(): what selection sees for one call. */
typedef struct {
    tutti_collective_t collective;
    tutti_device_type_t device_type;
    tutti_dtype_t dtype;
    size_t bytes;        /**< message size in bytes (count x dtype size) */
    int group_size;
    int num_tasks;
    int per_rank;        /**< 1: counts given per rank per execution
                              (TUTTI_COUNT_PER_RANK); bytes is then ignored,
                              rules match as at the largest size, and only
                              implementations that run the collective with
                              per-rank counts are chosen */
    int num_hosts;       /**< hosts the group spans (members with distinct
                              locality host numbers); 0 means not given
                              and is read as 1 (one host), so a query a
                              caller zero-initialises keeps working */
} tutti_select_query_t;

/**
 * Explain which rule picks which implementation for @p query.  Writes a
 * human-readable account (one line per rule considered) into @p buf and the
 * chosen implementation name into @p impl_out (borrowed, context's life).
 * A rule is passed over when its implementation is not loaded, does not run
 * the collective on the device type, or (per_rank) runs it with equal
 * counts only: the next matching rule is considered, as calls do.
 */
tutti_status_t tutti_info_explain(const tutti_context_t *ctx,
                                  const tutti_select_query_t *query, char *buf,
                                  size_t buflen, const char **impl_out);

/** Print the configuration in force (each value with its source) and the
 *  rules (with those skipped and why) to a stdio FILE *. */
void tutti_info_print_config(const tutti_context_t *ctx, void *file);

/**
 * Lint the selection rules of the configuration file @p ctx read (those of
 * TUTTI_ALGO are left out) against the modules it loaded, as
 * tutti-info --lint does, and print one line per finding to a stdio
 * FILE *, "<file>:<line>:<column>: <what>; <what was expected, or which
 * earlier rule (<file>:<line>) covers it>", in the order of the lines:
 * implementations no loaded module provides or that do not run the rule's
 * collectives or devices; rules that never match (earlier rules take every
 * call they could match); size ranges that overlap the range of an earlier
 * rule alike in every other key; and calls of a collective the file has
 * rules for that no rule matches.  A rule whose implementation may decline
 * a call (as NCCL's do) takes no call from later rules.  Lines
 * "...: note: ..." (a rule for a device no loaded module runs on, naming an
 * implementation not loaded) and "...: warning: ... declares no params: not
 * checked ..." (a rule giving parameters to an implementation that does not
 * list the ones it reads, so loading could not check them) are not
 * findings.  @p findings_out gets the
 * number of findings.  The schema errors of a file are the context's: its
 * creation refuses the file, naming file:line:column.
 */
tutti_status_t tutti_info_lint(const tutti_context_t *ctx, void *file,
                               size_t *findings_out);

/** Print every setting, the core's and the loaded modules', to a stdio
 *  FILE *: its key, line of doc, default, environment variable and what it
 *  accepts. */
void tutti_info_print_settings(const tutti_context_t *ctx, void *file);

#ifdef __cplusplus
}
#endif

#endif
