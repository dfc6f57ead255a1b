/*
 * The CUDA double (fake_cuda.h): devices, memory, streams and events in
 * host memory behind one mutex; queued operations run when the pump finds
 * them unblocked, never in the caller of the operation that queued them.
 * What is queued on a stream being captured is counted and dropped: the
 * double has no graphs to launch.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/reduce.h"
#include "fake_cuda.h"

enum { OP_COPY, OP_MCOPY, OP_SCALE, OP_DIVIDE, OP_RECORD, OP_WAIT, OP_GATE };

/* fake_cuda_describe's names, by kind. */
static const char *const op_name[] = {"copy", "mcopy", "scale", "divide",
                                      "record", "wait", "gate"};

typedef struct fake_event {
    int device;         /* current at its creation */
    uint64_t records;   /* record operations queued */
    uint64_t completed; /* the last of them that ran */
    struct fake_event *next;
} fake_event_t;

typedef struct {
    int kind;
    void *dst;
    const void *src;
    size_t bytes;       /* copy; count for scale and divide */
    tutti_dtype_t dtype;
    double factor;
    int divisor;
    fake_event_t *ev;
    uint64_t seq;       /* record: its number; wait: the one awaited */
    const volatile uint32_t *flag;
    uint32_t target;
} fake_op_t;

typedef struct fake_stream {
    fake_op_t *ops;
    size_t head, tail, cap;
    int capturing;
    int device;
    size_t gates;       /* gates ever queued */
    size_t captured;    /* operations queued while capturing, dropped */
    struct fake_stream *next;
} fake_stream_t;

typedef struct fake_mem {
    char *base;
    size_t len;
    int device;         /* -1: pinned host memory */
    struct fake_mem *next;
} fake_mem_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int num_devices = 1;
static int bus_of[FAKE_CUDA_MAX_DEVICES] = {1, 2, 3, 4, 5, 6, 7, 8};
static fake_stream_t legacy = {.device = 0};
static fake_stream_t *streams;
static fake_event_t *events;
static fake_mem_t *mems;
static int live;
static int lazy;              /* event_query runs nothing (fake_cuda_lazy) */
static void *mcopy_stream;    /* fake_cuda_device_copy's last stream */
static int mcopies;           /* and how many it queued */
static __thread int current = -1;
/* What real CUDA would do differently here (a hang, an error), recorded
 * for the tests to assert on (fake_cuda_violations). */
#define VIOLATION_MAX 300
static size_t violations;
static char first_violation[VIOLATION_MAX];
static unsigned loaded[FAKE_CUDA_MAX_DEVICES]; /* kernels, by bit (kind) */
static size_t aborts, closed_at_abort;         /* fake_cuda_abort_mark */
static size_t inits, closed_at_init;           /* fake_cuda_init_mark */

/* Under the lock. */
static void violation(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
    va_list ap;
    if (violations++ > 0)
        return;
    va_start(ap, fmt);
    vsnprintf(first_violation, sizeof(first_violation), fmt, ap);
    va_end(ap);
}

static fake_stream_t *stream_of(void *s)
{
    return s ? (fake_stream_t *)s : &legacy;
}

/* Queues @p op on @p s (under the lock); CUDA's allocation failure if the
 * queue cannot grow. */
static int enqueue(fake_stream_t *s, const fake_op_t *op)
{
    if (s->capturing) {
        /* A graph's node: it would run when the graph is launched, which
         * no test here does. */
        s->captured++;
        return 0;
    }
    if (op->kind == OP_GATE)
        s->gates++;
    if (s->tail == s->cap) {
        size_t n = s->tail - s->head;
        if (s->head > 0 && n < s->cap / 2) {
            memmove(s->ops, s->ops + s->head, n * sizeof(*op));
        } else {
            size_t cap = s->cap ? 2 * s->cap : 16;
            fake_op_t *ops = malloc(cap * sizeof(*ops));
            if (ops == NULL)
                return FAKE_CUDA_ERR_NO_MEMORY;
            if (n)
                memcpy(ops, s->ops + s->head, n * sizeof(*op));
            free(s->ops);
            s->ops = ops;
            s->cap = cap;
        }
        s->head = 0;
        s->tail = n;
    }
    s->ops[s->tail++] = *op;
    return 0;
}

