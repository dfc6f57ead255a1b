/* A well-formed module: loads and runs.
 *   TestCopy  allreduce for a group of one (copies its input)
 *   TestPlan  shows how init_params' details reach the members: every
 *             member writes {init_params calls so far in the deciding
 *             process, count, group size} as float32 into its output.
 *   TestGate  one int32 for a group of one, which the caller ends: its
 *             input is a gate (0: closed), its output counts the calls
 *             to progress; an execution ends at the first progress call
 *             that finds its gate open. */
#include <stdlib.h>

#include "mod_common.h"

typedef struct {
    uint32_t magic;
    uint32_t calls;
    uint64_t count;
    int32_t group_size;
} plan_t;

#define PLAN_MAGIC 0x504c414eu

static uint32_t plan_calls;

static tutti_status_t plan_params(const tutti_alg_instance_t *inst,
                                  const tutti_core_ops_t *core, void *details,
                                  size_t *len_out)
{
    plan_t p = {PLAN_MAGIC, ++plan_calls, inst->count, inst->group_size};
    (void)core;
    memcpy(details, &p, sizeof(p));
    *len_out = sizeof(p);
    return TUTTI_OK;
}

static tutti_status_t plan_init(const tutti_alg_instance_t *inst,
                                const tutti_core_ops_t *core,
                                const void *details, size_t details_len,
                                void **state_out)
{
    plan_t *s;
    if (details_len != sizeof(plan_t) || inst->dtype != TUTTI_FLOAT32 ||
        inst->count < 3)
        return core->error(TUTTI_ERR_MODULE, "TestPlan: %zu bytes of "
                           "details (expected %zu), needs 3+ float32",
                           details_len, sizeof(plan_t));
    if ((s = malloc(sizeof(*s))) == NULL)
        return TUTTI_ERR_NO_MEMORY;
    memcpy(s, details, sizeof(*s));
    if (s->magic != PLAN_MAGIC) {
        free(s);
        return core->error(TUTTI_ERR_MODULE, "TestPlan: details garbled");
    }
    *state_out = s;
    return TUTTI_OK;
}

static tutti_status_t plan_run(void *state, tutti_alg_exec_t *x)
{
    const plan_t *p = state;
    float *out = x->recvbuf;
    out[0] = (float)p->calls;
    out[1] = (float)p->count;
    out[2] = (float)p->group_size;
    return TUTTI_OK;
}

static const tutti_alg_ops_t plan_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_params = plan_params,
    .init_context = plan_init, .run = plan_run, .progress = copy_progress,
    .fini_context = free};

static tutti_status_t gate_init(const tutti_alg_instance_t *inst,
                                const tutti_core_ops_t *core,
                                const void *details, size_t details_len,
                                void **state_out)
{
    (void)details;
    (void)details_len;
    if (inst->group_size != 1 || inst->dtype != TUTTI_INT32 ||
        inst->count != 1)
        return core->error(TUTTI_ERR_UNSUPPORTED, "TestGate: one int32 "
                           "in a group of one");
    *state_out = NULL;
    return TUTTI_OK;
}

static tutti_status_t gate_progress(void *state, tutti_alg_exec_t *x)
{
    (void)state;
    ((int32_t *)x->recvbuf)[0]++;
    return __atomic_load_n((const int32_t *)x->sendbuf, __ATOMIC_ACQUIRE)
               ? TUTTI_OK
               : TUTTI_INPROGRESS;
}

static tutti_status_t gate_run(void *state, tutti_alg_exec_t *x)
{
    (void)state;
    ((int32_t *)x->recvbuf)[0] = 0;
    return TUTTI_INPROGRESS;
}

static void gate_fini(void *state)
{
    (void)state;
}

static const tutti_alg_ops_t gate_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = gate_init,
    .run = gate_run, .progress = gate_progress, .fini_context = gate_fini};

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL("TestCopy"),
    {"TestPlan", "test: reports the details init_params made",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &plan_ops, 0, NULL, 0, NULL},
    {"TestGate", "test: ends when its caller opens its gate",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &gate_ops, 0, NULL, 0, NULL},
};

TUTTI_MODULE_DEFINE("testgood", "1.2.3", impls);
