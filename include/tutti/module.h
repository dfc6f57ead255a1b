/*
 * What an algorithm module includes.
 *
 * A module is a shared object that exports exactly one symbol,
 * TUTTI_MODULE_SYMBOL, written by TUTTI_MODULE_DEFINE().  It names the module
 * and lists its implementations.  Modules call back into the core only
 * through the tutti_core_ops_t table they are handed, so they need no link
 * dependency on libtutti.
 *
 * Life of an implementation, per instance (one logical collective):
 *   init_params   once per instance, by the resolver that decides it for
 *                 every member: write the instance's details (its plan:
 *                 subdivisions, offsets, source ranks...) as plain bytes,
 *                 which are then handed to every member;
 *   init_context  once per instance on each member, with those details:
 *                 allocate state (scratch, transfer slots).  No allocation
 *                 after this point;
 *   run           start one execution; return TUTTI_OK if it finished,
 *                 TUTTI_INPROGRESS if progress must be called, or an error;
 *   progress      advance a started execution, same returns;
 *   fini_context, fini_params   free what init_* made.
 * In place: each member decides alone whether a call is in place
 * (exec->sendbuf == exec->recvbuf), so an implementation must post the same
 * transfers (sizes, tags, peers) whatever each member chose.  Per-rank
 * alltoall never reaches an implementation in place: the core moves the
 * input aside first.
 * Reductions: the instance's op is sum, prod, min or max.  The core turns
 * avg into sum and applies pre_scale, post_scale and the division by the
 * group size around the implementation, so no implementation sees them.
 * Per-rank counts: when the output's size is known only after the exchange,
 * the implementation exchanges counts and capacities first; if any member's
 * buffer is too small it moves no data and returns TUTTI_ERR_TOO_SMALL on
 * every member (TUTTI_OK on members that asked for sizes only), with all of
 * its transfers complete, so the group stays usable.
 * An error returned from run or progress fails that execution; the core
 * then stops calling progress for it and the instance stays usable only if
 * the transport says so.  Callbacks record error details with core->error().
 *
 * Devices (ABI 1.3).  An implementation whose flags hold
 * TUTTI_IMPL_DEVICE_MEMORY runs on the group's device memory as it is:
 * exec->sendbuf and exec->recvbuf are CUDA device pointers, and its work
 * goes on exec->stream (a cudaStream_t).  run and progress return TUTTI_OK
 * once all of the execution's work is ordered on exec->stream (queued
 * there, or made to wait there for it): the core then queues its scaling
 * behind it, records an event and completes the request when the event
 * has; TUTTI_INPROGRESS while some of it is not ordered there yet.  A run
 * that returns TUTTI_INPROGRESS must have queued nothing on exec->stream:
 * the core then holds the caller's stream and moves the execution to a
 * stream of its own that waits for the caller's, so progress must read
 * exec->stream again each time.  Any other implementation sees host
 * memory only: for a CUDA group the core stages the data through pinned
 * host buffers around it (exec->stream is then NULL).  TUTTI_IMPL_ORDERED asks
 * the core to launch the implementation's executions in the order the
 * caller issued them, the same on every member (NCCL's rule for one
 * communicator).  A module may keep state per group (a communicator):
 * tutti_alg_group_ops_t, set up before the first instance of the group that
 * runs one of its implementations, aborted when the group fails, finished
 * when the member leaves.
 *
 * Loading.  The loader checks the file before mapping it (a readable
 * regular ELF shared object of this machine, whole) and maps it with every
 * symbol bound at once, so a symbol nothing defines refuses the module,
 * named.  It reads the descriptor's head (ABI major, minor, size, kind)
 * first and no byte beyond the size it declares, and refuses one smaller
 * than its minor needs.  Names (module, implementation, alias, transport)
 * are 1 to 63 of [A-Za-z0-9_.-]; versions and descriptions printable
 * ASCII.  Shipped modules (the build tree's, or the install directory's)
 * load before those of modules.path or TUTTI_MODULE_PATH, and the first
 * module to register a name keeps it: a later module that repeats one is
 * refused, both paths named.  To replace a shipped module, leave it out of
 * modules.load.
 *
 * ABI versions (plugin.h says the rule): 1.1 added per-rank counts, 1.2
 * aliases, 1.3 devices (flags, streams, group state, supports), 1.4 the
 * core's phase service (tutti_alg_exec_phase()), 1.5 the rule parameters
 * an implementation reads (tutti_alg_impl_t.params), 1.6 the core's
 * send_block (tutti_alg_send_block()), each at the end of its struct; the loader reads a module's rows at its own minor's
 * size.
 *
 * ABI growth rule, kept by every field added since 1.0: a field added to
 * a table a module fills means, when it is zero or NULL, what the module
 * did before the field existed, so an old module's source rebuilt
 * against this header behaves as it did.  per_rank_collectives 0: equal
 * counts only (1.1); aliases NULL: no other name (1.2); flags 0: host
 * memory, launched in any order (1.3); group_ops NULL: no group state,
 * supports NULL: takes every call it matches (1.3); params NULL: not
 * declared, so any rule parameter is handed over unchecked as before
 * (1.5; an implementation that reads none declares an empty list,
 * {NULL}).  What the core hands a module grows the same way (phase NULL:
 * nothing records phases, 1.4; send_block NULL: every block goes as
 * send, 1.6).  A new meaning that zero cannot carry takes a new value or
 * a new field, never a new reading of zero.
 *
 * Loading follows no pointer blindly: every table a descriptor points to
 * (implementations, ops tables, lists) and every string (names,
 * descriptions, aliases, parameter names) must lie within the module's
 * own loaded segments, a string's NUL before its segment ends, and a
 * table within the variable that holds it where the file keeps a symbol
 * table.  A pointer into another object or unmapped memory is refused,
 * naming the file, the implementation's index and the field.  A change that cannot be made that way is
 * major 2: this header is then copied unchanged to include/tutti/abi/
 * alg_v1.h and core/plugin/ gets one adapter that wraps a v1 descriptor
 * into a v2 one, so v1 modules keep loading; a module of tests/modules
 * built against the frozen header shows that it does.
 */
