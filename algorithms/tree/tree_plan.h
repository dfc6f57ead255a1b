/*
 * The plan of a pipelined k-ary tree, shared by the tree module's
 * HierarchicalTreeBroadcast and TreeReduce (internal to alg_tree.so): its
 * fanout and chunk size, and how they travel as the instance's details.
 */
#ifndef TUTTI_ALG_TREE_PLAN_H
#define TUTTI_ALG_TREE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/module.h>

#define TUTTI_ALG_TREE_MAX_FANOUT 16

/* The plan of a pipelined k-ary tree (broadcast, reduce): read from the
 * rule once, by the resolver, so members whose configs differ still build
 * one tree.  Travels as the instance's details. */
typedef struct {
    uint64_t fanout;  /* children per member, 1..TUTTI_ALG_TREE_MAX_FANOUT */
    uint64_t chunk;   /* bytes per pipelined message, >= one element */
} tutti_alg_tree_plan_t;

/* Reads rule params fanout (default 2) and chunk (default 256K) into the
 * details; an error names @p impl and the values expected. */
tutti_status_t tutti_alg_tree_plan_write(const tutti_alg_instance_t *inst,
                                         const tutti_core_ops_t *core,
                                         const char *impl, void *details,
                                         size_t *len_out);
/* Reads the plan back from the details (init_context); checks its size
 * and, for @p count elements, that chunk indices fit the 32-bit tags. */
tutti_status_t tutti_alg_tree_plan_read(const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        const char *impl, const void *details,
                                        size_t details_len,
                                        tutti_alg_tree_plan_t *plan_out);

#endif
