/* Two implementations of one module, the second answering to the first's
 * name as its former name: refused, the name listed twice. */
#include "mod_common.h"

static const char *const first[] = {"TestTwiceFirst", NULL};

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL("TestTwiceFirst"),
    TEST_IMPL_ALIASES("TestTwiceSecond", first),
};

TUTTI_MODULE_DEFINE("testtwicealias", "1.0", impls);
