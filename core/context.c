/*
 * The front door: a context reads the configuration, loads the modules,
 * learns its place in the job and starts the job's control plane; the
 * public calls that take a context begin here and go down to their rooms.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/paths.h"
#include "context.h"
#include "exec/exec.h"
#include "job/bootstrap.h"
#include "job/coordinator.h"
#include "job/health.h"
#include "job/member.h"
#include "job/sum.h"
#include "job/xchg.h"
#include "select/lint.h"
#include "select/select.h"

/* A NULL context given to @p call: refused, naming it. */
static tutti_status_t null_ctx(const char *call)
{
    return tutti__error(TUTTI_ERR_INVALID_ARG, "context", "%s: ctx is NULL",
                        call);
}

/* A NULL output or input @p what given to @p call. */
static tutti_status_t null_arg(const char *call, const char *what)
{
    return tutti__error(TUTTI_ERR_INVALID_ARG, "context", "%s: %s is NULL",
                        call, what);
}

int tutti_context_task(const tutti_context_t *ctx)
{
    if (ctx == NULL) {
        null_ctx("tutti_context_task");
        return -1;
    }
    return ctx->job.task;
}

int tutti_context_num_tasks(const tutti_context_t *ctx)
{
    if (ctx == NULL) {
        null_ctx("tutti_context_num_tasks");
        return -1;
    }
    return ctx->job.num_tasks;
}

/* Task, count and job id from the API, tutti-run or a launcher
 * (bootstrap.c); learnt before the config is read, so that what every
 * task finds alike in it is reported by task 0 alone. */
static tutti_status_t learn_job(const tutti_context_params_t *p,
                                tutti__bootstrap_t *b)
{
    tutti_status_t st = tutti__bootstrap(p, b);
    if (st == TUTTI_OK)
        tutti__log_set_task(b->task);
    return st;
}

/* Once the log level is known: where the task learnt its place. */
static void log_job(const tutti__bootstrap_t *b)
{
    char local[64] = "local rank not known";
    if (b->local_task >= 0 && b->local_num_tasks >= 0)
        snprintf(local, sizeof(local), "local rank %d of %d", b->local_task,
                 b->local_num_tasks);
    else if (b->local_task >= 0)
        snprintf(local, sizeof(local), "local rank %d", b->local_task);
    tutti__log(TUTTI_LOG_INFO, "bootstrap", "task %d of %d from %s (%s), "
               "job %s (%s), %s", b->task, b->num_tasks, b->source, b->vars,
               b->job_id, b->job_source, local);
}

static tutti_status_t read_config(tutti_context_t *ctx,
                                  const tutti_context_params_t *p)
{
    const char *path = p->config_path;
    tutti_status_t st;

    tutti__config_init(&ctx->cfg);
    if (path == NULL)
        path = getenv("TUTTI_CONFIG");
    if (path == NULL) {
        path = tutti__default_config_path();
        if (access(path, R_OK) != 0) {
            tutti__log(TUTTI_LOG_INFO, "config", "default config %s not "
                       "readable; using built-in defaults", path);
            path = "";
        }
    }
    if (path[0] != '\0' &&
        (st = tutti__config_load_file(&ctx->cfg, path)) != TUTTI_OK)
        return st;
    if ((st = tutti__config_apply_env(&ctx->cfg)) != TUTTI_OK)
        return st;
    if (p->log_level != NULL &&
        (st = tutti__config_set_log_level(&ctx->cfg, p->log_level,
                                          TUTTI_SRC_API)) != TUTTI_OK)
        return st;
    tutti__log_set_level(tutti__config_log_level(&ctx->cfg));
    if ((st = tutti__log_set_subsystems(ctx->cfg.log_subsystems)) !=
            TUTTI_OK ||
        (st = tutti__log_set_file(ctx->cfg.log_file)) != TUTTI_OK)
        return st;
    return TUTTI_OK;
}

/* Module search order: API, then config (TUTTI_MODULE_PATH before the
 * file's modules.path), then the build tree or the install directory. */
