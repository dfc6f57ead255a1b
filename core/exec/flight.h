/*
 * Flight recorder (internal): each group member keeps its last
 * TUTTI_FLIGHT_ENTRIES executions (instance, step, implementation, bytes,
 * state, times).  When an execution times out, the context aborts or a
 * peer is lost, the member writes them to the log together with the ranks
 * it had and had not heard from, so a hang is diagnosed from one log.
 * Recording is a few stores and three reads of the coarse clock (a few
 * milliseconds of resolution) per execution.
 */
#ifndef TUTTI_CORE_FLIGHT_H
#define TUTTI_CORE_FLIGHT_H

#include <stdint.h>

#include <tutti/tutti.h>

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
} tutti__flight_t;

/** Records an issue; returns its sequence number (for the updates). */
uint64_t tutti__flight_issue(tutti__flight_t *f, uint64_t instance_key,
                             uint64_t step, const char *algorithm,
                             uint64_t bytes);
void tutti__flight_launch(tutti__flight_t *f, uint64_t seq);
void tutti__flight_finish(tutti__flight_t *f, uint64_t seq,
                          tutti_status_t status);

/** Writes the recorder to the log at error level, oldest first, headed by
 *  @p why and followed by @p peers (who had and had not been heard from). */
void tutti__flight_dump(const tutti__flight_t *f, const char *who,
                        const char *why, const char *peers);

#endif
