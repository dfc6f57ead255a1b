/*
 * A double of the core's CUDA operations table (core/device/cuda_ops.h)
 * for tests on machines without a GPU: devices simulated in host memory,
 * each stream a queue of operations run in order, lazily, by a pump that
 * event_query and fake_cuda_pump() call.  A gate holds its stream until
 * the word it watches reaches its target, as the kernel does; a wait for
 * an event holds it until that record ran.  Scaling and division call the
 * host's reduce.c, so results are bit-identical to the host path.
 * Thread-safe (members of a group run as threads).
 */
#ifndef TUTTI_TEST_FAKE_CUDA_H
#define TUTTI_TEST_FAKE_CUDA_H

#include <stddef.h>

#include "device/cuda_ops.h"

#define FAKE_CUDA_MAX_DEVICES 8

/* The error codes the double returns (CUDA's numbers). */
#define FAKE_CUDA_ERR_INVALID_VALUE 1
#define FAKE_CUDA_ERR_NO_MEMORY 2
#define FAKE_CUDA_ERR_INVALID_DEVICE 101

/** Starts over with @p n devices (at most FAKE_CUDA_MAX_DEVICES); device d
 *  has the PCI bus id "0000:BB:00.0" with BB = @p bus[d] in hex, or d + 1
 *  where @p bus is NULL.  Everything earlier is forgotten (call it
 *  between tests, when no stream of the core is in use). */
void fake_cuda_reset(int n, const int *bus);
/** The table to hand to tutti__cuda_use(). */
const tutti__cuda_ops_t *fake_cuda_ops(void);
/** Runs every queued operation that can run, in each stream's order. */
void fake_cuda_pump(void);
/** A test's own consumer: a copy queued on @p stream (NULL: the legacy
 *  stream) behind what is queued there. */
void fake_cuda_enqueue_copy(void *stream, void *dst, const void *src,
                            size_t bytes);
/** Operations queued on @p stream and not yet run. */
size_t fake_cuda_queued(void *stream);
/** Marks @p stream as being captured into a graph (1) or not (0). */
void fake_cuda_set_capturing(void *stream, int capturing);
/** The device set_device last made current on the calling thread (-1:
 *  none). */
int fake_cuda_current_device(void);
/** Streams, events and memory allocated and not yet freed. */
int fake_cuda_live(void);

#endif
