/*
 * Unit tests for the message channels (core/chan.c) under the local and shm
 * transports: two endpoints driven by hand in one thread, with a small ring
 * (4 slots of 4096 bytes) so that messages longer than the ring, and
 * messages whose receive comes late or out of order, are easy to arrange.
 *
 * Covered: plain matched transfers of every fragment shape; an unmatched
 * message stays on the ring (no buffering, even when the ring is full)
 * unless a receive for another instance waits behind it; a message longer
 * than the ring sent before its receive; receives posted in the reverse
 * order of the sends; reduce-on-receive from a buffered message;
 * size mismatches on buffered messages; a receive posted while its message
 * is half buffered; records left at teardown.
 *
 * Single copy (process_vm_readv of this very process, which is always
 * permitted): without enabling, large messages still go through the slots;
 * with it, those flagged whole blocks (TUTTI_TP_OP_WHOLE; others keep to
 * the slots) go as descriptors, the sender completing only once the
 * receiver has read; plain, reduce-on-receive through the bounce block,
 * buffered (read into the record at once), size mismatch, and a failed
 * read that freezes the channel from that peer.
 *
 * Mapped descriptors (registered memory, tutti_mem_alloc): enabled for a
 * peer of this process (read where it lies), a registered buffer of
 * registered_min bytes or more goes as a descriptor, a heap one through
 * the slots; reduce-on-receive straight from the sender's buffer, and
 * under verify through the bounce block; a descriptor outside its own
 * region freezes the channel.  The receiver's cache of mappings of another
 * process's regions (through /proc/<pid>/fd, this process standing in):
 * one mapping per region, the least recently used unmapped past
 * TUTTI_CHAN_MAPS, refused for a descriptor that names no such file; a
 * registered range of a /dev/shm file mapped at its offset in the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "transport/chan.h"
#include "base/log.h"
#include "base/reduce.h"

#define SLOTS 4
#define SLOT 4096
#define RING (SLOTS * SLOT)
/* Progress rounds after which a transfer that has not finished never will. */
#define MAX_ROUNDS 10000

/* Two members, 0 and 1; chan[i] carries i -> 1 - i. */
typedef struct {
    tutti__chan_ep_t ep[2];
    tutti__chan_t *chan[2];
    tutti_tp_op_t waiter;   /* see wait_elsewhere() */
    char sink;
} pair_t;

static int setup(void **state)
{
    pair_t *pp = calloc(1, sizeof(*pp));
    size_t bytes = tutti__chan_bytes(SLOTS, SLOT);

    if (pp == NULL)
        return -1;
    for (int i = 0; i < 2; i++) {
        pp->chan[i] = aligned_alloc(TUTTI_CACHELINE, bytes);
        if (pp->chan[i] == NULL)
            return -1;
        memset(pp->chan[i], 0, bytes);
        tutti__chan_init(pp->chan[i]);
        if (tutti__chan_ep_init(&pp->ep[i], i, 2, SLOTS, SLOT, "test") !=
            TUTTI_OK)
            return -1;
    }
    for (int i = 0; i < 2; i++) {
        pp->ep[i].peers[1 - i].out = pp->chan[i];
        pp->ep[i].peers[1 - i].in = pp->chan[1 - i];
    }
    *state = pp;
    return 0;
}

static int teardown(void **state)
{
    pair_t *pp = *state;
    for (int i = 0; i < 2; i++) {
        tutti__chan_ep_fini(&pp->ep[i]);
        free(pp->chan[i]);
    }
    free(pp);
    return 0;
}

/* Progresses both members until nothing moves; returns the rounds taken. */
static int settle(pair_t *pp)
{
    int rounds = 0, moved;
    do {
        moved = tutti__chan_progress(&pp->ep[0]);
        moved += tutti__chan_progress(&pp->ep[1]);
        rounds++;
    } while (moved > 0 && rounds < MAX_ROUNDS);
    assert_true(rounds < MAX_ROUNDS);
    return rounds;
}

static tutti_wire_key_t key(uint32_t tag)
{
    tutti_wire_key_t k = {0x1234, 7, tag};
    return k;
}

static void fill(unsigned char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(i * 7 + seed * 13 + (i >> 8));
}

static void *pattern(size_t len, unsigned seed)
{
    unsigned char *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    fill(buf, len, seed);
    return buf;
}

/* A fresh op for the message under @p k, to or from @p peer: @p len bytes
 * sent from @p sbuf (a whole block, as an algorithm's send_block posts
 * it) or received into @p rbuf. */
static void make_op(tutti_tp_op_t *op, tutti_wire_key_t k, int peer,
                    const void *sbuf, void *rbuf, size_t len)
{
    memset(op, 0, sizeof(*op));
    op->flags = sbuf != NULL ? TUTTI_TP_OP_WHOLE : 0;
    op->key = k;
    op->peer = peer;
    op->sbuf = sbuf;
    op->rbuf = rbuf;
    op->len = len;
}

