/* A module with per-group state (ABI 1.3), for the tests of CUDA groups:
 *   group ops     init_group_params writes 16 bytes, a count of its calls
 *                 in this process and the group's key, so each group formed
 *                 gets fresh ones; init_group, abort_group and fini_group
 *                 append one line each to the file TUTTI_TEST_GROUP_LOG
 *                 names (if set): "init K R BYTES", "abort K R REASON",
 *                 "fini K R" (K the group key, R the rank, in hex and
 *                 decimal), so a test of many threads reads what each got.
 *                 init_group fails while TUTTI_TEST_GROUP_FAIL is
 *                 "init_group"; init_group and abort_group tell the test
 *                 program's CUDA double (fake_cuda_init_mark,
 *                 fake_cuda_abort_mark), which counts the gates closed on
 *                 the member's device then.
 *   TestOrdered   allreduce, flagged TUTTI_IMPL_ORDERED: every member
 *                 sends its input to every other through core->send and
 *                 sums what arrives in rank order (a copy for a group of
 *                 one); refuses to start without its group state.
 *   TestUnordered the same without the flag.
 *   TestDeclines  the same, whose supports() declines int8.
 *   TestDeviceCopy allreduce in a group of one on CUDA device memory
 *                 (TUTTI_IMPL_DEVICE_MEMORY): run queues the copy of
 *                 sendbuf to recvbuf (nothing in place) on exec->stream
 *                 and returns TUTTI_OK.
 *   TestDeviceLate the same, except that run queues nothing and returns
 *                 TUTTI_INPROGRESS, and progress queues the copy on
 *                 exec->stream, read then (the core has moved it).
 * The device copies go through fake_cuda_device_copy, the CUDA double of
 * the test program that loads this module (tests/common/fake_cuda.h). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tutti/module.h>

#define GROUP_MAGIC 0x47525053u

typedef struct {
    uint64_t key;
    int rank;
    int device;
    unsigned char bytes[16];
} group_state_t;

static uint64_t params_calls;

/* One line to the test's log; lines of different threads do not mix
 * (one write on a file opened for appending). */
static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
    const char *path = getenv("TUTTI_TEST_GROUP_LOG");
    char line[512];
    va_list ap;
    if (path == NULL || path[0] == '\0')
        return;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) != n)
        n = -1;
    close(fd);
}

static tutti_status_t g_params(const tutti_alg_group_t *group,
                               const tutti_core_ops_t *core, void *details,
                               size_t *len_out)
{
    uint64_t b[2] = {++params_calls, group->group_key ^ GROUP_MAGIC};
    (void)core;
    memcpy(details, b, sizeof(b));
    *len_out = sizeof(b);
    return TUTTI_OK;
}

extern void fake_cuda_init_mark(int device)
    __attribute__((weak, visibility("default")));

static tutti_status_t g_init(const tutti_alg_group_t *group,
                             const tutti_core_ops_t *core,
                             const void *details, size_t details_len,
                             void **state_out)
{
    group_state_t *s;
    char hex[33];
    const char *fail = getenv("TUTTI_TEST_GROUP_FAIL");
    if (details_len != 16)
        return core->error(TUTTI_ERR_MODULE, "testgroup: %zu bytes of group "
                           "details, expected 16", details_len);
    if (fail != NULL && strcmp(fail, "init_group") == 0)
        return core->error(TUTTI_ERR_MODULE, "testgroup: init_group fails "
                           "(TUTTI_TEST_GROUP_FAIL)");
    if ((s = malloc(sizeof(*s))) == NULL)
        return TUTTI_ERR_NO_MEMORY;
    s->key = group->group_key;
    s->rank = group->rank;
    s->device = group->device_index;
    memcpy(s->bytes, details, 16);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", s->bytes[i]);
    log_line("init %llx %d %s", (unsigned long long)s->key, s->rank, hex);
    if (fake_cuda_init_mark != NULL)
        fake_cuda_init_mark(s->device);
    *state_out = s;
    return TUTTI_OK;
}

extern void fake_cuda_abort_mark(int device)
    __attribute__((weak, visibility("default")));

static void g_abort(void *state, const char *reason)
{
    group_state_t *s = state;
    if (fake_cuda_abort_mark != NULL)
        fake_cuda_abort_mark(s->device);
    log_line("abort %llx %d %s", (unsigned long long)s->key, s->rank,
             reason ? reason : "");
}