static tutti_status_t module_dirs(tutti_context_t *ctx,
                                  const tutti_context_params_t *p)
{
    tutti_status_t st = TUTTI_OK;
    if (p->module_path != NULL)
        st = tutti__strlist_split(&ctx->module_dirs, p->module_path, ':');
    for (size_t i = 0; st == TUTTI_OK && i < ctx->cfg.module_path.count; i++)
        st = tutti__strlist_push(&ctx->module_dirs,
                                 ctx->cfg.module_path.items[i]);
    if (st == TUTTI_OK)
        st = tutti__strlist_split(&ctx->module_dirs,
                                  tutti__default_module_path(), ':');
    return st;
}

static int impl_lookup(void *arg, const char *name, uint32_t *collectives_out)
{
    const tutti__impl_entry_t *e = tutti__registry_find(arg, name);
    if (e == NULL)
        return 0;
    *collectives_out = e->impl->collectives;
    return 1;
}

/* Through the store, where the params give one: the job id, the secret,
 * the hosts (job/store.c), within the configured timeout. */
static tutti_status_t meet(tutti_context_t *ctx,
                           const tutti_context_params_t *p,
                           tutti__bootstrap_t *b)
{
    const tutti_store_t *store = tutti__bootstrap_store(p);
    if (store == NULL)
        return TUTTI_OK;
    if (store->size < offsetof(tutti_store_t, get) + sizeof(store->get))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "context",
                            "tutti_context_create: params store->size %zu: "
                            "expected %zu (tutti_store_init sets it)",
                            store->size, sizeof(*store));
    if (store->set == NULL || store->get == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "context",
                            "tutti_context_create: params store has %s "
                            "NULL; expected both set and get",
                            store->set == NULL ? "set" : "get");
    ctx->store.user = store;
    ctx->store.timeout = ctx->cfg.timeout;
    return tutti__store_meet(&ctx->store, b);
}

/* The job's parts register the frames they handle, then its control
 * plane connects every task. */
static tutti_status_t start_job(tutti_context_t *ctx,
                                const tutti__bootstrap_t *b)
{
    tutti__job_t *job = &ctx->job;
    tutti_status_t st = tutti__job_init(job, b->task, b->num_tasks,
                                        b->local_num_tasks, b->job_id,
                                        &ctx->cfg, &ctx->reg);
    ctx->job_ready = 1;
    if (ctx->store.user != NULL) {
        job->store = &ctx->store;
        job->secret = ctx->store.secret;
    }
    if (st == TUTTI_OK)
        st = tutti__coord_init(job);
    if (st == TUTTI_OK)
        st = tutti__member_init(job);
    if (st == TUTTI_OK) {
        tutti__health_init(job);
        tutti__sum_init(job);
        tutti__xchg_init(job);
        st = tutti__job_start(job);
    }
    return st;
}

