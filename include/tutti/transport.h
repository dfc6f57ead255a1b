/*
 * The peer-access transport interface, and what a transport module
 * includes.
 *
 * A transport connects one group member (an endpoint) to some of the other
 * members and moves messages between them: post a buffer to a peer under a
 * key, receive from a peer under a key.  Messages from one peer to another
 * under distinct keys may be received in any order the receiver posts
 * them; the transport matches by key.  Everything is non-blocking:
 * operations complete as progress() is called.
 *
 * Which transport serves which peer is the core's choice, per peer pair:
 * members of one process always meet through the built-in "local"
 * transport; for the others the core takes the first transport of the
 * configured list (`transports: [shm, tcp]`, TUTTI_TRANSPORTS) whose
 * reachable() accepts the peer, and hands each transport the set of peers
 * it serves.  The core itself runs the local transport and dispatches the
 * operations; "shm" and "tcp" are modules loaded from disk like algorithm
 * modules, and a third-party transport is dropped in the same way.
 *
 * A transport module exports one symbol, TUTTI_MODULE_SYMBOL, written by
 * TUTTI_TP_MODULE_DEFINE(): its header has the same first fields as an
 * algorithm module's, with kind TUTTI_MODULE_KIND_TP and the transport ABI
 * version below.  It calls the core only through the tutti_tp_core_ops_t
 * table it is handed (group->core), so it needs no link to libtutti.  The
 * ops tables start with their size so fields can be added at the end
 * within an ABI major version.
 *
 * ABI versions (plugin.h says the rule): 2.1 added settings at the end of
 * the descriptor and of the group; 2.2 the group's verify and the core's
 * chan_set_verify; 2.3 the group's sleep, the core's doorbells
 * (chan_attach_bell, chan_sleep), chan_set_single_copy_range and the
 * transport's optional sleep; 2.4 the group's store and secret and the
 * core's store_set and store_get; 2.5 the core's chan_enable_mapped and
 * chan_set_mapped_min (registered memory; read each where the size of its
 * table covers it) and the op's flags (TUTTI_TP_OP_WHOLE); 2.6 the
 * group's plane, the core's exchange (addresses traded over the job's
 * control plane) and the transport's optional describe; the loader reads
 * a 2.0 descriptor by its size.
 *
 * ABI growth rule, kept by every field added since 2.0: a field added to
 * a table a module fills means, when it is zero or NULL, what the module
 * did before the field existed, so an old module's source rebuilt
 * against this header behaves as it did: settings NULL and num_settings
 * 0: no settings rows, values read with config_get as in 2.0 (2.1);
 * peer_alive, reachable, peer_error NULL: cannot tell, serves every peer,
 * no detail (2.0); sleep NULL: the core yields instead (2.3).  What the
 * core hands a transport grows the same way: group->verify 0 is off
 * (2.2), group->sleep 0 never sleeps (2.3), group->store and
 * group->secret NULL: the job met without a store, the transport finds
 * its peers and secret as before (2.4); group->plane NULL: no exchange
 * (2.6); describe NULL: nothing to say (2.6).  A new meaning that zero
 * cannot carry takes a new value or a new field, never a new reading of
 * zero.  The loader follows no pointer of a descriptor (ops table, names,
 * settings rows and their texts) that does not lie within the module's
 * own loaded segments.
 *
 * A change that cannot be made that way is major 3: this header
 * is then copied unchanged to include/tutti/abi/tp_v2.h and core/plugin/
 * gets one adapter that wraps a v2 descriptor into a v3 one, so v2 modules
 * keep loading; a module of tests/modules built against the frozen header
 * shows that it does.
 */
#ifndef TUTTI_TRANSPORT_H
#define TUTTI_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/plugin.h>
#include <tutti/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_TP_ABI_MAJOR 2
#define TUTTI_TP_ABI_MINOR 6

/** tutti_tp_group_t.verify: what a transport checks of the bytes it
 *  moves (the core's `verify` setting). */
#define TUTTI_TP_VERIFY_OFF 0
#define TUTTI_TP_VERIFY_CHECKSUM 1 /**< a checksum per chunk, computed by
                                        the sender, checked on receipt; a
                                        difference fails the receive with a
                                        line naming the sender, the key, the
                                        chunk's bytes and both sums */
