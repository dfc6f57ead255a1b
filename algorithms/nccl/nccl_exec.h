/*
 * The NCCL module's implementations (internal to alg_nccl.so): each file
 * <collective>_nccl.c defines one ops table, tutti_alg_nccl_<collective>_ops,
 * with an enqueue function that makes the collective's NCCL calls; the
 * rest (state, launch in order, completion by a CUDA event, supports) is
 * shared here, in nccl_exec.c.
 *
 * One execution: run puts it at the end of its group's queue; when it is
 * first and the communicator is idle, its NCCL calls are made, and run or
 * progress returns TUTTI_OK once they are ordered on exec->stream (the
 * core then records an event after them and polls it).  The first
 * execution of an instance (where NCCL may set up connections and answer
 * ncclInProgress) goes on the instance's own stream, which waits for
 * exec->stream at the call and which exec->stream waits for once NCCL
 * queued the work; while it is not queued the core holds the caller's
 * stream.  Later executions go straight on exec->stream; should NCCL
 * still answer ncclInProgress there, run waits (polling the
 * communicator, within the group's time limit) until the work is queued,
 * so nothing the caller queues after the call can pass it.
 */
#ifndef TUTTI_ALG_NCCL_EXEC_H
#define TUTTI_ALG_NCCL_EXEC_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include <tutti/module.h>

#include "nccl_comm.h"

extern const tutti_alg_ops_t tutti_alg_nccl_allreduce_ops;
extern const tutti_alg_ops_t tutti_alg_nccl_broadcast_ops;
extern const tutti_alg_ops_t tutti_alg_nccl_reduce_ops;
extern const tutti_alg_ops_t tutti_alg_nccl_allgather_ops;
extern const tutti_alg_ops_t tutti_alg_nccl_reduce_scatter_ops;
extern const tutti_alg_ops_t tutti_alg_nccl_alltoall_ops;
extern const tutti_alg_ops_t tutti_alg_nccl_gather_ops;
extern const tutti_alg_ops_t tutti_alg_nccl_permute_ops;

/** Makes one execution's NCCL calls (and the copies they need) on
 *  @p stream, the member's GPU current: TUTTI_OK, TUTTI_INPROGRESS where
 *  NCCL answered ncclInProgress, or an error (tutti_alg_nccl_result()). */
typedef tutti_status_t (*tutti_alg_nccl_enqueue_fn)(
    tutti_alg_nccl_state_t *s, const tutti_alg_exec_t *x,
    cudaStream_t stream);

/** Where an execution stands. */
typedef enum {
    TUTTI_ALG_NCCL_IDLE = 0,  /**< none under way */
    TUTTI_ALG_NCCL_QUEUED,    /**< waiting for its turn in the group */
    TUTTI_ALG_NCCL_ENQUEUING  /**< on the own stream; NCCL answered
                                   ncclInProgress */
} tutti_alg_nccl_phase_t;

/** One instance of an NCCL implementation on one member. */
struct tutti_alg_nccl_state {
    const char *impl;                 /**< its name, for messages */
    const tutti_alg_instance_t *inst;
    const tutti_core_ops_t *core;
    tutti_alg_nccl_group_t *group;    /**< inst->group_state */
    tutti_alg_nccl_enqueue_fn enqueue;
    ncclDataType_t dtype;
    ncclRedOp_t op;                   /**< reductions only */
    size_t esize;                     /**< bytes per element */
    void *scratch;                    /**< device memory some need for
                                           in-place calls, or NULL */
    int to, from;                     /**< permute: the ranks sent to and
                                           received from */
    cudaStream_t side;                /**< the instance's own stream */
    cudaEvent_t ev_in;                /**< exec->stream at the call */
    cudaEvent_t ev_out;               /**< side after the NCCL calls */
    int warm;                         /**< an execution went through: the
                                           next go on exec->stream */
    tutti_alg_nccl_phase_t phase;
    tutti_alg_exec_t *exec;           /**< the execution under way */
    tutti_alg_nccl_state_t *next;     /**< in the group's queue */
};