tutti_status_t tutti_context_create(const tutti_context_params_t *params,
                                    tutti_context_t **ctx_out)
{
    tutti_context_params_t defaults;
    tutti__bootstrap_t boot;
    tutti_context_t *ctx;
    tutti_status_t st;

    tutti__error_clear();
    if (ctx_out == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "context",
                            "tutti_context_create: ctx_out is NULL");
    if (params == NULL) {
        tutti_context_params_init(&defaults);
        params = &defaults;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "context",
                            "tutti_context_create: no memory for a context");
    if ((st = learn_job(params, &boot)) != TUTTI_OK)
        goto err_free;
    /* Every task reads the same config: task 0 alone logs its errors and
     * skipped rules as such (each task's call still returns the error). */
    int alike = boot.task == 0 ? TUTTI_LOG_ERROR : TUTTI_LOG_DEBUG;
    int previous = tutti__log_error_level(alike);
    st = read_config(ctx, params);
    tutti__log_error_level(previous);
    if (st != TUTTI_OK)
        goto err_free;
    if ((st = meet(ctx, params, &boot)) != TUTTI_OK)
        goto err_free;
    log_job(&boot);
    if (ctx->cfg.timeline[0] != '\0' &&
        (st = tutti__timeline_open(ctx->cfg.timeline, boot.task,
                                   &ctx->timeline)) != TUTTI_OK)
        goto err_free;
    if ((st = module_dirs(ctx, params)) != TUTTI_OK)
        goto err_free;
    if ((st = tutti__registry_load(&ctx->reg, &ctx->module_dirs,
                                   &ctx->cfg.module_load)) != TUTTI_OK)
        goto err_free;
    /* Modules' settings: every task finds the same errors in them. */
    previous = tutti__log_error_level(alike);
    st = tutti__registry_settings(&ctx->reg, &ctx->cfg);
    tutti__log_error_level(previous);
    if (st != TUTTI_OK)
        goto err_free;
    if ((st = tutti__registry_name_rules(&ctx->reg, &ctx->cfg)) != TUTTI_OK ||
        (st = tutti__registry_check_params(&ctx->reg, &ctx->cfg)) != TUTTI_OK)
        goto err_free;
    tutti__select_check_rules(&ctx->cfg, impl_lookup, &ctx->reg,
                              boot.task == 0 ? TUTTI_LOG_WARN
                                             : TUTTI_LOG_DEBUG);
    if ((st = start_job(ctx, &boot)) != TUTTI_OK)
        goto err_free;
    *ctx_out = ctx;
    return TUTTI_OK;

err_free:
    tutti_context_destroy(ctx);
    return st;
}

void tutti_context_destroy(tutti_context_t *ctx)
{
    if (ctx == NULL)
        return;
    /* Members not left are written here, before anything may wait. */
    tutti__timeline_close(ctx->timeline);
    if (ctx->job_ready) {
        tutti__job_t *job = &ctx->job;
        if (job->num_groups > 0)
            tutti__log(TUTTI_LOG_WARN, "context", "destroyed with %d groups "
                       "not left", job->num_groups);
        tutti__health_finish(job);
        tutti__job_stop(job);
        tutti__coord_fini(job);
        tutti__member_fini(job);
        tutti__xchg_fini(job);
        tutti__job_fini(job);
    }
    tutti__config_free(&ctx->cfg); /* before the modules its rows are in */
    tutti__registry_free(&ctx->reg);
    tutti__strlist_free(&ctx->module_dirs);
    tutti__store_clear(&ctx->store);
    free(ctx);
}

tutti_status_t tutti_abort(tutti_context_t *ctx, const char *reason)
{
    char text[512];
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_abort");
    snprintf(text, sizeof(text), "aborted by task %d: %s", ctx->job.task,
             reason ? reason : "(no reason given)");
    tutti__health_abort_all(&ctx->job, text);
    return TUTTI_OK;
}

tutti_status_t tutti_group_join(tutti_context_t *ctx,
                                const tutti_group_params_t *params,
                                tutti_group_t **group_out)
{
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_group_join");
    if (group_out == NULL)
        return null_arg("tutti_group_join", "group_out");
    tutti_status_t st = tutti__group_join(&ctx->job, ctx->timeline, params,
                                          group_out);
    if (st != TUTTI_OK)
        return st;
    /* A CUDA group's device modules, before the caller can queue work. */
    if ((st = tutti__cuda_group_setup(*group_out)) != TUTTI_OK) {
        char why[512];
        snprintf(why, sizeof(why), "%s", tutti_last_error());
        tutti_group_leave(*group_out);
        *group_out = NULL;
        /* Logged where it was found; the leave must not replace it. */
        return tutti__error_quiet(st, "%s", why);
    }
    return TUTTI_OK;
}

tutti_status_t tutti_context_sum(tutti_context_t *ctx, uint64_t value,
                                 uint64_t *sum_out)
{
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_context_sum");
    if (sum_out == NULL)
        return null_arg("tutti_context_sum", "sum_out");
    return tutti__sum(&ctx->job, value, sum_out);
}

uint64_t tutti__context_frames_sent(const tutti_context_t *ctx)
{
    return ctx->job.frames_sent;
}

/* ---- introspection ------------------------------------------------------ */

