/*
 * The NCCL module as the registry loads it (the build tree's
 * algorithms/nccl/alg_nccl.so, the core linked in statically): its
 * descriptor, its eight implementations and their flags, the unique id
 * task 0 makes, and supports() on this machine.  Where a CUDA device is
 * present, a group of one runs NcclAllreduce through the module's entries;
 * elsewhere that part is skipped with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include <tutti/module.h>
#include <tutti/tutti.h>

#include "plugin/registry.h"
#include "plugin/services.h"

#define NCCL_DIR TUTTI_TEST_BUILDDIR "/algorithms/nccl"
#define STR2_(x) #x
#define STR_(x) STR2_(x)
#define CUDA_BIT TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA)
#define FLAGS (TUTTI_IMPL_DEVICE_MEMORY | TUTTI_IMPL_ORDERED)

typedef struct {
    tutti__registry_t reg;
    const tutti__module_t *mod;
} fixture_t;

static int setup(void **state)
{
    static fixture_t f;
    tutti__strlist_t dirs = {NULL, 0}, all = {NULL, 0};
    memset(&f, 0, sizeof(f));
    if (tutti__strlist_push(&dirs, NCCL_DIR) != TUTTI_OK ||
        tutti__registry_load(&f.reg, &dirs, &all) != TUTTI_OK)
        return -1;
    tutti__strlist_free(&dirs);
    for (size_t i = 0; i < f.reg.num_modules; i++) {
        const char *base = strrchr(f.reg.modules[i].path, '/');
        if (base != NULL && strcmp(base + 1, "alg_nccl") == 0)
            f.mod = &f.reg.modules[i];
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    tutti__registry_free(&f->reg);
    return 0;
}

/* Whether this process sees a CUDA device; the CUDA error otherwise. */
static cudaError_t devices(int *n_out)
{
    *n_out = 0;
    return cudaGetDeviceCount(n_out);
}

static const tutti__module_t *loaded(void **state)
{
    fixture_t *f = *state;
    if (f->mod == NULL)
        fail_msg("alg_nccl not found in %s", NCCL_DIR);
    if (f->mod->reason != NULL)
        fail_msg("alg_nccl refused: %s", f->mod->reason);
    return f->mod;
}

static void test_module_loads(void **state)
{
    const tutti__module_t *m = loaded(state);
    assert_string_equal(m->name, "nccl");
    assert_string_equal(m->version, "0.1.0 (NCCL " STR_(NCCL_MAJOR) "." STR_(
                                        NCCL_MINOR) "." STR_(NCCL_PATCH) ")");
    assert_int_equal(m->abi_major, 1);
    assert_int_equal(m->abi_minor, TUTTI_MODULE_ABI_MINOR);
    assert_int_equal(m->kind, TUTTI_MODULE_KIND_ALG);
    assert_int_equal(m->desc->num_impls, 8);
    assert_non_null(m->group_ops);
    assert_int_equal(m->group_ops->size, sizeof(tutti_alg_group_ops_t));
    assert_non_null(m->group_ops->init_group_params);
    assert_non_null(m->group_ops->init_group);
    assert_non_null(m->group_ops->abort_group);
    assert_non_null(m->group_ops->fini_group);
}

static const struct {
    const char *name;
    tutti_collective_t coll;
    uint32_t per_rank;
} impls[] = {
    {"NcclAllreduce", TUTTI_COLL_ALLREDUCE, 0},
    {"NcclBroadcast", TUTTI_COLL_BROADCAST, 0},
    {"NcclReduce", TUTTI_COLL_REDUCE, 0},
    {"NcclAllgather", TUTTI_COLL_ALLGATHER, 0},
    {"NcclReduceScatter", TUTTI_COLL_REDUCE_SCATTER,
     TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER)},
    {"NcclAlltoall", TUTTI_COLL_ALLTOALL, 0},
    {"NcclGather", TUTTI_COLL_GATHER, 0},
    {"NcclPermute", TUTTI_COLL_PERMUTE, 0},
};
#define NUM_IMPLS (sizeof(impls) / sizeof(impls[0]))

static const tutti_alg_impl_t *impl_named(void **state, const char *name)
{
    fixture_t *f = *state;
    const tutti__impl_entry_t *e = tutti__registry_find(&f->reg, name);
    if (e == NULL)
        fail_msg("no implementation %s registered", name);
    return e->impl;
}

static void test_implementations(void **state)
{
    (void)loaded(state);
    for (size_t i = 0; i < NUM_IMPLS; i++) {
        const tutti_alg_impl_t *im = impl_named(state, impls[i].name);
        assert_int_equal(im->collectives, TUTTI_COLL_BIT(impls[i].coll));
        assert_int_equal(im->device_types, CUDA_BIT);
        assert_int_equal(im->flags, FLAGS);
        assert_int_equal(im->per_rank_collectives, impls[i].per_rank);
        assert_non_null(im->ops->init_context);
        assert_non_null(im->ops->run);
        assert_non_null(im->ops->progress);
        assert_non_null(im->ops->fini_context);
        assert_non_null(im->ops->supports);
    }
}

