/*
 * HierarchicalReduceScatter: reduce_scatter inside hosts first, then
 * between them (the allgather's mirror).  Cost, H hosts of L members,
 * blocks of c bytes: L-1 steps inside each host moving H blocks per step,
 * then H-1 steps between hosts in which L rings share each host's link
 * ((H-1) L c each way in all, the floor).  Limits: equal counts, CPU
 * memory, the same number of members on every host; a scratch of the
 * whole input (n blocks).
 *
 * Partial sums build up in scratch; the input is read where it lies (a
 * block's first send leaves from it, each receipt reduces with it) and
 * the last receipt lands in the output, so nothing is copied.  Inside
 * each host a ring passes columns of blocks (the blocks of every (g, j)
 * for one j), reducing on receipt, so member (h, l) ends with column l
 * summed over its host; the H members with local index l then run a ring
 * reduce-scatter of that column between hosts, whose last receipt is the
 * member's own block summed over the group, written to the output (at
 * the member's block in place, as the collective's in-place form says).
 */
#include <string.h>

#include "hier.h"

#define S TUTTI_ALG_HIER_SEND
#define X TUTTI_ALG_HIER_SCRATCH
#define OUT TUTTI_ALG_HIER_RESULT

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
            tutti_alg_hier_send(sc, right, (uint32_t)g, k == 0 ? S : X,
                                at(s, g, sl), c);
        for (int g = 0; g < H; g++) {
            size_t o = at(s, g, rl);
            if (H == 1 && rl == l) /* the own block, complete */
                tutti_alg_hier_recv_reduce(sc, left, (uint32_t)g, OUT, 0, S,
                                           o, c);
            else
                tutti_alg_hier_recv_reduce(sc, left, (uint32_t)g, X, o, S,
                                           o, c);
        }
    }
    /* Column l's host sums: in scratch, or (one member per host) still
     * the input. */
    int part = L > 1 ? X : S;
    for (int k = 0; k < H - 1; k++) {
        size_t so = at(s, tutti_alg_hier_mod(h - k - 1, H), l);
        size_t ro = at(s, tutti_alg_hier_mod(h - k - 2, H), l);
        tutti_alg_hier_step(sc, k == 0 ? "between hosts" : NULL);
        tutti_alg_hier_send(sc, up, 0, k == 0 ? part : X, so, c);
        if (k == H - 2) /* the own block, complete */
            tutti_alg_hier_recv_reduce(sc, down, 0, OUT, 0, part, ro, c);
        else
            tutti_alg_hier_recv_reduce(sc, down, 0, X, ro, part, ro, c);
    }
}

static void begin(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    size_t mine = (size_t)s->inst->rank * s->bytes;
    char *out = x->recvbuf;
    if (x->sendbuf == x->recvbuf)
        out += mine;
    s->bufs[OUT] = out;
    if (s->inst->group_size == 1 && x->sendbuf != x->recvbuf && s->bytes)
        memcpy(out, x->sendbuf, s->bytes);
}

static const tutti_alg_hier_impl_t impl = {
    .name = "HierarchicalReduceScatter", .scratch = whole, .build = build,
    .begin = begin};

TUTTI_ALG_HIER_DEFINE(tutti_alg_hier_reduce_scatter_hierarchical_ops, impl);
