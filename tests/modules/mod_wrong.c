/* A module that loads and runs but gives wrong results on purpose:
 *   TestZeroAllreduce  allreduce that sends nothing and writes zeros.
 * With every allreduce of a job routed to it, an allreduce can no longer
 * be trusted to total anything: tutti-perf's #wrong must still count its
 * errors (it totals them over the control plane). */
#include "mod_common.h"

static tutti_status_t zero_run(void *state, tutti_alg_exec_t *x)
{
    const tutti_alg_instance_t *inst = state;
    memset(x->recvbuf, 0, inst->count * tutti_dtype_size(inst->dtype));
    return TUTTI_OK;
}

static const tutti_alg_ops_t zero_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = copy_init,
    .run = zero_run, .progress = copy_progress, .fini_context = copy_fini};

static const tutti_alg_impl_t impls[] = {
    {"TestZeroAllreduce", "test: writes zeros, sends nothing (wrong)",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &zero_ops, 0, NULL, 0, NULL},
};

TUTTI_MODULE_DEFINE("testwrong", "1.0.0", impls);
