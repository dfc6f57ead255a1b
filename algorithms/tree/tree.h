/*
 * The tree module's implementations (internal to alg_tree.so): each file
 * <collective>_<algorithm>.c defines one ops table, named
 * tutti_alg_tree_<collective>_<algorithm>_ops (the algorithm left out where
 * it is the tree itself); tree_module.c lists them in the descriptor.
 */
#ifndef TUTTI_ALG_TREE_H
#define TUTTI_ALG_TREE_H

#include <stdlib.h>

#include <tutti/module.h>

extern const tutti_alg_ops_t tutti_alg_tree_broadcast_hierarchical_ops;
extern const tutti_alg_ops_t tutti_alg_tree_allreduce_recursive_doubling_ops;
extern const tutti_alg_ops_t tutti_alg_tree_reduce_ops;
extern const tutti_alg_ops_t tutti_alg_tree_gather_binomial_ops;
extern const tutti_alg_ops_t tutti_alg_tree_allgather_bruck_ops;
extern const tutti_alg_ops_t
    tutti_alg_tree_reduce_scatter_recursive_halving_ops;
extern const tutti_alg_ops_t tutti_alg_tree_alltoall_bruck_ops;

/* TreeReduce, TreeGather, RecursiveDoublingAllreduce,
 * RecursiveHalvingReduceScatter and BruckAlltoall keep a scratch
 * buffer as the first member of their state (each file asserts it): this
 * fini_context frees both, either of them absent. */
static inline void tutti_alg_tree_scratch_fini(void *state)
{
    if (state != NULL)
        free(*(char **)state);
    free(state);
}

#endif
