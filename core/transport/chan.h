/*
 * Message channels (internal): the data path under the local and shm
 * transports.
 *
 * A channel carries messages one way between two members: a ring of
 * fixed-size slots in memory both can reach (heap for local, a shared
 * segment for shm).  Each slot starts with a one-line header whose
 * sequence number the sender writes last; the receiver's consumer count
 * sits on a line of its own, read by the sender only when the ring looks
 * full.  A message of up to 32 bytes travels inside its header's line.
 * A larger one travels as fragments of up to one slot; the receiver copies
 * (or reduces) each fragment into the posted buffer and frees the slot, so
 * large messages stream through a small, cache-resident ring.  Sends to one peer leave in the order posted; a receive matches the
 * message at the head of the channel by key.
 *
 * A message at the head that no posted receive matches stays there while
 * the ring has free slots: its receive usually comes a moment later, and
 * waiting costs nothing.  Once the ring is full the sender may be blocked
 * behind it, so the receiver takes the message off the ring into an
 * unexpected record (the only allocation on the data path) and the messages
 * behind it flow again.  A receive looks in its peer's records first.
 *
 * Single copy (shm between processes, Linux): once the receiver of a
 * channel has shown it can read the sender's memory (process_vm_readv; the
 * transport probes at connect and calls tutti__chan_enable_single_copy()),
 * it sets the channel's sc_accept.  From then on the sender posts a message
 * of TUTTI_CHAN_SC_MIN bytes or more as one descriptor fragment (its pid,
 * the buffer's address, the length; no data in the slot), and the receiver,
 * on matching it, reads the bytes straight from the sender's buffer into the
 * posted buffer (reduce-on-receive: through a bounce block of
 * TUTTI_CHAN_SC_BOUNCE bytes, then reduced into the destination).  The
 * sender's operation completes only when the receiver has finished
 * reading: the receiver counts finished descriptors in the channel's
 * sc_done, and since descriptors are read in ring order the sender
 * completes its waiting sends oldest first while its count of them is
 * behind sc_done.  A descriptor taken off the ring for an unexpected record
 * is read into the record at once, so the sender's buffer is never read
 * after its send completed.  A read that fails (the sender exited, or
 * failed and freed its buffer) is logged with its errno text and freezes
 * that peer's channel: the transfers waiting on it stay in progress and
 * fail as a silent peer's do, when the group learns the cause (the task is
 * gone, an abort) or times out.  (The sender's buffer of a request that
 * failed may still be read by a peer that has not failed yet: the group is
 * failed on the sender's side and cannot be trusted with more.)
 * Channels whose receiver never sets sc_accept (the local transport, shm
 * with single copy off or not permitted) carry every message through the
 * slots as before.
 *
 * Mapped descriptors (registered memory, base/mem.h): a receiver that can
 * open its peer's /proc/<pid>/fd (tutti__chan_enable_mapped()) sets the
 * MAPPED bit of sc_accept; the sender then posts a message of map_min
 * bytes or more whose buffer lies in a registered region as a descriptor
 * that also names the region (serial, base, size, file offset and the
 * sender's descriptor of the file, in the slot's data).  The receiver maps
 * the region once (chan_map.c: up to TUTTI_CHAN_MAPS per peer, the least
 * recently used unmapped first) and copies the message, or reduces it into
 * its own data, straight from the mapping: one pass, no system call.  It
 * finishes the descriptor as a process_vm_readv one, so the sender's
 * completion is the same.  Under verify a copied message is copied and
 * summed in one pass (tutti__csum_copy), a reduced one summed and reduced
 * block by block from the mapping while each block is in cache (through
 * the bounce block only while the test hook is armed: it must not write
 * the sender's memory).
 *
 * Verify (`verify: checksum`, shm): the sender writes the checksum of each
 * fragment (base/checksum.h) into its header, summed in the same pass that
 * copies it into the slot (tutti__csum_copy), and of a single-copy message
 * into its descriptor; the receiver sums what it takes (a fragment as it
 * copies it out of the slot, or before it reduces it there; what it read
 * from the sender) and fails the receive where they differ, naming the
 * sender, the key, the chunk's bytes and the two sums; a copied fragment
 * that fails is already in the receive buffer, and the rest of that
 * message is dropped.  Off, nothing is summed:
 * the data path pays one predictable branch per fragment.
 */
#ifndef TUTTI_CORE_CHAN_H
#define TUTTI_CORE_CHAN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#include "base/mem.h"
#include "transport/bell.h"