#ifndef TUTTI_MODULE_H
#define TUTTI_MODULE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <tutti/plugin.h>
#include <tutti/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_MODULE_ABI_MAJOR 1
#define TUTTI_MODULE_ABI_MINOR 6
#define TUTTI_DETAILS_MAX 2048 /* bytes of details init_params may write */

/** One transfer in flight.  Opaque storage owned by the algorithm (in its
 *  context state), so posting a transfer allocates nothing.  Must stay in
 *  place until the transfer completes. */
typedef struct {
    uint64_t opaque[12];
} tutti_xfer_t;

/** What an implementation sees of an instance; fixed for its life. */
typedef struct {
    size_t size;                 /**< sizeof(tutti_alg_instance_t) */
    tutti_collective_t collective;
    tutti_dtype_t dtype;
    tutti_op_t op;
    size_t count;
    int root;
    int rank;                    /**< this member's rank in the group */
    int group_size;
    int num_tasks;
    tutti_device_type_t device_type;
    uint64_t instance_key;
    const void *rule_params;     /**< read with core->param_size(), in
                                      init_params only (the resolver's rule;
                                      NULL elsewhere: a plan's parameters
                                      reach members in its details) */
    const tutti_locality_t *localities; /**< per rank: task, device, host,
                                             NUMA node (NULL in init_params) */
    /* ABI 1.1: */
    const int *permutation;      /**< permute: rank r sends to
                                      permutation[r] (group_size entries);
                                      NULL for other collectives */
    /* ABI 1.3: */
    int device_index;            /**< this member's device (CUDA ordinal) */
    const char *const *pci_bus_ids; /**< per rank: the PCI bus id of its
                                      GPU ("0000:3b:00.0"), "" for a cpu
                                      member (NULL in init_params) */
    void *group_state;           /**< what the module's init_group made for
                                      this group, or NULL (init_context and
                                      on; NULL in init_params) */
} tutti_alg_instance_t;

/** What a module's group state sees of a group. */
typedef struct {
    size_t size;                 /**< sizeof(tutti_alg_group_t) */
    uint64_t group_key;
    int rank;                    /**< this member's rank (0 at the
                                      coordinator, in init_group_params) */
    int group_size;
    int num_tasks;
    tutti_device_type_t device_type;
    int device_index;            /**< this member's device */
    const tutti_locality_t *localities; /**< per rank (NULL in
                                             init_group_params) */
    const char *const *pci_bus_ids;     /**< per rank, as in
                                             tutti_alg_instance_t */
} tutti_alg_group_t;

