/*
 * The NCCL module's per-group state: one NCCL communicator per group and
 * member, created without blocking from the unique id task 0 made, polled
 * until ready by the executions that need it, aborted when the group
 * fails.  It also keeps the executions waiting to be queued, in launch
 * order, because NCCL needs the same order of calls on every rank of a
 * communicator and a non-blocking communicator takes no new call while
 * one is in progress.
 */
#ifndef TUTTI_ALG_NCCL_COMM_H
#define TUTTI_ALG_NCCL_COMM_H

#include <stdint.h>

#include <nccl.h>

#include <tutti/module.h>

typedef struct tutti_alg_nccl_state tutti_alg_nccl_state_t;

/** One member's communicator of one group (inst->group_state). */
typedef struct {
    const tutti_core_ops_t *core;
    ncclComm_t comm;      /**< NULL once aborted */
    uint64_t group_key;
    int rank, size, device;
    int ready;            /**< NCCL said ncclSuccess once: set up */
    int aborted;          /**< abort_group ran */
    tutti_status_t broken; /**< the error that broke it, or TUTTI_OK */
    char reason[512];     /**< why it was aborted or broke */
    tutti_alg_nccl_state_t *head, *tail; /**< executions waiting for their
                                              NCCL calls, in launch order */
} tutti_alg_nccl_group_t;

extern const tutti_alg_group_ops_t tutti_alg_nccl_group_ops;

/**
 * Whether @p g's communicator takes a new call: TUTTI_OK (idle and
 * healthy), TUTTI_INPROGRESS (still being set up, or a call of an earlier
 * execution is being queued), or an error recorded with core->error()
 * naming @p impl, the group and NCCL's text (TUTTI_ERR_PEER where a peer
 * or the network failed, TUTTI_ERR_MODULE otherwise, TUTTI_ERR_ABORTED
 * after abort_group).  An error is kept: later calls report it again.
 */
tutti_status_t tutti_alg_nccl_comm_ready(tutti_alg_nccl_group_t *g,
                                         const char *impl);

/** ncclGetLastError(@p comm), or "no further detail" where it is empty. */
const char *tutti_alg_nccl_last_error(ncclComm_t comm);

/** Make @p device current for the calling thread, the previous one into
 *  @p saved_out; errors recorded naming @p impl. */
tutti_status_t tutti_alg_nccl_device_enter(const tutti_core_ops_t *core,
                                           const char *impl, int device,
                                           int *saved_out);
/** Make @p saved current again (what device_enter replaced). */
void tutti_alg_nccl_device_leave(int device, int saved);

#endif
