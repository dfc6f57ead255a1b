/*
 * An instance's CUDA resources (stage.h): its stream and gate word, made
 * when the instance is, and for a host implementation the events and
 * pinned buffers of staging; each execution only queues, records and
 * polls.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/log.h"
#include "device/device.h"
#include "device/stage.h"

tutti_status_t tutti__dstage_create(const tutti__cuda_ops_t *ops, int device,
                                    tutti__dstage_t **stage_out)
{
    tutti__dstage_t *s = calloc(1, sizeof(*s));
    int err;
    if (s == NULL)
        return TUTTI_ERR_NO_MEMORY;
    s->ops = ops;
    s->device = device;
    if ((err = ops->set_device(device)) != 0 ||
        (err = ops->stream_create(&s->stream)) != 0 ||
        (err = ops->host_alloc(sizeof(uint32_t), (void **)&s->gate,
                               &s->gate_dev)) != 0) {
        tutti__cuda_error(TUTTI_ERR_UNSUPPORTED, err, "cuda:%d: a stream and "
                          "a gate word for an instance", device);
        tutti__dstage_destroy(s);
        return TUTTI_ERR_UNSUPPORTED;
    }
    *s->gate = 0;
    *stage_out = s;
    return TUTTI_OK;
}

/* ---- frees that wait for the gates ---------------------------------- */

/* Per device; ordinals past the table share slots (a free may then wait
 * longer, never less).  closed counts the gates queued and not opened;
 * it rises under the lock, so a free made while it reads 0 cannot meet a
 * gate queued meanwhile. */
#define DEVICES 64

typedef struct {
    const tutti__cuda_ops_t *ops;
    void *ptr;
    int host;
} held_free_t;

static struct {
    _Atomic uint32_t closed;
    _Atomic uint32_t nheld;
    held_free_t *held;
    uint32_t cap;
} devs[DEVICES];
static pthread_mutex_t dfree_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_now(const tutti__cuda_ops_t *ops, void *ptr, int host)
{
    if (host)
        ops->host_free(ptr);
    else
        ops->dev_free(ptr);
}

uint32_t tutti__dstage_closed(int device)
{
    return atomic_load(&devs[(unsigned)device % DEVICES].closed);
}

void tutti__dfree(const tutti__cuda_ops_t *ops, int device, void *ptr,
                  int host)
{
    unsigned d = (unsigned)device % DEVICES;
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&dfree_lock);
    if (atomic_load(&devs[d].closed) == 0) {
        free_now(ops, ptr, host);
    } else {
        if (devs[d].nheld == devs[d].cap) {
            uint32_t cap = devs[d].cap ? 2 * devs[d].cap : 8;
            held_free_t *h = realloc(devs[d].held, cap * sizeof(*h));
            if (h == NULL) {
                /* Kept, not freed: a leak is better than a hang. */
                pthread_mutex_unlock(&dfree_lock);
                tutti__log(TUTTI_LOG_WARN, "cuda", "cuda:%d: no memory to "
                           "note a free until the gates open: %p kept",
                           device, ptr);
                return;
            }
            devs[d].held = h;
            devs[d].cap = cap;
        }
        devs[d].held[devs[d].nheld] = (held_free_t){ops, ptr, host};
        atomic_fetch_add(&devs[d].nheld, 1);
    }
    pthread_mutex_unlock(&dfree_lock);
}

/* A gate about to be queued on @p device. */
static void gate_closing(int device)
{
    pthread_mutex_lock(&dfree_lock);
    atomic_fetch_add(&devs[(unsigned)device % DEVICES].closed, 1);
    pthread_mutex_unlock(&dfree_lock);
}

/* @p n gates on @p device opened (or never queued): once none is closed,
 * the frees that waited are made. */
static void gates_opened(int device, uint32_t n)
{
    unsigned d = (unsigned)device % DEVICES;
    if (atomic_fetch_sub(&devs[d].closed, n) != n ||
        atomic_load(&devs[d].nheld) == 0)
        return;
    pthread_mutex_lock(&dfree_lock);
    if (atomic_load(&devs[d].closed) == 0) {
        while (devs[d].nheld > 0) {
            held_free_t *h = &devs[d].held[devs[d].nheld - 1];
            free_now(h->ops, h->ptr, h->host);
            atomic_fetch_sub(&devs[d].nheld, 1);
        }
        free(devs[d].held);
        devs[d].held = NULL;
        devs[d].cap = 0;
    }
    pthread_mutex_unlock(&dfree_lock);
}

/* ---- an instance's stream, gate and staging --------------------------- */

static tutti_status_t grow(tutti__dstage_t *s, void **buf, size_t *cap,
                           size_t bytes, const char *what)
{
    if (bytes <= *cap)
        return TUTTI_OK;
    void *dev = NULL, *host = NULL;
    int err = s->ops->host_alloc(bytes, &host, &dev);
    if (err != 0)
        return tutti__cuda_error(TUTTI_ERR_NO_MEMORY, err, "cuda:%d: %zu "
                                 "bytes of pinned host memory for the %s",
                                 s->device, bytes, what);
    tutti__dfree(s->ops, s->device, *buf, 1);
    *buf = host;
    *cap = bytes;
    return TUTTI_OK;
}

tutti_status_t tutti__dstage_reserve(tutti__dstage_t *s, size_t in_bytes,
                                     size_t out_bytes)
{
    tutti_status_t st = grow(s, &s->host_in, &s->in_cap, in_bytes,
                             "staged input");
    if (st == TUTTI_OK)
        st = grow(s, &s->host_out, &s->out_cap, out_bytes, "staged output");
    return st;
}