/* Member 1 waits for a message of another instance from member 0: the
 * situation in which an unmatched message at the head may block it (if
 * that message is behind), and only then is the head buffered. */
static void wait_elsewhere(pair_t *pp)
{
    tutti_tp_op_t *op = &pp->waiter;
    make_op(op, (tutti_wire_key_t){0x9999, 1, 0}, 0, NULL, &pp->sink, 1);
    assert_int_equal(tutti__chan_recv(&pp->ep[1], op), TUTTI_OK);
}

/* Posts a send of @p len bytes of @p buf from member 0 under @p tag. */
static void post_send(pair_t *pp, tutti_tp_op_t *op, uint32_t tag,
                      const void *buf, size_t len)
{
    make_op(op, key(tag), 1, buf, NULL, len);
    assert_int_equal(tutti__chan_send(&pp->ep[0], op), TUTTI_OK);
}

/* Posts a receive of @p len bytes into @p buf at member 1 under @p tag. */
static void post_recv(pair_t *pp, tutti_tp_op_t *op, uint32_t tag, void *buf,
                      size_t len)
{
    make_op(op, key(tag), 0, NULL, buf, len);
    assert_int_equal(tutti__chan_recv(&pp->ep[1], op), TUTTI_OK);
}

/* Posts at member 1 a receive of @p len bytes under @p tag that adds
 * (float32 sum) what arrives to @p local, into @p out. */
static void post_sum_recv(pair_t *pp, tutti_tp_op_t *op, uint32_t tag,
                          float *out, const float *local, size_t len)
{
    make_op(op, key(tag), 0, NULL, out, len);
    op->reduce.fn = tutti__reduce;
    op->reduce.dtype = TUTTI_FLOAT32;
    op->reduce.op = TUTTI_OP_SUM;
    op->reduce.local = local;
    assert_int_equal(tutti__chan_recv(&pp->ep[1], op), TUTTI_OK);
}

/* One progress round of both members. */
static void step(pair_t *pp)
{
    tutti__chan_progress(&pp->ep[0]);
    tutti__chan_progress(&pp->ep[1]);
}

/* Member 1's view of the channel from member 0. */
static tutti__chan_peer_t *rx(pair_t *pp)
{
    return &pp->ep[1].peers[0];
}

static size_t unexp_count(pair_t *pp)
{
    size_t n = 0;
    for (tutti__chan_unexp_t *u = rx(pp)->unexp; u != NULL; u = u->next)
        n++;
    return n;
}

/* @p r completed and @p dst holds the @p len bytes of @p src; frees both. */
static void expect_arrived(const tutti_tp_op_t *r, unsigned char *dst,
                           unsigned char *src, size_t len)
{
    assert_int_equal(r->status, TUTTI_OK);
    assert_memory_equal(dst, src, len);
    free(src);
    free(dst);
}

/* Lets member 1 buffer the message at the head of its ring: whole (until
 * nothing moves), or half (one round: the record still filling). */
static void buffer_head(pair_t *pp, int whole)
{
    if (whole) {
        settle(pp);
    } else {
        step(pp);
        assert_non_null(rx(pp)->filling);
    }
}

/* Sends @p len bytes under @p tag and receives them, checking the bytes. */
static void transfer(pair_t *pp, uint32_t tag, size_t len, int recv_first)
{
    tutti_tp_op_t s, r;
    unsigned char *src = pattern(len, tag), *dst = calloc(1, len + 1);

    assert_non_null(dst);
    if (recv_first)
        post_recv(pp, &r, tag, dst, len);
    post_send(pp, &s, tag, src, len);
    if (!recv_first)
        post_recv(pp, &r, tag, dst, len);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    assert_int_equal(r.done, len);
    expect_arrived(&r, dst, src, len);
}

/* Matched messages of every fragment shape never touch the unexpected
 * path. */
static void test_matched_sizes(void **state)
{
    pair_t *pp = *state;
    static const size_t sizes[] = {0, 1, SLOT - 1, SLOT, 3 * SLOT + 5,
                                   5 * RING + 3};
    uint32_t tag = 1;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        transfer(pp, tag++, sizes[i], 1);
        transfer(pp, tag++, sizes[i], 0);
        assert_null(rx(pp)->unexp);
    }
    /* Not enabled (the local transport): no descriptors, even for large. */
    assert_true(5 * RING + 3 >= TUTTI_CHAN_SC_MIN);
    assert_int_equal(pp->ep[0].stats.sc_out, 0);
    assert_int_equal(pp->ep[1].stats.sc_in, 0);
    assert_int_equal(pp->ep[1].stats.ring_large_in, 2);
}

/* Messages around the size that travels inside its header's line (32
 * bytes): matched, waiting at the head, buffered while another instance
 * waits, and reduced on receipt, each many times round the ring. */
