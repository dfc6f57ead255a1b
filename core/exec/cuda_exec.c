/*
 * Executions on CUDA groups (exec.h).  An implementation that runs on
 * device memory gets the caller's buffers and stream; the core pre-scales
 * its input and post-scales its output with CUDA kernels on that stream,
 * then polls an event, so the request completes once the result is in
 * place.  Any other implementation is staged (device/stage.h): the input
 * is copied to pinned host buffers, the implementation runs there out of
 * place (with the host's scaling), the output is copied back, and the
 * caller's stream is held by a gate until then.  Either way no thread
 * blocks on the device.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "exec/exec.h"

enum { PHASE_RUN = 0, PHASE_POST, PHASE_IN, PHASE_OUT };

/* ---- the member's device ---------------------------------------------- */

/* Events, streams and kernels belong to a device: what the core records,
 * waits for or launches for a member needs the member's device current.
 * enter() makes it so and gives the caller's (-1: unknown, where the
 * table cannot tell) for leave() to put back before the call returns. */
static int enter(const tutti_group_t *g, int *prev_out)
{
    const tutti__cuda_ops_t *ops = g->cuda;
    int prev = -1;
    if (TUTTI__CUDA_HAS(ops, get_device) && ops->get_device(&prev) != 0)
        prev = -1;
    *prev_out = prev;
    return prev == g->device_index ? 0 : ops->set_device(g->device_index);
}

static void leave(const tutti_group_t *g, int prev)
{
    if (prev >= 0 && prev != g->device_index)
        (void)g->cuda->set_device(prev);
}

static tutti_status_t enter_error(const tutti_group_t *g, int err)
{
    return tutti__cuda_error(TUTTI_ERR_IO, err, "group 0x%llx rank %d: "
                             "making cuda:%d current",
                             (unsigned long long)g->key, g->rank,
                             g->device_index);
}

/* ---- checks and set-up ------------------------------------------------ */

static tutti_status_t check_one(const tutti_group_t *g,
                                const tutti_instance_params_t *p,
                                const char *name, const void *buf,
                                const tutti__cuda_ops_t *ops)
{
    int dev = -1, err;
    if (buf == NULL)
        return TUTTI_OK;
    if ((err = ops->pointer_device(buf, &dev)) != 0)
        return tutti__cuda_error(TUTTI_ERR_INVALID_ARG, err, "instance "
                                 "0x%llx: %s %p",
                                 (unsigned long long)p->instance_key, name,
                                 buf);
    int want = g->device_type == TUTTI_DEVICE_CUDA ? g->device_index : -1;
    if (dev == want)
        return TUTTI_OK;
    char is[32], expected[32];
    snprintf(is, sizeof(is), dev < 0 ? "host memory" : "memory of cuda:%d",
             dev);
    snprintf(expected, sizeof(expected),
             want < 0 ? "host memory" : "memory of cuda:%d", want);
    return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "group 0x%llx rank %d "
                        "(%s) instance 0x%llx: %s %p is %s; a %s group "
                        "takes %s", (unsigned long long)g->key, g->rank,
                        g->device_name, (unsigned long long)p->instance_key,
                        name, buf, is,
                        tutti_device_type_name(g->device_type), expected);
}

tutti_status_t tutti__cuda_check_buffers(const tutti_group_t *g,
                                         const tutti_instance_params_t *p,
                                         const void *sendbuf,
                                         const void *recvbuf)
{
    /* A cpu group is checked only where CUDA is loaded already: a
     * cpu-only job never loads it for this. */
    const tutti__cuda_ops_t *ops =
        g->device_type == TUTTI_DEVICE_CUDA ? g->cuda : tutti__cuda_loaded();
    tutti_status_t st;
    if (ops == NULL)
        return TUTTI_OK;
    if ((st = check_one(g, p, "sendbuf", sendbuf, ops)) != TUTTI_OK)
        return st;
    return recvbuf == sendbuf ? TUTTI_OK
                              : check_one(g, p, "recvbuf", recvbuf, ops);
}

tutti_status_t tutti__cuda_inst_new(tutti_group_t *g, tutti__instance_t *inst)
{
    int prev, err;
    if (g->device_type != TUTTI_DEVICE_CUDA)
        return TUTTI_OK;
    if ((err = enter(g, &prev)) != 0)
        return enter_error(g, err);
    tutti_status_t st = tutti__dstage_create(g->cuda, g->device_index,
                                             &inst->dstage);
    leave(g, prev);
    return st;
}

