/*
 * Ring orders that keep each host's members together (ring.h).
 */
#include "ring.h"

int tutti_alg_ring_host_order(const tutti_alg_instance_t *inst, int *order)
{
    int n = inst->group_size, len = 0, me = 0;
    const tutti_locality_t *loc = inst->localities;

    /* Hosts in the order of their lowest rank; members by rank. */
    for (int r = 0; r < n; r++) {
        int first = 1;
        for (int q = 0; loc != NULL && q < r && first; q++)
            first = loc[q].host != loc[r].host;
        if (!first)
            continue;
        for (int q = r; q < n; q++) {
            if (loc != NULL && loc[q].host != loc[r].host)
                continue;
            if (q == inst->rank)
                me = len;
            order[len++] = q;
        }
        if (loc == NULL)
            break;
    }
    return me;
}
