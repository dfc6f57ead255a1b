/*
 * Instances (exec.h): found by key in the group's table, checked in full on
 * the first execution and proposed to the coordinator; the implementation
 * it decides is set up once; later executions must repeat the first one's
 * fixed parameters.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "exec/exec.h"

/* The table doubles when it holds as many instances as buckets, so a
 * look-up stays O(1) however many instances the group has. */
tutti_status_t tutti__instance_table(tutti_group_t *g, size_t n)
{
    tutti__instance_t **t = calloc(n, sizeof(*t));
    if (t == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "group 0x%llx: no "
                            "memory for a table of %zu instances",
                            (unsigned long long)g->key, n);
    for (size_t b = 0; b < g->num_buckets; b++) {
        while (g->instances[b] != NULL) {
            tutti__instance_t *i = g->instances[b];
            size_t nb = tutti__instance_bucket(i->key, n);
            g->instances[b] = i->next;
            i->next = t[nb];
            t[nb] = i;
        }
    }
    free(g->instances);
    g->instances = t;
    g->num_buckets = n;
    return TUTTI_OK;
}

tutti_status_t tutti__instance_check(const tutti_group_t *g,
                                     const tutti_instance_params_t *p,
                                     const char *call)
{
    if (p == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: params is "
                            "NULL", call);
    if (p->size < sizeof(*p))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: params->size "
                            "%zu: expected %zu, or at least %zu from an "
                            "older header (tutti_instance_params_init sets "
                            "it)", call, p->size, sizeof(*p),
                            offsetof(tutti_instance_params_t, stream));
    return tutti__coll_check_instance(p, g->size, call);
}

/* The module of the chosen implementation keeps state per group: made
 * before its first instance here, from the bytes its init_group_params
 * wrote at the coordinator (every decision for the module carries them). */
static tutti_status_t group_state(tutti_group_t *g, tutti__instance_t *inst,
                                  const tutti__decision_t *d)
{
    const tutti__module_t *mod = &g->job->reg->modules[inst->impl->module];
    tutti__group_state_t *gs = &g->mod_state[inst->impl->module];
    const tutti_alg_group_ops_t *gops = mod->group_ops;
    if (gops == NULL || gops->init_group == NULL || gs->made) {
        inst->alg.group_state = gs->state;
        return TUTTI_OK;
    }
    tutti_alg_group_t grp = {
        .size = sizeof(grp), .group_key = g->key, .rank = g->rank,
        .group_size = g->size, .num_tasks = g->num_tasks,
        .device_type = g->device_type, .device_index = g->device_index,
        .localities = g->localities,
        .pci_bus_ids = (const char *const *)g->pci_ids};
    tutti__error_clear();
    tutti_status_t st = gops->init_group(&grp, &tutti__core_ops,
                                         d->group_details,
                                         d->group_details_len, &gs->state);
    if (st != TUTTI_OK) {
        /* A copy: tutti__error writes the buffer tutti_last_error()
         * reads. */
        char why[TUTTI__REQUEST_ERROR_MAX / 2];
        snprintf(why, sizeof(why), "%s", tutti_last_error()[0]
                                             ? tutti_last_error()
                                             : tutti_strerror(st));
        return tutti__error(st, "exec", "group 0x%llx rank %d: module %s "
                            "could not set up its group state: %s",
                            (unsigned long long)g->key, g->rank, mod->name,
                            why);
    }
    gs->made = 1;
    inst->alg.group_state = gs->state;
    return TUTTI_OK;
}

