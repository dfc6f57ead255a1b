/* An implementation whose second alias points at a stack-like address
 * (no module's, most likely unmapped): refused naming the implementation,
 * the alias list and the entry, never read. */
#include <stdint.h>

#include "mod_common.h"

static const char *const was[] = {
    "TestStackPtrWas", (const char *)(uintptr_t)0x7ffffffde000ull, NULL};

static const tutti_alg_impl_t impls[] = {
    TEST_IMPL_ALIASES("TestStackPtr", was),
};

TUTTI_MODULE_DEFINE("teststackptr", "1.0", impls);
