/* Defines RingAllreduce, which the shipped ring module has: found in a
 * directory searched before the shipped ones, it is still the one
 * refused, since shipped modules load first. */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {TEST_IMPL("RingAllreduce")};

TUTTI_MODULE_DEFINE("testshadow", "1.0.0", impls);
