/*
 * An instance's CUDA resources (internal): what keeps its executions in
 * the caller's stream order, and the staging of its data for an
 * implementation that runs on host memory.
 *
 * Holding.  An execution whose work cannot be queued on the caller's
 * stream during tutti_execute() (its instance not yet resolved, an earlier
 * execution ahead of it, a host implementation, a device implementation
 * that cannot queue yet) is held: an event recorded on the caller's stream
 * marks where its input is ready, and a gate kernel queued after it holds
 * the stream's later work until the host writes the instance's gate word.
 * The execution's work then runs on the instance's own stream, which
 * waits for that event; once it is done, release() opens the gate.  Gates
 * open in issue order: the executions of one instance complete in it.
 *
 * Staging.  A host implementation's input is copied to pinned host memory
 * on the instance's stream, the implementation runs there, its output is
 * copied back; progress polls events, nothing blocks a thread.  Buffers
 * are allocated with the instance and grow only for per-rank counts that
 * need more.
 *
 * Frees.  cudaFree and cudaFreeHost may wait for all of a device's work,
 * a closed gate's stream included, and the gate waits for this process:
 * every free of pinned or device memory an instance made goes through
 * tutti__dfree, which defers it while any gate on that device, of any
 * instance of any group in the process, is closed, and frees what waited
 * once the last of them opens.
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
    void *stream;               /* the instance's own */
    uint32_t *gate;             /* pinned, mapped: the host's word */
    void *gate_dev;             /* its device address */
    uint32_t issued;            /* gates queued on callers' streams */
    /* Staging, for a host implementation: */
    void *ev_in, *ev_out;
    void *host_in, *host_out;   /* pinned */
    size_t in_cap, out_cap;
} tutti__dstage_t;

/** Frees @p ptr, device memory (@p host 0) or pinned host memory (1) of
 *  @p device, now if no gate on that device is closed, else once the
 *  last closed one opens.  NULL ok. */
void tutti__dfree(const tutti__cuda_ops_t *ops, int device, void *ptr,
                  int host);
/** Gates on @p device queued and not yet opened, in this process. */
uint32_t tutti__dstage_closed(int device);

/** The instance's stream and gate word on @p device. */
tutti_status_t tutti__dstage_create(const tutti__cuda_ops_t *ops, int device,
                                    tutti__dstage_t **stage_out);
/** Adds staging: events and pinned buffers of these sizes. */
tutti_status_t tutti__dstage_staging(tutti__dstage_t *s, size_t in_bytes,
                                     size_t out_bytes);
/** Frees it, every gate opened first.  NULL ok. */
void tutti__dstage_destroy(tutti__dstage_t *s);
/** Grows the staging buffers to at least these sizes. */
tutti_status_t tutti__dstage_reserve(tutti__dstage_t *s, size_t in_bytes,
                                     size_t out_bytes);
/** Holds @p caller: records @p event there, then queues a gate; the
 *  gate's number goes to @p seq_out.  Refuses a stream being captured
 *  into a CUDA graph (TUTTI_ERR_UNSUPPORTED): a gate waits for the host. */
tutti_status_t tutti__dstage_hold(tutti__dstage_t *s, void *caller,
                                  void *event, uint32_t *seq_out);
/** Makes the instance's stream wait for @p event (a hold's). */
tutti_status_t tutti__dstage_attach(tutti__dstage_t *s, void *event);
/** Opens the gates up to number @p seq: the caller's stream goes on. */
void tutti__dstage_release(tutti__dstage_t *s, uint32_t seq);
/** Queues the copy of @p in_bytes from the device address @p dev_in to
 *  host_in on the instance's stream. */
tutti_status_t tutti__dstage_copy_in(tutti__dstage_t *s, const void *dev_in,
                                     size_t in_bytes);
/** TUTTI_OK once the input is on the host, TUTTI_INPROGRESS before. */
tutti_status_t tutti__dstage_input_ready(tutti__dstage_t *s);
/** Queues the copy of @p out_bytes of host_out to the device address
 *  @p dev_out. */
tutti_status_t tutti__dstage_copy_out(tutti__dstage_t *s, void *dev_out,
                                      size_t out_bytes);
/** TUTTI_OK once the output is on the device, TUTTI_INPROGRESS before. */
tutti_status_t tutti__dstage_output_ready(tutti__dstage_t *s);

#endif
