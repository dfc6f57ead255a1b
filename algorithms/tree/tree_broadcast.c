/*
 * HierarchicalTreeBroadcast: broadcast from any root down a k-ary tree.
 *
 * Ranks are renumbered so the root is 0; member v receives from
 * (v - 1) / fanout and forwards to v * fanout + 1 .. v * fanout + fanout.
 * The buffer travels in chunks, several in flight, so a member forwards one
 * chunk while the next arrives.  Parameters (YAML rule params): fanout
 * (default 2, 1..16) and chunk (bytes, default 256K).  This version builds
 * one tree over all members; the task-then-device hierarchy comes with
 * groups of several devices per task.
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "tree.h"

#define TREE_LANES 8
#define TREE_MAX_FANOUT 16

enum { LANE_RECV, LANE_SEND, LANE_DONE };

typedef struct {
    size_t chunk;          /* chunk index this lane works on */
    int phase;
    tutti_xfer_t rx;
    tutti_xfer_t sx[TREE_MAX_FANOUT];
} lane_t;

typedef struct {
    const tutti_alg_instance_t *inst;
    int vrank, parent, nchildren;
    int children[TREE_MAX_FANOUT];
    size_t bytes, chunk_bytes, nchunks;
    size_t first;          /* lowest chunk not finished */
    int lanes;
    lane_t lane[TREE_LANES];
} tree_state_t;

static int real_rank(const tree_state_t *s, int v)
{
    return (v + s->inst->root) % s->inst->group_size;
}

/* The plan every member follows: read from the rule once, by the
 * resolver, so members whose configs differ still build one tree. */
typedef struct {
    uint64_t fanout;
    uint64_t chunk;
} tree_plan_t;

static tutti_status_t tree_init_params(const tutti_alg_instance_t *inst,
                                       const tutti_core_ops_t *core,
                                       void *details, size_t *len_out)
{
    tree_plan_t plan;
    size_t esize = tutti_dtype_size(inst->dtype);
    tutti_status_t st;

    if ((st = core->param_size(inst, "fanout", 2, &plan.fanout)) !=
            TUTTI_OK ||
        (st = core->param_size(inst, "chunk", 256 * 1024, &plan.chunk)) !=
            TUTTI_OK)
        return st;
    if (plan.fanout < 1 || plan.fanout > TREE_MAX_FANOUT || plan.chunk < esize)
        return core->error(TUTTI_ERR_CONFIG, "HierarchicalTreeBroadcast: "
                           "fanout %llu and chunk %llu: expected fanout 1..%d "
                           "and chunk >= one element",
                           (unsigned long long)plan.fanout,
                           (unsigned long long)plan.chunk, TREE_MAX_FANOUT);
    memcpy(details, &plan, sizeof(plan));
    *len_out = sizeof(plan);
    return TUTTI_OK;
}

static tutti_status_t tree_init_context(const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        const void *details,
                                        size_t details_len, void **state_out)
{
    tree_plan_t plan;
    int n = inst->group_size;
    size_t esize = tutti_dtype_size(inst->dtype);

    if (details_len != sizeof(plan))
        return core->error(TUTTI_ERR_MODULE, "HierarchicalTreeBroadcast: %zu "
                           "bytes of plan, expected %zu", details_len,
                           sizeof(plan));
    memcpy(&plan, details, sizeof(plan));
    uint64_t fanout = plan.fanout, chunk = plan.chunk;
    tree_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "tree: out of memory");
    s->inst = inst;
    s->vrank = (inst->rank - inst->root + n) % n;
    s->parent = s->vrank == 0 ? -1 : real_rank(s, (s->vrank - 1) / (int)fanout);
    for (int i = 1; i <= (int)fanout; i++) {
        int v = s->vrank * (int)fanout + i;
        if (v < n)
            s->children[s->nchildren++] = real_rank(s, v);
    }
    s->bytes = inst->count * esize;
    s->chunk_bytes = (size_t)chunk / esize * esize;
    s->nchunks = (s->bytes + s->chunk_bytes - 1) / s->chunk_bytes;
    s->lanes = s->nchunks < TREE_LANES ? (int)s->nchunks : TREE_LANES;
    *state_out = s;
    return TUTTI_OK;
}

