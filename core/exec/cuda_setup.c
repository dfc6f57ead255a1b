/*
 * A CUDA group's device modules set up at join (exec.h).  A module with
 * per-group state and implementations on device memory (NCCL) otherwise
 * makes that state at the first execution that resolves to it, and that
 * execution holds its caller's stream: the communicator's set-up and its
 * first call would run behind a closed gate, where CUDA may wait for the
 * gate (loading the library's kernels may synchronize the context, a
 * free waits for the device).  So each member runs one allreduce of one
 * float32 through each such module during tutti_group_join, on a stream
 * of its own and without holding any stream: the module's state is made,
 * its kernels are loaded and its first call has run before the caller
 * can queue anything (tutti_group_join, context.c, calls it once the
 * member joined).  The setting cuda.group_setup (first_use) turns it
 * off.
 */
#include <stdio.h>

#include "base/log.h"
#include "exec/exec.h"

/* Instance keys of the set-up calls: the blocking helpers' range (top bit
 * set), one per module, the same on every member. */
static uint64_t setup_key(const char *module)
{
    uint64_t h = 0x6375646173657475ULL; /* "cudasetu" */
    for (const char *c = module; *c; c++) {
        h ^= (unsigned char)*c;
        h *= 0x100000001b3ULL;
    }
    return h | (1ULL << 63);
}

/* The allreduce on device memory of module @p m that serves CUDA groups,
 * if @p m keeps per-group state; NULL otherwise. */
static const tutti_alg_impl_t *setup_impl(const tutti__registry_t *reg,
                                          size_t m)
{
    const tutti_alg_group_ops_t *gops = reg->modules[m].group_ops;
    if (gops == NULL || gops->init_group == NULL)
        return NULL;
    for (size_t i = 0; i < reg->num_impls; i++) {
        const tutti_alg_impl_t *impl = reg->impls[i].impl;
        if (reg->impls[i].module == m &&
            (impl->collectives & TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE)) &&
            (impl->flags & TUTTI_IMPL_DEVICE_MEMORY) &&
            (impl->device_types & TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA)))
            return impl;
    }
    return NULL;
}

/* One call through @p impl on @p buf and @p stream, waited for. */
static tutti_status_t setup_call(tutti_group_t *g, const char *module,
                                 const tutti_alg_impl_t *impl, void *buf,
                                 void *stream)
{
    tutti_instance_params_t p;
    tutti_request_t *r = NULL;
    tutti_instance_params_init(&p);
    p.instance_key = setup_key(module);
    p.collective = TUTTI_COLL_ALLREDUCE;
    p.dtype = TUTTI_FLOAT32;
    p.op = TUTTI_OP_SUM;
    p.count = 1;
    p.algorithm = impl->name;
    p.stream = stream;
    g->setting_up = 1;
    tutti_status_t st = tutti__execute(g, &p, buf, buf, "tutti_group_join",
                                       &r);
    if (st == TUTTI_OK)
        st = tutti_request_wait(r);
    g->setting_up = 0;
    tutti_request_free(r);
    return st;
}

tutti_status_t tutti__cuda_group_setup(tutti_group_t *g)
{
    const tutti__registry_t *reg = g->job->reg;
    const tutti__cuda_ops_t *ops = g->cuda;
    static const float zero = 0.0f;
    void *buf = NULL, *stream = NULL;
    tutti_status_t st = TUTTI_OK;
    int err;

    if (g->device_type != TUTTI_DEVICE_CUDA || ops == NULL ||
        g->job->cfg->cuda_group_setup != TUTTI__CUDA_SETUP_JOIN)
        return TUTTI_OK;
    for (size_t m = 0; m < reg->num_modules && st == TUTTI_OK; m++) {
        const tutti_alg_impl_t *impl = setup_impl(reg, m);
        const char *module = reg->modules[m].name;
        if (impl == NULL)
            continue;
        if (buf == NULL) {
            if ((err = ops->set_device(g->device_index)) != 0 ||
                (err = ops->dev_alloc(sizeof(float), &buf)) != 0 ||
                (err = ops->stream_create(&stream)) != 0 ||
                (err = ops->memcpy_async(buf, &zero, sizeof(zero),
                                         stream)) != 0) {
                st = tutti__cuda_error(TUTTI_ERR_IO, err, "group 0x%llx "
                                       "rank %d: a buffer and a stream on "
                                       "cuda:%d to set up module %s",
                                       (unsigned long long)g->key, g->rank,
                                       g->device_index, module);
                break;
            }
        }
        tutti_status_t call = setup_call(g, module, impl, buf, stream);
        if (call == TUTTI_OK) {
            tutti__log(TUTTI_LOG_DEBUG, "exec", "group 0x%llx rank %d: "
                       "module %s set up at join (%s ran)",
                       (unsigned long long)g->key, g->rank, module,
                       impl->name);
        } else if (g->failed != TUTTI_OK) {
            /* The group cannot go on: the join fails. */
            st = tutti__error(call, "group", "group 0x%llx rank %d: setting "
                              "up module %s at join (one %s): %s",
                              (unsigned long long)g->key, g->rank, module,
                              impl->name, g->failure);
        } else {
            /* Declined (two members on one GPU, say) or failed on its
             * own: executions that choose it set it up, or fail, later. */
            tutti__log(call == TUTTI_ERR_UNSUPPORTED ? TUTTI_LOG_DEBUG
                                                     : TUTTI_LOG_WARN,
                       "exec", "group 0x%llx rank %d: module %s not set up "
                       "at join (one %s): %s", (unsigned long long)g->key,
                       g->rank, module, impl->name, tutti_last_error());
        }
    }
    if (stream != NULL)
        ops->stream_destroy(stream);
    tutti__dfree(ops, g->device_index, buf, 0);
    return st;
}
