/* An implementation whose former names repeat its own name: refused, the
 * name it answers to twice named. */
#include "mod_common.h"

static const char *const own[] = {"TestSelfOld", "TestSelfAlias", NULL};

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL_ALIASES("TestSelfAlias", own),
};

TUTTI_MODULE_DEFINE("testselfalias", "1.0", impls);
