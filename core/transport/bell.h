/*
 * Doorbells (internal): how a member of a group whose waits sleep sleeps
 * until a peer has moved data for it, and how the peer wakes it.  The
 * channels (chan.c) place one per member in memory its peers reach and
 * ring it; nothing here knows a channel.
 *
 * The member arms its bell (sleeping set, a full fence), makes progress
 * once more and, if nothing moved, waits on seq (a futex) with a time
 * limit, then disarms.  A peer that moved data to or from it rings after
 * its own writes: a full fence, then, only if sleeping is set, seq bumped
 * and the futex woken.  With a fence on each side between the write and
 * the read, one of the two always sees the other's write, so no wake-up
 * is lost.  Peers pay the fence and a load per ring, and only in groups
 * whose waits sleep.
 */
#ifndef TUTTI_CORE_BELL_H
#define TUTTI_CORE_BELL_H

#include <stdatomic.h>
#include <stdint.h>

#include <tutti/transport.h>

/* TUTTI_CHAN_BELL_BYTES of memory both ends reach, zero to begin with. */
typedef struct {
    _Atomic uint32_t seq;
    _Atomic uint32_t sleeping;
    char pad[TUTTI_CHAN_BELL_BYTES - 2 * sizeof(uint32_t)];
} tutti__bell_t;

/* Said by the bell's owner before its last look at the channels; returns
 * what tutti__bell_wait() waits to see change. */
uint32_t tutti__bell_arm(tutti__bell_t *b);
/* Waits until the bell rings after arming gave @p seen, a signal comes or
 * @p seconds pass, then disarms. */
void tutti__bell_wait(tutti__bell_t *b, uint32_t seen, double seconds);
/* Disarms without waiting (the last look found work). */
void tutti__bell_disarm(tutti__bell_t *b);
/* By a peer, after its writes to what the owner reads: wakes the owner if
 * it is armed. */
void tutti__bell_ring(tutti__bell_t *b);

#endif