tutti_status_t tutti_info_module(const tutti_context_t *ctx, size_t index,
                                 tutti_module_info_t *info_out)
{
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_info_module");
    if (info_out == NULL)
        return null_arg("tutti_info_module", "info_out");
    if (index >= ctx->reg.num_modules)
        return tutti__error_quiet(TUTTI_ERR_NOT_FOUND, "tutti_info_module: "
                                  "index %zu: %zu modules seen", index,
                                  ctx->reg.num_modules);
    const tutti__module_t *m = &ctx->reg.modules[index];
    *info_out = (tutti_module_info_t){
        .name = m->name, .version = m->version, .path = tutti__module_where(m),
        .reason = m->reason, .abi_major = m->abi_major,
        .abi_minor = m->abi_minor,
        .kind = m->kind == TUTTI_MODULE_KIND_ALG  ? "algorithm"
                : m->kind == TUTTI_MODULE_KIND_TP ? "transport"
                                                  : "",
        .transport = m->tp != NULL ? m->tp->ops->name : NULL};
    return TUTTI_OK;
}

tutti_status_t tutti_info_transport(const tutti_context_t *ctx,
                                    const char *name, char *buf, size_t len)
{
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_info_transport");
    if (name == NULL)
        return null_arg("tutti_info_transport", "name");
    if (buf == NULL || len == 0)
        return null_arg("tutti_info_transport", "buf");
    const tutti_tp_ops_t *t = tutti__registry_find_tp(&ctx->reg, name);
    if (t == NULL)
        return tutti__error_quiet(TUTTI_ERR_NOT_FOUND, "tutti_info_transport: "
                                  "no loaded module provides transport "
                                  "'%s'", name);
    buf[0] = '\0';
    if (t->size >= offsetof(tutti_tp_ops_t, describe) + sizeof(t->describe) &&
        t->describe != NULL)
        t->describe(buf, len);
    return TUTTI_OK;
}

tutti_status_t tutti_info_impl(const tutti_context_t *ctx, size_t index,
                               tutti_impl_info_t *info_out)
{
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_info_impl");
    if (info_out == NULL)
        return null_arg("tutti_info_impl", "info_out");
    if (index >= ctx->reg.num_impls)
        return tutti__error_quiet(TUTTI_ERR_NOT_FOUND, "tutti_info_impl: "
                                  "index %zu: %zu implementations loaded",
                                  index, ctx->reg.num_impls);
    const tutti__impl_entry_t *e = &ctx->reg.impls[index];
    info_out->name = e->impl->name;
    info_out->module = ctx->reg.modules[e->module].name;
    info_out->description = e->impl->description;
    info_out->collectives = e->impl->collectives;
    info_out->per_rank_collectives = e->impl->per_rank_collectives;
    info_out->device_types = e->impl->device_types;
    info_out->aliases = e->impl->aliases;
    return TUTTI_OK;
}

tutti_status_t tutti_info_explain(const tutti_context_t *ctx,
                                  const tutti_select_query_t *query, char *buf,
                                  size_t buflen, const char **impl_out)
{
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_info_explain");
    if (query == NULL || impl_out == NULL || (buf == NULL && buflen > 0))
        return null_arg("tutti_info_explain", query == NULL ? "query"
                                              : impl_out == NULL ? "impl_out"
                                                                 : "buf");
    *impl_out = NULL;
    if ((unsigned)query->collective >= TUTTI_COLL_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "select", "tutti_info_"
                            "explain: query->collective %d is not a "
                            "tutti_collective_t; expected 0 to %d",
                            (int)query->collective, TUTTI_COLL_COUNT - 1);
    if ((unsigned)query->device_type >= TUTTI_DEVICE_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "select", "tutti_info_"
                            "explain: query->device_type %d is not a "
                            "tutti_device_type_t; expected 0 to %d",
                            (int)query->device_type, TUTTI_DEVICE_COUNT - 1);
    if ((unsigned)query->dtype >= TUTTI_DTYPE_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "select", "tutti_info_"
                            "explain: query->dtype %d is not a tutti_dtype_t; "
                            "expected 0 to %d", (int)query->dtype,
                            TUTTI_DTYPE_COUNT - 1);
    const tutti__accept_t accept = {&ctx->reg, NULL};
    const tutti__rule_t *rule = tutti__select(
        &ctx->cfg, query, tutti__registry_accept, &accept, buf, buflen);
    if (rule == NULL)
        return tutti__error_quiet(TUTTI_ERR_NOT_FOUND, "tutti_info_explain: "
                                  "no rule picks an implementation loaded "
                                  "for %s on %s",
                                  tutti_collective_name(query->collective),
                                  tutti_device_type_name(query->device_type));
    const tutti__impl_entry_t *e = tutti__registry_find(&ctx->reg,
                                                        rule->algorithm);
    if (e == NULL)
        return tutti__error_quiet(TUTTI_ERR_NOT_FOUND, "tutti_info_explain: "
                                  "rule's implementation %s is not loaded",
                                  rule->algorithm);
    *impl_out = e->impl->name;
    return TUTTI_OK;
}