static void test_inline_sizes(void **state)
{
    pair_t *pp = *state;
    uint32_t tag = 300;

    for (size_t len = 0; len <= 40; len++) {
        for (int round = 0; round < SLOTS + 1; round++) {
            transfer(pp, tag++, len, 1);
            transfer(pp, tag++, len, 0);
        }
    }
    assert_null(rx(pp)->unexp);
    /* Three small messages buffered, received in reverse. */
    wait_elsewhere(pp);
    enum { N = 3 };
    static const size_t len[N] = {32, 1, 33};
    unsigned char *src[N], *dst[N];
    tutti_tp_op_t s[N], r[N];
    for (int i = 0; i < N; i++) {
        src[i] = pattern(len[i], 70 + (unsigned)i);
        dst[i] = calloc(1, len[i]);
        post_send(pp, &s[i], 400 + (uint32_t)i, src[i], len[i]);
    }
    settle(pp);
    assert_int_equal(unexp_count(pp), N);
    for (int i = N - 1; i >= 0; i--) {
        post_recv(pp, &r[i], 400 + (uint32_t)i, dst[i], len[i]);
        assert_int_equal(s[i].status, TUTTI_OK);
        expect_arrived(&r[i], dst[i], src[i], len[i]);
    }
    /* Summed on receipt: 8 floats, in the header's line. */
    float local[8], out[8], in[8];
    for (int i = 0; i < 8; i++) {
        local[i] = (float)i;
        in[i] = 0.5f * (float)(i + 1);
    }
    tutti_tp_op_t ss, rr;
    post_sum_recv(pp, &rr, 500, out, local, sizeof(out));
    post_send(pp, &ss, 500, in, sizeof(in));
    settle(pp);
    assert_int_equal(rr.status, TUTTI_OK);
    for (int i = 0; i < 8; i++)
        assert_true(out[i] == local[i] + in[i]);
}

/* An unmatched message on a ring with free slots waits at the head, without
 * being buffered, and its late receive takes it from the ring as it is
 * posted (no progress call needed). */
static void test_unmatched_stays_while_room(void **state)
{
    pair_t *pp = *state;
    size_t len = 3 * SLOT;
    unsigned char *src = pattern(len, 5), *dst = calloc(1, len);
    tutti_tp_op_t s, r;

    post_send(pp, &s, 5, src, len);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    assert_null(rx(pp)->unexp);
    assert_int_equal(rx(pp)->in_tail, 0);
    post_recv(pp, &r, 5, dst, len);
    assert_int_equal(r.status, TUTTI_OK);
    assert_int_equal(rx(pp)->in_tail, 3);
    expect_arrived(&r, dst, src, len);
}

/* A message longer than the ring, sent before its receive is posted: the
 * sender just waits (no copy) while nothing else waits behind it; once the
 * receiver waits for another instance from that peer, the message is
 * buffered, the sender completes, and the receive completes at once. */
static void test_longer_than_ring_before_recv(void **state)
{
    pair_t *pp = *state;
    size_t len = 3 * RING + 7;
    unsigned char *src = pattern(len, 9), *dst = calloc(1, len);
    tutti_tp_op_t s, r;

    post_send(pp, &s, 9, src, len);
    settle(pp);
    assert_int_equal(s.status, TUTTI_INPROGRESS);
    assert_int_equal(unexp_count(pp), 0);
    wait_elsewhere(pp);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    assert_int_equal(unexp_count(pp), 1);
    assert_null(rx(pp)->filling);
    post_recv(pp, &r, 9, dst, len);
    assert_int_equal(r.status, TUTTI_OK);
    assert_int_equal(r.done, len);
    assert_memory_equal(dst, src, len);
    assert_null(rx(pp)->unexp);
    assert_null(rx(pp)->unexp_tail);
    transfer(pp, 10, SLOT + 1, 0);
    free(src);
    free(dst);
}

/* Receives posted in the reverse order of the sends, once the sender has
 * filled the ring: the messages in front are buffered, each receive gets
 * its own bytes. */
static void test_reverse_order(void **state)
{
    pair_t *pp = *state;
    enum { N = 3 };
    static const size_t len[N] = {2 * SLOT, 3 * SLOT + 1, 1};
    unsigned char *src[N], *dst[N];
    tutti_tp_op_t s[N], r[N];

    for (int i = 0; i < N; i++) {
        src[i] = pattern(len[i], 20 + (unsigned)i);
        dst[i] = calloc(1, len[i]);
        post_send(pp, &s[i], 20 + (uint32_t)i, src[i], len[i]);
    }
    tutti__chan_progress(&pp->ep[0]);
    assert_int_equal(pp->ep[0].peers[1].out_head, SLOTS); /* ring full */
    for (int i = N - 1; i >= 0; i--) {
        post_recv(pp, &r[i], 20 + (uint32_t)i, dst[i], len[i]);
        settle(pp);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(s[i].status, TUTTI_OK);
        expect_arrived(&r[i], dst[i], src[i], len[i]);
    }
    assert_null(rx(pp)->unexp);
}

