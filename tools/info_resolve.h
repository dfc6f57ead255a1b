/*
 * tutti-info --resolve: run one collective for real in a group spread over
 * several processes of this host, check every output element against the
 * exact result (pattern.h), and print each rank's place and what ran.
 */
#ifndef TUTTI_TOOLS_INFO_RESOLVE_H
#define TUTTI_TOOLS_INFO_RESOLVE_H

#include <stddef.h>

#include <tutti/tutti.h>

/** Largest group --resolve forms. */
#define INFO_RESOLVE_MAX_MEMBERS 64
/** Most bytes the buffers of all members together may hold at once. */
#define INFO_RESOLVE_MAX_BYTES ((size_t)4 << 30)

typedef struct {
    const tutti_context_params_t *cp; /**< config, modules, log level; the
                                           task fields are set per task */
    tutti_collective_t coll;
    tutti_dtype_t dtype;
    size_t count;      /**< elements per rank, as the collective defines it */
    int group_size;
    int num_tasks;     /**< processes; 1 <= num_tasks <= group_size */
    double timeout;    /**< seconds a member waits for the others */
} info_resolve_t;

/**
 * Checks that @p r can run: the group size, the buffers' total, and exact
 * sums for the dtype (the caller checked that the tasks fit the group).
 * Prints why not to stderr and returns -1; else 0.
 */
int info_resolve_check(const info_resolve_t *r);

/**
 * Forks r->num_tasks processes (the caller holds no context and no other
 * thread), each creating its own context and driving its share of the
 * members as threads; every member runs the call out of place, in place,
 * and, for allgather, reduce_scatter and alltoall, once with per-rank
 * counts.  Prints every rank's line in rank order to stdout.  Returns 0 if
 * every call succeeded and every element was right, else 1.
 */
int info_resolve(const info_resolve_t *r);

#endif
