/*
 * TreeReduce: reduce to any root up a k-ary tree, pipelined in chunks.
 * Cost: about log_k(n) levels, plus one chunk's time per further chunk; a
 * member with children receives and reduces every chunk from each of up
 * to k children.  Limits: equal counts, CPU memory; members with a parent
 * and children keep a scratch of one chunk per lane.
 *
 * Ranks are renumbered by distance from the root (v = rank - root, modulo
 * the group size); member v sends to (v - 1) / fanout and receives from
 * v * fanout + 1 .. v * fanout + fanout.  The buffer travels in chunks,
 * several in flight (one per lane, see tree_lanes.h), so a member forwards
 * chunk i to its
 * parent while chunk i + 1 arrives from its children.  A chunk's children
 * arrive one after another, each reduced on receipt into the member's
 * partial result: the first reads the member's own input, the next ones
 * the partial result, so no input is ever copied.  The partial result is
 * the root's recvbuf; on other members with children, a scratch buffer of
 * one chunk per lane made at init_context; leaves send their input as it
 * is.  Each member posts its sends in chunk order, so every channel
 * carries chunks in order and the receive a channel's head waits for is
 * always posted.  Parameters (YAML rule params): fanout (default 2, 1..16)
 * and chunk (bytes, default 256K).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "tree.h"
#include "tree_lanes.h"
#include "tree_plan.h"

static const char impl_name[] = "TreeReduce";

/* A lane's transfers (its chunk and phase are the pipeline's). */
typedef struct {
    int child;             /* receiving: index of the child received */
    tutti_xfer_t rx, sx;
} lane_io_t;

typedef struct {
    char *scratch;         /* partial results: non-roots with children */
    const tutti_alg_instance_t *inst;
    int parent, nchildren;
    int children[TUTTI_ALG_TREE_MAX_FANOUT];
    size_t scratch_bytes;
    tutti_alg_tree_lanes_t pipe;
    lane_io_t io[TUTTI_ALG_TREE_LANES];
} reduce_state_t;
_Static_assert(offsetof(reduce_state_t, scratch) == 0,
               "tutti_alg_tree_scratch_fini frees the first member");

static int real_rank(const reduce_state_t *s, long v)
{
    return (int)((v + s->inst->root) % s->inst->group_size);
}

static tutti_status_t reduce_init_params(const tutti_alg_instance_t *inst,
                                         const tutti_core_ops_t *core,
                                         void *details, size_t *len_out)
{
    return tutti_alg_tree_plan_write(inst, core, impl_name, details, len_out);
}

static tutti_status_t reduce_init_context(const tutti_alg_instance_t *inst,
                                          const tutti_core_ops_t *core,
                                          const void *details,
                                          size_t details_len, void **state_out)
{
    tutti_alg_tree_plan_t plan;
    int n = inst->group_size;
    tutti_status_t st = tutti_alg_tree_plan_read(inst, core, impl_name,
                                                 details, details_len, &plan);
    if (st != TUTTI_OK)
        return st;
    reduce_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory",
                           impl_name);
    s->inst = inst;
    long k = (long)plan.fanout, v = (inst->rank - inst->root + n) % n;
    s->parent = v == 0 ? -1 : real_rank(s, (v - 1) / k);
    for (long i = 1; i <= k && v * k + i < n; i++)
        s->children[s->nchildren++] = real_rank(s, v * k + i);
    tutti_alg_tree_lanes_init(&s->pipe, inst, &plan);
    if (s->parent >= 0 && s->nchildren > 0 && s->pipe.bytes > 0) {
        s->scratch_bytes = (size_t)s->pipe.lanes * s->pipe.chunk_bytes;
        if (s->scratch_bytes > s->pipe.bytes)
            s->scratch_bytes = s->pipe.bytes;
        s->scratch = malloc(s->scratch_bytes);
        if (s->scratch == NULL) {
            size_t want = s->scratch_bytes;
            tutti_alg_tree_scratch_fini(s);
            return core->error(TUTTI_ERR_NO_MEMORY, "%s: no memory for a "
                               "%zu-byte buffer of partial results",
                               impl_name, want);
        }
    }
    *state_out = s;
    return TUTTI_OK;
}

/* Where chunk @p c's partial result is made: the root's output, or the
 * lane's slice of the scratch buffer. */
static char *partial(const reduce_state_t *s, tutti_alg_exec_t *x, size_t c)
{
    const tutti_alg_tree_lanes_t *p = &s->pipe;
    if (s->parent < 0)
        return (char *)x->recvbuf + c * p->chunk_bytes;
    return s->scratch + c % (size_t)p->lanes * p->chunk_bytes;
}

