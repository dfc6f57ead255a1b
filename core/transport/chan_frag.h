/*
 * The channels' fragments (internal to core/transport/chan*.c): the slot
 * header's layout and what both halves of the channel code share, the
 * slot rings' (chan.c) and the single-copy readers' (chan_sc.c).
 */
#ifndef TUTTI_CORE_TRANSPORT_CHAN_FRAG_H
#define TUTTI_CORE_TRANSPORT_CHAN_FRAG_H

#include <string.h>

#include "transport/chan.h"

#define FRAG_HDR_BYTES TUTTI_CACHELINE

#define FRAG_SC 1u     /* a single-copy descriptor: no data in the slot */
#define FRAG_SUM 2u    /* sum holds the sender's checksum of the data */
#define FRAG_INLINE 4u /* the whole message is in the header's line */
#define FRAG_MAP 8u    /* with FRAG_SC: the buffer lies in a registered
                          region, described in the slot's data */

/* Bytes a message may have to travel inside its fragment header. */
#define FRAG_INLINE_MAX 32

/* A fragment's header: one cache line, the slot's first.  seq is written
 * last, with release order, once the rest of the slot is in place: the
 * receiver polls the line the message is in, not a counter beside it, so
 * a small message costs it one line from the sender's cache (two with its
 * data after the header).  A message of up to FRAG_INLINE_MAX bytes (not
 * summed) travels in the header's second half, whose fields it then
 * implies: msg_len = frag_len, frag_off = 0. */
typedef struct {
    _Atomic uint64_t seq; /* fragment number + 1 on this channel */
    tutti_wire_key_t key;
    uint32_t frag_len;
    uint32_t flags;       /* FRAG_* */
    union {
        struct {
            uint64_t msg_len;
            uint64_t frag_off;
            uint64_t sc_addr; /* FRAG_SC: the message's address in the
                                 sender */
            int32_t sc_pid;   /* FRAG_SC: the sender's pid */
            uint32_t sum;     /* FRAG_SUM: of the fragment, or of the
                                 message a descriptor names */
        } x;
        char data[FRAG_INLINE_MAX]; /* FRAG_INLINE */
    } u;
} frag_hdr_t;

_Static_assert(sizeof(frag_hdr_t) == FRAG_HDR_BYTES, "fragment header");

/* A received fragment as the consuming code reads it, whichever form its
 * header took. */
typedef struct tutti__chan_frag {
    const frag_hdr_t *h;
    tutti_wire_key_t key;
    uint64_t msg_len, frag_off;
    uint32_t frag_len, flags, sum;
    char *data;               /* the fragment's bytes, in the slot */
} frag_t;

static inline char *tutti__chan_slot_data(const frag_hdr_t *h)
{
    return (char *)h + FRAG_HDR_BYTES;
}

/* Copies or reduces @p len incoming bytes at offset @p off of @p op. */
static inline void tutti__chan_deliver(tutti_tp_op_t *op, uint64_t off,
                                       const char *data, size_t len)
{
    char *dst = (char *)op->rbuf + off;
    if (len == 0)
        return;
    if (op->reduce.fn != NULL) {
        size_t esize = tutti_dtype_size(op->reduce.dtype);
        op->reduce.fn(op->reduce.dtype, op->reduce.op, dst,
                      (const char *)op->reduce.local + off, data, len / esize);
    } else {
        memcpy(dst, data, len);
    }
}

/* The test hook (TUTTI_TEST_CORRUPT) and verify's check (chan.c). */
void tutti__chan_test_corrupt(tutti__chan_ep_t *ep, const frag_t *f, int peer,
                              uint64_t off, char *data, size_t len);
tutti_status_t tutti__chan_check_sum(const tutti__chan_ep_t *ep,
                                    const frag_t *f, int peer, uint64_t off,
                                    uint64_t len, uint32_t got);

#endif
