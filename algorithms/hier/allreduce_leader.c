/*
 * HierarchicalLeaderAllreduce: allreduce for small messages, in three
 * steps whatever the group's size.  Cost, H hosts of L members: one step
 * inside each host, one between hosts, one inside again; the host's link
 * carries (H-1) buffers each way, so it pays where latency, not
 * bandwidth, bounds a call.  Limits: equal counts, CPU memory, the same
 * number of members on every host.
 *
 * Each host's leader is its lowest rank (local index 0).  The others send
 * it their buffers; it reduces them in local order, then sends the host's
 * sum to every other leader and receives theirs; every leader reduces the
 * H host sums in host order, so all get the same bits, and sends the
 * result to its host's members.  The leader keeps max(L-1, H) buffers of
 * scratch.  The others send their input as it lies; the leader first
 * copies its own to its output (out of place), where it reduces.
 */
#include <string.h>

#include "hier.h"

#define S TUTTI_ALG_HIER_SEND
#define R TUTTI_ALG_HIER_RECV
#define X TUTTI_ALG_HIER_SCRATCH

static size_t scratch(const tutti_alg_hier_state_t *s)
{
    const tutti_alg_hier_topo_t *t = &s->topo;
    size_t slots = (size_t)(t->per_host - 1);
    if (t->hosts > 1 && (size_t)t->hosts > slots)
        slots = (size_t)t->hosts;
    return t->local == 0 ? slots * s->bytes : 0;
}

static void build(tutti_alg_hier_state_t *s)
{
    const tutti_alg_hier_topo_t *t = &s->topo;
    tutti_alg_hier_sched_t *sc = &s->sched;
    int H = t->hosts, L = t->per_host, h = t->host, l = t->local;
    int leader = tutti_alg_hier_rank(t, h, 0);
    size_t B = s->bytes;

    if (B == 0 || H * L == 1)
        return;
    tutti_alg_hier_step(sc, "reduce to host leaders");
    if (l != 0)
        tutti_alg_hier_send(sc, leader, 0, S, 0, B);
    for (int j = 1; l == 0 && j < L; j++)
        tutti_alg_hier_recv(sc, tutti_alg_hier_rank(t, h, j), 0, X,
                            (size_t)(j - 1) * B, B);
    tutti_alg_hier_step(sc, "leaders exchange");
    if (l == 0) {
        for (int j = 1; j < L; j++)
            tutti_alg_hier_reduce(sc, R, 0, X, (size_t)(j - 1) * B, B);
        for (int g = 0; g < H; g++)
            if (g != h)
                tutti_alg_hier_send(sc, tutti_alg_hier_rank(t, g, 0), 0, R,
                                    0, B);
        for (int g = 0; g < H; g++)
            if (g != h)
                tutti_alg_hier_recv(sc, tutti_alg_hier_rank(t, g, 0), 0, X,
                                    (size_t)g * B, B);
    }
    tutti_alg_hier_step(sc, "host broadcast");
    if (l != 0) {
        tutti_alg_hier_recv(sc, leader, 0, R, 0, B);
        return;
    }
    if (H > 1) {
        /* The host sums in host order: the same bits on every leader. */
        tutti_alg_hier_copy(sc, X, (size_t)h * B, R, 0, B);
        tutti_alg_hier_copy(sc, R, 0, X, 0, B);
        for (int g = 1; g < H; g++)
            tutti_alg_hier_reduce(sc, R, 0, X, (size_t)g * B, B);
    }
    for (int j = 1; j < L; j++)
        tutti_alg_hier_send(sc, tutti_alg_hier_rank(t, h, j), 0, R, 0, B);
}

/* The leader reduces into its output: its own input goes there first. */
static void begin(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    if (s->topo.local == 0 && x->sendbuf != x->recvbuf && s->bytes > 0)
        memcpy(x->recvbuf, x->sendbuf, s->bytes);
}

static const tutti_alg_hier_impl_t impl = {
    .name = "HierarchicalLeaderAllreduce", .scratch = scratch,
    .build = build, .begin = begin};

TUTTI_ALG_HIER_DEFINE(tutti_alg_hier_allreduce_leader_ops, impl);