static void tree_fini_context(void *state)
{
    free(state);
}

static size_t chunk_len(const tree_state_t *s, size_t c)
{
    size_t off = c * s->chunk_bytes;
    return s->bytes - off < s->chunk_bytes ? s->bytes - off : s->chunk_bytes;
}

static tutti_status_t post_sends(tree_state_t *s, lane_t *l,
                                 tutti_alg_exec_t *x, const char *src)
{
    size_t off = l->chunk * s->chunk_bytes;
    for (int i = 0; i < s->nchildren; i++) {
        tutti_status_t st = x->core->send(x, s->children[i], (uint32_t)l->chunk,
                                          src + off, chunk_len(s, l->chunk),
                                          &l->sx[i]);
        if (st != TUTTI_OK)
            return st;
    }
    l->phase = LANE_SEND;
    return TUTTI_OK;
}

/* Starts chunk l->chunk on a lane: the root sends, the others receive. */
static tutti_status_t lane_begin(tree_state_t *s, lane_t *l,
                                 tutti_alg_exec_t *x)
{
    if (l->chunk >= s->nchunks) {
        l->phase = LANE_DONE;
        return TUTTI_OK;
    }
    if (s->parent < 0)
        return post_sends(s, l, x, x->sendbuf);
    l->phase = LANE_RECV;
    return x->core->recv(x, s->parent, (uint32_t)l->chunk,
                         (char *)x->recvbuf + l->chunk * s->chunk_bytes,
                         chunk_len(s, l->chunk), NULL, &l->rx);
}

/* Advances one lane as far as it can go now. */
static tutti_status_t lane_step(tree_state_t *s, lane_t *l, tutti_alg_exec_t *x)
{
    tutti_status_t st;
    if (l->phase == LANE_RECV) {
        if ((st = x->core->test(x, &l->rx)) != TUTTI_OK)
            return st;
        if ((st = post_sends(s, l, x, x->recvbuf)) != TUTTI_OK)
            return st;
    }
    if (l->phase == LANE_SEND) {
        for (int i = 0; i < s->nchildren; i++) {
            if ((st = x->core->test(x, &l->sx[i])) != TUTTI_OK)
                return st;
        }
        if (l->chunk == s->first)
            s->first++;
        l->chunk += (size_t)s->lanes;
        return lane_begin(s, l, x);
    }
    return TUTTI_OK;
}

static tutti_status_t tree_progress(void *state, tutti_alg_exec_t *x)
{
    tree_state_t *s = state;
    size_t start = s->first;
    int done = 0;
    /* Lanes in chunk order, so sends to each child leave in order. */
    for (int i = 0; i < s->lanes; i++) {
        lane_t *l = &s->lane[(start + (size_t)i) % (size_t)s->lanes];
        tutti_status_t st = lane_step(s, l, x);
        if (st != TUTTI_OK && st != TUTTI_INPROGRESS)
            return st;
        done += l->phase == LANE_DONE;
    }
    return done == s->lanes ? TUTTI_OK : TUTTI_INPROGRESS;
}

static tutti_status_t tree_run(void *state, tutti_alg_exec_t *x)
{
    tree_state_t *s = state;
    if (s->parent < 0 && x->sendbuf != x->recvbuf && s->bytes > 0)
        memcpy(x->recvbuf, x->sendbuf, s->bytes);
    if (s->inst->group_size == 1 || s->nchunks == 0)
        return TUTTI_OK;
    s->first = 0;
    for (int i = 0; i < s->lanes; i++) {
        s->lane[i].chunk = (size_t)i;
        tutti_status_t st = lane_begin(s, &s->lane[i], x);
        if (st != TUTTI_OK)
            return st;
    }
    return tree_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_tree_bcast_ops = {
    sizeof(tutti_alg_ops_t), tree_init_params, tree_init_context, tree_run,
    tree_progress, tree_fini_context,
};