#define TUTTI_CACHELINE 64

/* Messages of this many bytes or more go by single copy where the channel
 * accepts it, unless the transport sets another range: below it, the two
 * copies through a cache-resident slot cost less than the system call and
 * the page walk of a cross-process read. */
#define TUTTI_CHAN_SC_MIN (64 * 1024)
/* Bytes read per process_vm_readv into the bounce block of a
 * reduce-on-receive (then reduced into the destination while hot in
 * cache); a multiple of every element size. */
#define TUTTI_CHAN_SC_BOUNCE (128 * 1024)

/* Bytes of a registered message a sender maps out by default (below, the
 * descriptor's round trip costs more than the second copy it saves). */
#define TUTTI_CHAN_MAP_MIN (4 * 1024)
/* Regions of one peer a receiver keeps mapped. */
#define TUTTI_CHAN_MAPS 16

/* sc_accept's bits: what the receiver reads in place of slot data. */
#define TUTTI_CHAN_ACCEPT_READV 1u  /* process_vm_readv descriptors */
#define TUTTI_CHAN_ACCEPT_MAPPED 2u /* descriptors of registered memory */

/* One channel's header; its slots follow.  Both lines are written only by
 * the receiver and read by the sender: what it consumed, and (the second)
 * single copy, above.  What the sender wrote is told by each slot's own
 * sequence number (chan.c), so the receiver polls the line the message is
 * in, not a counter beside it. */
typedef struct {
    _Atomic uint64_t tail; /* fragments consumed (consumer) */
    char pad1[TUTTI_CACHELINE - sizeof(uint64_t)];
    _Atomic uint64_t sc_done;   /* descriptors the receiver finished */
    _Atomic uint32_t sc_accept; /* TUTTI_CHAN_ACCEPT_* */
    char pad2[TUTTI_CACHELINE - sizeof(uint64_t) - sizeof(uint32_t)];
} tutti__chan_t;

/* Bytes one channel of @p slots slots of @p slot_size bytes takes. */
size_t tutti__chan_bytes(uint32_t slots, size_t slot_size);
/* Sets up a channel (its creator, before anyone uses it) in memory of
 * tutti__chan_bytes() bytes that is filled with zeros: a slot's sequence
 * number is read as written the moment it matches, so stale bytes of an
 * earlier use could pass for a message. */
void tutti__chan_init(tutti__chan_t *ch);

/* A message taken off a full ring before its receive was posted. */
typedef struct tutti__chan_unexp {
    struct tutti__chan_unexp *next;
    tutti_wire_key_t key;
    uint64_t msg_len;
    uint64_t got;                /* bytes copied in so far */
    tutti_status_t status;       /* a chunk failed its checksum: the
                                    receive that claims it fails so */
    char data[];                 /* msg_len bytes */
} tutti__chan_unexp_t;

/* A receiver's mapping of one of its peer's registered regions. */
typedef struct {
    uint64_t serial;             /* the region's, in the peer */
    char *addr;                  /* NULL: unused entry */
    size_t len;
    uint64_t used;               /* clock of the last use */
} tutti__chan_map_t;

typedef struct {
    tutti__chan_map_t m[TUTTI_CHAN_MAPS];
    uint64_t clock;
    uint64_t mapped;             /* regions mapped so far */
} tutti__chan_maps_t;

/* chan_map.c.  _get returns where region @p r of process @p pid lies in
 * this process, mapping it on first use; NULL with the errno in @p err_out
 * if it cannot be mapped. */
tutti__chan_maps_t *tutti__chan_maps_create(void);
void tutti__chan_maps_destroy(tutti__chan_maps_t *maps);
const char *tutti__chan_map_get(tutti__chan_maps_t *maps, int pid,
                                const tutti__mem_region_t *r, int *err_out);

