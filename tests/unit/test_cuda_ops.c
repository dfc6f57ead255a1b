/*
 * Unit tests of libtutti_cuda, loaded as the core loads it (libltdl, by
 * its build-tree name, the table by TUTTI__CUDA_OPS_SYMBOL): the table's
 * size, version and entries, the runtime's version and error strings.
 * Where no device can be used (no GPU, no driver), the calls that need one
 * must return the runtime's error, not crash.  Where a device exists, every
 * entry runs: memory and copies both ways, events and stream waits, the
 * gate held until a host thread writes its word, and scale and divide for
 * every data type, bit-compared with the host's tutti__scale and
 * tutti__divide on random data with negative numbers, halves, subnormals,
 * infinities and NaNs.  And the core's own loader (device.c): the path
 * in TUTTI_CUDA_LIB wins, and its failure names that path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>
#include <ltdl.h>
#include <pthread.h>

#include <tutti/tutti.h>

#include "base/reduce.h"
#include "device/device.h"
#include "device/cuda_ops.h"
#include "test_util.h"

static lt_dlhandle lib;
static const tutti__cuda_ops_t *ops;
/* What device_count said: its error (0 if none) and the count. */
static int count_err;
static int ndevices;

static int group_setup(void **state)
{
    if (lt_dlinit() != 0) {
        fprintf(stderr, "lt_dlinit: %s\n", lt_dlerror());
        return -1;
    }
    lib = lt_dlopenext(TUTTI_TEST_CUDA_LIB);
    if (lib == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", TUTTI_TEST_CUDA_LIB,
                lt_dlerror());
        return -1;
    }
    ops = lt_dlsym(lib, TUTTI__CUDA_OPS_SYMBOL);
    if (ops == NULL) {
        fprintf(stderr, "%s: no symbol %s: %s\n", TUTTI_TEST_CUDA_LIB,
                TUTTI__CUDA_OPS_SYMBOL, lt_dlerror());
        return -1;
    }
    count_err = ops->device_count(&ndevices);
    if (count_err != 0)
        printf("no CUDA device (%s): the tests that need one are skipped\n",
               ops->error_string(count_err));
    else if (ndevices == 0)
        printf("no CUDA device (device count 0): the tests that need one "
               "are skipped\n");
    return 0;
}

/* The library stays loaded, as the core keeps it (device.c): the CUDA
 * runtime registers exit handlers that must find its code mapped. */
static int group_teardown(void **state)
{
    (void)state;
    return 0;
}

static int have_device(void)
{
    return count_err == 0 && ndevices > 0;
}

/* ---- without a device too ------------------------------------------------ */

static void test_table(void **state)
{
    /* Every entry, by name, so a new one cannot be left out silently:
     * the count of pointers must match what size leaves after the
     * header fields. */
    const void *entries[] = {
        (const void *)ops->versions,
        (const void *)ops->device_count,
        (const void *)ops->pci_bus_id,
        (const void *)ops->set_device,
        (const void *)ops->pointer_device,
        (const void *)ops->host_alloc,
        (const void *)ops->host_free,
        (const void *)ops->dev_alloc,
        (const void *)ops->dev_free,
        (const void *)ops->memcpy_async,
        (const void *)ops->stream_create,
        (const void *)ops->stream_destroy,
        (const void *)ops->stream_capturing,
        (const void *)ops->stream_wait_event,
        (const void *)ops->event_create,
        (const void *)ops->event_destroy,
        (const void *)ops->event_record,
        (const void *)ops->event_query,
        (const void *)ops->gate,
        (const void *)ops->scale,
        (const void *)ops->divide,
        (const void *)ops->error_string,
    };
    size_t n = sizeof(entries) / sizeof(entries[0]);

    assert_int_equal(ops->size, sizeof(tutti__cuda_ops_t));
    assert_int_equal(ops->version, TUTTI__CUDA_OPS_VERSION);
    assert_int_equal(
        offsetof(tutti__cuda_ops_t, error_string) + sizeof(ops->error_string),
        offsetof(tutti__cuda_ops_t, versions) + n * sizeof(void (*)(void)));
    for (size_t i = 0; i < n; i++)
        assert_non_null(entries[i]);
}

static void test_versions(void **state)
{
    int runtime = -1, driver = -1;

    assert_int_equal(ops->versions(&runtime, &driver), 0);
    assert_true(runtime >= 1000);
    assert_int_equal(runtime, CUDART_VERSION);
    assert_true(driver >= 0);
    printf("CUDA runtime %d, driver %d\n", runtime, driver);
}

