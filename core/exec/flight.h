/*
 * Flight recorder (internal): each group member keeps its last
 * TUTTI_FLIGHT_ENTRIES executions (instance, step, implementation, bytes,
 * state, times).  When an execution times out, the context aborts or a
 * peer is lost, the member writes them to the log together with the ranks
 * it had and had not heard from, so a hang is diagnosed from one log.
 * Recording is a few stores and two or three reads of the coarse clock (a
 * few milliseconds of resolution) per execution: a launch in the call
 * that issued takes the issue's reading.
 */
#ifndef TUTTI_CORE_FLIGHT_H
#define TUTTI_CORE_FLIGHT_H

#include <stdint.h>

#include <tutti/tutti.h>

#include "base/clock.h"

#define TUTTI_FLIGHT_ENTRIES 32

typedef enum {
    TUTTI_FLIGHT_WAITING = 0, /* issued, not launched */
    TUTTI_FLIGHT_RUNNING,
    TUTTI_FLIGHT_DONE,
    TUTTI_FLIGHT_FAILED
} tutti__flight_state_t;

typedef struct {
    uint64_t seq;             /* 0: empty; else issue number on this member */
    uint64_t instance_key, step;
    const char *algorithm;    /* the instance's (lives with the group) */
    uint64_t bytes;
    tutti__flight_state_t state;
    tutti_status_t status;
    double issued, launched, finished;
} tutti__flight_entry_t;

typedef struct {
    tutti__flight_entry_t e[TUTTI_FLIGHT_ENTRIES];
    uint64_t next_seq;
    uint64_t stamp_seq;       /* the last issue, while its launch may take
                                 its time (tutti__flight_unstamp), or 0 */
} tutti__flight_t;

/* The updates are inline: every execution makes three. */

/** @p seq's entry, or NULL where a later one overwrote it. */
static inline tutti__flight_entry_t *tutti__flight_slot(tutti__flight_t *f,
                                                        uint64_t seq)
{
    tutti__flight_entry_t *e = &f->e[seq % TUTTI_FLIGHT_ENTRIES];
    return e->seq == seq ? e : NULL;
}

/** Records an issue; returns its sequence number (for the updates). */
static inline uint64_t tutti__flight_issue(tutti__flight_t *f,
                                           uint64_t instance_key,
                                           uint64_t step,
                                           const char *algorithm,
                                           uint64_t bytes)
{
    uint64_t seq = ++f->next_seq;
    f->e[seq % TUTTI_FLIGHT_ENTRIES] = (tutti__flight_entry_t){
        seq, instance_key, step, algorithm, bytes, TUTTI_FLIGHT_WAITING,
        TUTTI_INPROGRESS, tutti__now_coarse(), 0, 0};
    f->stamp_seq = seq;
    return seq;
}

/** Records a launch.  The launch of the entry issued last, before
 *  tutti__flight_unstamp() and any other launch, takes the issue's time
 *  instead of reading the clock: nothing but the ready list's walk lies
 *  between them, far below the coarse clock's resolution. */
static inline void tutti__flight_launch(tutti__flight_t *f, uint64_t seq)
{
    tutti__flight_entry_t *e = tutti__flight_slot(f, seq);
    if (e != NULL) {
        e->state = TUTTI_FLIGHT_RUNNING;
        e->launched = seq == f->stamp_seq ? e->issued : tutti__now_coarse();
    }
    /* Its run may take time: a later launch reads the clock. */
    f->stamp_seq = 0;
}

/** The call that issued ends, or code that may take time (a caller's
 *  callback) runs: the next launch reads the clock. */
static inline void tutti__flight_unstamp(tutti__flight_t *f)
{
    f->stamp_seq = 0;
}

/** Records the end of @p seq's execution with @p status. */
static inline void tutti__flight_finish(tutti__flight_t *f, uint64_t seq,
                                        tutti_status_t status)
{
    tutti__flight_entry_t *e = tutti__flight_slot(f, seq);
    if (e != NULL) {
        e->state = status == TUTTI_OK ? TUTTI_FLIGHT_DONE : TUTTI_FLIGHT_FAILED;
        e->status = status;
        e->finished = tutti__now_coarse();
    }
}

/** Writes the recorder to the log at error level, oldest first, headed by
 *  @p why and followed by @p peers (who had and had not been heard from). */
void tutti__flight_dump(const tutti__flight_t *f, const char *who,
                        const char *why, const char *peers);

#endif
