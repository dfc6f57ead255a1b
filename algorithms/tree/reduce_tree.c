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
 * several in flight (one per lane), so a member forwards chunk i to its
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
#include "tree_plan.h"

#define REDUCE_LANES 8

static const char impl_name[] = "TreeReduce";

enum { LANE_RECV, LANE_READY, LANE_SEND, LANE_DONE };

typedef struct {
    size_t chunk;          /* chunk index this lane works on */
    int phase;
    int child;             /* LANE_RECV: index of the child received */
    tutti_xfer_t rx, sx;
} lane_t;

typedef struct {
    const tutti_alg_instance_t *inst;
    int parent, nchildren;
    int children[TUTTI_ALG_TREE_MAX_FANOUT];
    size_t bytes, chunk_bytes, nchunks;
    char *scratch;         /* partial results: non-roots with children */
    size_t scratch_bytes;
    size_t next_send;      /* the next chunk whose send may be posted */
    int lanes;             /* chunk c works on lane c % lanes */
    lane_t lane[REDUCE_LANES];
} reduce_state_t;

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
    size_t esize = tutti_dtype_size(inst->dtype);
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
    s->bytes = inst->count * esize;
    s->chunk_bytes = (size_t)plan.chunk / esize * esize;
    s->nchunks = (s->bytes + s->chunk_bytes - 1) / s->chunk_bytes;
    s->lanes = s->nchunks < REDUCE_LANES ? (int)s->nchunks : REDUCE_LANES;
    if (s->parent >= 0 && s->nchildren > 0 && s->bytes > 0) {
        s->scratch_bytes = (size_t)s->lanes * s->chunk_bytes;
        if (s->scratch_bytes > s->bytes)
            s->scratch_bytes = s->bytes;
        s->scratch = malloc(s->scratch_bytes);
        if (s->scratch == NULL) {
            size_t want = s->scratch_bytes;
            free(s);
            return core->error(TUTTI_ERR_NO_MEMORY, "%s: no memory for a "
                               "%zu-byte buffer of partial results",
                               impl_name, want);
        }
    }
    *state_out = s;
    return TUTTI_OK;
}

static void reduce_fini_context(void *state)
{
    reduce_state_t *s = state;
    if (s != NULL)
        free(s->scratch);
    free(s);
}

static size_t chunk_len(const reduce_state_t *s, size_t c)
{
    size_t off = c * s->chunk_bytes;
    return s->bytes - off < s->chunk_bytes ? s->bytes - off : s->chunk_bytes;
}

/* Where chunk @p c's partial result is made: the root's output, or the
 * lane's slice of the scratch buffer. */
static char *partial(const reduce_state_t *s, tutti_alg_exec_t *x, size_t c)
{
    if (s->parent < 0)
        return (char *)x->recvbuf + c * s->chunk_bytes;
    return s->scratch + c % (size_t)s->lanes * s->chunk_bytes;
}

/* Posts the receive of chunk l->chunk from child l->child, reduced with
 * the member's input (first child) or the partial result (the others). */
static tutti_status_t post_recv(reduce_state_t *s, lane_t *l,
                                tutti_alg_exec_t *x)
{
    char *dst = partial(s, x, l->chunk);
    tutti_recv_reduce_t red = {dst};
    if (l->child == 0)
        red.local = (const char *)x->sendbuf + l->chunk * s->chunk_bytes;
    return x->core->recv(x, s->children[l->child], (uint32_t)l->chunk, dst,
                         chunk_len(s, l->chunk), &red, &l->rx);
}

/* Starts chunk l->chunk on a lane: receive it from the children, or (a
 * leaf) have it ready to send. */
static tutti_status_t lane_begin(reduce_state_t *s, lane_t *l,
                                 tutti_alg_exec_t *x)
{
    if (l->chunk >= s->nchunks) {
        l->phase = LANE_DONE;
        return TUTTI_OK;
    }
    if (s->nchildren == 0) {
        l->phase = LANE_READY;
        return TUTTI_OK;
    }
    l->phase = LANE_RECV;
    l->child = 0;
    return post_recv(s, l, x);
}

/* Advances one lane as far as it can go now. */
static tutti_status_t lane_step(reduce_state_t *s, lane_t *l,
                                tutti_alg_exec_t *x)
{
    tutti_status_t st;
    while (l->phase == LANE_RECV) {
        if ((st = x->core->test(x, &l->rx)) != TUTTI_OK)
            return st;
        if (++l->child == s->nchildren)
            l->phase = LANE_READY;
        else if ((st = post_recv(s, l, x)) != TUTTI_OK)
            return st;
    }
    if (l->phase == LANE_READY && s->parent < 0) {
        l->chunk += (size_t)s->lanes; /* the root's result is in place */
        return lane_begin(s, l, x);
    }
    if (l->phase == LANE_READY) {
        if (l->chunk != s->next_send)
            return TUTTI_INPROGRESS;
        const char *src = s->nchildren > 0
                              ? partial(s, x, l->chunk)
                              : (const char *)x->sendbuf +
                                    l->chunk * s->chunk_bytes;
        st = x->core->send(x, s->parent, (uint32_t)l->chunk, src,
                           chunk_len(s, l->chunk), &l->sx);
        if (st != TUTTI_OK)
            return st;
        s->next_send++;
        l->phase = LANE_SEND;
    }
    if (l->phase == LANE_SEND) {
        if ((st = x->core->test(x, &l->sx)) != TUTTI_OK)
            return st;
        l->chunk += (size_t)s->lanes;
        return lane_begin(s, l, x);
    }
    return TUTTI_OK;
}

static tutti_status_t reduce_progress(void *state, tutti_alg_exec_t *x)
{
    reduce_state_t *s = state;
    size_t start = s->next_send;
    int done = 0;
    /* From the lane of the next chunk to send, so that one pass can post
     * several chunks in their order. */
    for (int i = 0; i < s->lanes; i++) {
        lane_t *l = &s->lane[(start + (size_t)i) % (size_t)s->lanes];
        tutti_status_t st = lane_step(s, l, x);
        if (st != TUTTI_OK && st != TUTTI_INPROGRESS)
            return st;
        done += l->phase == LANE_DONE;
    }
    return done == s->lanes ? TUTTI_OK : TUTTI_INPROGRESS;
}

static tutti_status_t reduce_run(void *state, tutti_alg_exec_t *x)
{
    reduce_state_t *s = state;
    if (s->nchunks == 0)
        return TUTTI_OK;
    if (s->inst->group_size == 1) {
        if (x->sendbuf != x->recvbuf)
            memcpy(x->recvbuf, x->sendbuf, s->bytes);
        return TUTTI_OK;
    }
    s->next_send = 0;
    for (int i = 0; i < s->lanes; i++) {
        s->lane[i].chunk = (size_t)i;
        tutti_status_t st = lane_begin(s, &s->lane[i], x);
        if (st != TUTTI_OK)
            return st;
    }
    return reduce_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_tree_reduce_ops = {
    .size = sizeof(tutti_alg_ops_t),
    .init_params = reduce_init_params,
    .init_context = reduce_init_context,
    .run = reduce_run,
    .progress = reduce_progress,
    .fini_context = reduce_fini_context,
};