static void test_error_string(void **state)
{
    const char *s = ops->error_string(cudaErrorMemoryAllocation);
    const char *t = ops->error_string(cudaErrorNoDevice);

    assert_string_equal(s, "cudaErrorMemoryAllocation: out of memory");
    assert_true(strncmp(t, "cudaErrorNoDevice: ", 19) == 0);
    assert_true(strlen(t) > 19);
    /* Static: the same string every time. */
    assert_ptr_equal(ops->error_string(cudaErrorMemoryAllocation), s);
    assert_non_null(strstr(ops->error_string(-5), "not a CUDA"));
}

/* Where no device can be used, the calls that need one return the
 * runtime's error and leave their outputs alone. */
static void test_no_device_errors(void **state)
{
    int expect = count_err != 0 ? count_err : cudaErrorNoDevice;
    void *const sentinel = (void *)(uintptr_t)0x5eed;
    void *p = sentinel, *q = sentinel;

    if (have_device())
        skip();
    assert_int_equal(ops->dev_alloc(4096, &p), expect);
    assert_ptr_equal(p, sentinel);
    assert_int_equal(ops->stream_create(&p), expect);
    assert_ptr_equal(p, sentinel);
    assert_int_equal(ops->event_create(&p), expect);
    assert_ptr_equal(p, sentinel);
    assert_int_equal(ops->host_alloc(4096, &p, &q), expect);
    assert_ptr_equal(p, sentinel);
    assert_ptr_equal(q, sentinel);
    assert_int_equal(ops->set_device(0),
                     count_err != 0 ? count_err : cudaErrorInvalidDevice);
    /* Kernels need a context: their launch fails too. */
    assert_int_not_equal(ops->divide(TUTTI_FLOAT32, &p, 1, 2, NULL), 0);
}

/* Argument errors come back before any device is needed. */
static void test_kernel_arguments(void **state)
{
    float x = 1.0f;

    for (int d = TUTTI_INT8; d <= TUTTI_UINT64; d++)
        assert_int_equal(ops->scale((tutti_dtype_t)d, &x, &x, 1, 2.0, NULL),
                         cudaErrorInvalidValue);
    assert_int_equal(ops->scale(TUTTI_DTYPE_COUNT, &x, &x, 1, 2.0, NULL),
                     cudaErrorInvalidValue);
    assert_int_equal(ops->divide(TUTTI_FLOAT32, &x, 1, 0, NULL),
                     cudaErrorInvalidValue);
    assert_int_equal(ops->divide(TUTTI_INT32, &x, 1, -2, NULL),
                     cudaErrorInvalidValue);
    /* 256 is 0 as a uint8: the host would trap dividing by it. */
    assert_int_equal(ops->divide(TUTTI_UINT8, &x, 1, 256, NULL),
                     cudaErrorInvalidValue);
    assert_int_equal(ops->divide(TUTTI_DTYPE_COUNT, &x, 1, 2, NULL),
                     cudaErrorInvalidValue);
    assert_true(x == 1.0f);
}

/* ---- with a device ------------------------------------------------------- */

/* Polls @p event until it completes; fails after 10 s. */
static void wait_event(void *event)
{
    for (int i = 0; i < 100000; i++) {
        int r = ops->event_query(event);
        if (r == 0)
            return;
        assert_int_equal(r, TUTTI__CUDA_PENDING);
        usleep(100);
    }
    fail_msg("event not complete after 10 s");
}

/* Waits for the work queued on @p stream so far. */
static void sync_stream(void *stream)
{
    void *event;

    assert_int_equal(ops->event_create(&event), 0);
    assert_int_equal(ops->event_record(event, stream), 0);
    wait_event(event);
    ops->event_destroy(event);
}

static int device_setup(void **state)
{
    if (have_device() && ops->set_device(0) != 0)
        return -1;
    return 0;
}

