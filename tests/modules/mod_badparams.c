/* An implementation that lists a rule parameter twice (ABI 1.5): refused,
 * the parameter named. */
#include "mod_common.h"

static const char *const twice[] = {"chunk", "fanout", "chunk", NULL};

static const tutti_alg_impl_t impls[] = {
    {.name = "TestParamsTwice", .description = "test: chunk listed twice",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &copy_ops,
     .params = twice},
};

TUTTI_MODULE_DEFINE("testbadparams", "1.0.0", impls);
