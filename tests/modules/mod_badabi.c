/* A module built for another ABI major: refused. */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {TEST_IMPL("TestBadAbi")};

TUTTI_MODULE_EXPORT_ const tutti_module_desc_t TUTTI_MODULE_SYMBOL = {
    TUTTI_MODULE_ABI_MAJOR + 1, 0, sizeof(tutti_module_desc_t),
    TUTTI_MODULE_KIND_ALG, "testbadabi", "1.0", 1, impls, NULL};