static void test_device_memory(void **state)
{
    enum { N = 1 << 20 };
    uint8_t *src = malloc(N), *back = malloc(N);
    void *dev, *host, *host_dev, *stream;
    char bus[TUTTI__PCI_BUS_ID_LEN];
    int where = 7, capturing = 7;
    uint64_t seed = 1;

    if (!have_device()) {
        free(src);
        free(back);
        skip();
    }
    assert_non_null(src);
    assert_non_null(back);
    for (size_t i = 0; i < N; i++)
        src[i] = (uint8_t)test_splitmix(&seed);

    assert_int_equal(ops->pci_bus_id(0, bus, sizeof(bus)), 0);
    printf("device 0: %s\n", bus);
    assert_int_equal(strlen(bus), 12);
    assert_true(bus[4] == ':' && bus[7] == ':' && bus[10] == '.');

    assert_int_equal(ops->pointer_device(src, &where), 0);
    assert_int_equal(where, -1);
    assert_int_equal(ops->dev_alloc(N, &dev), 0);
    assert_int_equal(ops->pointer_device(dev, &where), 0);
    assert_int_equal(where, 0);
    assert_int_equal(ops->host_alloc(N, &host, &host_dev), 0);
    assert_non_null(host_dev);
    where = 7;
    assert_int_equal(ops->pointer_device(host, &where), 0);
    assert_int_equal(where, -1);

    assert_int_equal(ops->stream_create(&stream), 0);
    assert_int_equal(ops->stream_capturing(stream, &capturing), 0);
    assert_int_equal(capturing, 0);
    /* Pageable to device, device to pinned; then pinned to device, device
     * to pageable.  No host-to-host copy: the runtime runs those at once,
     * outside the stream's order. */
    assert_int_equal(ops->memcpy_async(dev, src, N, stream), 0);
    assert_int_equal(ops->memcpy_async(host, dev, N, stream), 0);
    sync_stream(stream);
    assert_memory_equal(host, src, N);
    for (size_t i = 0; i < N; i++)
        ((uint8_t *)host)[i] ^= 0x5a;
    assert_int_equal(ops->memcpy_async(dev, host, N, stream), 0);
    assert_int_equal(ops->memcpy_async(back, dev, N, stream), 0);
    sync_stream(stream);
    assert_memory_equal(back, host, N);
    assert_int_equal(back[0], src[0] ^ 0x5a);

    ops->stream_destroy(stream);
    ops->host_free(host);
    ops->dev_free(dev);
    free(src);
    free(back);
}

/* A stream that waits for another's event runs after that event, and only
 * then: the streams do not otherwise wait for each other. */
static void test_device_stream_wait(void **state)
{
    void *s1, *s2, *held, *free_ev, *after, *flag, *flag_dev;

    if (!have_device())
        skip();
    assert_int_equal(ops->stream_create(&s1), 0);
    assert_int_equal(ops->stream_create(&s2), 0);
    assert_int_equal(ops->event_create(&held), 0);
    assert_int_equal(ops->event_create(&free_ev), 0);
    assert_int_equal(ops->event_create(&after), 0);
    assert_int_equal(ops->host_alloc(sizeof(uint32_t), &flag, &flag_dev), 0);
    *(volatile uint32_t *)flag = 0;
    /* s1 is held by a gate; s2 records one event before waiting for s1's,
     * one after. */
    assert_int_equal(ops->gate(s1, flag_dev, 1), 0);
    assert_int_equal(ops->event_record(held, s1), 0);
    assert_int_equal(ops->event_record(free_ev, s2), 0);
    assert_int_equal(ops->stream_wait_event(s2, held), 0);
    assert_int_equal(ops->event_record(after, s2), 0);
    wait_event(free_ev);
    usleep(50000);
    assert_int_equal(ops->event_query(held), TUTTI__CUDA_PENDING);
    assert_int_equal(ops->event_query(after), TUTTI__CUDA_PENDING);
    __atomic_store_n((volatile uint32_t *)flag, 1, __ATOMIC_RELEASE);
    wait_event(after);
    assert_int_equal(ops->event_query(held), 0);

    ops->host_free(flag);
    ops->event_destroy(after);
    ops->event_destroy(free_ev);
    ops->event_destroy(held);
    ops->stream_destroy(s2);
    ops->stream_destroy(s1);
}

typedef struct {
    volatile uint32_t *word;
    uint32_t value;
    atomic_int written;
} writer_t;

static void *writer_main(void *arg)
{
    writer_t *w = arg;

    usleep(100000);
    atomic_store(&w->written, 1);
    __atomic_store_n(w->word, w->value, __ATOMIC_RELEASE);
    return NULL;
}

/* The gate holds its stream until a host thread writes the word; the
 * compare wraps, as the core's counters do. */
