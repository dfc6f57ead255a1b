/* An implementation whose former name (an alias) is the name of an
 * implementation the good module registered: refused, as a name would be. */
#include "mod_common.h"

static const char *const taken[] = {"TestCopy", NULL};

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL_ALIASES("TestAliasTaken", taken)};

TUTTI_MODULE_DEFINE("testbadalias", "1.0", impls);
