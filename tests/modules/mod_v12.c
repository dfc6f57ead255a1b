/* An algorithm module built against module ABI 1.2: its implementation
 * rows end before the flags that 1.3 added, its descriptor before
 * group_ops and its ops table before supports.  It still loads, every row
 * read where the module put it, and runs on host memory (no flags). */
#include "mod_common.h"

/* A row as module.h 1.2 laid it out. */
typedef struct {
    const char *name, *description;
    uint32_t collectives, device_types;
    const tutti_alg_ops_t *ops;
    uint32_t per_rank_collectives;
    const char *const *aliases;
} row_v12_t;

static const char *const second_was[] = {"TestV12Former", NULL};

static const row_v12_t rows[] = {
    {"TestV12First", "test: the first row of a 1.2 table",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &copy_ops_v12, 0, NULL},
    {"TestV12Second", "test: the second row, found at 1.2's stride",
     TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &copy_ops_v12, 0, second_was},
};

TUTTI_MODULE_EXPORT_ const desc_v12_t TUTTI_MODULE_SYMBOL = {
    1, 2, (uint32_t)sizeof(desc_v12_t), TUTTI_MODULE_KIND_ALG, "testv12",
    "1.2.0", 2, rows};
