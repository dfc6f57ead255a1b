/*
 * What each collective reads and writes (internal): argument checks, and
 * the scaling applied around implementations (op avg, pre_scale,
 * post_scale).
 */
#ifndef TUTTI_CORE_COLL_H
#define TUTTI_CORE_COLL_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/module.h>
#include <tutti/tutti.h>

/** Scratch for input the core prepares aside (pre-scaled, or an in-place
 *  per-rank alltoall's).  A group keeps a pool of them: an execution takes
 *  one while it runs, so memory follows the executions in flight, not the
 *  number of instances; a buffer grows to the largest input it served. */
typedef struct tutti__stage {
    void *buf;
    size_t len;
    struct tutti__stage *next;       /* the group's free list */
} tutti__stage_t;

/** 1 if the instance's counts are given per rank, per execution. */
int tutti__coll_per_rank(const tutti_instance_params_t *p);
/** Checks what is fixed for the instance (collective, dtype, op, root,
 *  count, scales, permutation); records the error, naming the public
 *  @p call the parameters came through. */
tutti_status_t tutti__coll_check_instance(const tutti_instance_params_t *p,
                                          int group_size, const char *call);
/** Checks one execution's buffers and per-rank counts, as
 *  tutti__coll_check_instance() does; @p bytes_out gets the bytes this
 *  member sends in. */
tutti_status_t tutti__coll_check_exec(const tutti_instance_params_t *p,
                                      int rank, int group_size,
                                      const void *sendbuf, const void *recvbuf,
                                      const char *call, uint64_t *bytes_out);
/** For an instance without per-rank counts (else 0 and 0): the elements
 *  this member reads from sendbuf and writes to recvbuf on every
 *  execution, as tutti__coll_check_exec() counts them. */
void tutti__coll_fixed_elems(const tutti_instance_params_t *p, int rank,
                             int group_size, size_t *in_out, size_t *out_out);
/** Elements this member receives, when that follows from the call alone
 *  (0 when the implementation reports it). */
size_t tutti__coll_recv_total(const tutti_instance_params_t *p, int rank,
                              int group_size);

/** 1 if the core may stage or scale this instance's input before the
 *  implementation runs (tutti__coll_prepare has work to do). */
int tutti__coll_prepared(const tutti_instance_params_t *p);
/** 1 if the core scales the output after the implementation (avg,
 *  post_scale). */
int tutti__coll_postscaled(const tutti_instance_params_t *p);
/** Before run, so the implementation sees what it expects whatever this
 *  member chose alone: multiplies the input by pre_scale (in place where
 *  the buffer is this member's output, else into recvbuf or @p stage), and
 *  moves a per-rank alltoall's input aside when the call is in place.
 *  Points x->sendbuf at the result.  @p stage only grows. */
tutti_status_t tutti__coll_prepare(const tutti_instance_params_t *p,
                                   int rank, int group_size,
                                   tutti__stage_t *stage,
                                   tutti_alg_exec_t *x);
/** What tutti__coll_prepare does for a call. */
typedef enum {
    TUTTI__PREP_NONE = 0,
    TUTTI__PREP_SCALE_TO_RECV,  /* pre_scale the input into recvbuf */
    TUTTI__PREP_SCALE_TO_STAGE, /* pre_scale it into a stage buffer */
    TUTTI__PREP_COPY_TO_STAGE   /* move an in-place per-rank alltoall's
                                   input aside */
} tutti__prep_t;
/** The plan of tutti__coll_prepare for @p x, and the input's elements:
 *  the host path carries it out there, a device path with CUDA kernels. */
tutti_status_t tutti__coll_prepare_plan(const tutti_instance_params_t *p,
                                        int rank, int group_size,
                                        const tutti_alg_exec_t *x,
                                        tutti__prep_t *plan_out,
                                        size_t *elems_out);
/** The part of @p x's recvbuf tutti__coll_postscale scales: offset and
 *  count in elements (count 0: none). */
void tutti__coll_postscale_span(const tutti_instance_params_t *p, int rank,
                                const tutti_alg_exec_t *x, size_t *off_out,
                                size_t *count_out);
/** Where a staged execution's data lies in the caller's buffers, in
 *  elements: the input at @p in_off of sendbuf (of recvbuf for an
 *  in-place call, where each collective's in-place rule puts it), the
 *  output at @p out_off of recvbuf; @p out is the most it may hold.  The
 *  host implementation then runs out of place on staged copies. */
tutti_status_t tutti__coll_layout(const tutti_instance_params_t *p,
                                  const size_t *counts, int rank,
                                  int group_size, int in_place,
                                  size_t *in_off, size_t *in, size_t *out_off,
                                  size_t *out);
/** tutti__coll_prepare with a stage buffer taken from @p pool (a group's
 *  free list; a new one when it is empty) into @p taken, which the caller
 *  gives back when the execution ends. */
tutti_status_t tutti__coll_prepare_pooled(const tutti_instance_params_t *p,
                                          int rank, int group_size,
                                          tutti__stage_t **pool,
                                          tutti__stage_t **taken,
                                          tutti_alg_exec_t *x);
/** After success: avg's division (exact where the quotient is
 *  representable), then post_scale, on this member's output. */
tutti_status_t tutti__coll_postscale(const tutti_instance_params_t *p,
                                     int rank, int group_size,
                                     const tutti_alg_exec_t *x);

#endif