/* Runs @p op if nothing holds it: 1 if it ran. */
static int run_op(const fake_op_t *op)
{
    switch (op->kind) {
    case OP_COPY:
    case OP_MCOPY:
        memmove(op->dst, op->src, op->bytes);
        return 1;
    case OP_SCALE:
        tutti__scale(op->dtype, op->dst, op->src, op->bytes, op->factor);
        return 1;
    case OP_DIVIDE:
        tutti__divide(op->dtype, op->dst, op->bytes, op->divisor);
        return 1;
    case OP_RECORD:
        op->ev->completed = op->seq;
        return 1;
    case OP_WAIT:
        return op->ev->completed >= op->seq;
    default: /* OP_GATE */
        return (int32_t)(atomic_load((const _Atomic uint32_t *)op->flag) -
                         op->target) >= 0;
    }
}

/* Runs one stream as far as it goes: 1 if anything ran. */
static int pump_stream(fake_stream_t *s)
{
    int ran = 0;
    while (s->head < s->tail && run_op(&s->ops[s->head])) {
        s->head++;
        ran = 1;
    }
    return ran;
}

static void pump_locked(void)
{
    int ran;
    do {
        ran = pump_stream(&legacy);
        for (fake_stream_t *s = streams; s; s = s->next)
            ran |= pump_stream(s);
    } while (ran);
}

void fake_cuda_pump(void)
{
    pthread_mutex_lock(&lock);
    pump_locked();
    pthread_mutex_unlock(&lock);
}

/* A gate whose word has not reached its target: the stream stops there. */
static int gate_closed(const fake_op_t *op)
{
    return op->kind == OP_GATE && !run_op(op);
}

/* Closed gates queued on @p s (under the lock). */
static size_t closed_on(const fake_stream_t *s)
{
    size_t n = 0;
    for (size_t i = s->head; i < s->tail; i++)
        n += (size_t)gate_closed(&s->ops[i]);
    return n;
}

static int device_of(const fake_stream_t *s)
{
    return s == &legacy ? (current < 0 ? 0 : current) : s->device;
}

/* Closed gates on streams of @p device, every device for -1. */
static size_t closed_on_device(int device)
{
    size_t n = 0;
    if (device < 0 || device_of(&legacy) == device)
        n += closed_on(&legacy);
    for (fake_stream_t *s = streams; s; s = s->next)
        if (device < 0 || s->device == device)
            n += closed_on(s);
    return n;
}

/* Work queued on a stream of another device than the current one: CUDA
 * refuses it (the legacy stream is the current device's). */
static void check_current(const fake_stream_t *s, const char *what)
{
    int cur = current < 0 ? 0 : current;
    if (s != &legacy && s->device != cur)
        violation("%s on a stream of cuda:%d with cuda:%d current", what,
                  s->device, cur);
}

/* A kernel's first launch on a device loads its module (lazy loading,
 * CUDA 12.2 on), which waits for the kernels running there: behind a
 * closed gate that spins, it waits for ever. */
static void check_launch(const fake_stream_t *s, int kind)
{
    int d = device_of(s);
    if (d < 0 || d >= FAKE_CUDA_MAX_DEVICES || (loaded[d] & (1u << kind)))
        return;
    loaded[d] |= 1u << kind;
    size_t n = closed_on_device(d);
    if (n > 0)
        violation("first launch of the %s kernel on cuda:%d while %zu "
                  "gate(s) wait there: lazy loading waits for them",
                  op_name[kind], d, n);
}

static int queue(void *stream, const fake_op_t *op)
{
    pthread_mutex_lock(&lock);
    fake_stream_t *s = stream_of(stream);
    check_current(s, op_name[op->kind]);
    if (op->kind == OP_GATE || op->kind == OP_SCALE || op->kind == OP_DIVIDE)
        check_launch(s, op->kind);
    int err = enqueue(s, op);
    pthread_mutex_unlock(&lock);
    return err;
}

/* Pinned host or device memory of the double (under the lock). */
static const fake_mem_t *mem_of(const void *ptr)
{
    const char *p = ptr;
    for (fake_mem_t *m = mems; m; m = m->next)
        if (p >= m->base && p < m->base + m->len)
            return m;
    return NULL;
}

/* ---- the table -------------------------------------------------------- */

static int f_versions(int *runtime_out, int *driver_out)
{
    *runtime_out = 13000;
    *driver_out = 13000;
    return 0;
}

