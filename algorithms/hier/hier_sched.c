/*
 * The schedule every hierarchical implementation replays: steps of
 * messages and local work, built once per instance (init_context) into
 * arrays, so an execution allocates nothing.  A step starts once every
 * message of the one before completed: its local work is done at once,
 * then its sends and receives are all posted.  Every member's steps
 * follow the same phases in the same order and each sends in step order,
 * so every peer channel carries messages in the order their receives are
 * posted.  A message's tag is its step and its index among the step's
 * messages between the pair (hier.h), which sender and receiver compute
 * alike.
 */
#include <stdlib.h>
#include <string.h>

#include "hier.h"

enum { OP_SEND, OP_RECV, OP_RECV_REDUCE, OP_COPY, OP_REDUCE };

/* ---- building -------------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t each)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * each);
    if (q == NULL)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

void tutti_alg_hier_step(tutti_alg_hier_sched_t *s, const char *phase)
{
    if (s->failed)
        return;
    if (s->nsteps + 2 > s->step_cap) {
        size_t c = s->step_cap ? s->step_cap * 2 : 16;
        size_t *first = realloc(s->first, c * sizeof(*first));
        if (first != NULL)
            s->first = first;
        const char **ph = realloc(s->phase, c * sizeof(*ph));
        if (ph != NULL)
            s->phase = ph;
        if (first == NULL || ph == NULL) {
            s->failed = 1;
            return;
        }
        s->step_cap = c;
    }
    if (s->nsteps == 0)
        s->first[0] = 0;
    s->phase[s->nsteps] = phase;
    s->nsteps++;
    s->first[s->nsteps] = s->nops;
}

static void add(tutti_alg_hier_sched_t *s, int kind, int peer, uint32_t sub,
                int buf, size_t off, int src, size_t soff, size_t len)
{
    if (len == 0 || s->failed)
        return;
    if (s->nsteps == 0 || sub >= TUTTI_ALG_HIER_SUBS ||
        s->nsteps > UINT32_MAX / TUTTI_ALG_HIER_SUBS ||
        grow((void **)&s->ops, &s->cap, s->nops + 1, sizeof(*s->ops)) != 0) {
        s->failed = 1;
        return;
    }
    tutti_alg_hier_op_t *o = &s->ops[s->nops++];
    o->kind = (uint8_t)kind;
    o->buf = (uint8_t)buf;
    o->src = (uint8_t)src;
    o->peer = peer;
    o->tag = (uint32_t)(s->nsteps - 1) * TUTTI_ALG_HIER_SUBS + sub;
    o->off = off;
    o->soff = soff;
    o->len = len;
    s->first[s->nsteps] = s->nops;
}

void tutti_alg_hier_send(tutti_alg_hier_sched_t *s, int peer, uint32_t sub,
                         int buf, size_t off, size_t len)
{
    add(s, OP_SEND, peer, sub, buf, off, buf, off, len);
}

void tutti_alg_hier_recv(tutti_alg_hier_sched_t *s, int peer, uint32_t sub,
                         int buf, size_t off, size_t len)
{
    add(s, OP_RECV, peer, sub, buf, off, buf, off, len);
}

void tutti_alg_hier_recv_reduce(tutti_alg_hier_sched_t *s, int peer,
                                uint32_t sub, int buf, size_t off, int src,
                                size_t soff, size_t len)
{
    add(s, OP_RECV_REDUCE, peer, sub, buf, off, src, soff, len);
}

void tutti_alg_hier_copy(tutti_alg_hier_sched_t *s, int buf, size_t off,
                         int src, size_t soff, size_t len)
{
    add(s, OP_COPY, -1, 0, buf, off, src, soff, len);
}

void tutti_alg_hier_reduce(tutti_alg_hier_sched_t *s, int buf, size_t off,
                           int src, size_t soff, size_t len)
{
    add(s, OP_REDUCE, -1, 0, buf, off, src, soff, len);
}

/* Messages of the busiest step: the transfers a member keeps. */
static size_t busiest(const tutti_alg_hier_sched_t *s)
{
    size_t most = 0;
    for (size_t k = 0; k < s->nsteps; k++) {
        size_t m = 0;
        for (size_t i = s->first[k]; i < s->first[k + 1]; i++)
            m += s->ops[i].kind <= OP_RECV_REDUCE;
        most = m > most ? m : most;
    }
    return most;
}

size_t tutti_alg_hier_no_scratch(const tutti_alg_hier_state_t *s)
{
    (void)s;
    return 0;
}

/* ---- an instance ------------------------------------------------------ */

void tutti_alg_hier_fini(void *state)
{
    tutti_alg_hier_state_t *s = state;
    if (s == NULL)
        return;
    tutti_alg_hier_topo_fini(&s->topo);
    free(s->sched.ops);
    free(s->sched.first);
    free(s->sched.phase);
    free(s->scratch);
    free(s->xfer);
    free(s);
}

