/* The fold onto a power of two, and the scratch-first state (tree_fold.h). */
#include <stdlib.h>

#include "tree.h"
#include "tree_fold.h"

tutti_alg_tree_fold_t tutti_alg_tree_fold(int n, int r)
{
    tutti_alg_tree_fold_t f = {1, 0, -1};
    while (f.p * 2 <= n)
        f.p *= 2;
    f.e = n - f.p;
    if (r >= 2 * f.e)
        f.v = r - f.e;
    else if (r % 2 == 1)
        f.v = r / 2;
    return f;
}

int tutti_alg_tree_fold_rank(const tutti_alg_tree_fold_t *f, int v)
{
    return v < f->e ? 2 * v + 1 : v + f->e;
}

size_t tutti_alg_tree_fold_actions(int n)
{
    size_t k = 2;
    for (int q = 1; q < n; q <<= 1)
        k++;
    return k;
}

void *tutti_alg_tree_state_new(const tutti_core_ops_t *core, const char *impl,
                               size_t state_bytes, size_t scratch_bytes,
                               const char *what)
{
    char **s = calloc(1, state_bytes);
    if (s == NULL) {
        core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory", impl);
        return NULL;
    }
    *s = malloc(scratch_bytes > 0 ? scratch_bytes : 1);
    if (*s == NULL) {
        tutti_alg_tree_scratch_fini(s);
        core->error(TUTTI_ERR_NO_MEMORY, "%s: no memory for a %zu-byte %s",
                    impl, scratch_bytes, what);
        return NULL;
    }
    return s;
}
