/* An algorithm module built against module ABI 1.1: its implementation
 * rows end before the aliases that 1.2 added, so they are shorter than
 * this core's.  It still loads, every row read where the module put it. */
#include "mod_common.h"

/* 1.1's headers declared tutti_dtype_size() out of line, so a module of
 * then imports it from libtutti.  A pointer to it in the module's data is
 * bound when the module loads: the loader refuses this module if the core
 * stops exporting the function. */
size_t testv11_imported_dtype_size(tutti_dtype_t dtype)
    __asm__("tutti_dtype_size");
TUTTI_MODULE_EXPORT_ size_t (*const testv11_dtype_size)(tutti_dtype_t) =
    testv11_imported_dtype_size;

/* A row as module.h 1.1 laid it out. */
typedef struct {
    const char *name, *description;
    uint32_t collectives, device_types;
    const tutti_alg_ops_t *ops;
    uint32_t per_rank_collectives;
} row_v11_t;

static const row_v11_t rows[] = {
    {"TestOldFirst", "test: the first row of a 1.1 table",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &copy_ops_v12, 0},
    {"TestOldSecond", "test: the second row, found at 1.1's stride",
     TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &copy_ops_v12, 0},
};

TUTTI_MODULE_EXPORT_ const desc_v12_t TUTTI_MODULE_SYMBOL = {
    1, 1, (uint32_t)sizeof(desc_v12_t), TUTTI_MODULE_KIND_ALG, "testv11", "1.1.0",
    2, rows};