tutti_status_t tutti__dstage_staging(tutti__dstage_t *s, size_t in_bytes,
                                     size_t out_bytes)
{
    int err;
    if ((err = s->ops->event_create(&s->ev_in)) != 0 ||
        (err = s->ops->event_create(&s->ev_out)) != 0)
        return tutti__cuda_error(TUTTI_ERR_UNSUPPORTED, err, "cuda:%d: the "
                                 "events of staging", s->device);
    /* At least one byte each, so an execution of zero elements still has
     * buffers to name. */
    return tutti__dstage_reserve(s, in_bytes ? in_bytes : 1,
                                 out_bytes ? out_bytes : 1);
}

void tutti__dstage_destroy(tutti__dstage_t *s)
{
    if (s == NULL)
        return;
    const tutti__cuda_ops_t *ops = s->ops;
    if (s->gate)
        tutti__dstage_release(s, s->issued);
    if (s->stream)
        ops->stream_destroy(s->stream);
    if (s->ev_in)
        ops->event_destroy(s->ev_in);
    if (s->ev_out)
        ops->event_destroy(s->ev_out);
    tutti__dfree(ops, s->device, s->gate, 1);
    tutti__dfree(ops, s->device, s->host_in, 1);
    tutti__dfree(ops, s->device, s->host_out, 1);
    free(s);
}

tutti_status_t tutti__dstage_hold(tutti__dstage_t *s, void *caller,
                                  void *event, uint32_t *seq_out)
{
    const tutti__cuda_ops_t *ops = s->ops;
    int capturing = 0, err;
    if ((err = ops->set_device(s->device)) != 0 ||
        (err = ops->stream_capturing(caller, &capturing)) != 0)
        return tutti__cuda_error(TUTTI_ERR_IO, err, "cuda:%d: the caller's "
                                 "stream", s->device);
    if (capturing)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "cuda", "cuda:%d: the "
                            "stream is being captured into a CUDA graph, "
                            "and this execution cannot be queued on it at "
                            "once (a host implementation, or the instance's "
                            "first execution, or one behind another): only "
                            "a device implementation (NCCL) whose instance "
                            "already ran can be captured", s->device);
    gate_closing(s->device);
    if ((err = ops->event_record(event, caller)) != 0 ||
        (err = ops->gate(caller, s->gate_dev, s->issued + 1)) != 0) {
        gates_opened(s->device, 1);
        return tutti__cuda_error(TUTTI_ERR_IO, err, "cuda:%d: holding the "
                                 "caller's stream", s->device);
    }
    *seq_out = ++s->issued;
    return TUTTI_OK;
}

tutti_status_t tutti__dstage_attach(tutti__dstage_t *s, void *event)
{
    int err = s->ops->stream_wait_event(s->stream, event);
    return err == 0 ? TUTTI_OK
                    : tutti__cuda_error(TUTTI_ERR_IO, err, "cuda:%d: "
                                        "ordering after the caller's stream",
                                        s->device);
}

void tutti__dstage_release(tutti__dstage_t *s, uint32_t seq)
{
    /* The device reads the word through the mapping: a release store, so
     * what the host wrote before is visible first.  Numbers only grow;
     * the exchange counts each gate opened once, whoever opens it. */
    _Atomic uint32_t *word = (_Atomic uint32_t *)s->gate;
    uint32_t old = atomic_load_explicit(word, memory_order_relaxed);
    while ((int32_t)(seq - old) > 0) {
        if (atomic_compare_exchange_weak_explicit(word, &old, seq,
                                                  memory_order_release,
                                                  memory_order_relaxed)) {
            gates_opened(s->device, seq - old);
            break;
        }
    }
}

tutti_status_t tutti__dstage_copy_in(tutti__dstage_t *s, const void *dev_in,
                                     size_t in_bytes)
{
    int err = 0;
    if ((in_bytes > 0 &&
         (err = s->ops->memcpy_async(s->host_in, dev_in, in_bytes,
                                     s->stream)) != 0) ||
        (err = s->ops->event_record(s->ev_in, s->stream)) != 0)
        return tutti__cuda_error(TUTTI_ERR_IO, err, "cuda:%d: copying %zu "
                                 "bytes of input to the host", s->device,
                                 in_bytes);
    return TUTTI_OK;
}

static tutti_status_t poll(tutti__dstage_t *s, void *ev, const char *what)
{
    int err = s->ops->event_query(ev);
    if (err == 0)
        return TUTTI_OK;
    if (err == TUTTI__CUDA_PENDING)
        return TUTTI_INPROGRESS;
    return tutti__cuda_error(TUTTI_ERR_IO, err, "cuda:%d: %s", s->device,
                             what);
}

tutti_status_t tutti__dstage_input_ready(tutti__dstage_t *s)
{
    return poll(s, s->ev_in, "copying the input to the host");
}

tutti_status_t tutti__dstage_copy_out(tutti__dstage_t *s, void *dev_out,
                                      size_t out_bytes)
{
    int err = 0;
    if ((out_bytes > 0 &&
         (err = s->ops->memcpy_async(dev_out, s->host_out, out_bytes,
                                     s->stream)) != 0) ||
        (err = s->ops->event_record(s->ev_out, s->stream)) != 0)
        return tutti__cuda_error(TUTTI_ERR_IO, err, "cuda:%d: copying %zu "
                                 "bytes of output back", s->device,
                                 out_bytes);
    return TUTTI_OK;
}

tutti_status_t tutti__dstage_output_ready(tutti__dstage_t *s)
{
    return poll(s, s->ev_out, "copying the output to the device");
}
