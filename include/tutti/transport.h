/*
 * The peer-access transport interface.
 *
 * A transport connects one group member (an endpoint) to the other members
 * and moves messages between them: post a buffer to a peer under a key,
 * receive from a peer under a key.  Keys are integers.  Messages from one
 * peer to another under distinct keys may be received in any order the
 * receiver posts them; the transport matches by key.  Everything is
 * non-blocking: operations complete as progress() is called.
 *
 * Built-in transports: "local" (members in one process) and "shm"
 * (processes on one host).  The ops table starts with its size so fields can
 * be added at the end within an ABI major version.
 */
#ifndef TUTTI_TRANSPORT_H
#define TUTTI_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_TP_ABI_MAJOR 1
#define TUTTI_TP_ABI_MINOR 0

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

/** One posted operation.  Lives in caller storage until it completes. */
typedef struct tutti_tp_op {
    struct tutti_tp_op *next;   /**< transport's queue link */
    tutti_wire_key_t key;
    int peer;
    int is_recv;
    tutti_status_t status;      /**< TUTTI_INPROGRESS until done */
    const void *sbuf;
    void *rbuf;
    size_t len;
    size_t done;                /**< bytes moved so far */
    tutti_tp_reduce_t reduce;
} tutti_tp_op_t;

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
    const void *config;        /**< read with the core's config accessors */
    uint32_t slots;            /**< slots per channel, or 0: from config */
    size_t slot_size;          /**< bytes per slot, or 0: from config */
} tutti_tp_group_t;

typedef struct tutti_tp_ep tutti_tp_ep_t;

typedef struct {
    size_t size;
    const char *name;
    /** Connect this member to every peer of the group it can reach. */
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
} tutti_tp_ops_t;

#ifdef __cplusplus
}
#endif

#endif
