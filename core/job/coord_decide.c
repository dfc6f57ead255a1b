/*
 * The coordinator's decisions (coord_decide.h): for an instance every
 * member proposed alike, the implementation (the call's, or the first rule
 * whose implementation runs it and whose supports() takes it, seen where
 * the group's members are), its plan (init_params) and its module's group
 * details (init_group_params, once per group and module).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "device/device.h"
#include "job/coord_decide.h"
#include "plugin/services.h"
#include "select/select.h"

static void formed_free(coord_formed_t *f)
{
    free(f->members);
    free(f->pci);
    free(f->pci_ids);
    free(f->details);
    free(f);
}

coord_formed_t *tutti__coord_formed_find(tutti__coord_t *r, uint64_t key)
{
    for (coord_formed_t **pp = &r->formed; *pp; pp = &(*pp)->next) {
        coord_formed_t *f = *pp;
        if (f->key != key)
            continue;
        *pp = f->next;
        f->next = r->formed;
        r->formed = f;
        return f;
    }
    return NULL;
}

void tutti__coord_formed_record(tutti__coord_t *r, uint64_t key, int size,
                                int num_tasks, int num_hosts,
                                int device_type,
                                const tutti_locality_t *members,
                                const uint32_t *pci)
{
    coord_formed_t *old = tutti__coord_formed_find(r, key);
    if (old != NULL) {
        r->formed = old->next;
        r->num_formed--;
        formed_free(old);
    }
    if (r->num_formed >= TUTTI__COORD_MAX_FORMED) {
        coord_formed_t **pp = &r->formed;
        while ((*pp)->next != NULL)
            pp = &(*pp)->next;
        tutti__log(TUTTI_LOG_INFO, "resolve", "group 0x%llx: its record "
                   "goes, the least recently used of %d formed groups",
                   (unsigned long long)(*pp)->key, r->num_formed);
        formed_free(*pp);
        *pp = NULL;
        r->num_formed--;
    }
    size_t n = (size_t)size;
    coord_formed_t *f = calloc(1, sizeof(*f));
    if (f == NULL || (f->members = malloc(n * sizeof(*f->members))) == NULL ||
        (f->pci = calloc(n, sizeof(*f->pci))) == NULL ||
        (f->pci_ids = calloc(n, sizeof(*f->pci_ids))) == NULL) {
        /* Decisions then go without localities: supports() sees none. */
        if (f)
            formed_free(f);
        return;
    }
    f->key = key;
    f->size = size;
    f->num_tasks = num_tasks;
    f->num_hosts = num_hosts;
    f->device_type = device_type;
    memcpy(f->members, members, n * sizeof(*f->members));
    for (size_t i = 0; i < n; i++) {
        tutti__pci_text(pci[i], f->pci[i]);
        f->pci_ids[i] = f->pci[i];
    }
    f->next = r->formed;
    r->formed = f;
    r->num_formed++;
}

void tutti__coord_formed_free_all(tutti__coord_t *r)
{
    while (r->formed) {
        coord_formed_t *next = r->formed->next;
        formed_free(r->formed);
        r->formed = next;
    }
    r->num_formed = 0;
}

/* What selection sees of an agreed instance of formed group @p f (NULL,
 * or another group's size: its hosts are not known, read as one). */
static void query_of(const tutti__inst_payload_t *p, const coord_formed_t *f,
                     tutti_select_query_t *q)
{
    int per_rank = p->count == (uint64_t)TUTTI_COUNT_PER_RANK;
    *q = (tutti_select_query_t){
        (tutti_collective_t)p->collective, (tutti_device_type_t)p->device_type,
        (tutti_dtype_t)p->dtype,
        per_rank ? SIZE_MAX
                 : tutti__select_bytes((tutti_dtype_t)p->dtype, p->count),
        p->size, p->num_tasks, per_rank,
        f != NULL && f->size == p->size ? f->num_hosts : 0};
}

/* Runs the implementation's init_params once, for every member: its bytes
 * travel in the decision. */