#define TUTTI_TP_VERIFY_MAC 2      /**< the same with a keyed tag where the
                                        bytes cross a network (tcp: Poly1305
                                        under the connection's session
                                        key), so that no one between the
                                        ends can alter them unseen; a
                                        transport whose bytes only the job's
                                        processes reach (shm) checks the
                                        checksum */

/** Bytes of one member's doorbell (ABI 2.3): memory every peer of the
 *  member can reach, aligned to 64 bytes and filled with zeros, that a
 *  transport places for each member of a group whose waits sleep
 *  (tutti_tp_group_t.sleep; chan_attach_bell). */
#define TUTTI_CHAN_BELL_BYTES 64

/** Bytes one member may hand the core's exchange (ABI 2.6): a network
 *  library's address of its endpoint, e.g. a UCX worker's. */
#define TUTTI_TP_EXCHANGE_MAX 3072

/** Key of one message on the wire. */
typedef struct {
    uint64_t instance; /**< instance key */
    uint32_t step;     /**< execution step (low 32 bits) */
    uint32_t tag;      /**< chosen by the algorithm */
} tutti_wire_key_t;

typedef void (*tutti_reduce_fn_t)(tutti_dtype_t dtype, tutti_op_t op,
                                  void *dst, const void *a, const void *b,
                                  size_t count);

/** Reduce-on-receive: dst = local op incoming, element-wise. */
typedef struct {
    tutti_reduce_fn_t fn;   /**< NULL: plain copy */
    tutti_dtype_t dtype;
    tutti_op_t op;
    const void *local;
} tutti_tp_reduce_t;

/** tutti_tp_op_t.flags of a send: a whole block that the receiver only
 *  stores and that nothing waits on piece by piece (an algorithm's
 *  tutti_alg_send_block()): a transport may move it by single copy.
 *  Sends without it are pieces of a pipeline or blocks reduced on
 *  receipt, for which a single copy's wait costs more than it saves. */
#define TUTTI_TP_OP_WHOLE 1u

/** One posted operation.  Lives in caller storage until it completes. */
typedef struct tutti_tp_op {
    struct tutti_tp_op *next;   /**< transport's queue link */
    tutti_wire_key_t key;
    int peer;
    int is_recv;
    tutti_status_t status;      /**< TUTTI_INPROGRESS until done */
    uint32_t flags;             /**< TUTTI_TP_OP_* (ABI 2.5, in what was
                                     padding: 0 where the op's maker
                                     predates it, as a zeroed op has) */
    const void *sbuf;
    void *rbuf;
    size_t len;
    size_t done;                /**< bytes moved so far */
    tutti_tp_reduce_t reduce;
} tutti_tp_op_t;

/** The core's message channels (opaque): rings of fixed-size slots in
 *  memory both ends can reach, carrying messages as fragments, matched by
 *  key on receipt, reduced on receipt when asked.  A transport whose peers
 *  share memory with it needs only to place the rings. */
typedef struct tutti_chan_ep tutti_chan_ep_t;

