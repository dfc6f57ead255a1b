/*
 * Timeline (internal): with the setting `timeline` (TUTTI_TIMELINE) each
 * task writes a Chrome trace event file, the JSON that Perfetto and
 * chrome://tracing open.  A task is a process (pid task + 1: Perfetto
 * keeps pid and tid 0 for the kernel's idle task), each group member a
 * track (tid rank + 1); on it, complete events for its joining, each
 * instance's resolution, each execution, the phases its algorithm names
 * (tutti_alg_exec_phase(), module ABI 1.4) and each transfer it posts
 * through the core's services, from post to completion.  Events that would
 * overlap others without nesting in them (a send and a receive in flight
 * together), which the viewers cannot draw on one track, go to the
 * member's lanes: tracks of tid rank + 1 + 1000000 x lane.
 *
 * A member's events go into a buffer of TUTTI__TIMELINE_EVENTS, allocated
 * when it joins.  They are written between executions with nothing in
 * flight, once a second or once half the buffer is used; when the member
 * leaves its group; when its group fails (abort, time limit, a task lost);
 * and for members still joined when the context is destroyed.  A buffer
 * that fills up before it can be written drops later events and counts
 * them, and the file says how many (its otherData, and a mark on the
 * track).  The file is whole JSON from its creation and after every write.
 *
 * Off, the executor pays one branch per launch, per completion and per
 * resolution (a NULL pointer or a zero sequence number), a module one per
 * phase (the core's phase entry is NULL), and nothing per transfer: a
 * traced member's executions get a services table of their own, which
 * records around the core's send, recv and test.
 */
#ifndef TUTTI_CORE_EXEC_TIMELINE_H
#define TUTTI_CORE_EXEC_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/module.h>
#include <tutti/tutti.h>

/* Events one member keeps between writes (72 bytes each: 9 MiB). */
#define TUTTI__TIMELINE_EVENTS (1u << 17)
/* Transfers one member may have in flight and timed; one more is dropped
 * (and counted). */
#define TUTTI__TIMELINE_OPEN 256

typedef struct tutti__timeline_file tutti__timeline_file_t; /* a task's */
typedef struct tutti__timeline tutti__timeline_t;           /* a member's */


/** Creates (or empties) task @p task's file and writes its head.
 *  TUTTI_ERR_IO naming the path and the system's reason. */
tutti_status_t tutti__timeline_open(const char *pattern, int task,
                                    tutti__timeline_file_t **file_out);
/** Writes the events of the members still joined and the file's end, and
 *  closes it; the members are left without a file.  NULL allowed. */
void tutti__timeline_close(tutti__timeline_file_t *f);

/** A member's buffer, written to @p f: rank @p rank of group @p group_key
 *  on device @p device ("task:0/cpu:0").  TUTTI_ERR_NO_MEMORY. */
tutti_status_t tutti__timeline_member(tutti__timeline_file_t *f,
                                      uint64_t group_key, int rank,
                                      const char *device,
                                      tutti__timeline_t **member_out);
/** The member leaves: its events are written and its buffer freed.  NULL
 *  allowed. */
void tutti__timeline_leave(tutti__timeline_t *t);
/** Writes what the member recorded so far (what is still in flight as
 *  unfinished, up to now) and empties its buffer: its group failed, or
 *  nothing is in flight. */
void tutti__timeline_flush(tutti__timeline_t *t);

/** The timeline's clock: CLOCK_MONOTONIC in nanoseconds, the same in
 *  every process of a host. */
uint64_t tutti__timeline_now(void);

/** The member joined its group of @p size members over @p num_tasks
 *  tasks, having begun at @p begin (tutti__timeline_now()). */
void tutti__timeline_join(tutti__timeline_t *t, uint64_t begin, int size,
                          int num_tasks);
/** An instance's first execution asks the coordinator: the resolution's
 *  sequence number (0: dropped). */
uint64_t tutti__timeline_resolve_begin(tutti__timeline_t *t,
                                       uint64_t instance_key);
/** The decision came (or the proposal failed): @p status, and the name
 *  of the implementation chosen (it lives with the group), or NULL. */
void tutti__timeline_resolve_end(tutti__timeline_t *t, uint64_t seq,
                                 tutti_status_t status,
                                 const char *algorithm);
/** @p r launches: the execution's sequence number (0: dropped). */
uint64_t tutti__timeline_exec_begin(tutti__timeline_t *t,
                                    tutti_request_t *r);
/** @p r completes with @p status; its phase and its transfers never seen
 *  complete end with it.  With nothing else in flight, the member's
 *  events are written once a second has passed since the last write, or
 *  once half its buffer is used. */
void tutti__timeline_exec_end(tutti__timeline_t *t, tutti_request_t *r,
                              tutti_status_t status);

/** The services a traced member's executions get: the core's, with send,
 *  recv and test recorded, and phase (NULL in the core's). */
const tutti_core_ops_t *tutti__timeline_core_ops(void);

#endif
