/*
 * Message channels (internal): the data path under the local and shm
 * transports.
 *
 * A channel carries messages one way between two members: a ring of
 * fixed-size slots in memory both can reach (heap for local, a shared
 * segment for shm), with a producer counter and a consumer counter on
 * separate cache lines.  A message travels as fragments of up to one slot;
 * the receiver copies (or reduces) each fragment into the posted buffer and
 * frees the slot, so large messages stream through a small, cache-resident
 * ring.  Sends to one peer leave in the order posted; a receive matches the
 * message at the head of the channel by key.
 *
 * A message at the head that no posted receive matches stays there while
 * the ring has free slots: its receive usually comes a moment later, and
 * waiting costs nothing.  Once the ring is full the sender may be blocked
 * behind it, so the receiver takes the message off the ring into an
 * unexpected record (the only allocation on the data path) and the messages
 * behind it flow again.  A receive looks in its peer's records first.
 */
#ifndef TUTTI_CORE_CHAN_H
#define TUTTI_CORE_CHAN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#define TUTTI_CACHELINE 64

typedef struct {
    _Atomic uint64_t head; /* fragments written (producer) */
    char pad0[TUTTI_CACHELINE - sizeof(uint64_t)];
    _Atomic uint64_t tail; /* fragments consumed (consumer) */
    char pad1[TUTTI_CACHELINE - sizeof(uint64_t)];
} tutti__chan_t;

/* Bytes one channel of @p slots slots of @p slot_size bytes takes. */
size_t tutti__chan_bytes(uint32_t slots, size_t slot_size);
/* Zero a channel's counters (its creator, before anyone uses it). */
void tutti__chan_init(tutti__chan_t *ch);

/* A message taken off a full ring before its receive was posted. */
typedef struct tutti__chan_unexp {
    struct tutti__chan_unexp *next;
    tutti_wire_key_t key;
    uint64_t msg_len;
    uint64_t got;                /* bytes copied in so far */
    char data[];                 /* msg_len bytes */
} tutti__chan_unexp_t;

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
} tutti__chan_peer_t;

typedef struct {
    int rank, size;
    uint32_t slots;
    size_t slot_size;
    tutti__chan_peer_t *peers;   /* size entries; own entry unused */
    const char *tp_name;         /* for messages */
} tutti__chan_ep_t;

tutti_status_t tutti__chan_ep_init(tutti__chan_ep_t *ep, int rank, int size,
                                   uint32_t slots, size_t slot_size,
                                   const char *tp_name);
void tutti__chan_ep_fini(tutti__chan_ep_t *ep);
tutti_status_t tutti__chan_send(tutti__chan_ep_t *ep, tutti_tp_op_t *op);
tutti_status_t tutti__chan_recv(tutti__chan_ep_t *ep, tutti_tp_op_t *op);
/* Advances every peer; returns how many fragments moved. */
int tutti__chan_progress(tutti__chan_ep_t *ep);

/* In-process channel meshes (tp_local.c): a size x size matrix of
 * channels shared by the members of one process; @p expected of them join
 * it (all of them for the local transport, those of this task for shm). */
typedef struct tutti__local_mesh tutti__local_mesh_t;
tutti_status_t tutti__local_mesh_join(const tutti_tp_group_t *g, int expected,
                                     uint32_t slots, size_t slot_size,
                                     tutti__local_mesh_t **mesh_out);
tutti__chan_t *tutti__local_mesh_chan(tutti__local_mesh_t *m, int src,
                                      int dst);
void tutti__local_mesh_leave(tutti__local_mesh_t *m);

/* tutti_tp_ops_t entries for transports whose endpoint struct starts with
 * a tutti__chan_ep_t. */
tutti_status_t tutti__chan_tp_send(tutti_tp_ep_t *ep, tutti_tp_op_t *op);
tutti_status_t tutti__chan_tp_recv(tutti_tp_ep_t *ep, tutti_tp_op_t *op);
int tutti__chan_tp_progress(tutti_tp_ep_t *ep);

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

#endif