/* The buffers of a float32 sum on receive (dst = local + incoming) of
 * @c count elements: with x = i mod @c period, in[i] = x and local[i] =
 * x / 2 + @c c, so out[i] must come to 1.5 x + @c c.  Three allocations,
 * not one: a reduce that reads or writes past one of them then leaves its
 * block, which AddressSanitizer reports, instead of landing in the
 * next array. */
typedef struct {
    size_t count, len, period;
    float c;
    float *in, *local, *out;
} sum_t;

static void sum_init(sum_t *m, size_t count, size_t period, float c)
{
    *m = (sum_t){count, count * sizeof(float), period, c, NULL, NULL, NULL};
    m->in = malloc(m->len);
    m->local = malloc(m->len);
    m->out = calloc(1, m->len);
    assert_true(m->in != NULL && m->local != NULL && m->out != NULL);
    for (size_t i = 0; i < count; i++) {
        m->in[i] = (float)(i % period);
        m->local[i] = (float)(i % period) * 0.5f + c;
    }
}

/* Every element of out is right; frees the buffers. */
static void sum_check_free(sum_t *m)
{
    for (size_t i = 0; i < m->count; i++)
        assert_true(m->out[i] == (float)(i % m->period) * 1.5f + m->c);
    free(m->in);
    free(m->local);
    free(m->out);
}

/* Reduce-on-receive (float32 sum: dst = local + incoming) from a message
 * buffered whole, and from one half buffered that streams the rest. */
static void check_reduce(pair_t *pp, uint32_t tag, int whole)
{
    tutti_tp_op_t s, r;
    sum_t m;

    sum_init(&m, RING / 4 + 1000, SIZE_MAX, (float)tag);
    post_send(pp, &s, tag, m.in, m.len);
    buffer_head(pp, whole);
    post_sum_recv(pp, &r, tag, m.out, m.local, m.len);
    assert_int_equal(r.status, whole ? TUTTI_OK : TUTTI_INPROGRESS);
    settle(pp);
    assert_int_equal(r.status, TUTTI_OK);
    sum_check_free(&m);
}

static void test_reduce_from_buffer(void **state)
{
    wait_elsewhere(*state);
    check_reduce(*state, 30, 1);
    check_reduce(*state, 31, 0);
    assert_null(rx(*state)->unexp);
}

/* A size mismatch on a buffered message fails that receive with
 * TUTTI_ERR_TRUNCATED and drops the message; later messages still flow.
 * Whole and half buffered. */
static void check_mismatch(pair_t *pp, uint32_t tag, int whole)
{
    size_t len = 2 * RING + 9;
    unsigned char *src = pattern(len, tag), *dst = calloc(1, len);
    tutti_tp_op_t s, r;

    post_send(pp, &s, tag, src, len);
    buffer_head(pp, whole);
    post_recv(pp, &r, tag, dst, len - 4);
    assert_int_equal(r.status, TUTTI_ERR_TRUNCATED);
    assert_non_null(strstr(tutti_last_error(), "the receive expects"));
    assert_null(rx(pp)->unexp);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    assert_null(rx(pp)->unexp);
    assert_int_equal(rx(pp)->discarding, 0);
    transfer(pp, tag + 100, 3 * SLOT + 5, 0);
    transfer(pp, tag + 101, len, 1);
    free(src);
    free(dst);
}

static void test_mismatch_on_buffer(void **state)
{
    wait_elsewhere(*state);
    check_mismatch(*state, 40, 1);
    check_mismatch(*state, 41, 0);
}

/* A receive posted while its message is half buffered takes what was
 * buffered and completes when the rest arrives. */
static void test_recv_while_half_buffered(void **state)
{
    pair_t *pp = *state;
    size_t len = 2 * RING + 5;
    unsigned char *src = pattern(len, 50), *dst = calloc(1, len);
    tutti_tp_op_t s, r;

    wait_elsewhere(pp);
    post_send(pp, &s, 50, src, len);
    step(pp);
    assert_int_equal(unexp_count(pp), 1);
    assert_ptr_equal(rx(pp)->filling, rx(pp)->unexp);
    assert_int_equal(rx(pp)->unexp->got, RING);
    post_recv(pp, &r, 50, dst, len);
    assert_int_equal(r.status, TUTTI_INPROGRESS);
    assert_int_equal(r.done, RING);
    assert_null(rx(pp)->unexp);
    assert_null(rx(pp)->filling);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    expect_arrived(&r, dst, src, len);
}

/* Zero-length messages are buffered too when another instance waits. */
static void test_zero_length_buffered(void **state)
{
    pair_t *pp = *state;
    tutti_tp_op_t s[SLOTS + 1], r[SLOTS + 1];
    char dummy = 0;

    wait_elsewhere(pp);
    for (int i = 0; i <= SLOTS; i++)
        post_send(pp, &s[i], 60 + (uint32_t)i, &dummy, 0);
    settle(pp);
    for (int i = 0; i <= SLOTS; i++)
        assert_int_equal(s[i].status, TUTTI_OK);
    /* Every one went to a record: another instance waited behind. */
    assert_int_equal(unexp_count(pp), SLOTS + 1);
    for (int i = SLOTS; i >= 0; i--) {
        post_recv(pp, &r[i], 60 + (uint32_t)i, &dummy, 0);
        assert_int_equal(r[i].status, TUTTI_OK);
    }
    assert_null(rx(pp)->unexp);
}