typedef struct {
    tutti__chan_t *out;          /* this member -> peer */
    tutti__chan_t *in;           /* peer -> this member */
    uint64_t out_head;           /* fragments we wrote */
    uint64_t out_tail_seen;      /* consumer count last read */
    uint64_t in_tail;            /* fragments we consumed */
    tutti_tp_op_t *sendq, *sendq_tail;
    tutti_tp_op_t *recvq, *recvq_tail;
    tutti_tp_op_t *cur_recv;     /* message being received */
    uint64_t discard_left;       /* bytes of a refused message to drop */
    int discarding;              /* dropping a refused message */
    tutti__chan_unexp_t *unexp, *unexp_tail; /* buffered, oldest first */
    tutti__chan_unexp_t *filling; /* record the ring is copied into */
    int nomem_logged;            /* buffering failed; said so once */
    /* single copy, as receiver of in: */
    int sc_pid;                  /* peer's pid, 0: we do not read it */
    uint64_t in_sc_done;         /* descriptors we finished */
    int sc_frozen;               /* a read failed: nothing more taken */
    int map_pid;                 /* peer's pid, 0: we do not map it */
    tutti__chan_maps_t *maps;    /* its regions we mapped */
    /* as sender on out: */
    int out_sc_ok;               /* peer set out->sc_accept's READV */
    int out_map_ok;              /* peer set out->sc_accept's MAPPED */
    uint64_t sc_acked;           /* finished descriptors we completed */
    tutti_tp_op_t *scq, *scq_tail; /* sends the peer is reading, in order */
    tutti__bell_t *bell;         /* the peer's doorbell, or NULL: rung
                                    after data moved to or from it */
} tutti__chan_peer_t;

/* What an endpoint moved, for its debug line at teardown. */
typedef struct {
    uint64_t sc_in;              /* messages received by single copy */
    uint64_t sc_out;             /* messages sent as descriptors */
    uint64_t ring_large_in;      /* of TUTTI_CHAN_SC_MIN+ bytes through
                                    the slots */
    uint64_t map_in;             /* messages read from a mapped region */
    uint64_t map_out;            /* sent as mapped descriptors */
} tutti__chan_stats_t;

struct tutti__chan_frag;

typedef struct tutti__chan_ep {
    int rank, size;
    uint32_t slots;
    uint64_t slot_mask;          /* slots - 1 where slots is a power of
                                    two (the default): an and, not a
                                    division, per fragment; else 0 */
    size_t slot_size;
    tutti__chan_peer_t *peers;   /* size entries; own entry unused */
    const char *tp_name;         /* for messages */
    int pid;                     /* this process, for descriptors */
    char *bounce;                /* TUTTI_CHAN_SC_BOUNCE bytes, allocated
                                    when single copy is first enabled */
    tutti__chan_stats_t stats;
    int verify;                  /* TUTTI_TP_VERIFY_CHECKSUM: sums sent
                                    and checked */
    /* Test hook, TUTTI_TEST_CORRUPT=R:N read at set-up: the member of
     * rank R flips byte N of the first message of more than N bytes it
     * receives, after the sender's sum and before its own check. */
    int corrupt_armed;
    uint64_t corrupt_at;
    int check;                   /* verify or corrupt_armed: a received
                                    fragment is looked at */
    tutti__bell_t *bell;         /* this member's doorbell, or NULL: it
                                    cannot sleep */
    size_t sc_min, sc_max;       /* lengths sent by single copy (to peers
                                    that accept it), inclusive */
    size_t map_min;              /* registered messages of this many bytes
                                    or more go as mapped descriptors */
    /* Takes a descriptor (chan_sc.c), installed by the first
     * tutti__chan_enable_single_copy() or _mapped(): only then may peers
     * send descriptors.  Reads its message into the receive matched to it
     * or the record it is buffered in (or drops it, on a size mismatch),
     * then tells the sender it may complete; 0 if the read failed (the
     * channel from that peer is frozen). */
    int (*read_descriptor)(struct tutti__chan_ep *ep, tutti__chan_peer_t *p,
                           const struct tutti__chan_frag *f, int peer);
} tutti__chan_ep_t;

tutti_status_t tutti__chan_ep_init(tutti__chan_ep_t *ep, int rank, int size,
                                   uint32_t slots, size_t slot_size,
                                   const char *tp_name);
void tutti__chan_ep_fini(tutti__chan_ep_t *ep);
tutti_status_t tutti__chan_send(tutti__chan_ep_t *ep, tutti_tp_op_t *op);
tutti_status_t tutti__chan_recv(tutti__chan_ep_t *ep, tutti_tp_op_t *op);
/* Advances every peer; returns how many fragments moved. */
int tutti__chan_progress(tutti__chan_ep_t *ep);
/* This member can read @p peer's memory (process @p peer_pid) with
 * process_vm_readv: let the peer send large messages as descriptors.  Call
 * after the peer's channels are attached. */
tutti_status_t tutti__chan_enable_single_copy(tutti__chan_ep_t *ep, int peer,
                                              int peer_pid);
