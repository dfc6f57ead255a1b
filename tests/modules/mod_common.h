/*
 * A minimal allreduce implementation for the loader tests: each member
 * copies its input (correct for a group of one).  Included by each fake
 * module so every one is a complete, loadable .so.
 */
#ifndef TUTTI_TEST_MOD_COMMON_H
#define TUTTI_TEST_MOD_COMMON_H

#include <stddef.h>
#include <string.h>

#include <tutti/module.h>

static tutti_status_t copy_init(const tutti_alg_instance_t *inst,
                                const tutti_core_ops_t *core,
                                const void *details, size_t details_len,
                                void **state_out)
{
    (void)core;
    (void)details;
    (void)details_len;
    *state_out = (void *)inst;
    return TUTTI_OK;
}

static tutti_status_t copy_run(void *state, tutti_alg_exec_t *x)
{
    const tutti_alg_instance_t *inst = state;
    if (inst->group_size != 1)
        return x->core->error(TUTTI_ERR_UNSUPPORTED,
                              "test module runs groups of one only");
    if (x->sendbuf != x->recvbuf)
        memcpy(x->recvbuf, x->sendbuf,
               inst->count * tutti_dtype_size(inst->dtype));
    return TUTTI_OK;
}

static tutti_status_t copy_progress(void *state, tutti_alg_exec_t *x)
{
    (void)state;
    (void)x;
    return TUTTI_OK;
}

static void copy_fini(void *state)
{
    (void)state;
}

static const tutti_alg_ops_t copy_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = copy_init,
    .run = copy_run, .progress = copy_progress, .fini_context = copy_fini};

/* The same table as a module of ABI 1.2 or older built it: it ends before
 * supports (1.3). */
static const tutti_alg_ops_t copy_ops_v12 = {
    .size = offsetof(tutti_alg_ops_t, supports), .init_context = copy_init,
    .run = copy_run, .progress = copy_progress, .fini_context = copy_fini};

/* A descriptor as module.h 1.2 and older laid it out: it ends before
 * group_ops (1.3). */
typedef struct {
    uint32_t abi_major, abi_minor, size, kind;
    const char *name, *version;
    uint32_t num_impls;
    const void *impls;
} desc_v12_t;

#define TEST_IMPL(name) TEST_IMPL_ALIASES(name, NULL)

/* The same, answering to the former names @p aliases too (ABI 1.2). */
#define TEST_IMPL_ALIASES(name, aliases)                                       \
    {(name), "test: copies its input", TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),   \
     TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), &copy_ops, 0, (aliases), 0, NULL}

#endif
