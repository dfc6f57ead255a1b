/*
 * What the tree module's hypercube algorithms share (tree_fold.c): the
 * fold of a group of n members onto the largest power of two p <= n, and
 * the state with a scratch buffer first that they allocate.
 *
 * The fold: with e = n - p extra members, among ranks 0 .. 2e-1 each even
 * rank hands its data to the odd rank above it before the exchanges and
 * gets its result back after; the p members left take virtual ranks (odd
 * ranks below 2e become r / 2, every rank from 2e becomes r - e) and
 * exchange with partners at distances 1, 2, 4 ... (or p/2, p/4 ...).
 */
#ifndef TUTTI_ALG_TREE_FOLD_H
#define TUTTI_ALG_TREE_FOLD_H

#include <stddef.h>

#include <tutti/module.h>

typedef struct {
    int p;      /* the largest power of two <= n */
    int e;      /* n - p: ranks 0 .. 2e-1 pair up */
    int v;      /* this member's virtual rank, or -1: it hands its data to
                   rank r + 1 and takes part in no exchange */
} tutti_alg_tree_fold_t;

/* The fold of a group of @p n as rank @p r sees it. */
tutti_alg_tree_fold_t tutti_alg_tree_fold(int n, int r);

/* The real rank of virtual rank @p v. */
int tutti_alg_tree_fold_rank(const tutti_alg_tree_fold_t *f, int v);

/* Actions a member of a group of @p n may have: log2 of it (rounded up)
 * exchanges and the two hand-overs. */
size_t tutti_alg_tree_fold_actions(int n);

/* A zeroed state of @p state_bytes whose first member, a char *, points
 * to a scratch of @p scratch_bytes (at least one byte allocated: malloc(0)
 * may return NULL, which is no failure); NULL, with the error recorded
 * under @p impl (naming what the scratch is for, @p what), if memory ran
 * out.  tutti_alg_tree_scratch_fini (tree.h) frees both. */
void *tutti_alg_tree_state_new(const tutti_core_ops_t *core, const char *impl,
                               size_t state_bytes, size_t scratch_bytes,
                               const char *what);

#endif