/* Records nobody received, whole or half filled, are freed by
 * tutti__chan_ep_fini (teardown; valgrind and ASan check it). */
static void test_leftovers_freed(void **state)
{
    pair_t *pp = *state;
    size_t len = RING + 1;
    unsigned char *src = pattern(3 * len, 70);
    tutti_tp_op_t s[3];

    wait_elsewhere(pp);
    post_send(pp, &s[0], 70, src, len);
    post_send(pp, &s[1], 71, src + len, len);
    settle(pp);
    assert_int_equal(unexp_count(pp), 2);
    assert_null(rx(pp)->filling);
    post_send(pp, &s[2], 72, src + 2 * len, len);
    step(pp);
    assert_int_equal(unexp_count(pp), 3);
    assert_non_null(rx(pp)->filling);
    free(src);
}

/* ---- single copy ------------------------------------------------------- */

#define SC_LEN (TUTTI_CHAN_SC_MIN + 3)

static int setup_sc(void **state)
{
    if (setup(state) != 0)
        return -1;
    pair_t *pp = *state;
    for (int i = 0; i < 2; i++) {
        if (tutti__chan_enable_single_copy(&pp->ep[i], 1 - i, getpid()) !=
            TUTTI_OK)
            return -1;
    }
    return 0;
}

/* Large messages go as descriptors and arrive exact; small ones through the
 * slots.  The send completes only once the receiver has read it. */
static void test_sc_matched(void **state)
{
    pair_t *pp = *state;
    static const size_t sizes[] = {TUTTI_CHAN_SC_MIN - 1, TUTTI_CHAN_SC_MIN,
                                   SC_LEN, (1u << 20) + 3};
    uint32_t tag = 100;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        transfer(pp, tag++, sizes[i], 1);
        transfer(pp, tag++, sizes[i], 0);
        assert_null(rx(pp)->unexp);
    }
    assert_int_equal(pp->ep[0].stats.sc_out, 6);
    assert_int_equal(pp->ep[1].stats.sc_in, 6);
    assert_int_equal(pp->ep[1].stats.ring_large_in, 0);

    unsigned char *src = pattern(SC_LEN, 7), *dst = calloc(1, SC_LEN);
    tutti_tp_op_t s, r;
    post_send(pp, &s, 200, src, SC_LEN);
    settle(pp);
    assert_int_equal(s.status, TUTTI_INPROGRESS); /* nobody read it yet */
    assert_true(atomic_load(&pp->chan[0]->tail) <
                pp->ep[0].peers[1].out_head); /* on the ring, not taken */
    post_recv(pp, &r, 200, dst, SC_LEN);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    assert_int_equal(s.done, SC_LEN);
    expect_arrived(&r, dst, src, SC_LEN);
    assert_int_equal(atomic_load(&pp->chan[0]->sc_done), 7);
}

/* A send not flagged whole (a chunk of a pipeline, a block reduced on
 * receipt) keeps to the slots whatever its length. */
static void test_sc_only_whole_blocks(void **state)
{
    pair_t *pp = *state;
    unsigned char *src = pattern(SC_LEN, 21), *dst = calloc(1, SC_LEN);
    tutti_tp_op_t s, r;
    make_op(&s, key(650), 1, src, NULL, SC_LEN);
    s.flags = 0;
    assert_int_equal(tutti__chan_send(&pp->ep[0], &s), TUTTI_OK);
    post_recv(pp, &r, 650, dst, SC_LEN);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    expect_arrived(&r, dst, src, SC_LEN);
    assert_int_equal(pp->ep[1].stats.sc_in, 0);
    assert_int_equal(pp->ep[1].stats.ring_large_in, 1);
}

/* A sender's single-copy range (the shm module's single_copy_min and
 * _max): lengths inside it go as descriptors, those outside through the
 * slots, all exact. */
static void test_sc_range(void **state)
{
    pair_t *pp = *state;
    static const size_t sizes[] = {1000, 4095, 4096, 9000, 9001, 70000};
    uint32_t tag = 600;

    tutti__chan_set_single_copy_range(&pp->ep[0], 4096, 9000);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        transfer(pp, tag++, sizes[i], 1);
        transfer(pp, tag++, sizes[i], 0);
    }
    assert_int_equal(pp->ep[0].stats.sc_out, 4); /* 4096 and 9000, twice */
    assert_int_equal(pp->ep[1].stats.sc_in, 4);
    assert_int_equal(pp->ep[1].stats.ring_large_in, 2); /* 70000 */
}

