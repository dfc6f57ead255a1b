/* A module as written before ABI 1.5, rebuilt against today's headers:
 * its rows set no params field, so they declare nothing, and a rule's
 * parameter reaches them unchecked as it always did.
 *   TestMarker    allreduce for a group of one (copies its input); it
 *                 reads the rule parameter 'marker' in init_params and
 *                 refuses the instance unless it is 42, so a call that
 *                 succeeds shows the value arrived.
 *   TestNoParams  the same copy, declaring that it reads no parameter
 *                 (an empty list): a rule that gives it one is refused
 *                 when the configuration loads. */
#include "mod_common.h"

static tutti_status_t marker_params(const tutti_alg_instance_t *inst,
                                    const tutti_core_ops_t *core,
                                    void *details, size_t *len_out)
{
    uint64_t marker = 0;
    tutti_status_t st = core->param_size(inst, "marker", 0, &marker);
    (void)details;
    if (st != TUTTI_OK)
        return st;
    if (marker != 42)
        return core->error(TUTTI_ERR_MODULE, "TestMarker: rule parameter "
                           "'marker' is %llu; expected 42",
                           (unsigned long long)marker);
    *len_out = 0;
    return TUTTI_OK;
}

static const tutti_alg_ops_t marker_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_params = marker_params,
    .init_context = copy_init, .run = copy_run, .progress = copy_progress,
    .fini_context = copy_fini};

static const char *const reads_none[] = {NULL};

static const tutti_alg_impl_t impls[] = {
    {.name = "TestMarker", .description = "test: needs the rule's marker 42",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &marker_ops},
    {.name = "TestNoParams", .description = "test: reads no parameter",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &copy_ops,
     .params = reads_none},
};

TUTTI_MODULE_DEFINE("testmarker", "1.0", impls);