static tutti_status_t inst_setup(tutti_group_t *g, tutti__instance_t *inst)
{
    const tutti_instance_params_t *p = &inst->params;
    const tutti__cuda_ops_t *ops = g->cuda;
    int err;
    if (inst->impl->impl->flags & TUTTI_IMPL_DEVICE_MEMORY) {
        if ((err = ops->event_create(&inst->dev_done)) != 0)
            return tutti__cuda_error(TUTTI_ERR_UNSUPPORTED, err, "instance "
                                     "0x%llx on cuda:%d",
                                     (unsigned long long)p->instance_key,
                                     g->device_index);
        inst->mode = TUTTI__MODE_DEVICE;
        return TUTTI_OK;
    }
    size_t in = 0, out = 0, in_off, out_off, esize = tutti_dtype_size(p->dtype);
    /* Per-rank counts come with each execution: their buffers grow
     * then. */
    if (!inst->per_rank &&
        tutti__coll_layout(p, NULL, g->rank, g->size, 0, &in_off, &in,
                           &out_off, &out) != TUTTI_OK)
        in = out = 0;
    tutti_status_t st = tutti__dstage_staging(inst->dstage, in * esize,
                                              out * esize);
    if (st == TUTTI_OK)
        inst->mode = TUTTI__MODE_STAGED;
    return st;
}

tutti_status_t tutti__cuda_inst_setup(tutti_group_t *g,
                                      tutti__instance_t *inst)
{
    int prev, err;
    inst->ordered = (inst->impl->impl->flags & TUTTI_IMPL_ORDERED) != 0;
    if (g->device_type != TUTTI_DEVICE_CUDA) {
        inst->mode = TUTTI__MODE_HOST;
        return TUTTI_OK;
    }
    if ((err = enter(g, &prev)) != 0)
        return tutti__cuda_error(TUTTI_ERR_UNSUPPORTED, err, "instance "
                                 "0x%llx on cuda:%d",
                                 (unsigned long long)inst->params.instance_key,
                                 g->device_index);
    tutti_status_t st = inst_setup(g, inst);
    leave(g, prev);
    return st;
}

void tutti__cuda_inst_free(tutti__instance_t *inst)
{
    int device = inst->dstage != NULL ? inst->dstage->device : 0;
    tutti__dstage_destroy(inst->dstage);
    inst->dstage = NULL;
    const tutti__cuda_ops_t *ops = tutti__cuda_loaded();
    if (ops == NULL)
        return;
    tutti__dfree(ops, device, inst->dev_stage, 0);
    if (inst->dev_done)
        ops->event_destroy(inst->dev_done);
}

void tutti__cuda_request_free(tutti_group_t *g, tutti_request_t *r)
{
    if (r->ev_issue != NULL && g->cuda != NULL)
        g->cuda->event_destroy(r->ev_issue);
    r->ev_issue = NULL;
}

/* ---- holding the caller's stream ------------------------------------- */

/* The member's device current (the caller's back after). */
static tutti_status_t hold(tutti_request_t *r)
{
    tutti_group_t *g = r->group;
    int err, prev;
    if ((err = enter(g, &prev)) != 0)
        return enter_error(g, err);
    tutti_status_t st;
    if (r->ev_issue == NULL && (err = g->cuda->event_create(&r->ev_issue)))
        st = tutti__cuda_error(TUTTI_ERR_IO, err, "cuda:%d: an event for "
                               "an execution", g->device_index);
    else
        st = tutti__dstage_hold(r->inst->dstage, r->stream, r->ev_issue,
                                &r->gate_seq);
    leave(g, prev);
    return st;
}

tutti_status_t tutti__cuda_issue(tutti_request_t *r)
{
    tutti__instance_t *inst = r->inst;
    r->gate_seq = 0;
    r->hold_error = TUTTI_OK;
    if (r->group->device_type != TUTTI_DEVICE_CUDA || r->group->setting_up ||
        (inst->resolved && inst->mode == TUTTI__MODE_DEVICE))
        return TUTTI_OK; /* tutti__cuda_issued decides */
    return hold(r);
}

