/*
 * The tree module's implementations (internal to alg_tree.so): each file
 * defines one ops table; tree_module.c lists them in the descriptor.
 */
#ifndef TUTTI_ALG_TREE_H
#define TUTTI_ALG_TREE_H

#include <tutti/module.h>

extern const tutti_alg_ops_t tutti_alg_tree_bcast_ops;
extern const tutti_alg_ops_t tutti_alg_tree_rd_ops;

#endif