static void test_device_gate(void **state)
{
    static const uint32_t starts[][2] = {
        {0, 1}, /* {word before, target} */
        {0xfffffff0u, 0x10u},
    };
    void *stream, *event, *flag, *flag_dev;
    pthread_t thread;

    if (!have_device())
        skip();
    assert_int_equal(ops->stream_create(&stream), 0);
    assert_int_equal(ops->event_create(&event), 0);
    assert_int_equal(ops->host_alloc(sizeof(uint32_t), &flag, &flag_dev), 0);
    for (size_t c = 0; c < sizeof(starts) / sizeof(starts[0]); c++) {
        writer_t w = {.word = flag, .value = starts[c][1]};

        *w.word = starts[c][0];
        assert_int_equal(ops->gate(stream, flag_dev, starts[c][1]), 0);
        assert_int_equal(ops->event_record(event, stream), 0);
        usleep(50000);
        assert_int_equal(ops->event_query(event), TUTTI__CUDA_PENDING);
        assert_int_equal(pthread_create(&thread, NULL, writer_main, &w), 0);
        wait_event(event);
        assert_int_equal(atomic_load(&w.written), 1);
        pthread_join(thread, NULL);
    }
    /* A target already reached (or passed) does not hold the stream. */
    *(volatile uint32_t *)flag = 5;
    assert_int_equal(ops->gate(stream, flag_dev, 3), 0);
    assert_int_equal(ops->gate(stream, flag_dev, 5), 0);
    sync_stream(stream);

    ops->host_free(flag);
    ops->event_destroy(event);
    ops->stream_destroy(stream);
}

/* ---- scale and divide against the host ----------------------------------- */

#define COUNT 65536 /* every 16-bit pattern once */

/* Values for a float type: every pattern for 16 bits, else a mix of
 * random bit patterns (NaNs, infinities, subnormals among them), small
 * integers and halves of both signs, and the special values. */
static void fill(tutti_dtype_t dtype, void *buf, uint64_t *seed)
{
    size_t size = tutti_dtype_size(dtype);

    for (size_t i = 0; i < COUNT; i++) {
        uint64_t r = test_splitmix(seed);
        double nice = (double)((int64_t)(r % 4001) - 2000) / 2.0;
        if (dtype == TUTTI_FLOAT16 || dtype == TUTTI_BFLOAT16) {
            ((uint16_t *)buf)[i] = (uint16_t)i;
        } else if (dtype == TUTTI_FLOAT32) {
            float v = nice;
            uint32_t u = (uint32_t)(r >> 32);
            memcpy((char *)buf + i * size, i % 2 ? &u : (void *)&v, size);
        } else if (dtype == TUTTI_FLOAT64) {
            double v = nice;
            memcpy((char *)buf + i * size, i % 2 ? (void *)&r : (void *)&v,
                   size);
        } else {
            memcpy((char *)buf + i * size, &r, size);
        }
    }
    if (dtype == TUTTI_FLOAT32) {
        static const uint32_t special[] = {
            0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
            0xffc00000u, 0x7f800001u, 0xffa5a5a5u, 0x00000001u, 0x807fffffu,
            0x7f7fffffu, 0x3f000000u, 0xbfc00000u};
        memcpy(buf, special, sizeof(special));
    } else if (dtype == TUTTI_FLOAT64) {
        static const uint64_t special[] = {0x0ull,
                                           0x8000000000000000ull,
                                           0x7ff0000000000000ull,
                                           0xfff0000000000000ull,
                                           0x7ff8000000000000ull,
                                           0xfff8000000000000ull,
                                           0x7ff0000000000001ull,
                                           0xfff5a5a5a5a5a5a5ull,
                                           0x1ull,
                                           0x800fffffffffffffull,
                                           0x7fefffffffffffffull,
                                           0x3fe0000000000000ull,
                                           0xbff8000000000000ull};
        memcpy(buf, special, sizeof(special));
    }
}

/* Runs scale (@p divisor 0) or divide on the device and on the host, and
 * compares the bits. */