tutti_status_t tutti__instance_setup(tutti_group_t *g, tutti__instance_t *inst,
                                     const tutti__decision_t *d)
{
    const char *name = d->algorithm, *why = d->detail;
    const tutti_instance_params_t *p = &inst->params;
    inst->impl = tutti__registry_find(g->job->reg, name);
    if (inst->impl == NULL)
        return tutti__error(TUTTI_ERR_NOT_FOUND, "select", "implementation "
                            "'%s' chosen for instance 0x%llx is not loaded on "
                            "task %d", name,
                            (unsigned long long)p->instance_key, g->job->task);
    snprintf(inst->algorithm, sizeof(inst->algorithm), "%s", name);
    tutti__log(TUTTI_LOG_DEBUG, "select", "instance 0x%llx: %s %s x %zu -> "
               "%s (%s)", (unsigned long long)p->instance_key,
               tutti_collective_name(p->collective),
               tutti_dtype_name(p->dtype), p->count, name, why);
    /* avg reaches the implementation as sum: the core divides after. */
    tutti_op_t op = p->op == TUTTI_OP_AVG ? TUTTI_OP_SUM : p->op;
    inst->alg = (tutti_alg_instance_t){
        .size = sizeof(inst->alg), .collective = p->collective,
        .dtype = p->dtype, .op = op, .count = p->count, .root = p->root,
        .rank = g->rank, .group_size = g->size, .num_tasks = g->num_tasks,
        .device_type = g->device_type, .instance_key = p->instance_key,
        .localities = g->localities, .permutation = inst->permutation,
        .device_index = g->device_index};
    inst->alg.pci_bus_ids = (const char *const *)g->pci_ids;
    tutti_status_t st = group_state(g, inst, d);
    if (st != TUTTI_OK)
        return st;
    const tutti_alg_ops_t *ops = inst->impl->impl->ops;
    st = ops->init_context(&inst->alg, &tutti__core_ops, d->details,
                           d->details_len, &inst->state);
    if (st == TUTTI_OK)
        st = tutti__cuda_inst_setup(g, inst);
    return st;
}

tutti_status_t tutti__instance_new(tutti_group_t *g,
                                   const tutti_instance_params_t *p,
                                   tutti__instance_t **inst_out)
{
    tutti_status_t st;
    if (g->num_instances >= g->num_buckets &&
        (st = tutti__instance_table(g, 2 * g->num_buckets)) != TUTTI_OK)
        return st;
    tutti__instance_t *inst = calloc(1, sizeof(*inst));
    if (inst == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "instance 0x%llx: "
                            "no memory for its record",
                            (unsigned long long)p->instance_key);
    st = tutti__cuda_inst_new(g, inst);
    if (st != TUTTI_OK) {
        free(inst);
        return st;
    }
    inst->params = *p;
    inst->key = p->instance_key;
    inst->params.size = sizeof(inst->params);
    inst->params.algorithm = NULL;
    inst->params.permutation = NULL;
    inst->params.counts = NULL;
    inst->params.wait_for = NULL;
    if (p->collective == TUTTI_COLL_PERMUTE) {
        inst->permutation = malloc((size_t)g->size * sizeof(int));
        if (inst->permutation == NULL) {
            tutti__cuda_inst_free(inst);
            free(inst);
            return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "instance 0x%llx: "
                                "out of memory for a permutation of %d",
                                (unsigned long long)p->instance_key, g->size);
        }
        memcpy(inst->permutation, p->permutation,
               (size_t)g->size * sizeof(int));
        inst->params.permutation = inst->permutation;
    }
    inst->per_rank = tutti__coll_per_rank(p);
    inst->prepared = tutti__coll_prepared(p);
    inst->postscaled = tutti__coll_postscaled(p);
    tutti__coll_fixed_elems(p, g->rank, g->size, &inst->in_elems,
                            &inst->out_elems);
    inst->in_bytes = (uint64_t)inst->in_elems * tutti_dtype_size(p->dtype);
    if (p->algorithm) {
        snprintf(inst->algorithm, sizeof(inst->algorithm), "%s", p->algorithm);
        snprintf(inst->asked, sizeof(inst->asked), "%s", p->algorithm);
        inst->params.algorithm = inst->algorithm;
    }
    if (g->tl != NULL)
        inst->tl_seq = tutti__timeline_resolve_begin(g->tl, inst->key);
    st = tutti__member_propose(g->job, &g->member, p);
    if (st != TUTTI_OK) {
        if (inst->tl_seq != 0)
            tutti__timeline_resolve_end(g->tl, inst->tl_seq, st, NULL);
        tutti__cuda_inst_free(inst);
        free(inst->permutation);
        free(inst);
        return st;
    }
    tutti__instance_insert(g, inst);
    *inst_out = inst;
    return TUTTI_OK;
}