/* This member can map @p peer's registered memory (process @p peer_pid):
 * let the peer send it as mapped descriptors.  Probes /proc/<pid>/fd;
 * TUTTI_ERR_UNSUPPORTED (not recorded) where the kernel refuses, and the
 * peer's messages keep to the slots. */
tutti_status_t tutti__chan_enable_mapped(tutti__chan_ep_t *ep, int peer,
                                         int peer_pid);
/* Registered messages of @p min bytes or more go mapped (TUTTI_CHAN_MAP_MIN
 * until this is called; SIZE_MAX: none). */
void tutti__chan_set_mapped_min(tutti__chan_ep_t *ep, size_t min);
/* Checksums on (TUTTI_TP_VERIFY_CHECKSUM) or off for what @p ep sends and
 * receives from now on. */
void tutti__chan_set_verify(tutti__chan_ep_t *ep, int verify);
/* Messages of @p min to @p max bytes (inclusive) that @p ep sends go by
 * single copy where the peer accepts it; TUTTI_CHAN_SC_MIN and up until
 * this is called. */
void tutti__chan_set_single_copy_range(tutti__chan_ep_t *ep, size_t min,
                                       size_t max);
/* @p bell is the doorbell of @p rank (bell.h): this member's own, or a
 * peer's that it rings after data moved to or from that peer.  Before the
 * first operation. */
void tutti__chan_attach_bell(tutti__chan_ep_t *ep, int rank, void *bell);
/* Sleeps on this member's bell until a peer rings it or @p seconds pass,
 * unless the progress made first moves something: returns what it moved,
 * 0 after a sleep, -1 without a bell (tutti_tp_core_ops_t.chan_sleep). */
int tutti__chan_sleep(tutti__chan_ep_t *ep, double seconds);

/* In-process channel meshes (local.c): a size x size matrix of
 * channels shared by the members of one process; @p expected of them join
 * it (all of them for the local transport, those of this task for shm). */
typedef struct tutti__local_mesh tutti__local_mesh_t;
tutti_status_t tutti__local_mesh_join(const tutti_tp_group_t *g, int expected,
                                     uint32_t slots, size_t slot_size,
                                     tutti__local_mesh_t **mesh_out);
void tutti__local_mesh_leave(tutti__local_mesh_t *m);

/* chan_api.c: tutti_tp_ops_t entries for transports whose endpoint struct
 * starts with a tutti__chan_ep_t. */
tutti_status_t tutti__chan_tp_send(tutti_tp_ep_t *ep, tutti_tp_op_t *op);
tutti_status_t tutti__chan_tp_recv(tutti_tp_ep_t *ep, tutti_tp_op_t *op);
int tutti__chan_tp_progress(tutti_tp_ep_t *ep);
int tutti__chan_tp_sleep(tutti_tp_ep_t *ep, double seconds);

/* The same channels behind the opaque tutti_chan_ep_t of transport.h, for
 * transport modules (through tutti_tp_core_ops_t). */
tutti_status_t tutti__chan_api_create(int rank, int size, uint32_t slots,
                                      size_t slot_size, const char *tp_name,
                                      tutti_chan_ep_t **ep_out);
void tutti__chan_api_destroy(tutti_chan_ep_t *ep);
void tutti__chan_api_attach(tutti_chan_ep_t *ep, int peer, void *out,
                            void *in);
tutti_status_t tutti__chan_api_send(tutti_chan_ep_t *ep, tutti_tp_op_t *op);
tutti_status_t tutti__chan_api_recv(tutti_chan_ep_t *ep, tutti_tp_op_t *op);
int tutti__chan_api_progress(tutti_chan_ep_t *ep);
void tutti__chan_api_init(void *chan);
tutti_status_t tutti__chan_api_enable_single_copy(tutti_chan_ep_t *ep,
                                                  int peer, int peer_pid);
void tutti__chan_api_set_verify(tutti_chan_ep_t *ep, int verify);
void tutti__chan_api_attach_bell(tutti_chan_ep_t *ep, int rank, void *bell);
int tutti__chan_api_sleep(tutti_chan_ep_t *ep, double seconds);
void tutti__chan_api_set_single_copy_range(tutti_chan_ep_t *ep, size_t min,
                                           size_t max);
tutti_status_t tutti__chan_api_enable_mapped(tutti_chan_ep_t *ep, int peer,
                                             int peer_pid);
void tutti__chan_api_set_mapped_min(tutti_chan_ep_t *ep, size_t min);

#endif
