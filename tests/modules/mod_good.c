/* A well-formed module: loads and runs. */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {TEST_IMPL("TestCopy")};

TUTTI_MODULE_DEFINE("testgood", "1.2.3", impls);
