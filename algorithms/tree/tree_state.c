/* States and scratch buffers of the tree module's implementations
 * (tree_state.h). */
#include <stdlib.h>
#include <string.h>

#include "tree_state.h"

void *tutti_alg_tree_state_new(size_t size, const tutti_core_ops_t *core,
                               const char *impl)
{
    void *s = calloc(1, size);
    if (s == NULL)
        core->error(TUTTI_ERR_NO_MEMORY, "%s: out of memory", impl);
    return s;
}

tutti_status_t tutti_alg_tree_scratch(void *state, void *scratch_out,
                                      size_t bytes,
                                      const tutti_core_ops_t *core,
                                      const char *impl, const char *what)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    memcpy(scratch_out, &p, sizeof(p));
    if (p != NULL)
        return TUTTI_OK;
    free(state);
    return core->error(TUTTI_ERR_NO_MEMORY, "%s: no memory for a %zu-byte "
                       "%s", impl, bytes, what);
}

void tutti_alg_tree_state_free(void *state, void *scratch)
{
    free(scratch);
    free(state);
}
