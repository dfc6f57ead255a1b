/*
 * HierarchicalAllgather: allgather between hosts first, then inside them.
 * Cost, H hosts of L members, blocks of c bytes: H-1 steps between hosts
 * in which L rings share each host's link (it carries (H-1) L c each way
 * in all, the floor), then L-1 steps inside each host moving H blocks per
 * step.  Limits: equal counts, CPU memory, the same number of members on
 * every host.
 *
 * The H members with local index l pass the blocks of their column around
 * a ring of the hosts, so member (h, l) ends with the blocks of every
 * (g, l); inside each host a ring then passes these columns on (H
 * messages a step, one per block).  Every block lands at its rank's place
 * in the output; the own block is copied there first unless the call is
 * in place (where it sits already).
 */
#include <string.h>

#include "hier.h"

#define R TUTTI_ALG_HIER_RECV

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
    for (int k = 0; k < H - 1; k++) {
        tutti_alg_hier_step(sc, k == 0 ? "between hosts" : NULL);
        tutti_alg_hier_send(sc, up, 0, R,
                            at(s, tutti_alg_hier_mod(h - k, H), l), c);
        tutti_alg_hier_recv(sc, down, 0, R,
                            at(s, tutti_alg_hier_mod(h - k - 1, H), l), c);
    }
    for (int k = 0; k < L - 1; k++) {
        int sl = tutti_alg_hier_mod(l - k, L);
        int rl = tutti_alg_hier_mod(l - k - 1, L);
        tutti_alg_hier_step(sc, k == 0 ? "inside hosts" : NULL);
        for (int g = 0; g < H; g++)
            tutti_alg_hier_send(sc, right, (uint32_t)g, R, at(s, g, sl), c);
        for (int g = 0; g < H; g++)
            tutti_alg_hier_recv(sc, left, (uint32_t)g, R, at(s, g, rl), c);
    }
}

static void begin(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    if (x->sendbuf != x->recvbuf && s->bytes > 0)
        memcpy((char *)x->recvbuf + (size_t)s->inst->rank * s->bytes,
               x->sendbuf, s->bytes);
}

static const tutti_alg_hier_impl_t impl = {
    .name = "HierarchicalAllgather", .scratch = tutti_alg_hier_no_scratch, .build = build,
    .begin = begin};

TUTTI_ALG_HIER_DEFINE(tutti_alg_hier_allgather_hierarchical_ops, impl);