/* Reduce-on-receive over more than one bounce block, with a tail. */
static void test_sc_reduce(void **state)
{
    pair_t *pp = *state;
    tutti_tp_op_t s, r;
    sum_t m;

    sum_init(&m, 2 * TUTTI_CHAN_SC_BOUNCE / 4 + 777, 1000, 3.0f);
    post_send(pp, &s, 300, m.in, m.len);
    post_sum_recv(pp, &r, 300, m.out, m.local, m.len);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    assert_int_equal(r.status, TUTTI_OK);
    sum_check_free(&m);
    assert_int_equal(pp->ep[1].stats.sc_in, 1);
}

/* A descriptor taken off the ring for a record is read at once: the send
 * completes before its receive is posted, and the receive gets the bytes
 * even though the sender's buffer changed since. */
static void test_sc_buffered(void **state)
{
    pair_t *pp = *state;
    unsigned char *src = pattern(SC_LEN, 11), *want = pattern(SC_LEN, 11);
    unsigned char *dst = calloc(1, SC_LEN);
    tutti_tp_op_t s, r;

    wait_elsewhere(pp);
    post_send(pp, &s, 400, src, SC_LEN);
    settle(pp);
    assert_int_equal(s.status, TUTTI_OK);
    assert_int_equal(unexp_count(pp), 1);
    memset(src, 0, SC_LEN);
    post_recv(pp, &r, 400, dst, SC_LEN);
    assert_int_equal(r.status, TUTTI_OK);
    assert_memory_equal(dst, want, SC_LEN);
    assert_int_equal(pp->ep[1].stats.sc_in, 1);
    free(src);
    free(want);
    free(dst);
}

/* A size mismatch fails the receive, drops the message and completes the
 * send; the channel goes on. */
static void test_sc_mismatch(void **state)
{
    pair_t *pp = *state;
    unsigned char *src = pattern(SC_LEN, 13), *dst = calloc(1, SC_LEN);
    tutti_tp_op_t s, r;

    post_recv(pp, &r, 500, dst, SC_LEN - 1);
    post_send(pp, &s, 500, src, SC_LEN);
    settle(pp);
    assert_int_equal(r.status, TUTTI_ERR_TRUNCATED);
    assert_int_equal(s.status, TUTTI_OK);
    assert_int_equal(rx(pp)->discarding, 0);
    transfer(pp, 501, SC_LEN, 0);
    transfer(pp, 502, 100, 1);
    free(src);
    free(dst);
}

/* A read that fails (a bad address here, as when a failed sender freed its
 * buffer) freezes that peer's channel: the receive and the send stay in
 * progress, to fail as a silent peer's do (group failure or time-out);
 * nothing more is taken from that peer. */
static void test_sc_read_fails(void **state)
{
    pair_t *pp = *state;
    unsigned char *dst = calloc(1, SC_LEN), *src = pattern(100, 3);
    tutti_tp_op_t s, r, s2, r2;

    post_recv(pp, &r, 600, dst, SC_LEN);
    post_send(pp, &s, 600, (const void *)(uintptr_t)4096, SC_LEN);
    post_send(pp, &s2, 601, src, 100);
    post_recv(pp, &r2, 601, dst, 100);
    settle(pp);
    assert_int_equal(rx(pp)->sc_frozen, 1);
    assert_int_equal(r.status, TUTTI_INPROGRESS);
    assert_int_equal(s.status, TUTTI_INPROGRESS);
    assert_int_equal(r2.status, TUTTI_INPROGRESS);
    assert_int_equal(rx(pp)->in_tail, 0);
    assert_int_equal(atomic_load(&pp->chan[0]->sc_done), 0);
    /* The other direction still works. */
    unsigned char back[128];
    tutti_tp_op_t bs, br;
    make_op(&bs, key(602), 0, dst, NULL, 100);
    assert_int_equal(tutti__chan_send(&pp->ep[1], &bs), TUTTI_OK);
    make_op(&br, key(602), 1, NULL, back, 100);
    assert_int_equal(tutti__chan_recv(&pp->ep[0], &br), TUTTI_OK);
    settle(pp);
    assert_int_equal(br.status, TUTTI_OK);
    free(src);
    free(dst);
}

/* ---- mapped descriptors (registered memory) ------------------------------ */

static int setup_map(void **state)
{
    if (setup(state) != 0)
        return -1;
    pair_t *pp = *state;
    for (int i = 0; i < 2; i++) {
        if (tutti__chan_enable_mapped(&pp->ep[i], 1 - i, getpid()) !=
            TUTTI_OK)
            return -1;
    }
    return 0;
}

/* @p len bytes of registered memory holding pattern @p seed. */
static unsigned char *reg_pattern(size_t len, unsigned seed)
{
    void *p = NULL;
    assert_int_equal(tutti_mem_alloc(len ? len : 1, &p), TUTTI_OK);
    fill(p, len, seed);
    return p;
}

