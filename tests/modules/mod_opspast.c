/* An implementation whose ops table pointer lies 64 MiB past a table of
 * the module, far beyond its end: refused naming the implementation and
 * its ops table, never read. */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {
    {.name = "TestOpsPast", .description = "test: ops past the module",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = (const tutti_alg_ops_t *)((const char *)&copy_ops + (64 << 20))},
};

TUTTI_MODULE_DEFINE("testopspast", "1.0", impls);