static tutti_status_t plan(tutti__job_t *job, const coord_inst_t *ci,
                           const tutti__impl_entry_t *e,
                           tutti_alg_instance_t *inst,
                           tutti__decision_payload_t *d)
{
    const tutti__inst_payload_t *p = &ci->by_rank[0];
    const tutti_alg_ops_t *ops = e->impl->ops;
    size_t len = 0;
    d->details_len = 0;
    if (ops->init_params == NULL)
        return TUTTI_OK;
    tutti_select_query_t q;
    query_of(p, tutti__coord_formed_find(job->coord, ci->group_key), &q);
    /* A call that names its implementation still gets the params of the
     * first rule for it that matches the call. */
    const tutti__accept_t accept = {job->reg, inst};
    inst->rule_params =
        p->algorithm[0]
            ? tutti__select_named(job->cfg, &q, p->algorithm)
            : tutti__select(job->cfg, &q, tutti__registry_accept, &accept,
                            NULL, 0);
    tutti_alg_instance_t seen = *inst;
    seen.localities = NULL; /* init_params sees none (module.h) */
    seen.pci_bus_ids = NULL;
    tutti__error_clear();
    tutti_status_t st = ops->init_params(&seen, &tutti__core_ops, d->details,
                                         &len);
    if (st == TUTTI_OK && len > TUTTI_DETAILS_MAX) {
        snprintf(d->detail, sizeof(d->detail), "%s: init_params wrote %zu "
                 "bytes of details, at most %d allowed", e->impl->name, len,
                 TUTTI_DETAILS_MAX);
        return TUTTI_ERR_MODULE;
    }
    if (st != TUTTI_OK) {
        snprintf(d->detail, sizeof(d->detail), "%s: init_params failed: %s",
                 e->impl->name, tutti_last_error()[0] ? tutti_last_error()
                                                      : tutti_strerror(st));
        return st;
    }
    d->details_len = (uint32_t)len;
    return TUTTI_OK;
}

/* The chosen implementation's module keeps state per group: its
 * init_group_params runs once per group (here, on task 0), and every
 * decision for the module's implementations carries its bytes, so each
 * member's init_group gets them whichever instance it sets up first. */
static tutti_status_t group_details(tutti__job_t *job, const coord_inst_t *ci,
                                    const tutti__impl_entry_t *e,
                                    const tutti_alg_instance_t *inst,
                                    tutti__decision_payload_t *d)
{
    const tutti__module_t *mod = &job->reg->modules[e->module];
    const tutti_alg_group_ops_t *gops = mod->group_ops;
    coord_formed_t *f = tutti__coord_formed_find(job->coord, ci->group_key);
    d->group_details_len = 0;
    if (gops == NULL || gops->init_group_params == NULL)
        return TUTTI_OK;
    if (f == NULL) {
        snprintf(d->detail, sizeof(d->detail), "group 0x%llx: the "
                 "coordinator lost the group's record (out of memory)",
                 (unsigned long long)ci->group_key);
        return TUTTI_ERR_NO_MEMORY;
    }
    if (f->details == NULL) {
        f->details = calloc(job->reg->num_modules, sizeof(*f->details));
        f->num_modules = job->reg->num_modules;
        if (f->details == NULL)
            return TUTTI_ERR_NO_MEMORY;
    }
    struct coord_group_details *gd = &f->details[e->module];
    if (gd->made == 0) {
        tutti_alg_group_t g = {
            .size = sizeof(g), .group_key = ci->group_key, .rank = 0,
            .group_size = inst->group_size, .num_tasks = inst->num_tasks,
            .device_type = inst->device_type,
            .device_index = inst->device_index,
            .pci_bus_ids = inst->pci_bus_ids};
        size_t len = 0;
        tutti__error_clear();
        gd->status = gops->init_group_params(&g, &tutti__core_ops, gd->bytes,
                                             &len);
        if (gd->status == TUTTI_OK && len > TUTTI_GROUP_DETAILS_MAX)
            gd->status = tutti__error(TUTTI_ERR_MODULE, "resolve", "wrote "
                                      "%zu bytes, at most %d allowed", len,
                                      TUTTI_GROUP_DETAILS_MAX);
        if (gd->status != TUTTI_OK)
            snprintf(gd->error, sizeof(gd->error), "%s",
                     tutti_last_error()[0] ? tutti_last_error()
                                           : tutti_strerror(gd->status));
        gd->len = gd->status == TUTTI_OK ? (uint32_t)len : 0;
        gd->made = gd->status == TUTTI_OK ? 1 : -1;
    }
    if (gd->made < 0) {
        snprintf(d->detail, sizeof(d->detail), "module %s: init_group_params "
                 "for group 0x%llx failed: %s", mod->name,
                 (unsigned long long)ci->group_key, gd->error);
        return gd->status;
    }
    d->group_details_len = gd->len;
    memcpy(d->group_details, gd->bytes, gd->len);
    return TUTTI_OK;
}

/* The implementation for an agreed instance: the call's choice, else the
 * first rule that matches. */