/* Registered buffers of map_min bytes and more go as descriptors, read
 * where they lie; smaller ones and heap ones through the slots; the send
 * completes once the receiver has read. */
static void test_map_matched(void **state)
{
    pair_t *pp = *state;
    static const size_t sizes[] = {TUTTI_CHAN_MAP_MIN - 1, TUTTI_CHAN_MAP_MIN,
                                   (1u << 20) + 3};
    uint32_t tag = 700;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (int recv_first = 0; recv_first < 2; recv_first++) {
            unsigned char *src = reg_pattern(sizes[i], tag);
            unsigned char *want = pattern(sizes[i], tag);
            unsigned char *dst = calloc(1, sizes[i] + 1);
            tutti_tp_op_t s, r;
            if (recv_first)
                post_recv(pp, &r, tag, dst, sizes[i]);
            post_send(pp, &s, tag, src, sizes[i]);
            settle(pp);
            if (!recv_first) {
                if (sizes[i] >= TUTTI_CHAN_MAP_MIN) /* waits for a reader */
                    assert_int_equal(s.status, TUTTI_INPROGRESS);
                post_recv(pp, &r, tag, dst, sizes[i]);
                settle(pp);
            }
            assert_int_equal(s.status, TUTTI_OK);
            expect_arrived(&r, dst, want, sizes[i]);
            assert_int_equal(tutti_mem_free(src), TUTTI_OK);
            tag++;
        }
    }
    assert_int_equal(pp->ep[0].stats.map_out, 4);
    assert_int_equal(pp->ep[1].stats.map_in, 4);
    /* heap memory of the same size: the slots */
    transfer(pp, tag++, (1u << 20) + 3, 1);
    assert_int_equal(pp->ep[1].stats.map_in, 4);
    assert_int_equal(pp->ep[1].stats.ring_large_in, 1);
}

/* Reduce-on-receive straight from the sender's registered buffer, and,
 * with verify on, summed block by block as it is reduced. */
static void test_map_reduce(void **state)
{
    pair_t *pp = *state;
    for (int verify = 0; verify < 2; verify++) {
        tutti_tp_op_t s, r;
        sum_t m;
        sum_init(&m, 2 * TUTTI_CHAN_SC_BOUNCE / 4 + 777, 1000, 2.0f);
        void *reg = NULL;
        assert_int_equal(tutti_mem_alloc(m.len, &reg), TUTTI_OK);
        memcpy(reg, m.in, m.len);
        tutti__chan_set_verify(&pp->ep[0], verify);
        tutti__chan_set_verify(&pp->ep[1], verify);
        post_send(pp, &s, (uint32_t)(800 + verify), reg, m.len);
        post_sum_recv(pp, &r, (uint32_t)(800 + verify), m.out, m.local,
                      m.len);
        settle(pp);
        assert_int_equal(s.status, TUTTI_OK);
        assert_int_equal(r.status, TUTTI_OK);
        sum_check_free(&m);
        assert_int_equal(pp->ep[1].stats.map_in, verify + 1);
        assert_int_equal(tutti_mem_free(reg), TUTTI_OK);
    }
}

/* A descriptor whose address lies outside the region it names (a peer's
 * lie) is not read: the channel from that peer freezes. */
static void test_map_outside_region(void **state)
{
    pair_t *pp = *state;
    unsigned char *src = reg_pattern(TUTTI_CHAN_MAP_MIN, 5);
    unsigned char *dst = calloc(1, TUTTI_CHAN_MAP_MIN);
    tutti_tp_op_t s, r;
    post_recv(pp, &r, 900, dst, TUTTI_CHAN_MAP_MIN);
    post_send(pp, &s, 900, src, TUTTI_CHAN_MAP_MIN);
    /* what the sender wrote, changed before the receiver reads it */
    tutti__chan_peer_t *tx = &pp->ep[0].peers[1];
    char *slot = (char *)(pp->chan[0] + 1) +
                 ((tx->out_head - 1) % SLOTS) * (64 + SLOT);
    tutti__mem_region_t *reg = (tutti__mem_region_t *)(slot + 64);
    reg->size = TUTTI_CHAN_MAP_MIN / 2; /* shorter than the message */
    settle(pp);
    assert_int_equal(rx(pp)->sc_frozen, 1);
    assert_int_equal(r.status, TUTTI_INPROGRESS);
    assert_int_equal(s.status, TUTTI_INPROGRESS);
    assert_int_equal(tutti_mem_free(src), TUTTI_OK);
    free(dst);
}