void tutti__instance_insert(tutti_group_t *g, tutti__instance_t *inst)
{
    size_t b = tutti__instance_bucket(inst->key, g->num_buckets);
    inst->next = g->instances[b];
    g->instances[b] = inst;
    g->num_instances++;
}

/* Whether @p name (perhaps an old name, an alias) names the implementation
 * @p inst runs, or was first asked for.  The names the instance already
 * knows are compared first, so a caller that keeps one name, its own or a
 * former one, costs no registry look-up per call. */
int tutti__instance_same_impl(const tutti_group_t *g,
                              const tutti__instance_t *inst, const char *name)
{
    if (strcmp(name, inst->algorithm) == 0 || strcmp(name, inst->asked) == 0)
        return 1;
    const tutti__impl_entry_t *e = tutti__registry_find(g->job->reg, name);
    return e != NULL &&
           e == tutti__registry_find(g->job->reg, inst->algorithm);
}

tutti_status_t tutti__instance_check_same(const tutti_group_t *g,
                                          const tutti__instance_t *inst,
                                          const tutti_instance_params_t *p)
{
    const tutti_instance_params_t *f = &inst->params;
    const char *what = NULL;
    long long was = 0, now = 0;

    if (f->collective != p->collective)
        what = "collective", was = f->collective, now = p->collective;
    else if (f->dtype != p->dtype)
        what = "dtype", was = f->dtype, now = p->dtype;
    else if (f->count != p->count)
        what = "count", was = (long long)f->count, now = (long long)p->count;
    else if (f->op != p->op && (p->collective == TUTTI_COLL_ALLREDUCE ||
                                p->collective == TUTTI_COLL_REDUCE ||
                                p->collective == TUTTI_COLL_REDUCE_SCATTER))
        what = "op", was = f->op, now = p->op;
    else if (f->root != p->root && (p->collective == TUTTI_COLL_BROADCAST ||
                                    p->collective == TUTTI_COLL_REDUCE ||
                                    p->collective == TUTTI_COLL_GATHER))
        what = "root", was = f->root, now = p->root;
    else if (f->pre_scale != p->pre_scale || f->post_scale != p->post_scale)
        return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx was "
                            "first executed with pre_scale %g, post_scale %g "
                            "and now with %g, %g",
                            (unsigned long long)f->instance_key, f->pre_scale,
                            f->post_scale, p->pre_scale, p->post_scale);
    else if (inst->permutation != NULL &&
             (p->permutation == NULL ||
              memcmp(inst->permutation, p->permutation,
                     (size_t)g->size * sizeof(int)) != 0))
        return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx was "
                            "first executed with another permutation",
                            (unsigned long long)f->instance_key);
    else if (p->algorithm &&
             !tutti__instance_same_impl(g, inst, p->algorithm))
        return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx "
                            "runs %s; this call asks for %s",
                            (unsigned long long)f->instance_key,
                            inst->algorithm, p->algorithm);
    if (what == NULL)
        return TUTTI_OK;
    return tutti__error(TUTTI_ERR_MISMATCH, "exec", "instance 0x%llx was "
                        "first executed with %s %lld and now with %lld",
                        (unsigned long long)f->instance_key, what, was, now);
}


void tutti__instance_free(tutti__instance_t *inst)
{
    const tutti_alg_ops_t *ops = inst->impl ? inst->impl->impl->ops : NULL;
    if (ops && inst->state)
        ops->fini_context(inst->state);
    tutti__cuda_inst_free(inst);
    free(inst->permutation);
    free(inst->failure);
    free(inst);
}
