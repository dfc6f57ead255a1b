/*
 * HierarchicalAlltoall: alltoall whose blocks cross between each pair of
 * hosts in one message.  Cost, H hosts of L members, blocks of c bytes:
 * three steps; each host's link carries L (n-L) c each way in all (as a
 * flat alltoall's), but in H-1 messages instead of L (n-L), so it pays
 * where per-message costs bound a call.  Limits: equal counts, CPU memory,
 * the same number of members on every host; scratch of the input (used in
 * place) and of two sets of packed host blocks (about 2 n c + 2 L L c).
 *
 * Member (h, g mod L) of each host h handles the traffic from h to every
 * other host g.  Step 1, inside hosts: each member sends each handler its
 * blocks for the handler's hosts, which the handler packs by destination
 * ([destination member][source member], L x L blocks per host); blocks
 * for the own host go straight to their member.  Step 2, between hosts:
 * each handler sends each of its hosts g the packed blocks, to member
 * (g, h mod L), the handler there of source host h.  Step 3, inside
 * hosts: each receiving handler passes every member its L blocks of that
 * source host (one message where the host's ranks are consecutive, else
 * one per block).  In place, the input is copied to scratch first.
 */
#include <string.h>

#include "hier.h"

#define S TUTTI_ALG_HIER_SEND
#define R TUTTI_ALG_HIER_RECV
#define X TUTTI_ALG_HIER_SCRATCH

/* Scratch: the input (in place), then the packed blocks this member
 * sends to each of its hosts (slot g / L), then those it receives. */
static size_t slots(const tutti_alg_hier_topo_t *t)
{
    return (size_t)((t->hosts + t->per_host - 1) / t->per_host);
}

static size_t packed(const tutti_alg_hier_state_t *s)
{
    size_t L = (size_t)s->topo.per_host;
    return L * L * s->bytes;
}

static size_t out_at(const tutti_alg_hier_state_t *s, int g)
{
    return (size_t)s->inst->group_size * s->bytes +
           (size_t)(g / s->topo.per_host) * packed(s);
}

static size_t in_at(const tutti_alg_hier_state_t *s, int g)
{
    return out_at(s, 0) + slots(&s->topo) * packed(s) +
           (size_t)(g / s->topo.per_host) * packed(s);
}

static size_t scratch(const tutti_alg_hier_state_t *s)
{
    return s->bytes == 0 ? 0 : in_at(s, 0) + slots(&s->topo) * packed(s);
}

#define at tutti_alg_hier_block_at

/* Step 1: blocks to the handlers of their hosts, and inside the host. */
static void gather(tutti_alg_hier_state_t *s)
{
    const tutti_alg_hier_topo_t *t = &s->topo;
    tutti_alg_hier_sched_t *sc = &s->sched;
    int H = t->hosts, L = t->per_host, h = t->host, l = t->local;
    size_t c = s->bytes;

    tutti_alg_hier_step(sc, "to handlers");
    for (int g = 0; g < H; g++) {
        int m = g % L;
        for (int j = 0; g != h && j < L; j++) {
            uint32_t sub = (uint32_t)(g * L + j);
            if (m == l)
                tutti_alg_hier_copy(sc, X, out_at(s, g) +
                                    (size_t)(j * L + l) * c, S, at(s, g, j),
                                    c);
            else
                tutti_alg_hier_send(sc, tutti_alg_hier_rank(t, h, m), sub,
                                    S, at(s, g, j), c);
        }
    }
    for (int g = 0; g < H; g++) {
        if (g == h || g % L != l)
            continue;
        for (int src = 0; src < L; src++)
            for (int j = 0; src != l && j < L; j++)
                tutti_alg_hier_recv(sc, tutti_alg_hier_rank(t, h, src),
                                    (uint32_t)(g * L + j), X,
                                    out_at(s, g) + (size_t)(j * L + src) * c,
                                    c);
    }
    /* The own host's blocks, straight (tag: the host and the receiver). */
    for (int j = 0; j < L; j++) {
        if (j == l)
            tutti_alg_hier_copy(sc, R, at(s, h, l), S, at(s, h, l), c);
        else
            tutti_alg_hier_send(sc, tutti_alg_hier_rank(t, h, j),
                                (uint32_t)(h * L + j), S, at(s, h, j), c);
    }
    for (int j = 0; j < L; j++)
        if (j != l)
            tutti_alg_hier_recv(sc, tutti_alg_hier_rank(t, h, j),
                                (uint32_t)(h * L + l), R, at(s, h, j), c);
}