/* The cache of another process's regions, this process standing in. */
static void test_map_cache(void **state)
{
    (void)state;
    tutti__chan_maps_t *maps = tutti__chan_maps_create();
    void *bufs[TUTTI_CHAN_MAPS + 1];
    tutti__mem_region_t r[TUTTI_CHAN_MAPS + 1];
    int err = 0;
    assert_non_null(maps);
    for (int i = 0; i <= TUTTI_CHAN_MAPS; i++) {
        assert_int_equal(tutti_mem_alloc(8192, &bufs[i]), TUTTI_OK);
        memset(bufs[i], 'a' + i, 8192);
        assert_int_equal(tutti__mem_find(bufs[i], 8192, &r[i]), 1);
    }
    const char *m0 = tutti__chan_map_get(maps, getpid(), &r[0], &err);
    assert_non_null(m0);
    assert_ptr_not_equal(m0, bufs[0]); /* a mapping of its own */
    assert_int_equal(m0[8191], 'a');
    assert_ptr_equal(tutti__chan_map_get(maps, getpid(), &r[0], &err), m0);
    assert_int_equal(maps->mapped, 1);
    for (int i = 1; i <= TUTTI_CHAN_MAPS; i++) {
        const char *m = tutti__chan_map_get(maps, getpid(), &r[i], &err);
        assert_non_null(m);
        assert_int_equal(m[0], 'a' + i);
    }
    /* region 0 was the least recently used: unmapped for the 17th */
    assert_int_equal(maps->mapped, TUTTI_CHAN_MAPS + 1);
    assert_non_null(tutti__chan_map_get(maps, getpid(), &r[0], &err));
    assert_int_equal(maps->mapped, TUTTI_CHAN_MAPS + 2);
    /* a descriptor naming a file that is not there, or too small */
    tutti__mem_region_t bad = r[1];
    bad.serial = 1u << 30;
    bad.fd = 100000;
    assert_null(tutti__chan_map_get(maps, getpid(), &bad, &err));
    assert_int_equal(err, ENOENT);
    bad = r[1];
    bad.serial = 1u << 30;
    bad.size = 1u << 30;
    assert_null(tutti__chan_map_get(maps, getpid(), &bad, &err));
    assert_int_equal(err, ERANGE);
    tutti__chan_maps_destroy(maps);
    for (int i = 0; i <= TUTTI_CHAN_MAPS; i++)
        assert_int_equal(tutti_mem_free(bufs[i]), TUTTI_OK);
}

/* A registered range of a file the program mapped itself starts pages
 * into the file: the peer maps it at that offset and finds the bytes the
 * owner sees there. */
static void test_map_registered_offset(void **state)
{
    (void)state;
    long pg = sysconf(_SC_PAGESIZE);
    char name[64];
    snprintf(name, sizeof(name), "/dev/shm/test-chan-map-%ld", (long)getpid());
    int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 8 * pg), 0);
    char *m = mmap(NULL, (size_t)(8 * pg), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    assert_true(m != MAP_FAILED);
    close(fd); /* registration opens the file at its path */
    for (long i = 0; i < 8 * pg; i++)
        m[i] = (char)(i * 7 + i / pg);
    assert_int_equal(tutti_mem_register(m + 3 * pg + 100, (size_t)pg),
                     TUTTI_OK);
    tutti__mem_region_t r;
    assert_int_equal(tutti__mem_find(m + 3 * pg + 100, (size_t)pg, &r), 1);
    assert_int_equal(r.file_off, (uint64_t)(3 * pg));
    tutti__chan_maps_t *maps = tutti__chan_maps_create();
    int err = 0;
    const char *seen = tutti__chan_map_get(maps, getpid(), &r, &err);
    assert_non_null(seen);
    assert_memory_equal(seen, m + 3 * pg, (size_t)r.size);
    tutti__chan_maps_destroy(maps);
    assert_int_equal(tutti_mem_deregister(m + 3 * pg), TUTTI_OK);
    munmap(m, (size_t)(8 * pg));
    unlink(name);
}

/* Tests on a pair of endpoints, without and with single copy. */
#define PAIR_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define SC_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup_sc, teardown)
#define MAP_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup_map, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        PAIR_TEST(test_matched_sizes),
        PAIR_TEST(test_inline_sizes),
        PAIR_TEST(test_unmatched_stays_while_room),
        PAIR_TEST(test_longer_than_ring_before_recv),
        PAIR_TEST(test_reverse_order),
        PAIR_TEST(test_reduce_from_buffer),
        PAIR_TEST(test_mismatch_on_buffer),
        PAIR_TEST(test_recv_while_half_buffered),
        PAIR_TEST(test_zero_length_buffered),
        PAIR_TEST(test_leftovers_freed),
        SC_TEST(test_sc_matched),
        SC_TEST(test_sc_range),
        SC_TEST(test_sc_only_whole_blocks),
        SC_TEST(test_sc_reduce),
        SC_TEST(test_sc_buffered),
        SC_TEST(test_sc_mismatch),
        SC_TEST(test_sc_read_fails),
        MAP_TEST(test_map_matched),
        MAP_TEST(test_map_reduce),
        MAP_TEST(test_map_outside_region),
        cmocka_unit_test(test_map_cache),
        cmocka_unit_test(test_map_registered_offset),
    };
    tutti__log_set_level(TUTTI_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
