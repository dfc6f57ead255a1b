/* An implementation with an alias of TUTTI_NAME_MAX (64) characters, one
 * more than a name may have: refused, naming the implementation. */
#include "mod_common.h"

#define LONG_ALIAS                                                             \
    "TestLongAlias_67890123456789012345678901234567890123456789012345"
_Static_assert(sizeof(LONG_ALIAS) == TUTTI_NAME_MAX + 1,
               "the alias has TUTTI_NAME_MAX characters");

static const char *const too_long[] = {LONG_ALIAS, NULL};

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL_ALIASES("TestLongAlias", too_long)};

TUTTI_MODULE_DEFINE("testlongalias", "1.0", impls);
