/* An ops table that says it is 1 MiB: its size field runs past its
 * segment (and its variable), refused before any entry is read. */
#include "mod_common.h"

static const tutti_alg_ops_t big_ops = {
    .size = 1u << 20, .init_context = copy_init, .run = copy_run,
    .progress = copy_progress, .fini_context = copy_fini};

static const tutti_alg_impl_t impls[] = {
    {.name = "TestOpsSize", .description = "test: an ops table too large",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &big_ops},
};

TUTTI_MODULE_DEFINE("testopssize", "1.0", impls);
