/*
 * HierarchicalTreeBroadcast: broadcast from any root, first across hosts,
 * then across the tasks of each host, then inside each task.  Cost: the
 * depths of three k-ary trees (about log_k of the hosts, of a host's tasks
 * and of a task's members), plus one chunk's time per further chunk; each
 * member sends every chunk to at most k children per level.  Limits:
 * equal counts, CPU memory.
 *
 * Each host has one leader: the root on the root's host, the lowest rank
 * on every other.  Each task has one leader: its host's leader if that one
 * is in the task, else its lowest rank.  At each level the leaders (or, at
 * the last, a task's members) form a k-ary tree ordered by their distance
 * from the level's origin (the root, the host's leader, the task's leader;
 * distance = rank - origin modulo the group size): position v receives
 * from (v - 1) / fanout and forwards to v * fanout + 1 .. v * fanout +
 * fanout.  A member sends to its children of the upper levels first (the
 * slower, longer paths).  So data crosses each host boundary and each task
 * boundary once.  One host, one task, or one device per task make levels
 * of one member, and the tree is then the flat one over every member.
 * The tree is built in init_context from the instance's localities (which
 * every member sees alike); init_params only reads the rule's parameters.
 *
 * The buffer travels in chunks, several in flight (one per lane, see
 * tree_lanes.h), so a member forwards one chunk while the next arrives.
 * Each member posts its sends in chunk order, so every channel carries
 * chunks in order and the receive a channel's head waits for is always
 * posted.  Parameters (YAML rule params): fanout (default 2, 1..16) and
 * chunk (bytes, default 256K).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "tree.h"
#include "tree_lanes.h"
#include "tree_plan.h"

#define BCAST_MAX_CHILDREN (3 * TUTTI_ALG_TREE_MAX_FANOUT)

static const char impl_name[] = "HierarchicalTreeBroadcast";

/* A lane's transfers (its chunk and phase are the pipeline's). */
typedef struct {
    tutti_xfer_t rx;
    tutti_xfer_t sx[BCAST_MAX_CHILDREN];
} lane_io_t;

typedef struct {
    const tutti_alg_instance_t *inst;
    int parent, nchildren;
    int children[BCAST_MAX_CHILDREN];
    tutti_alg_tree_lanes_t pipe;
    lane_io_t io[TUTTI_ALG_TREE_LANES];
} bcast_state_t;

static tutti_status_t bcast_init_params(const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        void *details, size_t *len_out)
{
    return tutti_alg_tree_plan_write(inst, core, impl_name, details, len_out);
}

/* ---- the tree ------------------------------------------------------------- */

/* Host (level 0) or task (level 1) of rank @p r; all members share one
 * without localities. */
static int unit_of(const tutti_alg_instance_t *inst, int level, int r)
{
    if (inst->localities == NULL)
        return 0;
    return level == 0 ? inst->localities[r].host : inst->localities[r].task;
}

/* Leaders at @p level: in the unit of @p upper[r] (the leader one level
 * up, or the root at the top), that leader; in every other unit its
 * lowest rank. */
static void leaders(const tutti_alg_instance_t *inst, int level,
                    const int *upper, int *lead)
{
    int n = inst->group_size;
    for (int r = 0; r < n; r++) {
        int up = upper ? upper[r] : inst->root;
        lead[r] = r;
        if (unit_of(inst, level, r) == unit_of(inst, level, up)) {
            lead[r] = up;
            continue;
        }
        for (int q = 0; q < r; q++) {
            if (unit_of(inst, level, q) == unit_of(inst, level, r)) {
                lead[r] = lead[q];
                break;
            }
        }
    }
}

/* One level of the tree: the members @p in marks, in order of distance
 * from @p origin, form a k-ary tree; this member (if it is one) takes its
 * parent there (unless it is the level's top) and its children. */
static void level_tree(bcast_state_t *s, int k, const unsigned char *in,
                       int origin, int *list)
{
    int n = s->inst->group_size, me = s->inst->rank, len = 0, pos = -1;
    for (int v = 0; v < n; v++) {
        int r = (origin + v) % n;
        if (!in[r])
            continue;
        if (r == me)
            pos = len;
        list[len++] = r;
    }
    if (pos < 0)
        return;
    if (pos > 0)
        s->parent = list[(pos - 1) / k];
    for (int i = 1; i <= k && (long)pos * k + i < len; i++)
        s->children[s->nchildren++] = list[pos * k + i];
}

/* Finds this member's parent and children: across hosts (one leader per
 * host), then across the tasks of each host (one leader per task), then
 * inside each task.  @p tmp is scratch for 3 x group_size ints and
 * group_size bytes after them. */
static void build_tree(bcast_state_t *s, int k, int *tmp)
{
    const tutti_alg_instance_t *inst = s->inst;
    int n = inst->group_size, me = inst->rank;
    int *host_lead = tmp, *task_lead = tmp + n, *list = tmp + 2 * n;
    unsigned char *in = (unsigned char *)(tmp + 3 * n);

    leaders(inst, 0, NULL, host_lead);
    leaders(inst, 1, host_lead, task_lead);
    s->parent = -1;
    s->nchildren = 0;
    for (int r = 0; r < n; r++)
        in[r] = host_lead[r] == r;
    level_tree(s, k, in, inst->root, list);
    for (int r = 0; r < n; r++)
        in[r] = task_lead[r] == r && host_lead[r] == host_lead[me];
    level_tree(s, k, in, host_lead[me], list);
    for (int r = 0; r < n; r++)
        in[r] = task_lead[r] == task_lead[me];
    level_tree(s, k, in, task_lead[me], list);
}