static tutti_alg_group_t group_of(int n, tutti_device_type_t type)
{
    tutti_alg_group_t g;
    memset(&g, 0, sizeof(g));
    g.size = sizeof(g);
    g.group_key = 0x77;
    g.group_size = n;
    g.num_tasks = n;
    g.device_type = type;
    return g;
}

static void test_unique_id(void **state)
{
    const tutti__module_t *m = loaded(state);
    tutti_alg_group_t g = group_of(2, TUTTI_DEVICE_CUDA);
    unsigned char a[TUTTI_GROUP_DETAILS_MAX], b[TUTTI_GROUP_DETAILS_MAX];
    size_t la = 0, lb = 0;
    static const unsigned char zero[sizeof(ncclUniqueId)];

    /* NCCL makes the id from the host's network interfaces: no GPU. */
    tutti_status_t st = m->group_ops->init_group_params(&g, &tutti__core_ops,
                                                        a, &la);
    if (st != TUTTI_OK) {
        assert_int_equal(st, TUTTI_ERR_MODULE);
        assert_non_null(strstr(tutti_last_error(), "ncclGetUniqueId: "));
        print_message("ncclGetUniqueId fails here: %s\n", tutti_last_error());
        return;
    }
    assert_int_equal(la, sizeof(ncclUniqueId));
    assert_memory_not_equal(a, zero, sizeof(zero));
    assert_int_equal(m->group_ops->init_group_params(&g, &tutti__core_ops, b,
                                                     &lb),
                     TUTTI_OK);
    assert_int_equal(lb, la);
    assert_memory_not_equal(a, b, la); /* one id per group */
}

static void test_init_group_refusals(void **state)
{
    const tutti__module_t *m = loaded(state);
    tutti_alg_group_t g = group_of(2, TUTTI_DEVICE_CUDA);
    unsigned char id[sizeof(ncclUniqueId)] = {1};
    void *gs = (void *)&gs;

    assert_int_equal(m->group_ops->init_group(&g, &tutti__core_ops, id, 3,
                                              &gs),
                     TUTTI_ERR_MODULE);
    assert_string_equal(tutti_last_error(), "nccl: group 0x77: 3 bytes of "
                                            "unique id, expected 128");
    g = group_of(2, TUTTI_DEVICE_CPU);
    assert_int_equal(m->group_ops->init_group(&g, &tutti__core_ops, id,
                                              sizeof(id), &gs),
                     TUTTI_ERR_UNSUPPORTED);
    assert_non_null(strstr(tutti_last_error(), "NCCL runs on cuda devices "
                                               "only"));
    assert_ptr_equal(gs, (void *)&gs); /* nothing written */
}

static tutti_alg_instance_t instance_of(tutti_collective_t coll,
                                        tutti_device_type_t type)
{
    tutti_alg_instance_t in;
    memset(&in, 0, sizeof(in));
    in.size = sizeof(in);
    in.collective = coll;
    in.dtype = TUTTI_FLOAT32;
    in.op = TUTTI_OP_SUM;
    in.count = 1024;
    in.group_size = 1;
    in.num_tasks = 1;
    in.device_type = type;
    in.instance_key = 0x99;
    return in;
}