/* Posts the receive of lane @p lane's chunk from its child io->child,
 * reduced with the member's input (first child) or the partial result
 * (the others). */
static tutti_status_t post_recv(reduce_state_t *s, int lane,
                                tutti_alg_exec_t *x)
{
    size_t c = s->pipe.lane[lane].chunk;
    lane_io_t *io = &s->io[lane];
    char *dst = partial(s, x, c);
    tutti_recv_reduce_t red = {dst};
    if (io->child == 0)
        red.local = (const char *)x->sendbuf + c * s->pipe.chunk_bytes;
    return x->core->recv(x, s->children[io->child], (uint32_t)c, dst,
                         tutti_alg_tree_chunk_len(&s->pipe, c), &red,
                         &io->rx);
}

/* Starts its chunk on lane @p lane: receive it from the children, or (a
 * leaf) have it ready to send. */
static tutti_status_t lane_begin(void *state, int lane, tutti_alg_exec_t *x)
{
    reduce_state_t *s = state;
    tutti_alg_tree_lane_t *l = &s->pipe.lane[lane];
    if (l->chunk >= s->pipe.nchunks) {
        l->phase = TUTTI_ALG_TREE_LANE_DONE;
        return TUTTI_OK;
    }
    if (s->nchildren == 0) {
        l->phase = TUTTI_ALG_TREE_LANE_READY;
        return TUTTI_OK;
    }
    l->phase = TUTTI_ALG_TREE_LANE_RECV;
    s->io[lane].child = 0;
    return post_recv(s, lane, x);
}

/* Advances lane @p lane as far as it can go now. */
static tutti_status_t lane_step(void *state, int lane, tutti_alg_exec_t *x)
{
    reduce_state_t *s = state;
    tutti_alg_tree_lane_t *l = &s->pipe.lane[lane];
    lane_io_t *io = &s->io[lane];
    tutti_status_t st;
    while (l->phase == TUTTI_ALG_TREE_LANE_RECV) {
        if ((st = x->core->test(x, &io->rx)) != TUTTI_OK)
            return st;
        if (++io->child == s->nchildren)
            l->phase = TUTTI_ALG_TREE_LANE_READY;
        else if ((st = post_recv(s, lane, x)) != TUTTI_OK)
            return st;
    }
    if (l->phase == TUTTI_ALG_TREE_LANE_READY && s->parent < 0) {
        l->chunk += (size_t)s->pipe.lanes; /* the root's result is in place */
        return lane_begin(s, lane, x);
    }
    if (l->phase == TUTTI_ALG_TREE_LANE_READY) {
        if (l->chunk != s->pipe.next_send)
            return TUTTI_INPROGRESS;
        const char *src = s->nchildren > 0
                              ? partial(s, x, l->chunk)
                              : (const char *)x->sendbuf +
                                    l->chunk * s->pipe.chunk_bytes;
        st = x->core->send(x, s->parent, (uint32_t)l->chunk, src,
                           tutti_alg_tree_chunk_len(&s->pipe, l->chunk),
                           &io->sx);
        if (st != TUTTI_OK)
            return st;
        s->pipe.next_send++;
        l->phase = TUTTI_ALG_TREE_LANE_SEND;
    }
    if (l->phase == TUTTI_ALG_TREE_LANE_SEND) {
        if ((st = x->core->test(x, &io->sx)) != TUTTI_OK)
            return st;
        l->chunk += (size_t)s->pipe.lanes;
        return lane_begin(s, lane, x);
    }
    return TUTTI_OK;
}

static tutti_status_t reduce_progress(void *state, tutti_alg_exec_t *x)
{
    reduce_state_t *s = state;
    return tutti_alg_tree_lanes_progress(&s->pipe, s, x, lane_step);
}

static tutti_status_t reduce_run(void *state, tutti_alg_exec_t *x)
{
    reduce_state_t *s = state;
    if (s->pipe.nchunks == 0)
        return TUTTI_OK;
    if (s->inst->group_size == 1) {
        if (x->sendbuf != x->recvbuf)
            memcpy(x->recvbuf, x->sendbuf, s->pipe.bytes);
        return TUTTI_OK;
    }
    tutti_status_t st = tutti_alg_tree_lanes_start(&s->pipe, s, x, lane_begin);
    return st != TUTTI_OK ? st : reduce_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_tree_reduce_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_params = reduce_init_params,
    .init_context = reduce_init_context, .run = reduce_run,
    .progress = reduce_progress, .fini_context = tutti_alg_tree_scratch_fini};
