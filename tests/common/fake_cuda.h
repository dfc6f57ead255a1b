/*
 * A double of the core's CUDA operations table (core/device/cuda_ops.h)
 * for tests on machines without a GPU: devices simulated in host memory,
 * each stream a queue of operations run in order, lazily, by a pump that
 * event_query and fake_cuda_pump() call.  A gate holds its stream until
 * the word it watches reaches its target, as the kernel does; a wait for
 * an event holds it until that record ran.  Scaling and division call the
 * host's reduce.c, so results are bit-identical to the host path.
 * A stream being captured into a graph runs nothing: what is queued there
 * is counted (fake_cuda_captured) and dropped, as a graph nobody launches.
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
/** A device implementation's copy (tests/modules/mod_group.c finds it in
 *  the test program, a weak symbol there): like fake_cuda_enqueue_copy,
 *  but named "mcopy" by fake_cuda_describe and remembered for
 *  fake_cuda_device_copy_stream.  0 or a CUDA error code. */
int fake_cuda_device_copy(void *stream, void *dst, const void *src,
                          size_t bytes);
/** The stream of the last fake_cuda_device_copy (NULL: the legacy stream,
 *  or none); how many there were since fake_cuda_reset to @p count_out. */
void *fake_cuda_device_copy_stream(int *count_out);
/** 1: the device runs nothing until fake_cuda_pump() (event_query only
 *  looks), so a test sees work queued and not yet done; 0: event_query
 *  runs what it can first (the default). */
void fake_cuda_lazy(int on);
/** The operations queued on @p stream and not yet run, in order, named
 *  copy, mcopy, scale, divide, record, wait, gate and separated by
 *  spaces ("" when none), into @p buf of @p len bytes; returns @p buf. */
const char *fake_cuda_describe(void *stream, char *buf, size_t len);
/** Forgets what is queued on @p stream and not yet run (a failed test's
 *  leftovers, which would write to buffers gone by then); how many. */
size_t fake_cuda_drop(void *stream);
/** Gates ever queued on @p stream (the legacy stream: since the reset). */
size_t fake_cuda_gates(void *stream);
/** Operations queued on @p stream while it was being captured. */
size_t fake_cuda_captured(void *stream);
/** Operations queued on @p stream and not yet run. */
size_t fake_cuda_queued(void *stream);
/** Marks @p stream as being captured into a graph (1) or not (0). */
void fake_cuda_set_capturing(void *stream, int capturing);
/** The device set_device last made current on the calling thread (-1:
 *  none). */
int fake_cuda_current_device(void);
/** Kernels of @p device as not yet loaded, as a library that loads them
 *  lazily would leave them (set_device loads them all, as
 *  libtutti_cuda's does). */
void fake_cuda_forget_kernels(int device);
/** Streams, events and memory allocated and not yet freed. */
int fake_cuda_live(void);
/** What real CUDA would hang on or refuse here, counted since
 *  fake_cuda_reset, the first described into @p first (@p len bytes;
 *  NULL: not wanted): a memcpy_async of pageable host memory on a stream
 *  held by a closed gate (CUDA returns once the copy is done); a free
 *  while a gate of its device is closed (cudaFree waits for the device);
 *  a kernel's first launch on a device while a gate there is closed
 *  (lazy loading waits for running kernels); a record, wait, copy or
 *  launch on a stream of a device that is not current; a record of an
 *  event of another device. */
size_t fake_cuda_violations(char *first, size_t len);
/** Closed gates queued on @p stream: nonzero while it is held. */
size_t fake_cuda_held(void *stream);
/** A module's set-up of its group state on @p device (mod_group's
 *  init_group calls it): counted, with the gates closed there then. */
void fake_cuda_init_mark(int device);
/** How many set-ups were marked since the reset; the gates closed at them,
 *  summed, to @p closed_out. */
size_t fake_cuda_inits(size_t *closed_out);
/** A module's abort of its device work (tests/modules/mod_group.c calls
 *  it, a weak symbol there): counted, with the gates then closed on
 *  streams of @p device. */
void fake_cuda_abort_mark(int device);
/** Marks since fake_cuda_reset; the gates closed at them to
 *  @p closed_out. */
size_t fake_cuda_aborts(size_t *closed_out);

#endif