typedef struct tutti_alg_exec tutti_alg_exec_t;

/** Reduction applied on receipt: dst[i] = local[i] op incoming[i]. */
typedef struct {
    const void *local;   /**< may equal the receive buffer */
} tutti_recv_reduce_t;

/** Services the core offers to modules. */
typedef struct {
    size_t size; /**< sizeof(tutti_core_ops_t) as the core was built */
    /** Post @p len bytes of @p buf to @p peer under @p tag (unique within
     *  the execution for this peer pair).  @p buf stays untouched until the
     *  transfer completes. */
    tutti_status_t (*send)(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                           const void *buf, size_t len, tutti_xfer_t *xfer);
    /** Receive exactly @p len bytes from @p peer under @p tag into @p buf;
     *  with @p reduce, reduce them with reduce->local into @p buf instead
     *  (the instance's dtype and op). */
    tutti_status_t (*recv)(tutti_alg_exec_t *exec, int peer, uint32_t tag,
                           void *buf, size_t len,
                           const tutti_recv_reduce_t *reduce,
                           tutti_xfer_t *xfer);
    /** TUTTI_OK once @p xfer completed (then the slot may be reused),
     *  TUTTI_INPROGRESS, or the transfer's error. */
    tutti_status_t (*test)(tutti_alg_exec_t *exec, tutti_xfer_t *xfer);
    /** dst[i] = a[i] op b[i] for @p count elements; dst may alias a or b. */
    void (*reduce)(tutti_dtype_t dtype, tutti_op_t op, void *dst,
                   const void *a, const void *b, size_t count);
    /** A size-valued rule parameter ("chunk: 1M"), or @p dflt if absent.
     *  Returns TUTTI_ERR_CONFIG (with detail recorded) if it is malformed. */
    tutti_status_t (*param_size)(const tutti_alg_instance_t *inst,
                                 const char *name, uint64_t dflt,
                                 uint64_t *value_out);
    /** Record an error's detail (shown by tutti_last_error()) and log it. */
    tutti_status_t (*error)(tutti_status_t status, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
    /** Log a line at level 0 error .. 4 trace, under the module's name. */
    void (*log)(int level, const char *module, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    /* ABI 1.4: */
    /** Optional, NULL where nothing records phases: call it through
     *  tutti_alg_exec_phase().  The execution enters phase @p name, ending
     *  the one it was in (NULL: in none from now); the timeline
     *  (TUTTI_TIMELINE) shows each phase inside its execution, with the
     *  bytes sent and received in it.  @p name must live as long as the
     *  module stays loaded (a string literal). */
    void (*phase)(tutti_alg_exec_t *exec, const char *name);
    /* ABI 1.6: */
    /** Call it through tutti_alg_send_block().  As send, for a whole
     *  block that the receiver only stores (no reduce on receipt) and
     *  that no later step of this execution on either side waits on
     *  piece by piece (not a chunk of a pipeline): the transport may then
     *  move it with a single copy (shm: the receiver reads it from the
     *  sender's buffer with process_vm_readv, shm.single_copy), which
     *  leaves the sender's core free but keeps its send in progress until
     *  the receiver has read it.  Anything else goes as send. */
    tutti_status_t (*send_block)(tutti_alg_exec_t *exec, int peer,
                                 uint32_t tag, const void *buf, size_t len,
                                 tutti_xfer_t *xfer);
} tutti_core_ops_t;

/** One execution, as handed to run and progress. */
struct tutti_alg_exec {
    size_t size;                      /**< sizeof(tutti_alg_exec_t) */
    const tutti_core_ops_t *core;
    const tutti_alg_instance_t *inst;
    const void *sendbuf;
    void *recvbuf;
    uint64_t step;                    /**< n-th execution of this instance */
    void *core_private;               /**< the core's; do not touch */
    /* ABI 1.1: per-rank counts, when inst->count is TUTTI_COUNT_PER_RANK
     * (see tutti_execute() for what each collective makes of them). */
    const size_t *counts;             /**< reduce_scatter, alltoall */
    size_t send_count;                /**< allgather */
    size_t recv_capacity;             /**< allgather, alltoall: elements
                                           recvbuf holds; recvbuf NULL and 0:
                                           the caller asks for sizes only */
    size_t *recv_counts;              /**< out, group_size entries (the
                                           core's storage): what arrived from
                                           each rank */
    size_t recv_total;                /**< out: their sum */
    /* ABI 1.3: */
    void *stream;                     /**< TUTTI_IMPL_DEVICE_MEMORY on a
                                           CUDA group: the caller's
                                           cudaStream_t to queue work on
                                           (NULL: the legacy stream); NULL
                                           for host memory */
};

/** The execution @p exec enters phase @p name (a string literal; NULL: in
 *  none from now), for the timeline: one predictable branch where nothing
 *  records phases.  A module of ABI 1.4 or later always gets a core table
 *  that has the entry (the loader refuses minors newer than the core's). */
static inline void tutti_alg_exec_phase(tutti_alg_exec_t *exec,
                                        const char *name)
{
    if (exec->core->phase != NULL)
        exec->core->phase(exec, name);
}

/** Post a whole block the receiver only stores (tutti_core_ops_t's
 *  send_block); as send where the core has no such entry. */
static inline tutti_status_t tutti_alg_send_block(tutti_alg_exec_t *exec,
                                                  int peer, uint32_t tag,
                                                  const void *buf,
                                                  size_t len,
                                                  tutti_xfer_t *xfer)
{
    if (exec->core->send_block != NULL)
        return exec->core->send_block(exec, peer, tag, buf, len, xfer);
    return exec->core->send(exec, peer, tag, buf, len, xfer);
}

typedef struct {
    size_t size; /**< sizeof(tutti_alg_ops_t) */
    /** Optional.  Compute the instance's details once for all members: at
     *  most TUTTI_DETAILS_MAX bytes into @p details, their count into
     *  @p len_out.  Plain data only (no pointers): the bytes travel to other
     *  processes.  @p inst is seen as by rank 0.  An error refuses the
     *  instance on every member with the detail recorded by core->error(). */
    tutti_status_t (*init_params)(const tutti_alg_instance_t *inst,
                                  const tutti_core_ops_t *core, void *details,
                                  size_t *len_out);
    /** Allocate per-member state for an instance; @p details holds what
     *  init_params wrote (@p details_len 0 without init_params). */
    tutti_status_t (*init_context)(const tutti_alg_instance_t *inst,
                                   const tutti_core_ops_t *core,
                                   const void *details, size_t details_len,
                                   void **state_out);
    tutti_status_t (*run)(void *state, tutti_alg_exec_t *exec);
    tutti_status_t (*progress)(void *state, tutti_alg_exec_t *exec);
    void (*fini_context)(void *state);
    /* ABI 1.3: */
    /** Optional.  Whether the implementation can run @p inst (seen as by
     *  rank 0, localities and PCI bus ids given where the group is known,
     *  else NULL): 1, or 0 with the reason in @p why (one line, no final
     *  period), and selection goes on to the next rule (tutti-info
     *  --explain prints the reason).  Called by the coordinator and by
     *  tutti_info_explain(); must not block or allocate per call. */
    int (*supports)(const tutti_alg_instance_t *inst, char *why, size_t len);
} tutti_alg_ops_t;

/** tutti_alg_impl_t.flags (ABI 1.3). */
#define TUTTI_IMPL_DEVICE_MEMORY 0x1u /**< runs on CUDA device memory and
                                           the caller's stream; without it
                                           the core stages CUDA data */
#define TUTTI_IMPL_ORDERED 0x2u       /**< launches in the caller's order,
                                           never reordered by priority */

/** Per-group state of a module (ABI 1.3), all entries optional. */
typedef struct {
    size_t size; /**< sizeof(tutti_alg_group_ops_t) */
    /** At the coordinator (task 0), once per group and module, before the
     *  first instance of the group that runs one of the module's
     *  implementations is decided: at most TUTTI_GROUP_DETAILS_MAX bytes
     *  that every member's init_group receives (NCCL: the unique id).
     *  An error refuses that instance on every member. */
    tutti_status_t (*init_group_params)(const tutti_alg_group_t *group,
                                        const tutti_core_ops_t *core,
                                        void *details, size_t *len_out);
    /** On each member, once per group and module, before the first
     *  init_context of one of the module's implementations in the group;
     *  @p state_out reaches every instance as inst->group_state.  Must not
     *  wait for the other members (start a collective set-up, finish it
     *  in run or progress).  An error refuses that instance.  In a CUDA
     *  group, a module with an allreduce on device memory
     *  (TUTTI_IMPL_DEVICE_MEMORY) is set up during tutti_group_join: each
     *  member runs one allreduce of one float32 through it on a stream of
     *  the core's, no stream held, so the state is made and its first
     *  call done before the caller queues work (cuda.group_setup,
     *  tutti.yaml(5)); an error there is logged and the first execution
     *  that chooses the module calls init_group again. */
    tutti_status_t (*init_group)(const tutti_alg_group_t *group,
                                 const tutti_core_ops_t *core,
                                 const void *details, size_t details_len,
                                 void **state_out);
    /** The group failed (tutti_abort, a timeout, a task gone, a failed
     *  execution): stop what is in flight on the device so that nothing
     *  waits for it any longer (ncclCommAbort).  Called once, from the
     *  member's thread, before fini_group; must not block. */
    void (*abort_group)(void *state, const char *reason);
    /** The member leaves the group, after every instance's fini_context. */
    void (*fini_group)(void *state);
} tutti_alg_group_ops_t;

#define TUTTI_GROUP_DETAILS_MAX 512 /* bytes init_group_params may write */

typedef struct {
    const char *name;         /**< unique across modules, <= TUTTI_NAME_MAX */
    const char *description;
    uint32_t collectives;     /**< TUTTI_COLL_BIT mask */
    uint32_t device_types;    /**< TUTTI_DEVICE_BIT mask */
    const tutti_alg_ops_t *ops;
    uint32_t per_rank_collectives; /**< ABI 1.1: those of collectives it
                                        also runs with per-rank counts
                                        (TUTTI_COUNT_PER_RANK) */
    /* ABI 1.2: */
    const char *const *aliases; /**< other names that select it (names it
                                     had before), NULL-terminated, at most
                                     TUTTI_ALIASES_MAX; NULL for none.
                                     Unique like names. */
    /* ABI 1.3: */
    uint32_t flags;             /**< TUTTI_IMPL_DEVICE_MEMORY,
                                     TUTTI_IMPL_ORDERED */
    /* ABI 1.5: */
    const char *const *params;  /**< the rule parameters it reads with
                                     core->param_size ("chunk", ...),
                                     NULL-terminated, at most
                                     TUTTI_PARAMS_MAX: a rule that gives
                                     it another is refused when the
                                     configuration loads, naming the file,
                                     line and the ones it reads.  An empty
                                     list ({NULL}): it reads none.  NULL:
                                     not declared (as before 1.5): every
                                     rule parameter reaches it unchecked,
                                     and tutti-info --lint warns */
} tutti_alg_impl_t;

#define TUTTI_PARAMS_MAX 16 /* parameter names one implementation reads */
#define TUTTI_ALIASES_MAX 16 /* other names of one implementation */

typedef struct {
    uint32_t abi_major;
    uint32_t abi_minor;
    uint32_t size;            /**< sizeof(tutti_module_desc_t) as compiled */
    uint32_t kind;            /**< TUTTI_MODULE_KIND_ALG */
    const char *name;         /**< module name, <= TUTTI_NAME_MAX */
    const char *version;
    uint32_t num_impls;
    const tutti_alg_impl_t *impls;
    /* ABI 1.3: */
    const tutti_alg_group_ops_t *group_ops; /**< per-group state, or NULL */
} tutti_module_desc_t;

/** Define the module's descriptor from a static array of implementations. */
#define TUTTI_MODULE_DEFINE(mod_name, mod_version, impl_array)                 \
    TUTTI_MODULE_DEFINE_WITH_GROUP(mod_name, mod_version, impl_array, NULL)

/** The same, with per-group state (a const tutti_alg_group_ops_t *). */
#define TUTTI_MODULE_DEFINE_WITH_GROUP(mod_name, mod_version, impl_array,      \
                                       group_ops_ptr)                          \
    TUTTI_MODULE_EXPORT_ const tutti_module_desc_t TUTTI_MODULE_SYMBOL = {     \
        TUTTI_DESC_HEAD_(TUTTI_MODULE_ABI_MAJOR, TUTTI_MODULE_ABI_MINOR,       \
                         tutti_module_desc_t, TUTTI_MODULE_KIND_ALG,           \
                         (mod_name), (mod_version)),                           \
        (uint32_t)(sizeof(impl_array) / sizeof((impl_array)[0])),              \
        (impl_array), (group_ops_ptr)}

#ifdef __cplusplus
}
#endif

#endif
