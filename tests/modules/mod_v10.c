/* An algorithm module built against module ABI 1.0: its implementation
 * rows end before per_rank_collectives, which 1.1 added, so they are
 * shorter than this core's.  It still loads, every row read where the
 * module put it, and runs no collective with per-rank counts. */
#include "mod_common.h"

/* A row as module.h 1.0 laid it out. */
typedef struct {
    const char *name, *description;
    uint32_t collectives, device_types;
    const tutti_alg_ops_t *ops;
} row_v10_t;

/* After the rows, what a core reading past the second one would take for
 * its per_rank_collectives: bits it could accept. */
static const struct {
    row_v10_t rows[2];
    uint32_t past_the_end;
} table = {
    {{"TestV10First", "test: the first row of a 1.0 table",
      TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
      &copy_ops_v12},
     {"TestV10Second", "test: the second row, found at 1.0's stride",
      TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
      &copy_ops_v12}},
    TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER),
};

TUTTI_MODULE_EXPORT_ const desc_v12_t TUTTI_MODULE_SYMBOL = {
    1, 0, (uint32_t)sizeof(desc_v12_t), TUTTI_MODULE_KIND_ALG, "testv10", "1.0.0",
    2, table.rows};
