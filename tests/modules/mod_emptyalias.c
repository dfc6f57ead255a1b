/* An implementation with an empty alias: refused, naming the
 * implementation. */
#include "mod_common.h"

static const char *const empty[] = {"", NULL};

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL_ALIASES("TestEmptyAlias", empty)};

TUTTI_MODULE_DEFINE("testemptyalias", "1.0", impls);