static int f_device_count(int *count_out)
{
    pthread_mutex_lock(&lock);
    *count_out = num_devices;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int f_pci_bus_id(int device, char *buf, int len)
{
    if (device < 0 || device >= num_devices)
        return FAKE_CUDA_ERR_INVALID_DEVICE;
    snprintf(buf, (size_t)len, "0000:%02x:00.0", bus_of[device]);
    return 0;
}

static int f_set_device(int device)
{
    if (device < 0 || device >= num_devices)
        return FAKE_CUDA_ERR_INVALID_DEVICE;
    current = device;
    /* As libtutti_cuda's: the first set_device of a device loads every
     * kernel of the library there. */
    loaded[device] = ~0u;
    return 0;
}

void fake_cuda_forget_kernels(int device)
{
    if (device >= 0 && device < FAKE_CUDA_MAX_DEVICES)
        loaded[device] = 0;
}

static int f_get_device(int *device_out)
{
    *device_out = current < 0 ? 0 : current;
    return 0;
}

static int f_pointer_device(const void *ptr, int *device_out)
{
    const char *p = ptr;
    *device_out = -1;
    pthread_mutex_lock(&lock);
    for (fake_mem_t *m = mems; m; m = m->next)
        if (p >= m->base && p < m->base + m->len)
            *device_out = m->device;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int alloc_mem(size_t len, int device, void **out)
{
    fake_mem_t *m = malloc(sizeof(*m));
    char *base = malloc(len ? len : 1);
    if (m == NULL || base == NULL) {
        free(m);
        free(base);
        return FAKE_CUDA_ERR_NO_MEMORY;
    }
    m->base = base;
    m->len = len ? len : 1;
    m->device = device;
    pthread_mutex_lock(&lock);
    m->next = mems;
    mems = m;
    live++;
    pthread_mutex_unlock(&lock);
    *out = base;
    return 0;
}

static void free_mem(void *p)
{
    pthread_mutex_lock(&lock);
    for (fake_mem_t **pp = &mems; *pp; pp = &(*pp)->next) {
        fake_mem_t *m = *pp;
        if (m->base == p) {
            /* cudaFree and cudaFreeHost wait for the device's work. */
            size_t n = closed_on_device(m->device < 0 ? device_of(&legacy)
                                                      : m->device);
            if (n > 0)
                violation("a free of %s memory while %zu gate(s) wait: "
                          "CUDA would wait for them",
                          m->device < 0 ? "pinned host" : "device", n);
            *pp = m->next;
            free(m->base);
            free(m);
            live--;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

static int f_host_alloc(size_t len, void **host_out, void **dev_out)
{
    int err = alloc_mem(len, -1, host_out);
    if (err == 0)
        *dev_out = *host_out;
    return err;
}

static int f_dev_alloc(size_t len, void **dev_out)
{
    if (current < 0)
        current = 0; /* CUDA's default device */
    return alloc_mem(len, current, dev_out);
}

static int f_memcpy_async(void *dst, const void *src, size_t len,
                          void *stream)
{
    fake_op_t op = {.kind = OP_COPY, .dst = dst, .src = src, .bytes = len};
    pthread_mutex_lock(&lock);
    fake_stream_t *s = stream_of(stream);
    /* With pageable host memory the copy returns only when done. */
    size_t n = closed_on(s);
    if (n > 0 && (mem_of(dst) == NULL || mem_of(src) == NULL))
        violation("memcpy_async of pageable host memory on a stream held by "
                  "%zu gate(s): CUDA would block until they open", n);
    check_current(s, "memcpy_async");
    int err = enqueue(s, &op);
    pthread_mutex_unlock(&lock);
    return err;
}

static int f_stream_create(void **stream_out)
{
    fake_stream_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return FAKE_CUDA_ERR_NO_MEMORY;
    s->device = current < 0 ? 0 : current;
    pthread_mutex_lock(&lock);
    s->next = streams;
    streams = s;
    live++;
    pthread_mutex_unlock(&lock);
    *stream_out = s;
    return 0;
}

static void f_stream_destroy(void *stream)
{
    pthread_mutex_lock(&lock);
    for (fake_stream_t **pp = &streams; *pp; pp = &(*pp)->next) {
        if (*pp == stream) {
            fake_stream_t *s = *pp;
            /* CUDA finishes a destroyed stream's work first. */
            pump_locked();
            *pp = s->next;
            free(s->ops);
            free(s);
            live--;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

static int f_stream_capturing(void *stream, int *capturing_out)
{
    pthread_mutex_lock(&lock);
    *capturing_out = stream_of(stream)->capturing;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int f_stream_wait_event(void *stream, void *event)
{
    fake_event_t *ev = event;
    pthread_mutex_lock(&lock);
    fake_op_t op = {.kind = OP_WAIT, .ev = ev, .seq = ev->records};
    check_current(stream_of(stream), "stream_wait_event");
    int err = enqueue(stream_of(stream), &op);
    pthread_mutex_unlock(&lock);
    return err;
}

static int f_event_create(void **event_out)
{
    fake_event_t *ev = calloc(1, sizeof(*ev));
    if (ev == NULL)
        return FAKE_CUDA_ERR_NO_MEMORY;
    ev->device = current < 0 ? 0 : current;
    pthread_mutex_lock(&lock);
    ev->next = events;
    events = ev;
    live++;
    pthread_mutex_unlock(&lock);
    *event_out = ev;
    return 0;
}

static void f_event_destroy(void *event)
{
    pthread_mutex_lock(&lock);
    for (fake_event_t **pp = &events; *pp; pp = &(*pp)->next) {
        if (*pp == event) {
            *pp = (*pp)->next;
            free(event);
            live--;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

static int f_event_record(void *event, void *stream)
{
    fake_event_t *ev = event;
    pthread_mutex_lock(&lock);
    fake_op_t op = {.kind = OP_RECORD, .ev = ev, .seq = ev->records + 1};
    int captured = stream_of(stream)->capturing;
    check_current(stream_of(stream), "event_record");
    if (ev->device != device_of(stream_of(stream)))
        violation("event_record of an event of cuda:%d on a stream of "
                  "cuda:%d", ev->device, device_of(stream_of(stream)));
    int err = enqueue(stream_of(stream), &op);
    if (err == 0 && !captured)
        ev->records++;
    pthread_mutex_unlock(&lock);
    return err;
}

static int f_event_query(void *event)
{
    fake_event_t *ev = event;
    pthread_mutex_lock(&lock);
    if (!lazy)
        pump_locked();
    int done = ev->completed >= ev->records;
    pthread_mutex_unlock(&lock);
    return done ? 0 : TUTTI__CUDA_PENDING;
}

static int f_gate(void *stream, const volatile uint32_t *flag,
                  uint32_t target)
{
    fake_op_t op = {.kind = OP_GATE, .flag = flag, .target = target};
    return queue(stream, &op);
}

static int f_scale(tutti_dtype_t dtype, void *dst, const void *src,
                   size_t count, double factor, void *stream)
{
    fake_op_t op = {.kind = OP_SCALE, .dst = dst, .src = src, .bytes = count,
                    .dtype = dtype, .factor = factor};
    return queue(stream, &op);
}

static int f_divide(tutti_dtype_t dtype, void *buf, size_t count,
                    int divisor, void *stream)
{
    fake_op_t op = {.kind = OP_DIVIDE, .dst = buf, .bytes = count,
                    .dtype = dtype, .divisor = divisor};
    return queue(stream, &op);
}

static const char *f_error_string(int err)
{
    switch (err) {
    case 0:
        return "cudaSuccess: no error";
    case FAKE_CUDA_ERR_INVALID_VALUE:
        return "cudaErrorInvalidValue: invalid argument";
    case FAKE_CUDA_ERR_NO_MEMORY:
        return "cudaErrorMemoryAllocation: out of memory";
    case FAKE_CUDA_ERR_INVALID_DEVICE:
        return "cudaErrorInvalidDevice: invalid device ordinal";
    default:
        return "cudaErrorUnknown: unknown error";
    }
}

static const tutti__cuda_ops_t table = {
    .size = sizeof(tutti__cuda_ops_t), .version = TUTTI__CUDA_OPS_VERSION,
    .versions = f_versions, .device_count = f_device_count,
    .pci_bus_id = f_pci_bus_id, .set_device = f_set_device,
    .pointer_device = f_pointer_device, .host_alloc = f_host_alloc,
    .host_free = free_mem, .dev_alloc = f_dev_alloc, .dev_free = free_mem,
    .memcpy_async = f_memcpy_async, .stream_create = f_stream_create,
    .stream_destroy = f_stream_destroy,
    .stream_capturing = f_stream_capturing,
    .stream_wait_event = f_stream_wait_event,
    .event_create = f_event_create, .event_destroy = f_event_destroy,
    .event_record = f_event_record, .event_query = f_event_query,
    .gate = f_gate, .scale = f_scale, .divide = f_divide,
    .error_string = f_error_string, .get_device = f_get_device};

/* ---- the tests' side -------------------------------------------------- */

const tutti__cuda_ops_t *fake_cuda_ops(void)
{
    return &table;
}

void fake_cuda_reset(int n, const int *bus)
{
    pthread_mutex_lock(&lock);
    num_devices = n < 1 ? 1 : n > FAKE_CUDA_MAX_DEVICES
                                  ? FAKE_CUDA_MAX_DEVICES
                                  : n;
    for (int d = 0; d < FAKE_CUDA_MAX_DEVICES; d++)
        bus_of[d] = bus && d < n ? bus[d] : d + 1;
    legacy.head = legacy.tail = 0;
    legacy.capturing = 0;
    legacy.gates = legacy.captured = 0;
    lazy = 0;
    mcopy_stream = NULL;
    mcopies = 0;
    violations = 0;
    first_violation[0] = '\0';
    memset(loaded, 0, sizeof(loaded));
    aborts = closed_at_abort = 0;
    inits = closed_at_init = 0;
    pthread_mutex_unlock(&lock);
}

void fake_cuda_enqueue_copy(void *stream, void *dst, const void *src,
                            size_t bytes)
{
    fake_op_t op = {.kind = OP_COPY, .dst = dst, .src = src, .bytes = bytes};
    /* The test's, not the core's: none of the table's checks. */
    pthread_mutex_lock(&lock);
    (void)enqueue(stream_of(stream), &op);
    pthread_mutex_unlock(&lock);
}

int fake_cuda_device_copy(void *stream, void *dst, const void *src,
                          size_t bytes)
{
    fake_op_t op = {.kind = OP_MCOPY, .dst = dst, .src = src, .bytes = bytes};
    pthread_mutex_lock(&lock);
    check_current(stream_of(stream), "a device implementation's copy");
    int err = enqueue(stream_of(stream), &op);
    if (err == 0) {
        mcopy_stream = stream;
        mcopies++;
    }
    pthread_mutex_unlock(&lock);
    return err;
}

void *fake_cuda_device_copy_stream(int *count_out)
{
    pthread_mutex_lock(&lock);
    void *s = mcopy_stream;
    *count_out = mcopies;
    pthread_mutex_unlock(&lock);
    return s;
}

void fake_cuda_lazy(int on)
{
    pthread_mutex_lock(&lock);
    lazy = on;
    pthread_mutex_unlock(&lock);
}

const char *fake_cuda_describe(void *stream, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&lock);
    fake_stream_t *s = stream_of(stream);
    for (size_t i = s->head; i < s->tail && at < len; i++) {
        int n = snprintf(buf + at, len - at, "%s%s", at ? " " : "",
                         op_name[s->ops[i].kind]);
        at = n < 0 ? len : at + (size_t)n;
    }
    pthread_mutex_unlock(&lock);
    return buf;
}

size_t fake_cuda_drop(void *stream)
{
    pthread_mutex_lock(&lock);
    fake_stream_t *s = stream_of(stream);
    size_t n = s->tail - s->head;
    s->head = s->tail = 0;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fake_cuda_gates(void *stream)
{
    pthread_mutex_lock(&lock);
    size_t n = stream_of(stream)->gates;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fake_cuda_captured(void *stream)
{
    pthread_mutex_lock(&lock);
    size_t n = stream_of(stream)->captured;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fake_cuda_queued(void *stream)
{
    pthread_mutex_lock(&lock);
    fake_stream_t *s = stream_of(stream);
    size_t n = s->tail - s->head;
    pthread_mutex_unlock(&lock);
    return n;
}

void fake_cuda_set_capturing(void *stream, int capturing)
{
    pthread_mutex_lock(&lock);
    stream_of(stream)->capturing = capturing;
    pthread_mutex_unlock(&lock);
}

int fake_cuda_current_device(void)
{
    return current;
}

int fake_cuda_live(void)
{
    pthread_mutex_lock(&lock);
    int n = live;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fake_cuda_violations(char *first, size_t len)
{
    pthread_mutex_lock(&lock);
    size_t n = violations;
    if (first != NULL && len > 0)
        snprintf(first, len, "%s", first_violation);
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fake_cuda_held(void *stream)
{
    pthread_mutex_lock(&lock);
    size_t n = closed_on(stream_of(stream));
    pthread_mutex_unlock(&lock);
    return n;
}

void fake_cuda_abort_mark(int device)
{
    pthread_mutex_lock(&lock);
    aborts++;
    closed_at_abort += closed_on_device(device);
    pthread_mutex_unlock(&lock);
}

void fake_cuda_init_mark(int device)
{
    pthread_mutex_lock(&lock);
    inits++;
    closed_at_init += closed_on_device(device);
    pthread_mutex_unlock(&lock);
}

size_t fake_cuda_inits(size_t *closed_out)
{
    pthread_mutex_lock(&lock);
    size_t n = inits;
    *closed_out = closed_at_init;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fake_cuda_aborts(size_t *closed_out)
{
    pthread_mutex_lock(&lock);
    size_t n = aborts;
    *closed_out = closed_at_abort;
    pthread_mutex_unlock(&lock);
    return n;
}
