/* Registers an implementation name the good module already has; its file
 * name sorts after it, so it is the one refused. */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {TEST_IMPL("TestCopy")};

TUTTI_MODULE_DEFINE("testdup", "1.0", impls);