tutti_status_t tutti__coord_choose(tutti__job_t *job, const coord_inst_t *ci,
                                  tutti__decision_payload_t *d)
{
    const tutti__inst_payload_t *p = &ci->by_rank[0];
    const char *name = p->algorithm[0] ? p->algorithm : NULL;
    const coord_formed_t *f = tutti__coord_formed_find(job->coord,
                                                       ci->group_key);
    /* The instance as rank 0 sees it, where the group's members are. */
    tutti_alg_instance_t inst = {
        .size = sizeof(inst), .collective = (tutti_collective_t)p->collective,
        .dtype = (tutti_dtype_t)p->dtype,
        .op = p->op == TUTTI_OP_AVG ? TUTTI_OP_SUM : (tutti_op_t)p->op,
        .count = p->count, .root = p->root, .rank = 0, .group_size = p->size,
        .num_tasks = p->num_tasks,
        .device_type = (tutti_device_type_t)p->device_type,
        .instance_key = ci->instance_key,
        .localities = f && f->size == p->size ? f->members : NULL,
        .device_index = f && f->size == p->size ? f->members[0].device_index
                                                : 0,
        .pci_bus_ids = f && f->size == p->size ? f->pci_ids : NULL};
    const tutti__accept_t accept = {job->reg, &inst};

    snprintf(d->detail, sizeof(d->detail), "named by the call");
    if (name == NULL) {
        char size[32];
        tutti_select_query_t q;
        query_of(p, f, &q);
        const tutti__rule_t *rule = tutti__select(
            job->cfg, &q, tutti__registry_accept, &accept, NULL, 0);
        if (rule == NULL) {
            snprintf(
                d->detail, sizeof(d->detail),
                "no selection rule matches %s (%s, %s, %s, group of "
                "%d, %d tasks) with an implementation that runs it; "
                "add one to %s or set TUTTI_ALGO (tutti-info --explain "
                "shows each rule's reason)",
                tutti_collective_name(q.collective),
                tutti__job_dev_name(p->device_type), tutti_dtype_name(q.dtype),
                tutti__select_query_size(&q, size, sizeof(size)), q.group_size,
                q.num_tasks, job->cfg->path ? job->cfg->path : "the config");
            return TUTTI_ERR_NOT_FOUND;
        }
        name = rule->algorithm;
        snprintf(d->detail, sizeof(d->detail), "rule %s:%d", rule->file,
                 rule->line);
    }
    const tutti__impl_entry_t *e = tutti__registry_find(job->reg, name);
    if (e == NULL) {
        snprintf(d->detail, sizeof(d->detail), "implementation '%s' is not "
                 "provided by any loaded module (tutti-info lists them)",
                 name);
        return TUTTI_ERR_NOT_FOUND;
    }
    if (!(e->impl->collectives & TUTTI_COLL_BIT(p->collective)) ||
        !tutti__impl_serves(e->impl, (tutti_device_type_t)p->device_type)) {
        snprintf(d->detail, sizeof(d->detail), "implementation '%s' (module "
                 "%s) does not run %s on %s devices", name,
                 job->reg->modules[e->module].name,
                 tutti_collective_name((tutti_collective_t)p->collective),
                 tutti__job_dev_name(p->device_type));
        return TUTTI_ERR_UNSUPPORTED;
    }
    if (p->count == (uint64_t)TUTTI_COUNT_PER_RANK &&
        !(e->impl->per_rank_collectives & TUTTI_COLL_BIT(p->collective))) {
        snprintf(d->detail, sizeof(d->detail), "implementation '%s' (module "
                 "%s) runs %s with equal counts only, not per-rank counts",
                 name, job->reg->modules[e->module].name,
                 tutti_collective_name((tutti_collective_t)p->collective));
        return TUTTI_ERR_UNSUPPORTED;
    }
    if (p->algorithm[0]) {
        tutti_select_query_t q;
        query_of(p, f, &q);
        char why[320];
        if (!tutti__registry_accept(&accept, name, &q, why, sizeof(why))) {
            snprintf(d->detail, sizeof(d->detail), "implementation %s",
                     why);
            return TUTTI_ERR_UNSUPPORTED;
        }
    }
    /* An old name (alias) selects it too; the decision gives its own. */
    snprintf(d->algorithm, sizeof(d->algorithm), "%s", e->impl->name);
    tutti_status_t st = plan(job, ci, e, &inst, d);
    if (st == TUTTI_OK)
        st = group_details(job, ci, e, &inst, d);
    return st;
}