static void g_fini(void *state)
{
    group_state_t *s = state;
    log_line("fini %llx %d", (unsigned long long)s->key, s->rank);
    free(s);
}

static const tutti_alg_group_ops_t group_ops = {
    .size = sizeof(tutti_alg_group_ops_t), .init_group_params = g_params,
    .init_group = g_init, .abort_group = g_abort, .fini_group = g_fini};

/* ---- the allreduce: everyone's input to everyone -------------------- */

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t bytes;
    unsigned char *scratch;  /* group_size blocks */
    tutti_xfer_t *xfers;     /* sends then receives, group_size each */
    unsigned char *done;     /* per xfer */
} sum_t;

static tutti_status_t sum_init(const tutti_alg_instance_t *inst,
                               const tutti_core_ops_t *core,
                               const void *details, size_t details_len,
                               void **state_out)
{
    (void)details;
    (void)details_len;
    if (inst->group_state == NULL)
        return core->error(TUTTI_ERR_MODULE, "testgroup: no group state "
                           "reached the instance");
    size_t n = (size_t)inst->group_size;
    sum_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return TUTTI_ERR_NO_MEMORY;
    s->inst = inst;
    s->bytes = inst->count * tutti_dtype_size(inst->dtype);
    s->scratch = malloc(n * (s->bytes ? s->bytes : 1));
    s->xfers = calloc(2 * n, sizeof(*s->xfers));
    s->done = calloc(2 * n, 1);
    if (s->scratch == NULL || s->xfers == NULL || s->done == NULL) {
        free(s->scratch);
        free(s->xfers);
        free(s->done);
        free(s);
        return TUTTI_ERR_NO_MEMORY;
    }
    *state_out = s;
    return TUTTI_OK;
}

static tutti_status_t sum_progress(void *state, tutti_alg_exec_t *x)
{
    sum_t *s = state;
    const tutti_alg_instance_t *in = s->inst;
    int n = in->group_size;
    for (int i = 0; i < 2 * n; i++) {
        if (i % n == in->rank || s->done[i])
            continue;
        tutti_status_t st = x->core->test(x, &s->xfers[i]);
        if (st == TUTTI_INPROGRESS)
            return st;
        if (st != TUTTI_OK)
            return st;
        s->done[i] = 1;
    }
    /* Every block arrived: the sum in rank order, as a test computes it. */
    memcpy(s->scratch + (size_t)in->rank * s->bytes, x->sendbuf, s->bytes);
    memcpy(x->recvbuf, s->scratch, s->bytes);
    for (int r = 1; r < n; r++)
        x->core->reduce(in->dtype, in->op, x->recvbuf, x->recvbuf,
                        s->scratch + (size_t)r * s->bytes, in->count);
    return TUTTI_OK;
}

static tutti_status_t sum_run(void *state, tutti_alg_exec_t *x)
{
    sum_t *s = state;
    const tutti_alg_instance_t *in = s->inst;
    int n = in->group_size;
    memset(s->done, 0, 2 * (size_t)n);
    for (int p = 0; p < n; p++) {
        tutti_status_t st;
        if (p == in->rank)
            continue;
        if ((st = x->core->send(x, p, 1, x->sendbuf, s->bytes,
                                &s->xfers[p])) != TUTTI_OK ||
            (st = x->core->recv(x, p, 1, s->scratch + (size_t)p * s->bytes,
                                s->bytes, NULL, &s->xfers[n + p])) !=
                TUTTI_OK)
            return st;
    }
    return sum_progress(state, x);
}

static void sum_fini(void *state)
{
    sum_t *s = state;
    free(s->scratch);
    free(s->xfers);
    free(s->done);
    free(s);
}

static const tutti_alg_ops_t sum_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = sum_init,
    .run = sum_run, .progress = sum_progress, .fini_context = sum_fini};

static int declines(const tutti_alg_instance_t *inst, char *why, size_t len)
{
    if (inst->dtype != TUTTI_INT8)
        return 1;
    snprintf(why, len, "test declines: int8 is not summed here");
    return 0;
}

static const tutti_alg_ops_t declining_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = sum_init,
    .run = sum_run, .progress = sum_progress, .fini_context = sum_fini,
    .supports = declines};

/* ---- on device memory, through the test program's CUDA double ------- */

/* Weak: a program without the double (tutti-info, test_registry) loads
 * the module all the same, and these implementations refuse to run. */
extern int fake_cuda_device_copy(void *stream, void *dst, const void *src,
                                 size_t bytes)
    __attribute__((weak, visibility("default")));

