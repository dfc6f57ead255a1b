/*
 * The plan of the tree module's pipelined k-ary trees (see tree_plan.h),
 * used by HierarchicalTreeBroadcast and TreeReduce: the rule's fanout and
 * chunk, written by the resolver and read back, checked, by every member.
 */
#include <stdint.h>
#include <string.h>

#include <tutti/module.h>

#include "tree_plan.h"

tutti_status_t tutti_alg_tree_plan_write(const tutti_alg_instance_t *inst,
                                         const tutti_core_ops_t *core,
                                         const char *impl, void *details,
                                         size_t *len_out)
{
    tutti_alg_tree_plan_t plan;
    size_t esize = tutti_dtype_size(inst->dtype);
    tutti_status_t st;

    if ((st = core->param_size(inst, "fanout", 2, &plan.fanout)) !=
            TUTTI_OK ||
        (st = core->param_size(inst, "chunk", 256 * 1024, &plan.chunk)) !=
            TUTTI_OK)
        return st;
    if (plan.fanout < 1 || plan.fanout > TUTTI_ALG_TREE_MAX_FANOUT ||
        plan.chunk < esize)
        return core->error(TUTTI_ERR_CONFIG, "%s: fanout %llu and chunk "
                           "%llu: expected fanout 1..%d and chunk >= %zu "
                           "bytes (one %s element)", impl,
                           (unsigned long long)plan.fanout,
                           (unsigned long long)plan.chunk,
                           TUTTI_ALG_TREE_MAX_FANOUT, esize,
                           tutti_dtype_name(inst->dtype));
    memcpy(details, &plan, sizeof(plan));
    *len_out = sizeof(plan);
    return TUTTI_OK;
}

tutti_status_t tutti_alg_tree_plan_read(const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        const char *impl, const void *details,
                                        size_t details_len,
                                        tutti_alg_tree_plan_t *plan_out)
{
    tutti_alg_tree_plan_t plan;
    size_t esize = tutti_dtype_size(inst->dtype);

    if (details_len != sizeof(plan))
        return core->error(TUTTI_ERR_MODULE, "%s: %zu bytes of plan, "
                           "expected %zu", impl, details_len, sizeof(plan));
    memcpy(&plan, details, sizeof(plan));
    if (plan.fanout < 1 || plan.fanout > TUTTI_ALG_TREE_MAX_FANOUT ||
        plan.chunk < esize)
        return core->error(TUTTI_ERR_MODULE, "%s: plan with fanout %llu and "
                           "chunk %llu: expected fanout 1..%d and chunk >= "
                           "%zu bytes", impl, (unsigned long long)plan.fanout,
                           (unsigned long long)plan.chunk,
                           TUTTI_ALG_TREE_MAX_FANOUT, esize);
    /* Chunk indices are the tags of their messages. */
    uint64_t chunk_bytes = plan.chunk / esize * esize;
    uint64_t bytes = (uint64_t)inst->count * esize;
    if ((bytes + chunk_bytes - 1) / chunk_bytes > UINT32_MAX)
        return core->error(TUTTI_ERR_CONFIG, "%s: %zu elements in chunks of "
                           "%llu bytes make more than %u chunks: expected a "
                           "larger chunk parameter", impl, inst->count,
                           (unsigned long long)chunk_bytes, UINT32_MAX);
    *plan_out = plan;
    return TUTTI_OK;
}