void tutti__cuda_issued(tutti_request_t *r)
{
    tutti_status_t st;
    if (r->group->device_type != TUTTI_DEVICE_CUDA || r->gate_seq != 0 ||
        r->group->setting_up || r->inst->mode != TUTTI__MODE_DEVICE ||
        r->status != TUTTI_INPROGRESS)
        return;
    int launched = r->launch_order != 0;
    if (launched && r->phase != PHASE_RUN)
        return; /* its work is queued on the caller's stream */
    /* Its work is not queued yet: the caller's stream waits for it, and
     * it goes on the instance's stream. */
    int prev, err;
    if ((err = enter(r->group, &prev)) != 0)
        st = enter_error(r->group, err);
    else if ((st = hold(r)) == TUTTI_OK && launched &&
             (st = tutti__dstage_attach(r->inst->dstage, r->ev_issue)) ==
                 TUTTI_OK)
        r->exec.stream = r->inst->dstage->stream;
    if (err == 0)
        leave(r->group, prev);
    if (st != TUTTI_OK) {
        r->hold_error = st;
        tutti__request_set_error(r, tutti_last_error());
    }
}

/* ---- the device path ---------------------------------------------------- */

static tutti_status_t dev_stage(tutti_group_t *g, tutti__instance_t *inst,
                                size_t bytes)
{
    if (bytes <= inst->dev_stage_len)
        return TUTTI_OK;
    void *buf = NULL;
    int err = g->cuda->dev_alloc(bytes, &buf);
    if (err != 0)
        return tutti__cuda_error(TUTTI_ERR_NO_MEMORY, err, "instance 0x%llx: "
                                 "%zu bytes of cuda:%d memory for its "
                                 "prepared input",
                                 (unsigned long long)inst->params.instance_key,
                                 bytes, g->device_index);
    tutti__dfree(g->cuda, g->device_index, inst->dev_stage, 0);
    inst->dev_stage = buf;
    inst->dev_stage_len = bytes;
    return TUTTI_OK;
}

/* tutti__coll_prepare's plan, carried out by kernels on the stream. */
static tutti_status_t dev_prepare(tutti_request_t *r)
{
    tutti_group_t *g = r->group;
    tutti__instance_t *inst = r->inst;
    const tutti_instance_params_t *p = &inst->params;
    tutti_alg_exec_t *x = &r->exec;
    size_t in, esize = tutti_dtype_size(p->dtype);
    tutti__prep_t plan;
    int err = 0;
    tutti_status_t st = tutti__coll_prepare_plan(p, g->rank, g->size, x,
                                                 &plan, &in);
    if (st != TUTTI_OK || plan == TUTTI__PREP_NONE)
        return st;
    void *dst = x->recvbuf;
    if (plan != TUTTI__PREP_SCALE_TO_RECV) {
        if ((st = dev_stage(g, inst, in * esize)) != TUTTI_OK)
            return st;
        dst = inst->dev_stage;
    }
    /* On the execution's stream: the caller's, or the instance's when
     * the call was held. */
    if (plan == TUTTI__PREP_COPY_TO_STAGE)
        err = in ? g->cuda->memcpy_async(dst, x->sendbuf, in * esize,
                                         x->stream)
                 : 0;
    else
        err = g->cuda->scale(p->dtype, dst, x->sendbuf, in, p->pre_scale,
                             x->stream);
    if (err != 0)
        return tutti__cuda_error(TUTTI_ERR_IO, err, "instance 0x%llx: "
                                 "preparing the input on cuda:%d",
                                 (unsigned long long)p->instance_key,
                                 g->device_index);
    x->sendbuf = dst;
    return TUTTI_OK;
}

/* The implementation's work is ordered on the stream: avg and post_scale
 * by kernels behind it, then an event to poll, so the request completes
 * once the result is in place.  On a stream being captured into a CUDA
 * graph nothing runs now: the request completes at once, and the work
 * runs when the graph is launched. */
static tutti_status_t dev_post(tutti_request_t *r)
{
    tutti_group_t *g = r->group;
    tutti__instance_t *inst = r->inst;
    const tutti_instance_params_t *p = &inst->params;
    size_t off = 0, count = 0, esize = tutti_dtype_size(p->dtype);
    void *stream = r->exec.stream;
    int err = 0, capturing = 0;
    if (inst->postscaled)
        tutti__coll_postscale_span(p, g->rank, &r->exec, &off, &count);
    char *buf = (char *)r->exec.recvbuf + off * esize;
    if (count > 0 && p->op == TUTTI_OP_AVG)
        err = g->cuda->divide(p->dtype, buf, count, g->size, stream);
    if (err == 0 && count > 0 && p->post_scale != 0.0 && p->post_scale != 1.0)
        err = g->cuda->scale(p->dtype, buf, buf, count, p->post_scale, stream);
    if (err == 0)
        err = g->cuda->stream_capturing(stream, &capturing);
    if (err == 0 && capturing)
        return TUTTI_OK;
    if (err == 0)
        err = g->cuda->event_record(inst->dev_done, stream);
    if (err != 0)
        return tutti__cuda_error(TUTTI_ERR_IO, err, "instance 0x%llx: "
                                 "finishing on cuda:%d",
                                 (unsigned long long)p->instance_key,
                                 g->device_index);
    r->phase = PHASE_POST;
    return TUTTI_INPROGRESS;
}

