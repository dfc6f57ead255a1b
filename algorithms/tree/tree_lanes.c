/*
 * The chunk pipeline of HierarchicalTreeBroadcast and TreeReduce (see
 * tree_lanes.h): cutting the buffer into chunks and lanes.
 */
#include <tutti/module.h>

#include "tree_lanes.h"

void tutti_alg_tree_lanes_init(tutti_alg_tree_lanes_t *p,
                               const tutti_alg_instance_t *inst,
                               const tutti_alg_tree_plan_t *plan)
{
    size_t esize = tutti_dtype_size(inst->dtype);

    p->bytes = inst->count * esize;
    p->chunk_bytes = (size_t)plan->chunk / esize * esize;
    p->nchunks = (p->bytes + p->chunk_bytes - 1) / p->chunk_bytes;
    p->lanes = p->nchunks < TUTTI_ALG_TREE_LANES ? (int)p->nchunks
                                                 : TUTTI_ALG_TREE_LANES;
}