static void check_one(tutti_dtype_t dtype, double factor, int divisor,
                      void *dev, void *stream, uint64_t *seed)
{
    size_t bytes = COUNT * tutti_dtype_size(dtype);
    uint8_t *in = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);

    assert_non_null(in);
    assert_non_null(want);
    assert_non_null(got);
    fill(dtype, in, seed);
    memcpy(want, in, bytes);
    memset(got, 0xab, bytes);
    assert_int_equal(ops->memcpy_async(dev, in, bytes, stream), 0);
    if (divisor == 0) {
        assert_int_equal(tutti__scale(dtype, want, in, COUNT, factor), 0);
        assert_int_equal(ops->scale(dtype, dev, dev, COUNT, factor, stream), 0);
    } else {
        assert_int_equal(tutti__divide(dtype, want, COUNT, divisor), 0);
        assert_int_equal(ops->divide(dtype, dev, COUNT, divisor, stream), 0);
    }
    assert_int_equal(ops->memcpy_async(got, dev, bytes, stream), 0);
    sync_stream(stream);
    if (memcmp(got, want, bytes) != 0) {
        size_t size = tutti_dtype_size(dtype);
        for (size_t i = 0; i < COUNT; i++) {
            uint64_t a = 0, b = 0, x = 0;
            if (memcmp(got + i * size, want + i * size, size) == 0)
                continue;
            memcpy(&a, got + i * size, size);
            memcpy(&b, want + i * size, size);
            memcpy(&x, in + i * size, size);
            fail_msg("%s %s %g: element %zu = 0x%llx: device 0x%llx, host "
                     "0x%llx",
                     tutti_dtype_name(dtype), divisor ? "divide" : "scale",
                     divisor ? (double)divisor : factor, i,
                     (unsigned long long)x, (unsigned long long)a,
                     (unsigned long long)b);
        }
    }
    free(in);
    free(want);
    free(got);
}

static void test_device_scale_divide(void **state)
{
    static const double factors[] = {0.5, -3.0, 1.0 / 3.0, 1e-3, 7.0e30, -0.0};
    static const int divisors[] = {1, 2, 3, 7, 100};
    void *dev, *stream;
    uint64_t seed = 42;

    if (!have_device())
        skip();
    assert_int_equal(ops->dev_alloc(COUNT * 8, &dev), 0);
    assert_int_equal(ops->stream_create(&stream), 0);
    for (int d = 0; d < TUTTI_DTYPE_COUNT; d++) {
        tutti_dtype_t dtype = (tutti_dtype_t)d;
        if (tutti_dtype_is_float(dtype))
            for (size_t f = 0; f < sizeof(factors) / sizeof(factors[0]); f++)
                check_one(dtype, factors[f], 0, dev, stream, &seed);
        for (size_t q = 0; q < sizeof(divisors) / sizeof(divisors[0]); q++)
            check_one(dtype, 0.0, divisors[q], dev, stream, &seed);
    }
    ops->stream_destroy(stream);
    ops->dev_free(dev);
}

/* ---- the core's loader --------------------------------------------------- */

/* The table the core loads (with TUTTI_CUDA_LIB set to @p env, or unset
 * for NULL), tried afresh; its status into @p st_out. */
static const tutti__cuda_ops_t *core_load(const char *env,
                                          tutti_status_t *st_out)
{
    const tutti__cuda_ops_t *got = NULL;
    if (env != NULL)
        assert_int_equal(setenv("TUTTI_CUDA_LIB", env, 1), 0);
    else
        assert_int_equal(unsetenv("TUTTI_CUDA_LIB"), 0);
    tutti__cuda_use(NULL);
    *st_out = tutti__cuda_get(&got);
    return *st_out == TUTTI_OK ? got : NULL;
}

static void test_core_loader(void **state)
{
    const char *missing = "/nowhere/tutti-test/libtutti_cuda.so";
    const char *built = TUTTI_TEST_CUDA_LIB_SO;
    tutti_status_t st;
    (void)state;

    /* A path that does not load: an error naming it, nothing else. */
    assert_null(core_load(missing, &st));
    assert_int_equal(st, TUTTI_ERR_UNSUPPORTED);
    print_message("TUTTI_CUDA_LIB=%s: %s\n", missing, tutti_last_error());
    assert_non_null(strstr(tutti_last_error(), missing));
    assert_non_null(strstr(tutti_last_error(), "TUTTI_CUDA_LIB"));
    assert_null(strstr(tutti_last_error(), "core/device"));
    /* The build's library by that path: the table this test loaded. */
    assert_ptr_equal(core_load(built, &st), ops);
    assert_int_equal(st, TUTTI_OK);
    /* Unset: found beside the core or by the path compiled in. */
    assert_ptr_equal(core_load(NULL, &st), ops);
    assert_int_equal(st, TUTTI_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_error_string),
        cmocka_unit_test(test_no_device_errors),
        cmocka_unit_test(test_kernel_arguments),
        cmocka_unit_test(test_core_loader),
        cmocka_unit_test_setup(test_device_memory, device_setup),
        cmocka_unit_test_setup(test_device_stream_wait, device_setup),
        cmocka_unit_test_setup(test_device_gate, device_setup),
        cmocka_unit_test_setup(test_device_scale_divide, device_setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
