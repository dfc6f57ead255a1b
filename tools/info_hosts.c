/*
 * The steps of each implementation, counted inside hosts and between them,
 * for a group of H hosts of L members in host order (as the schedules in
 * algorithms/ say; tools/tune_model.c times the same steps).
 */
#include <string.h>

#include "info_hosts.h"

typedef struct {
    int inside, between; /* message steps */
    const char *how;     /* what crosses the host links */
} steps_t;

static int log2_floor(int n)
{
    int k = 0;
    while ((1 << (k + 1)) <= n)
        k++;
    return k;
}

static steps_t ring(int h, int l, int rounds)
{
    (void)h;
    (void)l;
    return (steps_t){0, rounds, "every step crosses each host boundary "
                     "once each way (the ring keeps a host's members "
                     "together)"};
}

static steps_t steps_of(const char *impl, int h, int l)
{
    int n = h * l;
    if (strcmp(impl, "RingAllreduce") == 0)
        return ring(h, l, 2 * (n - 1));
    if (strcmp(impl, "RingAllgather") == 0 ||
        strcmp(impl, "RingReduceScatter") == 0)
        return ring(h, l, n - 1);
    if (strcmp(impl, "RecursiveDoublingAllreduce") == 0) {
        int p = log2_floor(n), in = log2_floor(l);
        if ((l & (l - 1)) != 0)
            in = 0; /* partners cross at every distance */
        return (steps_t){in + ((1 << p) != n ? 2 : 0), p - in,
                         "each exchange between hosts carries the whole "
                         "buffer of every member of the host"};
    }
    if (strcmp(impl, "HierarchicalAllreduce") == 0)
        return (steps_t){2 * (l - 1), 2 * (h - 1),
                         "L rings share each host link, each carrying its "
                         "shard: 2(H-1)/H of the buffer each way in all"};
    if (strcmp(impl, "HierarchicalLeaderAllreduce") == 0)
        return (steps_t){l > 1 ? 2 : 0, 1,
                         "each host's leader sends its host's sum to the "
                         "H-1 other leaders"};
    if (strcmp(impl, "HierarchicalAllgather") == 0 ||
        strcmp(impl, "HierarchicalReduceScatter") == 0)
        return (steps_t){l - 1, h - 1,
                         "L rings share each host link, each carrying one "
                         "block per step"};
    if (strcmp(impl, "PairwiseAlltoall") == 0)
        return (steps_t){l - 1, n - l,
                         "one block per member pair on different hosts, "
                         "L(n-L) messages per host"};
    if (strcmp(impl, "HierarchicalAlltoall") == 0)
        return (steps_t){2, 1,
                         "one message per pair of hosts, packing the L x L "
                         "blocks between them"};
    return (steps_t){-1, -1, NULL};
}

void info_hosts_print(FILE *out, const char *impl, int members, int hosts)
{
    if (hosts < 2 || impl == NULL)
        return;
    if (members % hosts != 0) {
        fprintf(out, "hosts: %d members on %d hosts: not the same number on "
                "every host (the Hierarchical* implementations decline "
                "such a group)\n", members, hosts);
        return;
    }
    int l = members / hosts;
    fprintf(out, "hosts: %d x %d members, in host order (host h holds "
            "ranks h*%d to h*%d+%d where a launcher places tasks by host)\n",
            hosts, l, l, l, l - 1);
    steps_t s = steps_of(impl, hosts, l);
    if (s.how == NULL) {
        fprintf(out, "steps: %s: no count of its steps by host here\n",
                impl);
        return;
    }
    fprintf(out, "steps: %s: %d inside hosts, %d between hosts; %s\n", impl,
            s.inside, s.between, s.how);
}