static tutti_status_t dev_poll(tutti_request_t *r)
{
    int err = r->group->cuda->event_query(r->inst->dev_done);
    if (err == TUTTI__CUDA_PENDING)
        return TUTTI_INPROGRESS;
    if (err == 0)
        return TUTTI_OK;
    return tutti__cuda_error(TUTTI_ERR_IO, err, "instance 0x%llx on cuda:%d",
                             (unsigned long long)r->inst->params.instance_key,
                             r->group->device_index);
}

/* ---- the staged path ------------------------------------------------- */

/* Runs the implementation on the staged input, out of place. */
static tutti_status_t staged_run(tutti_request_t *r)
{
    tutti__dstage_t *s = r->inst->dstage;
    tutti_alg_exec_t *x = &r->exec;
    tutti_status_t st = TUTTI_OK;
    x->sendbuf = r->dev_send ? s->host_in : NULL;
    x->recvbuf = r->dev_recv ? s->host_out : NULL;
    x->stream = NULL;
    if (r->inst->prepared)
        st = tutti__coll_prepare_pooled(&r->inst->params, r->group->rank,
                                        r->group->size, &r->group->stages,
                                        &r->stage, x);
    if (st == TUTTI_OK)
        st = r->inst->impl->impl->ops->run(r->inst->state, x);
    r->phase = PHASE_RUN;
    return st;
}

/* The implementation finished: the host's scaling, then the copy back. */
static tutti_status_t staged_back(tutti_request_t *r)
{
    tutti_group_t *g = r->group;
    tutti__instance_t *inst = r->inst;
    const tutti_instance_params_t *p = &inst->params;
    size_t in_off, in, out_off, out, esize = tutti_dtype_size(p->dtype);
    tutti_status_t st = TUTTI_OK;
    if (inst->postscaled)
        st = tutti__coll_postscale(p, g->rank, g->size, &r->exec);
    if (st == TUTTI_OK)
        st = tutti__coll_layout(p, r->exec.counts, g->rank, g->size,
                                r->dev_send == r->dev_recv, &in_off, &in,
                                &out_off, &out);
    if (st != TUTTI_OK)
        return st;
    /* What arrived, where the implementation says; else all of out. */
    if (inst->per_rank && p->collective != TUTTI_COLL_REDUCE_SCATTER)
        out = r->exec.recv_total;
    if (r->dev_recv == NULL)
        out = 0;
    st = tutti__dstage_copy_out(inst->dstage,
                                (char *)r->dev_recv + out_off * esize,
                                out * esize);
    r->phase = PHASE_OUT;
    return st == TUTTI_OK ? TUTTI_INPROGRESS : st;
}

static tutti_status_t staged_start(tutti_request_t *r)
{
    tutti_group_t *g = r->group;
    tutti__instance_t *inst = r->inst;
    const tutti_instance_params_t *p = &inst->params;
    size_t in_off, in, out_off, out, esize = tutti_dtype_size(p->dtype);
    tutti_status_t st = tutti__coll_layout(p, r->exec.counts, g->rank,
                                           g->size,
                                           r->dev_send == r->dev_recv &&
                                               r->dev_send != NULL,
                                           &in_off, &in, &out_off, &out);
    if (st != TUTTI_OK)
        return st;
    if (r->dev_send == NULL ||
        (p->collective == TUTTI_COLL_BROADCAST && g->rank != p->root))
        in = 0; /* nothing to read */
    if ((st = tutti__dstage_reserve(inst->dstage, in * esize,
                                    out * esize)) != TUTTI_OK ||
        (st = tutti__dstage_copy_in(inst->dstage,
                                    (const char *)r->dev_send +
                                        in_off * esize,
                                    in * esize)) != TUTTI_OK)
        return st;
    r->phase = PHASE_IN;
    return TUTTI_INPROGRESS;
}

/* ---- both ---------------------------------------------------------------- */

