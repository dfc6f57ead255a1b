/* An implementation name holding a newline and what would pass for a
 * listing line of tutti-info after it. */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL("TestForged\n  RingAllreduce              module ring")};

TUTTI_MODULE_DEFINE("testbadname", "1.0.0", impls);
