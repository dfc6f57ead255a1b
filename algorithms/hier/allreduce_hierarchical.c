/*
 * HierarchicalAllreduce: allreduce in three phases that cross each host's
 * link the least a bandwidth schedule can.  Cost, H hosts of L members:
 * 2(L-1) steps inside hosts, each member moving S/L per step, and 2(H-1)
 * steps between them in which each host's link carries 2(H-1)/H of the
 * buffer each way in all (the floor), shared by L rings.  Limits: equal
 * counts, CPU memory, the same number of members on every host.
 *
 * The buffer is cut into L shards.  Inside each host a ring reduce-
 * scatter leaves member (h, l) with shard (l+1) mod L reduced over its
 * host; the H members with local index l then run a ring allreduce of
 * that shard between hosts (cut into H blocks), so L rings share each
 * host link, each carrying its shard; inside each host a ring allgather
 * of the shards ends it.  The input is read where it lies (the first
 * send of each reduce-scatter leaves from it, each receipt reduces with
 * it into the output), so no phase copies it first, and every byte of
 * the output is written by some receipt.  One host: a ring allreduce
 * inside it; one member per host: a ring allreduce between hosts.
 */
#include <string.h>

#include "hier.h"

#define S TUTTI_ALG_HIER_SEND
#define R TUTTI_ALG_HIER_RECV

/* Shard @p j in bytes. */
static void shard(const tutti_alg_hier_state_t *s, int j, size_t *off,
                  size_t *len)
{
    tutti_alg_hier_part(s->inst->count, s->topo.per_host,
                        tutti_alg_hier_mod(j, s->topo.per_host), off, len);
    *off *= s->esize;
    *len *= s->esize;
}

/* Block @p i (of H) of shard @p j, in bytes. */
static void block(const tutti_alg_hier_state_t *s, int j, int i,
                  size_t *off, size_t *len)
{
    size_t so, sl, bo;
    int H = s->topo.hosts;
    tutti_alg_hier_part(s->inst->count, s->topo.per_host, j, &so, &sl);
    tutti_alg_hier_part(sl, H, tutti_alg_hier_mod(i, H), &bo, len);
    *off = (so + bo) * s->esize;
    *len *= s->esize;
}

static void build(tutti_alg_hier_state_t *s)
{
    const tutti_alg_hier_topo_t *t = &s->topo;
    tutti_alg_hier_sched_t *sc = &s->sched;
    int H = t->hosts, L = t->per_host, h = t->host, l = t->local;
    int right = t->right, left = t->left;
    size_t o, n;

    if (s->inst->count == 0)
        return;
    /* The input is read where it is: the first send of the reduce-scatter
     * leaves from it, and each shard's one receipt reduces with it. */
    for (int k = 0; k < L - 1; k++) {
        tutti_alg_hier_step(sc, k == 0 ? "host reduce-scatter" : NULL);
        shard(s, l - k, &o, &n);
        tutti_alg_hier_send(sc, right, 0, k == 0 ? S : R, o, n);
        shard(s, l - k - 1, &o, &n);
        tutti_alg_hier_recv_reduce(sc, left, 0, R, o, S, o, n);
    }
    /* The own shard's host sum: in the output, or (one member per host)
     * still the input. */
    int own = (l + 1) % L, part = L > 1 ? R : S;
    int up = t->up, down = t->down;
    for (int k = 0; k < H - 1; k++) {
        tutti_alg_hier_step(sc, k == 0 ? "reduce-scatter between hosts"
                                       : NULL);
        block(s, own, h - k, &o, &n);
        tutti_alg_hier_send(sc, up, 0, k == 0 ? part : R, o, n);
        block(s, own, h - k - 1, &o, &n);
        tutti_alg_hier_recv_reduce(sc, down, 0, R, o, part, o, n);
    }
    for (int k = 0; k < H - 1; k++) {
        tutti_alg_hier_step(sc, k == 0 ? "allgather between hosts" : NULL);
        block(s, own, h + 1 - k, &o, &n);
        tutti_alg_hier_send(sc, up, 0, R, o, n);
        block(s, own, h - k, &o, &n);
        tutti_alg_hier_recv(sc, down, 0, R, o, n);
    }
    for (int k = 0; k < L - 1; k++) {
        tutti_alg_hier_step(sc, k == 0 ? "host allgather" : NULL);
        shard(s, l + 1 - k, &o, &n);
        tutti_alg_hier_send(sc, right, 0, R, o, n);
        shard(s, l - k, &o, &n);
        tutti_alg_hier_recv(sc, left, 0, R, o, n);
    }
}

/* A group of one has no step: its input is the output. */
static void begin(tutti_alg_hier_state_t *s, tutti_alg_exec_t *x)
{
    if (s->inst->group_size == 1 && x->sendbuf != x->recvbuf &&
        s->bytes > 0)
        memcpy(x->recvbuf, x->sendbuf, s->bytes);
}

static const tutti_alg_hier_impl_t impl = {
    .name = "HierarchicalAllreduce", .scratch = tutti_alg_hier_no_scratch, .build = build,
    .begin = begin};

TUTTI_ALG_HIER_DEFINE(tutti_alg_hier_allreduce_hierarchical_ops, impl);
