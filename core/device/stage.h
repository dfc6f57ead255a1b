/*
 * Staging (internal): how an implementation that runs on host memory
 * serves a CUDA group.  One stage per instance (its executions run one
 * after another) holds an internal stream, three events, pinned host
 * buffers for the input and the output, and a gate word in pinned mapped
 * memory.  An execution:
 *   start    on the caller's stream: an event (the input is ready after
 *            it), then a gate kernel that holds the stream's later work;
 *            on the internal stream: wait for that event, copy the input
 *            to the host, record ev_in;
 *   (poll ev_in; the implementation runs on the host buffers)
 *   finish   on the internal stream: copy the output back, record ev_out;
 *   (poll ev_out)
 *   release  write the gate word: the caller's stream goes on.
 * Nothing blocks a thread; progress polls events.  release also runs
 * after a failure, so a failed or aborted execution never leaves the
 * caller's stream held.  Buffers are allocated with the stage and grow
 * only when an execution with per-rank counts needs more.
 */
#ifndef TUTTI_CORE_DEVICE_STAGE_H
#define TUTTI_CORE_DEVICE_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/status.h>

#include "device/cuda_ops.h"

typedef struct tutti__dstage {
    const tutti__cuda_ops_t *ops;
    int device;                 /* the member's CUDA ordinal */
    void *stream;               /* internal */
    void *ev_caller, *ev_in, *ev_out;
    void *host_in, *host_out;   /* pinned */
    size_t in_cap, out_cap;
    uint32_t *gate;             /* pinned, mapped: the host's word */
    void *gate_dev;             /* its device address */
    uint32_t seq;               /* the gate opens at gate >= seq */
    int held;                   /* a gate is queued and not yet opened */
} tutti__dstage_t;

/** A stage on @p device with room for @p in_bytes and @p out_bytes. */
tutti_status_t tutti__dstage_create(const tutti__cuda_ops_t *ops, int device,
                                    size_t in_bytes, size_t out_bytes,
                                    tutti__dstage_t **stage_out);
/** Frees it (the caller's streams no longer wait: release ran).  NULL
 *  ok. */
void tutti__dstage_destroy(tutti__dstage_t *s);
/** Grows the buffers to at least these sizes (between executions). */
tutti_status_t tutti__dstage_reserve(tutti__dstage_t *s, size_t in_bytes,
                                     size_t out_bytes);
/** Queues the gate on @p caller and the copy of @p in_bytes from the
 *  device address @p dev_in to host_in.  Refuses a stream being captured
 *  into a CUDA graph (TUTTI_ERR_UNSUPPORTED). */
tutti_status_t tutti__dstage_start(tutti__dstage_t *s, void *caller,
                                   const void *dev_in, size_t in_bytes);
/** TUTTI_OK once the input is on the host, TUTTI_INPROGRESS before. */
tutti_status_t tutti__dstage_input_ready(tutti__dstage_t *s);
/** Queues the copy of @p out_bytes from @p host (within host_out, or
 *  host_in for an output the implementation wrote there) to the device
 *  address @p dev_out. */
tutti_status_t tutti__dstage_finish(tutti__dstage_t *s, void *dev_out,
                                    const void *host, size_t out_bytes);
/** TUTTI_OK once the output is on the device, TUTTI_INPROGRESS before. */
tutti_status_t tutti__dstage_output_ready(tutti__dstage_t *s);
/** Opens the gate: the caller's stream goes on.  Idempotent. */
void tutti__dstage_release(tutti__dstage_t *s);

#endif
