/*
 * The group as a grid of hosts x members per host (hier.h), from the
 * localities every member sees alike.
 */
#include <stdio.h>
#include <stdlib.h>

#include "hier.h"

/* Host of rank @p r; one host without localities. */
static int host_of(const tutti_alg_instance_t *inst, int r)
{
    return inst->localities != NULL ? inst->localities[r].host : 0;
}

/* Whether @p r is the lowest rank of its host. */
static int first_of_host(const tutti_alg_instance_t *inst, int r)
{
    for (int q = 0; q < r; q++)
        if (host_of(inst, q) == host_of(inst, r))
            return 0;
    return 1;
}

static int members_of_host(const tutti_alg_instance_t *inst, int r)
{
    int m = 0;
    for (int q = 0; q < inst->group_size; q++)
        m += host_of(inst, q) == host_of(inst, r);
    return m;
}

/* 0 with the host sizes in @p why when two hosts differ; else 1 and the
 * number of hosts and members per host. */
static int grid_shape(const tutti_alg_instance_t *inst, int *hosts_out,
                      int *per_out, char *why, size_t len)
{
    int hosts = 0, per = 0;
    for (int r = 0; r < inst->group_size; r++) {
        if (!first_of_host(inst, r))
            continue;
        int m = members_of_host(inst, r);
        if (hosts > 0 && m != per) {
            snprintf(why, len, "hosts hold different numbers of members "
                     "(rank 0's host %d, rank %d's host %d); expected the "
                     "same number on every host", per, r, m);
            return 0;
        }
        per = m;
        hosts++;
    }
    *hosts_out = hosts;
    *per_out = per;
    return 1;
}

int tutti_alg_hier_supports(const tutti_alg_instance_t *inst, char *why,
                            size_t len)
{
    int hosts, per;
    return grid_shape(inst, &hosts, &per, why, len);
}

tutti_status_t tutti_alg_hier_topo_init(tutti_alg_hier_topo_t *t,
                                        const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        const char *name)
{
    char why[200];
    int n = inst->group_size;

    if (!grid_shape(inst, &t->hosts, &t->per_host, why, sizeof(why)))
        return core->error(TUTTI_ERR_UNSUPPORTED, "%s: %s", name, why);
    t->rank = calloc((size_t)n, sizeof(int));
    if (t->rank == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory for the "
                           "host map of a group of %d", name, n);
    /* Host h is the h-th to appear in rank order; its members by rank. */
    int h = 0;
    for (int r = 0; r < n; r++) {
        if (!first_of_host(inst, r))
            continue;
        int l = 0;
        for (int q = r; q < n; q++) {
            if (host_of(inst, q) != host_of(inst, r))
                continue;
            t->rank[h * t->per_host + l] = q;
            if (q == inst->rank) {
                t->host = h;
                t->local = l;
            }
            l++;
        }
        h++;
    }
    int H = t->hosts, L = t->per_host;
    t->up = tutti_alg_hier_rank(t, (t->host + 1) % H, t->local);
    t->down = tutti_alg_hier_rank(t, (t->host + H - 1) % H, t->local);
    t->right = tutti_alg_hier_rank(t, t->host, (t->local + 1) % L);
    t->left = tutti_alg_hier_rank(t, t->host, (t->local + L - 1) % L);
    t->contiguous = 1;
    for (int i = 0; i < t->hosts; i++)
        for (int l = 0; l < t->per_host; l++)
            if (tutti_alg_hier_rank(t, i, l) !=
                tutti_alg_hier_rank(t, i, 0) + l)
                t->contiguous = 0;
    return TUTTI_OK;
}

void tutti_alg_hier_topo_fini(tutti_alg_hier_topo_t *t)
{
    free(t->rank);
    t->rank = NULL;
}
