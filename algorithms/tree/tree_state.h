/*
 * What the tree module's implementations with a scratch buffer share
 * (internal to alg_tree.so): their state and scratch are made, and the
 * failures reported, in one way.
 */
#ifndef TUTTI_ALG_TREE_STATE_H
#define TUTTI_ALG_TREE_STATE_H

#include <stddef.h>

#include <tutti/module.h>

/** A zeroed state of @p size bytes for @p impl, or NULL after recording
 *  that memory ran out. */
void *tutti_alg_tree_state_new(size_t size, const tutti_core_ops_t *core,
                               const char *impl);
/** A scratch buffer of @p bytes (at least one) for @p impl's @p state into
 *  *@p scratch_out.  When memory runs out, records that @p what could not
 *  be made, frees @p state and returns TUTTI_ERR_NO_MEMORY. */
tutti_status_t tutti_alg_tree_scratch(void *state, void *scratch_out,
                                      size_t bytes,
                                      const tutti_core_ops_t *core,
                                      const char *impl, const char *what);
/** Frees a state and its scratch buffer (either may be NULL). */
void tutti_alg_tree_state_free(void *state, void *scratch);

#endif