static tutti_status_t bcast_init_context(const tutti_alg_instance_t *inst,
                                         const tutti_core_ops_t *core,
                                         const void *details,
                                         size_t details_len, void **state_out)
{
    tutti_alg_tree_plan_t plan;
    tutti_status_t st = tutti_alg_tree_plan_read(inst, core, impl_name,
                                                 details, details_len, &plan);
    if (st != TUTTI_OK)
        return st;
    bcast_state_t *s = calloc(1, sizeof(*s));
    int *tmp = calloc(4 * (size_t)inst->group_size, sizeof(int));
    if (s == NULL || tmp == NULL) {
        free(s);
        free(tmp);
        return core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory for the "
                           "state of a group of %d", impl_name,
                           inst->group_size);
    }
    s->inst = inst;
    build_tree(s, (int)plan.fanout, tmp);
    free(tmp);
    {
        char kids[BCAST_MAX_CHILDREN * 12 + 1];
        size_t len = 0;
        kids[0] = '\0';
        for (int i = 0; i < s->nchildren; i++)
            len += (size_t)snprintf(kids + len, sizeof(kids) - len, "%s%d",
                                    i ? "," : "", s->children[i]);
        core->log(3, impl_name, "instance 0x%llx rank %d: parent %d, "
                  "children [%s]", (unsigned long long)inst->instance_key,
                  inst->rank, s->parent, kids);
    }
    tutti_alg_tree_lanes_init(&s->pipe, inst, &plan);
    *state_out = s;
    return TUTTI_OK;
}

static void bcast_fini_context(void *state)
{
    free(state);
}

/* ---- the pipeline ------------------------------------------------------ */

/* Starts its chunk on lane @p lane: the root has it, the others receive. */
static tutti_status_t lane_begin(void *state, int lane, tutti_alg_exec_t *x)
{
    bcast_state_t *s = state;
    tutti_alg_tree_lane_t *l = &s->pipe.lane[lane];
    if (l->chunk >= s->pipe.nchunks) {
        l->phase = TUTTI_ALG_TREE_LANE_DONE;
        return TUTTI_OK;
    }
    if (s->parent < 0) {
        l->phase = TUTTI_ALG_TREE_LANE_READY;
        return TUTTI_OK;
    }
    l->phase = TUTTI_ALG_TREE_LANE_RECV;
    return x->core->recv(x, s->parent, (uint32_t)l->chunk,
                         (char *)x->recvbuf + l->chunk * s->pipe.chunk_bytes,
                         tutti_alg_tree_chunk_len(&s->pipe, l->chunk), NULL,
                         &s->io[lane].rx);
}

/* Advances lane @p lane as far as it can go now. */
static tutti_status_t lane_step(void *state, int lane, tutti_alg_exec_t *x)
{
    bcast_state_t *s = state;
    tutti_alg_tree_lane_t *l = &s->pipe.lane[lane];
    lane_io_t *io = &s->io[lane];
    tutti_status_t st;
    if (l->phase == TUTTI_ALG_TREE_LANE_RECV) {
        if ((st = x->core->test(x, &io->rx)) != TUTTI_OK)
            return st;
        l->phase = TUTTI_ALG_TREE_LANE_READY;
    }
    if (l->phase == TUTTI_ALG_TREE_LANE_READY) {
        if (l->chunk != s->pipe.next_send)
            return TUTTI_INPROGRESS;
        /* The root forwards its input; the others what they received. */
        const char *src = s->parent < 0 ? x->sendbuf : x->recvbuf;
        size_t off = l->chunk * s->pipe.chunk_bytes;
        size_t len = tutti_alg_tree_chunk_len(&s->pipe, l->chunk);
        for (int i = 0; i < s->nchildren; i++) {
            st = x->core->send(x, s->children[i], (uint32_t)l->chunk,
                               src + off, len, &io->sx[i]);
            if (st != TUTTI_OK)
                return st;
        }
        s->pipe.next_send++;
        l->phase = TUTTI_ALG_TREE_LANE_SEND;
    }
    if (l->phase == TUTTI_ALG_TREE_LANE_SEND) {
        for (int i = 0; i < s->nchildren; i++) {
            if ((st = x->core->test(x, &io->sx[i])) != TUTTI_OK)
                return st;
        }
        l->chunk += (size_t)s->pipe.lanes;
        return lane_begin(s, lane, x);
    }
    return TUTTI_OK;
}

static tutti_status_t bcast_progress(void *state, tutti_alg_exec_t *x)
{
    bcast_state_t *s = state;
    return tutti_alg_tree_lanes_progress(&s->pipe, s, x, lane_step);
}

static tutti_status_t bcast_run(void *state, tutti_alg_exec_t *x)
{
    bcast_state_t *s = state;
    if (s->parent < 0 && x->sendbuf != x->recvbuf && s->pipe.bytes > 0)
        memcpy(x->recvbuf, x->sendbuf, s->pipe.bytes);
    if (s->inst->group_size == 1 || s->pipe.nchunks == 0)
        return TUTTI_OK;
    tutti_status_t st = tutti_alg_tree_lanes_start(&s->pipe, s, x, lane_begin);
    return st != TUTTI_OK ? st : bcast_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_tree_broadcast_hierarchical_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_params = bcast_init_params,
    .init_context = bcast_init_context, .run = bcast_run,
    .progress = bcast_progress, .fini_context = bcast_fini_context};