tutti_status_t tutti_alg_hier_init(const tutti_alg_hier_impl_t *impl,
                                   const tutti_alg_instance_t *inst,
                                   const tutti_core_ops_t *core,
                                   void **state_out)
{
    tutti_alg_hier_state_t *s = calloc(1, sizeof(*s));
    tutti_status_t st;

    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory",
                           impl->name);
    s->impl = impl;
    s->inst = inst;
    s->core = core;
    s->esize = tutti_dtype_size(inst->dtype);
    s->bytes = inst->count * s->esize;
    st = tutti_alg_hier_topo_init(&s->topo, inst, core, impl->name);
    if (st != TUTTI_OK) {
        free(s);
        return st;
    }
    s->scratch_bytes = impl->scratch(s);
    if (s->scratch_bytes > 0 &&
        (s->scratch = malloc(s->scratch_bytes)) == NULL) {
        st = core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory for %zu "
                         "bytes of scratch", impl->name, s->scratch_bytes);
        goto err_free;
    }
    impl->build(s);
    if (s->sched.failed) {
        st = core->error(TUTTI_ERR_NO_MEMORY, "%s: cannot build the "
                         "schedule of %d hosts x %d members (out of memory, "
                         "or more than %u messages in a step between a "
                         "pair)", impl->name, s->topo.hosts,
                         s->topo.per_host, TUTTI_ALG_HIER_SUBS);
        goto err_free;
    }
    s->sched.max_xfers = busiest(&s->sched);
    if (s->sched.max_xfers > 0 &&
        (s->xfer = calloc(s->sched.max_xfers, sizeof(*s->xfer))) == NULL) {
        st = core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory",
                         impl->name);
        goto err_free;
    }
    core->log(3, impl->name, "instance 0x%llx rank %d: member (%d, %d) of "
              "%d hosts x %d, %zu steps, %zu operations, %zu bytes of "
              "scratch", (unsigned long long)inst->instance_key, inst->rank,
              s->topo.host, s->topo.local, s->topo.hosts, s->topo.per_host,
              s->sched.nsteps, s->sched.nops, s->scratch_bytes);
    *state_out = s;
    return TUTTI_OK;
err_free:
    tutti_alg_hier_fini(s);
    return st;
}

/* ---- an execution ----------------------------------------------------- */

static char *at(tutti_alg_hier_state_t *s, int buf, size_t off)
{
    return (char *)s->bufs[buf] + off;
}

/* Starts step s->step: its local work, then its messages, which
 * s->posted counts (advance tests that many, no walk over the step). */
static tutti_status_t post_step(tutti_alg_hier_state_t *s,
                                tutti_alg_exec_t *x)
{
    const tutti_alg_hier_sched_t *sc = &s->sched;
    size_t k = s->step;
    tutti_status_t st = TUTTI_OK;

    s->posted = 0;
    if (sc->phase[k] != NULL)
        tutti_alg_exec_phase(x, sc->phase[k]);
    for (size_t i = sc->first[k]; i < sc->first[k + 1]; i++) {
        const tutti_alg_hier_op_t *o = &sc->ops[i];
        switch (o->kind) {
        case OP_COPY:
            memmove(at(s, o->buf, o->off), at(s, o->src, o->soff), o->len);
            break;
        case OP_REDUCE:
            x->core->reduce(s->inst->dtype, s->inst->op,
                            at(s, o->buf, o->off), at(s, o->buf, o->off),
                            at(s, o->src, o->soff), o->len / s->esize);
            break;
        case OP_SEND:
            st = x->core->send(x, o->peer, o->tag, at(s, o->buf, o->off),
                               o->len, &s->xfer[s->posted++]);
            break;
        default: {
            tutti_recv_reduce_t red = {at(s, o->src, o->soff)};
            st = x->core->recv(x, o->peer, o->tag, at(s, o->buf, o->off),
                               o->len, o->kind == OP_RECV_REDUCE ? &red
                                                                 : NULL,
                               &s->xfer[s->posted++]);
            break;
        }
        }
        if (st != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

/* Goes through the steps whose messages are done; OK after the last. */
static tutti_status_t advance(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    tutti_status_t st;
    while (s->step < s->sched.nsteps) {
        int busy = 0;
        for (size_t i = 0; i < s->posted; i++) {
            st = x->core->test(x, &s->xfer[i]);
            if (st == TUTTI_INPROGRESS)
                busy = 1;
            else if (st != TUTTI_OK)
                return st;
        }
        if (busy)
            return TUTTI_INPROGRESS;
        if (++s->step == s->sched.nsteps)
            break;
        if ((st = post_step(s, x)) != TUTTI_OK)
            return st;
    }
    if (s->impl->end != NULL)
        s->impl->end(s, x);
    return TUTTI_OK;
}

tutti_status_t tutti_alg_hier_run(void *state, tutti_alg_exec_t *x)
{
    tutti_alg_hier_state_t *s = state;
    tutti_status_t st;

    s->bufs[TUTTI_ALG_HIER_SEND] = (void *)x->sendbuf;
    s->bufs[TUTTI_ALG_HIER_RECV] = x->recvbuf;
    s->bufs[TUTTI_ALG_HIER_SCRATCH] = s->scratch;
    s->bufs[TUTTI_ALG_HIER_RESULT] = x->recvbuf;
    s->step = 0;
    if (s->impl->begin != NULL)
        s->impl->begin(s, x);
    if (s->sched.nsteps == 0) {
        if (s->impl->end != NULL)
            s->impl->end(s, x);
        return TUTTI_OK;
    }
    if ((st = post_step(s, x)) != TUTTI_OK)
        return st;
    return advance(s, x);
}

tutti_status_t tutti_alg_hier_progress(void *state, tutti_alg_exec_t *x)
{
    return advance(state, x);
}
