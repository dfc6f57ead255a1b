/*
 * What the coordinator checks of a frame before anything of it is used
 * (internal): a join and a proposal are what a member sends, every field
 * in its range and every string ended; else why, naming the group, the
 * task, the field, its value and what was expected.
 */
#ifndef TUTTI_CORE_JOB_COORD_CHECK_H
#define TUTTI_CORE_JOB_COORD_CHECK_H

#include <stddef.h>

#include "job/coord_decide.h"
#include "job/ctrl.h"
#include "job/wire.h"

/** Whether join @p j in @p msg is one a member sends: 1, or 0 with why. */
int tutti__coord_join_ok(const tutti__ctrl_msg_t *msg,
                         const tutti__join_payload_t *j, char *why,
                         size_t len);

/** What a caller may get wrong in a join (the group's size, a ring_order
 *  that is no permutation): 1, or 0 with why. */
int tutti__coord_join_args_ok(const tutti__ctrl_msg_t *msg,
                              const tutti__join_payload_t *j, char *why,
                              size_t len);

/** Whether proposal @p p in @p msg is one a member of formed group @p f
 *  sends: 1, or 0 with why. */
int tutti__coord_inst_ok(const tutti__ctrl_msg_t *msg,
                         const coord_formed_t *f,
                         const tutti__inst_payload_t *p, char *why,
                         size_t len);

/** Writes why the proposal in @p msg is refused, after its instance,
 *  group and task; returns 0. */
int tutti__coord_inst_refused(char *why, size_t len,
                              const tutti__ctrl_msg_t *msg,
                              const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