/* What the lint needs to know of a loaded implementation (registry.c
 * decides the same at each call). */
static tutti__lint_impl_t lint_impl(const tutti__registry_t *reg,
                                    const tutti__impl_entry_t *e)
{
    const tutti_alg_impl_t *im = e->impl;
    tutti__lint_impl_t li = {
        .name = im->name, .module = reg->modules[e->module].name,
        .collectives = im->collectives,
        .per_rank_collectives = im->per_rank_collectives,
        .native_devices = im->device_types,
        .may_decline = tutti__impl_may_decline(im),
        .declares_params = im->params != NULL};
    for (int d = 0; d < TUTTI_DEVICE_COUNT; d++)
        if (tutti__impl_serves(im, (tutti_device_type_t)d))
            li.devices |= TUTTI_DEVICE_BIT(d);
    return li;
}

tutti_status_t tutti_info_lint(const tutti_context_t *ctx, void *file,
                               size_t *findings_out)
{
    tutti__error_clear();
    if (ctx == NULL)
        return null_ctx("tutti_info_lint");
    if (file == NULL || findings_out == NULL)
        return null_arg("tutti_info_lint",
                        file == NULL ? "file" : "findings_out");
    tutti__lint_impl_t *impls = calloc(ctx->reg.num_impls + 1,
                                       sizeof(*impls));
    if (impls == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "select", "tutti_info_lint: "
                            "no memory for %zu implementations",
                            ctx->reg.num_impls);
    for (size_t i = 0; i < ctx->reg.num_impls; i++)
        impls[i] = lint_impl(&ctx->reg, &ctx->reg.impls[i]);
    tutti_status_t st = tutti__select_lint(&ctx->cfg, impls,
                                           ctx->reg.num_impls, file,
                                           findings_out);
    free(impls);
    if (st != TUTTI_OK)
        return tutti__error(st, "select", "tutti_info_lint: no memory to "
                            "lint the rules of %s",
                            ctx->cfg.path ? ctx->cfg.path : "(no file)");
    return TUTTI_OK;
}

void tutti_info_print_config(const tutti_context_t *ctx, void *file)
{
    FILE *out = file;
    if (ctx == NULL || file == NULL) {
        null_arg("tutti_info_print_config", ctx ? "file" : "ctx");
        return;
    }
    fprintf(out, "task %d of %d, job %s\n", ctx->job.task,
            ctx->job.num_tasks, ctx->job.job_id);
    fprintf(out, "module search path:\n");
    for (size_t i = 0; i < ctx->module_dirs.count; i++)
        fprintf(out, "  %s\n", ctx->module_dirs.items[i]);
    tutti__config_print(&ctx->cfg, out);
}

void tutti_info_print_settings(const tutti_context_t *ctx, void *file)
{
    if (ctx == NULL || file == NULL) {
        null_arg("tutti_info_print_settings", ctx ? "file" : "ctx");
        return;
    }
    tutti__config_print_settings(&ctx->cfg, file);
}