/**
 * init_context's common part: check that the group has a communicator and
 * that the data type and op map, create the completion event on the
 * member's GPU.  @p scratch_bytes of device memory are allocated into
 * s->scratch when not 0.  Errors recorded naming @p impl.
 */
tutti_status_t tutti_alg_nccl_state_create(const tutti_alg_instance_t *inst,
                                           const tutti_core_ops_t *core,
                                           const char *impl,
                                           tutti_alg_nccl_enqueue_fn enqueue,
                                           size_t scratch_bytes,
                                           void **state_out);

/** The ops table tutti_alg_nccl_<coll>_ops of an implementation whose
 *  init_context is <coll>_init_context; the rest is shared. */
#define TUTTI_ALG_NCCL_TABLE(coll)                                             \
    const tutti_alg_ops_t tutti_alg_nccl_##coll##_ops = {                      \
        .size = sizeof(tutti_alg_ops_t), .init_context = coll##_init_context,  \
        .run = tutti_alg_nccl_run, .progress = tutti_alg_nccl_progress,        \
        .fini_context = tutti_alg_nccl_fini_context,                           \
        .supports = tutti_alg_nccl_supports}

/** The same for an implementation @p impl (its name) that needs no
 *  scratch: its init_context too, over @p enqueue. */
#define TUTTI_ALG_NCCL_OPS(coll, impl, enqueue)                                \
    static tutti_status_t coll##_init_context(                                 \
        const tutti_alg_instance_t *inst, const tutti_core_ops_t *core,        \
        const void *details, size_t details_len, void **state_out)             \
    {                                                                          \
        (void)details;                                                         \
        (void)details_len;                                                     \
        return tutti_alg_nccl_state_create(inst, core, impl, enqueue, 0,       \
                                           state_out);                         \
    }                                                                          \
    TUTTI_ALG_NCCL_TABLE(coll)

/** The ops every implementation shares: run, progress, fini_context. */
tutti_status_t tutti_alg_nccl_run(void *state, tutti_alg_exec_t *x);
tutti_status_t tutti_alg_nccl_progress(void *state, tutti_alg_exec_t *x);
void tutti_alg_nccl_fini_context(void *state);

/** supports() of every implementation: the checks of nccl_map.c, then
 *  whether this process sees a usable CUDA device (asked once). */
int tutti_alg_nccl_supports(const tutti_alg_instance_t *inst, char *why,
                            size_t len);

/** An NCCL call's answer as a status: TUTTI_OK, TUTTI_INPROGRESS for
 *  ncclInProgress, else an error naming the implementation, @p what and
 *  NCCL's text. */
tutti_status_t tutti_alg_nccl_result(const tutti_alg_nccl_state_t *s,
                                     ncclResult_t r, const char *what);

/** Closes the group of NCCL calls ncclGroupStart opened: ncclGroupEnd
 *  runs whatever @p inside (the first failure among the calls in the
 *  group, named @p what, or ncclSuccess) says; the first failure's status,
 *  TUTTI_INPROGRESS where ncclGroupEnd answered ncclInProgress. */
tutti_status_t tutti_alg_nccl_group_end(const tutti_alg_nccl_state_t *s,
                                        ncclResult_t inside,
                                        const char *what);

/** A CUDA call's error as TUTTI_ERR_MODULE naming @p what and CUDA's
 *  text; TUTTI_OK for cudaSuccess. */
tutti_status_t tutti_alg_nccl_cuda(const tutti_alg_nccl_state_t *s,
                                   cudaError_t e, const char *what);

/** @p base advanced by @p off bytes (NULL stays NULL when @p off is 0). */
static inline char *tutti_alg_nccl_at(const void *base, size_t off)
{
    return off == 0 ? (char *)(uintptr_t)base
                    : (char *)(uintptr_t)base + off;
}

#endif