typedef struct {
    const char *name;
    size_t bytes;
} dcopy_t;

static tutti_status_t dcopy_init(const tutti_alg_instance_t *inst,
                                 const tutti_core_ops_t *core,
                                 const char *name, void **state_out)
{
    if (inst->group_size != 1)
        return core->error(TUTTI_ERR_UNSUPPORTED, "testgroup: %s runs in a "
                           "group of one, not of %d", name, inst->group_size);
    dcopy_t *s = malloc(sizeof(*s));
    if (s == NULL)
        return TUTTI_ERR_NO_MEMORY;
    s->name = name;
    s->bytes = inst->count * tutti_dtype_size(inst->dtype);
    *state_out = s;
    return TUTTI_OK;
}

static tutti_status_t copy_init(const tutti_alg_instance_t *inst,
                                const tutti_core_ops_t *core,
                                const void *details, size_t details_len,
                                void **state_out)
{
    (void)details;
    (void)details_len;
    return dcopy_init(inst, core, "TestDeviceCopy", state_out);
}

static tutti_status_t late_init(const tutti_alg_instance_t *inst,
                                const tutti_core_ops_t *core,
                                const void *details, size_t details_len,
                                void **state_out)
{
    (void)details;
    (void)details_len;
    return dcopy_init(inst, core, "TestDeviceLate", state_out);
}

/* The execution's work, queued on exec->stream as it is now. */
static tutti_status_t dcopy_queue(const dcopy_t *s, tutti_alg_exec_t *x)
{
    if (fake_cuda_device_copy == NULL)
        return x->core->error(TUTTI_ERR_UNSUPPORTED, "testgroup: %s needs "
                              "fake_cuda_device_copy, the CUDA double of "
                              "the tests, which this program lacks",
                              s->name);
    if (x->sendbuf == x->recvbuf || s->bytes == 0)
        return TUTTI_OK;
    int err = fake_cuda_device_copy(x->stream, x->recvbuf, x->sendbuf,
                                    s->bytes);
    if (err != 0)
        return x->core->error(TUTTI_ERR_IO, "testgroup: %s: queuing a copy "
                              "of %zu bytes: cuda error %d", s->name,
                              s->bytes, err);
    return TUTTI_OK;
}

static tutti_status_t copy_run(void *state, tutti_alg_exec_t *x)
{
    return dcopy_queue(state, x);
}

static tutti_status_t copy_progress(void *state, tutti_alg_exec_t *x)
{
    /* run never leaves anything to do. */
    dcopy_t *s = state;
    return x->core->error(TUTTI_ERR_INTERNAL, "testgroup: %s: progress "
                          "called after run returned TUTTI_OK", s->name);
}

/* Nothing is queued yet: the core must hold the caller's stream. */
static tutti_status_t late_run(void *state, tutti_alg_exec_t *x)
{
    (void)state;
    (void)x;
    return TUTTI_INPROGRESS;
}

static tutti_status_t late_progress(void *state, tutti_alg_exec_t *x)
{
    return dcopy_queue(state, x);
}

static void dcopy_fini(void *state)
{
    free(state);
}

static const tutti_alg_ops_t copy_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = copy_init,
    .run = copy_run, .progress = copy_progress, .fini_context = dcopy_fini};

static const tutti_alg_ops_t late_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = late_init,
    .run = late_run, .progress = late_progress, .fini_context = dcopy_fini};

#define BOTH (TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU) |                             \
              TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA))

static const tutti_alg_impl_t impls[] = {
    {"TestOrdered", "test: ordered allreduce, everyone to everyone",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), BOTH, &sum_ops, 0, NULL,
     TUTTI_IMPL_ORDERED, NULL},
    {"TestUnordered", "test: the same, launched by priority",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), BOTH, &sum_ops, 0, NULL, 0, NULL},
    {"TestDeclines", "test: the same, declining int8",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), BOTH, &declining_ops, 0, NULL, 0,
     NULL},
    {"TestDeviceCopy", "test: a group of one's allreduce, a copy queued on "
     "the stream in run", TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA), &copy_ops, 0, NULL,
     TUTTI_IMPL_DEVICE_MEMORY, NULL},
    {"TestDeviceLate", "test: the same copy, queued in progress",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA), &late_ops, 0, NULL,
     TUTTI_IMPL_DEVICE_MEMORY, NULL},
};

TUTTI_MODULE_DEFINE_WITH_GROUP("testgroup", "1.0.0", impls, &group_ops);