static void test_supports_here(void **state)
{
    char why[256];
    int n;
    cudaError_t e = devices(&n);
    char expect[256];

    (void)loaded(state);
    if (e != cudaSuccess)
        snprintf(expect, sizeof(expect), "no usable CUDA device: "
                 "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
    else
        snprintf(expect, sizeof(expect), "no CUDA device: "
                 "cudaGetDeviceCount found none");
    for (size_t i = 0; i < NUM_IMPLS; i++) {
        const tutti_alg_impl_t *im = impl_named(state, impls[i].name);
        tutti_alg_instance_t in = instance_of(impls[i].coll,
                                              TUTTI_DEVICE_CUDA);
        int ok = im->ops->supports(&in, why, sizeof(why));
        if (e == cudaSuccess && n > 0) {
            assert_int_equal(ok, 1);
        } else {
            assert_int_equal(ok, 0);
            assert_string_equal(why, expect);
        }
        in = instance_of(impls[i].coll, TUTTI_DEVICE_CPU);
        assert_int_equal(im->ops->supports(&in, why, sizeof(why)), 0);
        assert_string_equal(why, "device type cpu: NCCL runs on cuda "
                                 "devices only");
    }
    if (e == cudaSuccess && n > 0)
        print_message("%d CUDA devices: supports() accepts\n", n);
}

static void test_init_group_without_device(void **state)
{
    const tutti__module_t *m = loaded(state);
    tutti_alg_group_t g = group_of(1, TUTTI_DEVICE_CUDA);
    unsigned char id[TUTTI_GROUP_DETAILS_MAX];
    size_t len = 0;
    void *gs = NULL;
    int n;
    cudaError_t e = devices(&n);

    if (e == cudaSuccess && n > 0) {
        print_message("skipped: a CUDA device is present\n");
        skip();
    }
    if (m->group_ops->init_group_params(&g, &tutti__core_ops, id, &len) !=
        TUTTI_OK) {
        print_message("skipped: no unique id here: %s\n", tutti_last_error());
        skip();
    }
    /* The member's device cannot be made current: the error says CUDA's
     * reason. */
    assert_int_equal(m->group_ops->init_group(&g, &tutti__core_ops, id, len,
                                              &gs),
                     TUTTI_ERR_MODULE);
    assert_null(gs);
    if (e != cudaSuccess)
        assert_non_null(strstr(tutti_last_error(), cudaGetErrorString(e)));
    assert_non_null(strstr(tutti_last_error(), "nccl: cuda"));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs one execution through run and progress, for at most 60 s. */
static tutti_status_t run_to_end(const tutti_alg_ops_t *ops, void *s,
                                 tutti_alg_exec_t *x)
{
    double deadline = now_s() + 60;
    tutti_status_t st = ops->run(s, x);
    while (st == TUTTI_INPROGRESS && now_s() < deadline)
        st = ops->progress(s, x);
    return st;
}

/* A group of one on device 0: NcclAllreduce out of place, then in place.
 * One rank's sum is its input, so the result is checked exactly. */
static void test_gpu_allreduce_group_of_one(void **state)
{
    const tutti__module_t *m = loaded(state);
    const tutti_alg_impl_t *im = impl_named(state, "NcclAllreduce");
    tutti_alg_group_t g = group_of(1, TUTTI_DEVICE_CUDA);
    unsigned char id[TUTTI_GROUP_DETAILS_MAX];
    enum { N = 1024 };
    float host[N], back[N];
    float *dsend = NULL, *drecv = NULL;
    cudaStream_t stream;
    void *gs = NULL, *s = NULL;
    size_t len = 0;
    int n;

    if (devices(&n) != cudaSuccess || n == 0) {
        print_message("skipped: no CUDA device here (the NCCL collectives "
                      "run on a GPU machine)\n");
        skip();
    }
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 97) - 48.0f;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaStreamCreate(&stream), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&dsend, sizeof(host)), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&drecv, sizeof(host)), cudaSuccess);
    assert_int_equal(cudaMemcpy(dsend, host, sizeof(host),
                                cudaMemcpyHostToDevice),
                     cudaSuccess);
    assert_int_equal(m->group_ops->init_group_params(&g, &tutti__core_ops,
                                                     id, &len),
                     TUTTI_OK);
    assert_int_equal(m->group_ops->init_group(&g, &tutti__core_ops, id, len,
                                              &gs),
                     TUTTI_OK);
    tutti_alg_instance_t in = instance_of(TUTTI_COLL_ALLREDUCE,
                                          TUTTI_DEVICE_CUDA);
    in.count = N;
    in.group_state = gs;
    assert_int_equal(im->ops->init_context(&in, &tutti__core_ops, NULL, 0,
                                           &s),
                     TUTTI_OK);
    tutti_alg_exec_t x;
    memset(&x, 0, sizeof(x));
    x.size = sizeof(x);
    x.core = &tutti__core_ops;
    x.inst = &in;
    x.sendbuf = dsend;
    x.recvbuf = drecv;
    x.stream = stream;
    tutti_status_t st = run_to_end(im->ops, s, &x);
    if (st != TUTTI_OK)
        fail_msg("allreduce: %s: %s", tutti_strerror(st), tutti_last_error());
    assert_int_equal(cudaMemcpy(back, drecv, sizeof(back),
                                cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_memory_equal(back, host, sizeof(host));
    x.sendbuf = x.recvbuf = dsend; /* in place */
    x.step = 1;
    st = run_to_end(im->ops, s, &x);
    if (st != TUTTI_OK)
        fail_msg("in place: %s: %s", tutti_strerror(st), tutti_last_error());
    assert_int_equal(cudaMemcpy(back, dsend, sizeof(back),
                                cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_memory_equal(back, host, sizeof(host));
    im->ops->fini_context(s);
    m->group_ops->fini_group(gs);
    cudaFree(dsend);
    cudaFree(drecv);
    cudaStreamDestroy(stream);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_loads),
        cmocka_unit_test(test_implementations),
        cmocka_unit_test(test_unique_id),
        cmocka_unit_test(test_init_group_refusals),
        cmocka_unit_test(test_supports_here),
        cmocka_unit_test(test_init_group_without_device),
        cmocka_unit_test(test_gpu_allreduce_group_of_one),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