static tutti_status_t start(tutti_request_t *r)
{
    tutti_status_t st;
    if (r->hold_error != TUTTI_OK)
        return tutti__error(r->hold_error, "exec", "%s",
                            tutti__request_error(r));
    r->dev_send = r->exec.sendbuf;
    r->dev_recv = r->exec.recvbuf;
    r->exec.stream = r->stream;
    if (r->gate_seq != 0) {
        /* Held: the work goes on the instance's stream, after the point
         * the caller's stream had reached at the call. */
        if ((st = tutti__dstage_attach(r->inst->dstage, r->ev_issue)) !=
            TUTTI_OK)
            return st;
        r->exec.stream = r->inst->dstage->stream;
    }
    if (r->inst->mode == TUTTI__MODE_STAGED)
        return staged_start(r);
    r->phase = PHASE_RUN;
    if (r->inst->prepared && (st = dev_prepare(r)) != TUTTI_OK)
        return st;
    st = r->inst->impl->impl->ops->run(r->inst->state, &r->exec);
    return st == TUTTI_OK ? dev_post(r) : st;
}

tutti_status_t tutti__cuda_start(tutti_request_t *r)
{
    int prev, err = enter(r->group, &prev);
    if (err != 0)
        return enter_error(r->group, err);
    tutti_status_t st = start(r);
    leave(r->group, prev);
    return st;
}

static tutti_status_t progress(tutti_request_t *r)
{
    const tutti_alg_ops_t *ops = r->inst->impl->impl->ops;
    tutti_status_t st;
    if (r->hold_error != TUTTI_OK)
        return tutti__error(r->hold_error, "exec", "%s",
                            tutti__request_error(r));
    switch (r->phase) {
    case PHASE_POST:
        return dev_poll(r);
    case PHASE_IN:
        st = tutti__dstage_input_ready(r->inst->dstage);
        if (st != TUTTI_OK)
            return st;
        st = staged_run(r);
        break;
    case PHASE_OUT:
        return tutti__dstage_output_ready(r->inst->dstage);
    default: /* PHASE_RUN */
        st = ops->progress(r->inst->state, &r->exec);
        break;
    }
    if (st != TUTTI_OK)
        return st;
    return r->inst->mode == TUTTI__MODE_STAGED ? staged_back(r) : dev_post(r);
}

tutti_status_t tutti__cuda_progress(tutti_request_t *r)
{
    int prev, err = enter(r->group, &prev);
    if (err != 0)
        return enter_error(r->group, err);
    tutti_status_t st = progress(r);
    leave(r->group, prev);
    return st;
}

void tutti__cuda_end(tutti_request_t *r)
{
    if (r->gate_seq != 0 && r->inst->dstage != NULL)
        tutti__dstage_release(r->inst->dstage, r->gate_seq);
    r->gate_seq = 0;
}

/* Opens the gate of every execution of @p g still holding its caller's
 * stream. */
static void release_held(tutti_group_t *g)
{
    for (tutti_request_t *r = g->all_requests; r != NULL; r = r->all_next)
        if (r->state == TUTTI__HANDLE_LIVE && r->status == TUTTI_INPROGRESS &&
            r->gate_seq != 0)
            tutti__cuda_end(r);
}

void tutti__group_abort_modules(tutti_group_t *g, const char *why)
{
    const tutti__registry_t *reg = g->job->reg;
    /* A module's abort (ncclCommAbort) may wait for its kernels, and one
     * queued behind a gate on the same stream would wait for ever: every
     * held stream of the group goes on first.  The executions fail. */
    for (size_t m = 0; m < reg->num_modules && g->cuda != NULL; m++) {
        const tutti_alg_group_ops_t *gops = reg->modules[m].group_ops;
        if (g->mod_state[m].made && !g->mod_state[m].aborted &&
            gops != NULL && gops->abort_group != NULL) {
            release_held(g);
            break;
        }
    }
    for (size_t m = 0; m < reg->num_modules; m++) {
        tutti__group_state_t *gs = &g->mod_state[m];
        const tutti_alg_group_ops_t *gops = reg->modules[m].group_ops;
        if (!gs->made || gs->aborted || gops == NULL ||
            gops->abort_group == NULL)
            continue;
        gs->aborted = 1;
        tutti__log(TUTTI_LOG_INFO, "exec", "group 0x%llx: module %s stops "
                   "its device work: %s", (unsigned long long)g->key,
                   reg->modules[m].name, why);
        gops->abort_group(gs->state, why);
    }
}
