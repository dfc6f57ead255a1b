/*
 * GatherBcastAllreduce: an out-of-tree algorithm module for Tutti, built
 * against the installed headers alone (pkg-config --cflags tutti), as a
 * starting point for your own.  The algorithm is the plainest correct one:
 * every member sends its input to rank 0, which reduces each on receipt
 * into its output, then sends the result to every member.  Cost: 2(n-1)
 * messages of the whole buffer through rank 0 (use it to learn the API,
 * not for speed).  Limits: equal counts, CPU memory.
 *
 * An implementation is a table of callbacks (tutti_alg_ops_t): init_context
 * makes per-member state once per instance; run starts an execution and
 * progress advances it, each returning TUTTI_OK when it is complete,
 * TUTTI_INPROGRESS while transfers are in flight, or an error (recorded
 * with core->error).  Data moves only through core->send, core->recv and
 * core->test; the core reduces on receipt when recv is given a
 * tutti_recv_reduce_t, and applies avg and the scales around the call.
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#define IMPL "GatherBcastAllreduce"

enum { TAG_UP = 1, TAG_DOWN = 2 };

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t bytes;
    int phase;             /* 0: gathering, 1: sending the result back */
    int next;              /* the peer the phase handles next */
    tutti_xfer_t xfer;     /* the one transfer in flight */
} gb_state_t;

static tutti_status_t gb_init_context(const tutti_alg_instance_t *inst,
                                      const tutti_core_ops_t *core,
                                      const void *details, size_t details_len,
                                      void **state_out)
{
    gb_state_t *s = calloc(1, sizeof(*s));
    (void)details;
    (void)details_len;
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": out of memory");
    s->inst = inst;
    s->bytes = inst->count * tutti_dtype_size(inst->dtype);
    *state_out = s;
    return TUTTI_OK;
}

/* Posts the transfer of step (phase, next); 0 if there is none left. */
static int post(gb_state_t *s, tutti_alg_exec_t *x, tutti_status_t *st)
{
    int n = s->inst->group_size, r = s->inst->rank;
    tutti_recv_reduce_t red = {x->recvbuf};
    if (r != 0) {
        /* Up: our input to rank 0; down: the result into recvbuf. */
        if (s->phase == 0)
            *st = x->core->send(x, 0, TAG_UP, x->sendbuf, s->bytes, &s->xfer);
        else if (s->phase == 1)
            *st = x->core->recv(x, 0, TAG_DOWN, x->recvbuf, s->bytes, NULL,
                                &s->xfer);
        else
            return 0;
        return 1;
    }
    if (s->next >= n) {
        s->phase++;
        s->next = 1;
        if (s->phase > 1)
            return 0;
    }
    if (s->phase == 0)
        *st = x->core->recv(x, s->next, TAG_UP, x->recvbuf, s->bytes, &red,
                            &s->xfer);
    else
        *st = x->core->send(x, s->next, TAG_DOWN, x->recvbuf, s->bytes,
                            &s->xfer);
    return 1;
}

static tutti_status_t gb_progress(void *state, tutti_alg_exec_t *x)
{
    gb_state_t *s = state;
    tutti_status_t st;
    for (;;) {
        if ((st = x->core->test(x, &s->xfer)) != TUTTI_OK)
            return st; /* TUTTI_INPROGRESS, or the transfer's error */
        if (s->inst->rank == 0)
            s->next++;
        else
            s->phase++;
        st = TUTTI_OK;
        if (!post(s, x, &st))
            return TUTTI_OK;
        if (st != TUTTI_OK)
            return st;
    }
}

static tutti_status_t gb_run(void *state, tutti_alg_exec_t *x)
{
    gb_state_t *s = state;
    tutti_status_t st = TUTTI_OK;
    s->phase = 0;
    s->next = 1;
    /* Rank 0 starts from its own input, then reduces the others' into it. */
    if (s->inst->rank == 0 && x->sendbuf != x->recvbuf && s->bytes > 0)
        memcpy(x->recvbuf, x->sendbuf, s->bytes);
    if (s->inst->group_size == 1)
        return TUTTI_OK;
    if (!post(s, x, &st))
        return TUTTI_OK;
    return st == TUTTI_OK ? gb_progress(s, x) : st;
}

static const tutti_alg_ops_t gb_ops = {
    .size = sizeof(tutti_alg_ops_t),
    .init_context = gb_init_context,
    .run = gb_run,
    .progress = gb_progress,
    .fini_context = free,
};

/* The rule parameters it reads with core->param_size(): none, so a rule
 * that gives it one ("params: {chunk: 1M}") is refused when the
 * configuration loads.  List the names it reads, {"chunk", NULL}, when it
 * reads some; leaving .params unset (NULL) declares nothing, and any
 * parameter reaches it unchecked. */
static const char *const params[] = {NULL};

static const tutti_alg_impl_t impls[] = {
    {.name = IMPL,
     .description = "allreduce through rank 0 (a module template)",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &gb_ops, .params = params},
};

TUTTI_MODULE_DEFINE("template", "1.0.0", impls);