/* Step 2: one message per pair of hosts, handler to handler. */
static void exchange(tutti_alg_hier_state_t *s)
{
    const tutti_alg_hier_topo_t *t = &s->topo;
    tutti_alg_hier_sched_t *sc = &s->sched;
    int H = t->hosts, L = t->per_host, h = t->host, l = t->local;

    tutti_alg_hier_step(sc, "between hosts");
    for (int g = 0; g < H; g++)
        if (g != h && g % L == l)
            tutti_alg_hier_send(sc, tutti_alg_hier_rank(t, g, h % L), 0, X,
                                out_at(s, g), packed(s));
    for (int g = 0; g < H; g++)
        if (g != h && g % L == l)
            tutti_alg_hier_recv(sc, tutti_alg_hier_rank(t, g, h % L), 0, X,
                                in_at(s, g), packed(s));
}

/* Step 3: each member's blocks of each source host, from its handler. */
static void scatter(tutti_alg_hier_state_t *s)
{
    const tutti_alg_hier_topo_t *t = &s->topo;
    tutti_alg_hier_sched_t *sc = &s->sched;
    int H = t->hosts, L = t->per_host, h = t->host, l = t->local;
    size_t c = s->bytes;

    tutti_alg_hier_step(sc, "from handlers");
    for (int g = 0; g < H; g++) {
        if (g == h || g % L != l)
            continue;
        for (int j = 0; j < L; j++) {
            size_t from = in_at(s, g) + (size_t)(j * L) * c;
            int to = tutti_alg_hier_rank(t, h, j);
            if (j == l) {
                for (int src = 0; src < L; src++)
                    tutti_alg_hier_copy(sc, R, at(s, g, src), X,
                                        from + (size_t)src * c, c);
            } else if (t->contiguous) {
                tutti_alg_hier_send(sc, to, (uint32_t)g, X, from,
                                    (size_t)L * c);
            } else {
                for (int src = 0; src < L; src++)
                    tutti_alg_hier_send(sc, to, (uint32_t)(g * L + src), X,
                                        from + (size_t)src * c, c);
            }
        }
    }
    for (int g = 0; g < H; g++) {
        int m = g % L, from = tutti_alg_hier_rank(t, h, m);
        if (g == h || m == l)
            continue;
        if (t->contiguous) {
            tutti_alg_hier_recv(sc, from, (uint32_t)g, R, at(s, g, 0),
                                (size_t)L * c);
            continue;
        }
        for (int src = 0; src < L; src++)
            tutti_alg_hier_recv(sc, from, (uint32_t)(g * L + src), R,
                                at(s, g, src), c);
    }
}

static void build(tutti_alg_hier_state_t *s)
{
    if (s->bytes == 0)
        return;
    gather(s);
    if (s->topo.hosts > 1) {
        exchange(s);
        scatter(s);
    }
}

static void begin(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    if (x->sendbuf != x->recvbuf || s->bytes == 0)
        return;
    memcpy(s->scratch, x->sendbuf, (size_t)s->inst->group_size * s->bytes);
    s->bufs[S] = s->scratch;
}

static const tutti_alg_hier_impl_t impl = {
    .name = "HierarchicalAlltoall", .scratch = scratch, .build = build,
    .begin = begin};

TUTTI_ALG_HIER_DEFINE(tutti_alg_hier_alltoall_hierarchical_ops, impl);
