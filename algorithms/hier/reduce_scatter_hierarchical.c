/*
 * HierarchicalReduceScatter: reduce_scatter inside hosts first, then
 * between them (the allgather's mirror).  Cost, H hosts of L members,
 * blocks of c bytes: L-1 steps inside each host moving H blocks per step,
 * then H-1 steps between hosts in which L rings share each host's link
 * ((H-1) L c each way in all, the floor).  Limits: equal counts, CPU
 * memory, the same number of members on every host; a scratch of the
 * whole input (n blocks).
 *
 * The input is copied to scratch, where partial sums build up.  Inside
 * each host a ring passes columns of blocks (the blocks of every (g, j)
 * for one j), reducing on receipt, so member (h, l) ends with column l
 * summed over its host; the H members with local index l then run a ring
 * reduce-scatter of that column between hosts, leaving each its own block
 * summed over the group, which is copied to the output (at the member's
 * block in place, as the collective's in-place form says).
 */
#include <string.h>

#include "hier.h"

#define X TUTTI_ALG_HIER_SCRATCH

static size_t whole(const tutti_alg_hier_state_t *s)
{
    return (size_t)s->inst->group_size * s->bytes;
}

#define at tutti_alg_hier_block_at

static void build(tutti_alg_hier_state_t *s)
{
    const tutti_alg_hier_topo_t *t = &s->topo;
    tutti_alg_hier_sched_t *sc = &s->sched;
    int H = t->hosts, L = t->per_host, h = t->host, l = t->local;
    int up = t->up, down = t->down, right = t->right, left = t->left;
    size_t c = s->bytes;

    if (c == 0)
        return;
    for (int k = 0; k < L - 1; k++) {
        int sl = tutti_alg_hier_mod(l - k - 1, L);
        int rl = tutti_alg_hier_mod(l - k - 2, L);
        tutti_alg_hier_step(sc, k == 0 ? "inside hosts" : NULL);
        for (int g = 0; g < H; g++)
            tutti_alg_hier_send(sc, right, (uint32_t)g, X, at(s, g, sl), c);
        for (int g = 0; g < H; g++)
            tutti_alg_hier_recv_reduce(sc, left, (uint32_t)g, X,
                                       at(s, g, rl), c);
    }
    for (int k = 0; k < H - 1; k++) {
        tutti_alg_hier_step(sc, k == 0 ? "between hosts" : NULL);
        tutti_alg_hier_send(sc, up, 0, X,
                            at(s, tutti_alg_hier_mod(h - k - 1, H), l), c);
        tutti_alg_hier_recv_reduce(sc, down, 0, X,
                                   at(s, tutti_alg_hier_mod(h - k - 2, H), l),
                                   c);
    }
}

static void begin(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    if (s->bytes > 0)
        memcpy(s->scratch, x->sendbuf, whole(s));
}

static void end(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    size_t mine = (size_t)s->inst->rank * s->bytes;
    char *out = x->recvbuf;
    if (x->sendbuf == x->recvbuf)
        out += mine;
    if (s->bytes > 0)
        memcpy(out, s->scratch + mine, s->bytes);
}

static const tutti_alg_hier_impl_t impl = {
    .name = "HierarchicalReduceScatter", .scratch = whole, .build = build,
    .begin = begin, .end = end};

TUTTI_ALG_HIER_DEFINE(tutti_alg_hier_reduce_scatter_hierarchical_ops, impl);