/** Services the core offers transports. */
typedef struct {
    size_t size; /**< sizeof(tutti_tp_core_ops_t) as the core was built */
    /** Record an error's detail (shown by tutti_last_error()) and log it. */
    tutti_status_t (*error)(tutti_status_t status, const char *subsys,
                            const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    /** Log a line at level 0 error .. 4 trace. */
    void (*log)(int level, const char *subsys, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    /** Monotonic seconds. */
    double (*now)(void);
    /** A setting by its dotted key ("timeout", "tcp.ports"), the core's or
     *  a loaded module's, as tutti-info prints it; NULL for a key no one
     *  declares.  For modules of ABI 2.0: from 2.1 a module declares its
     *  settings and reads them typed from group->settings. */
    const char *(*config_get)(const void *config, const char *key,
                              char *buf, size_t len);
    /** Bytes one channel of @p slots x @p slot_size takes, and its set-up
     *  by the memory's creator before anyone uses it, in memory of that
     *  many bytes filled with zeros (a fresh shared mapping is; heap memory
     *  must be cleared). */
    size_t (*chan_bytes)(uint32_t slots, size_t slot_size);
    void (*chan_init)(void *chan);
    /** An endpoint of @p size ranks' channels for rank @p rank. */
    tutti_status_t (*chan_ep_create)(int rank, int size, uint32_t slots,
                                     size_t slot_size, const char *tp_name,
                                     tutti_chan_ep_t **ep_out);
    void (*chan_ep_destroy)(tutti_chan_ep_t *ep);
    /** Messages to @p peer go through @p out, from it through @p in. */
    void (*chan_attach)(tutti_chan_ep_t *ep, int peer, void *out, void *in);
    tutti_status_t (*chan_send)(tutti_chan_ep_t *ep, tutti_tp_op_t *op);
    tutti_status_t (*chan_recv)(tutti_chan_ep_t *ep, tutti_tp_op_t *op);
    /** Advances every attached peer; returns fragments moved. */
    int (*chan_progress)(tutti_chan_ep_t *ep);
    /* Appended within ABI 2.0: call only where size covers it. */
    /** Single copy from @p peer (Linux): this member has shown it can read
     *  the memory of @p peer's process @p peer_pid with process_vm_readv
     *  (e.g. a probe at connect), so the peer may send its messages of 64
     *  KiB or more as descriptors of its buffer, which this member reads
     *  directly; the peer's send completes once the read is done (from ABI
     *  2.5 only the sends flagged TUTTI_TP_OP_WHOLE).  Call
     *  after chan_attach() for that peer; a peer never enabled gets every
     *  message through the slots.  Returns TUTTI_ERR_INVALID_ARG (recorded)
     *  for a peer not attached. */
    tutti_status_t (*chan_enable_single_copy)(tutti_chan_ep_t *ep, int peer,
                                              int peer_pid);
    /* ABI 2.2: */
    /** The channels check every fragment (and single-copy message) against
     *  the sender's checksum: @p verify is group->verify.  Both ends of a
     *  channel must say the same; a fragment without a sum on a checking
     *  end fails its receive, naming the sender. */
    void (*chan_set_verify)(tutti_chan_ep_t *ep, int verify);
    /* ABI 2.3: */
    /** Doorbells, for groups whose waits sleep (group->sleep): @p bell is
     *  the doorbell of rank @p rank (TUTTI_CHAN_BELL_BYTES as that macro
     *  says): this member's own, which chan_sleep() sleeps on, or an
     *  attached peer's, which this member rings (a futex wake, only while
     *  the peer sleeps) after it moved data to or from that peer.  Attach
     *  every bell before the group's first operation. */
    void (*chan_attach_bell)(tutti_chan_ep_t *ep, int rank, void *bell);
    /** Sleeps until a peer rings this member's bell or @p seconds pass,
     *  unless progress, made after the member said it sleeps, moves
     *  something.  Returns what that progress moved (> 0: no sleep), 0
     *  after a sleep, -1 if this member has no bell. */
    int (*chan_sleep)(tutti_chan_ep_t *ep, double seconds);
    /** The lengths of the messages this member sends by single copy, to
     *  the peers that enabled it: from @p min_bytes to @p max_bytes
     *  inclusive (without this call: 64 KiB and up).  Others go through
     *  the slots. */
    void (*chan_set_single_copy_range)(tutti_chan_ep_t *ep, size_t min_bytes,
                                       size_t max_bytes);
    /* ABI 2.4: */
    /** The job's store (group->store, never NULL here): sets key
     *  "tutti/@p key" to @p len bytes.  Errors recorded, naming the key. */
    tutti_status_t (*store_set)(const void *store, const char *key,
                                const void *value, size_t len);
    /** Waits up to @p timeout seconds for "tutti/@p key", then copies at
     *  most @p cap bytes of it to @p buf, its length to @p len_out.
     *  TUTTI_ERR_TIMEOUT (recorded, naming the key) if it never came. */
    tutti_status_t (*store_get)(const void *store, const char *key,
                                void *buf, size_t cap, size_t *len_out,
                                double timeout);
    /* ABI 2.5: */
    /** Registered memory (tutti_mem_alloc, tutti_mem_register): this
     *  member maps the registered regions of @p peer's process
     *  @p peer_pid (another process of this host), so the peer may send
     *  its messages from registered buffers as descriptors, which this
     *  member copies or reduces straight from its mapping of the peer's
     *  buffer; the peer's send completes once that is done.  Call after
     *  chan_attach() for that peer.  TUTTI_ERR_UNSUPPORTED (not an error:
     *  logged at info) where the kernel does not let this process open
     *  the peer's /proc/<pid>/fd; that peer's messages keep to the
     *  slots. */
    tutti_status_t (*chan_enable_mapped)(tutti_chan_ep_t *ep, int peer,
                                         int peer_pid);
    /** Registered messages of @p min_bytes or more go as descriptors
     *  (4 KiB without this call; SIZE_MAX: none). */
    void (*chan_set_mapped_min)(tutti_chan_ep_t *ep, size_t min_bytes);
    /* ABI 2.6: */
    /** Trades addresses through the job's control plane (group->plane,
     *  which connect() of a data group has; the control plane's own
     *  group has none): sends the @p len bytes at @p mine (at most
     *  TUTTI_TP_EXCHANGE_MAX) to every peer group->serve names, and
     *  waits up to group->timeout until each of them sent its own under
     *  the same @p what (the transport's name): rank r's bytes land at
     *  @p peers + r x @p stride (at most @p stride of them), their
     *  length in @p lens[r] (0 for ranks not served).  Every served peer
     *  must call it once per connect.  Errors recorded, naming the ranks
     *  that sent nothing (TUTTI_ERR_TIMEOUT), a task gone
     *  (TUTTI_ERR_PEER), or TUTTI_ERR_UNSUPPORTED where the group has no
     *  plane. */
    tutti_status_t (*exchange)(const void *group, const char *what,
                               const void *mine, size_t len, void *peers,
                               size_t stride, size_t *lens);
} tutti_tp_core_ops_t;

/** What a transport learns of the group it connects. */
typedef struct {
    size_t size;               /**< sizeof(tutti_tp_group_t) */
    const char *job_id;
    uint64_t group_key;
    int rank;
    int group_size;
    const int *rank_task;      /**< task of each rank */
    int task;                  /**< this process's task */
    double timeout;            /**< seconds to wait for peers to connect */
    const void *config;        /**< read with core->config_get */
    uint32_t slots;            /**< slots per channel, or 0: the
                                    transport's own (shm: from its
                                    settings, shm.slots) */
    size_t slot_size;          /**< bytes per slot, or 0: the transport's
                                    own (shm: shm.slot_size) */
    /* ABI 2.0: */
    const tutti_tp_core_ops_t *core;
    const unsigned char *serve; /**< group_size flags: the peers this
                                     transport connects (never this rank) */
    const int *rank_host;      /**< host number of each rank (equal: same
                                    host), or NULL: all on this host */
    /* ABI 2.1: */
    const void *settings;      /**< the module's settings struct, filled
                                    from its rows (see settings_size); NULL
                                    for a module that declares none */
    /* ABI 2.2: */
    int verify;                /**< TUTTI_TP_VERIFY_* (the `verify`
                                    setting); where the ends of a transfer
                                    differ, the checking end fails it */
    /* ABI 2.3: */
    int sleep;                 /**< 1: this host runs more members of the
                                    group than it has processors, so a
                                    member that found nothing to do for a
                                    while calls sleep() rather than
                                    yielding; a transport with that op
                                    wakes it when data moves (doorbells:
                                    chan_attach_bell).  The same on every
                                    member of a host. */
    /* ABI 2.4: */
    const void *store;         /**< the key-value store the job met
                                    through (core->store_set, store_get),
                                    or NULL: none */
    const char *secret;        /**< the job's secret, agreed through the
                                    store (64 hex digits), or NULL: the
                                    transport's own (tcp: TUTTI_JOB_SECRET,
                                    TUTTI_SECRET_FILE) */
    /* ABI 2.6: */
    const void *plane;         /**< the job's control plane, for
                                    core->exchange (given the group), or
                                    NULL: the control plane itself
                                    connects, and no exchange can be had */
} tutti_tp_group_t;

typedef struct tutti_tp_ep tutti_tp_ep_t;

typedef struct {
    size_t size;
    const char *name;
    /** Connect this member to the peers group->serve names; wait (up to
     *  group->timeout) until they are connected too. */
    tutti_status_t (*connect)(const tutti_tp_group_t *group,
                              tutti_tp_ep_t **ep_out);
    /** Queue @p op (filled by the caller: key, peer, buffer, len). */
    tutti_status_t (*send)(tutti_tp_ep_t *ep, tutti_tp_op_t *op);
    tutti_status_t (*recv)(tutti_tp_ep_t *ep, tutti_tp_op_t *op);
    /** Move what can move now; returns the number of ops that advanced,
     *  or a negative status on a failure of the endpoint. */
    int (*progress)(tutti_tp_ep_t *ep);
    void (*disconnect)(tutti_tp_ep_t *ep);
    /** Optional.  1 if @p peer's process still runs, 0 if it is gone, -1
     *  if this transport cannot tell. */
    int (*peer_alive)(tutti_tp_ep_t *ep, int peer);
    /** Optional.  1 if this transport can reach rank @p peer of @p group
     *  (e.g. shm: same host), 0 if not; absent: every peer. */
    int (*reachable)(const tutti_tp_group_t *group, int peer);
    /** Optional.  Why operations with @p peer failed (a line naming the
     *  peer), or NULL if they did not; borrowed until disconnect.  The core
     *  asks when a transfer fails, whichever thread noticed first. */
    const char *(*peer_error)(tutti_tp_ep_t *ep, int peer);
    /* ABI 2.3: */
    /** Optional.  Blocks the calling member until a peer may have moved
     *  data for it or @p seconds pass (the core checks the group's health
     *  and time limit between calls).  Returns > 0 if it moved something
     *  instead (it makes progress after saying it sleeps, so nothing that
     *  arrives meanwhile is missed), 0 after sleeping, or a negative value
     *  if it cannot sleep (no group->sleep, or a peer it cannot be woken
     *  by): the core then yields the processor instead. */
    int (*sleep)(tutti_tp_ep_t *ep, double seconds);
    /* ABI 2.6: */
    /** Optional.  Writes lines saying what the transport finds on this
     *  host (the library under it and its version, devices, ways it can
     *  move data) into @p buf of @p len bytes, as tutti-info shows them;
     *  returns 0, or -1 with a line saying why it cannot tell. */
    int (*describe)(char *buf, size_t len);
} tutti_tp_ops_t;

/** A transport module's descriptor: the first six fields as in
 *  tutti_module_desc_t. */
typedef struct {
    uint32_t abi_major;       /**< TUTTI_TP_ABI_MAJOR */
    uint32_t abi_minor;
    uint32_t size;            /**< sizeof(tutti_tp_module_desc_t) */
    uint32_t kind;            /**< TUTTI_MODULE_KIND_TP */
    const char *name;         /**< module name */
    const char *version;
    const tutti_tp_ops_t *ops; /**< ops->name is the transport's name, as
                                    listed in `transports:` */
    /* ABI 2.1: the module's settings, read from its section of the YAML
     * file (named as the module) and the environment; the core fills a
     * struct of settings_size bytes with the typed values (each row says
     * where) and hands it to connect() as group->settings. */
    const tutti_setting_t *settings;
    uint32_t num_settings;
    uint32_t settings_size;
} tutti_tp_module_desc_t;

/* Kept for modules written against ABI 2.0. */
#define TUTTI_TP_EXPORT_ TUTTI_MODULE_EXPORT_

/* A transport descriptor with @p n settings rows of a @p size-byte
 * struct (the two DEFINE macros below). */
#define TUTTI_TP_DESC_(mod_name, mod_version, ops_table, rows, n, size)        \
    TUTTI_MODULE_EXPORT_ const tutti_tp_module_desc_t TUTTI_MODULE_SYMBOL = {  \
        TUTTI_DESC_HEAD_(TUTTI_TP_ABI_MAJOR, TUTTI_TP_ABI_MINOR,               \
                         tutti_tp_module_desc_t, TUTTI_MODULE_KIND_TP,         \
                         (mod_name), (mod_version)),                           \
        &(ops_table), (rows), (n), (size)}

/** Define a transport module's descriptor. */
#define TUTTI_TP_MODULE_DEFINE(mod_name, mod_version, ops_table)               \
    TUTTI_TP_DESC_(mod_name, mod_version, ops_table, NULL, 0, 0)

/** Define a transport module's descriptor with settings: @p rows is a
 *  static array of tutti_setting_t whose offsets point into
 *  @p settings_type, the struct connect() finds at group->settings. */
#define TUTTI_TP_MODULE_DEFINE_SETTINGS(mod_name, mod_version, ops_table,      \
                                        rows, settings_type)                   \
    TUTTI_TP_DESC_(mod_name, mod_version, ops_table, rows,                     \
                   (uint32_t)(sizeof(rows) / sizeof((rows)[0])),               \
                   (uint32_t)sizeof(settings_type))

#ifdef __cplusplus
}
#endif

#endif
