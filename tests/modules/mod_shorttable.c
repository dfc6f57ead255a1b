/* A descriptor that counts 2 implementations while its table holds 1.
 * The loader used to read a second row from whatever followed the table
 * and follow the pointers in it: tutti-info and every job died of
 * SIGSEGV at load.  Refused, naming the table and the bytes its variable
 * holds (where the file keeps its symbol table; a stripped copy is
 * refused for what its second row holds). */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {TEST_IMPL("TestShortTable")};

TUTTI_MODULE_EXPORT_ const tutti_module_desc_t TUTTI_MODULE_SYMBOL = {
    TUTTI_DESC_HEAD_(TUTTI_MODULE_ABI_MAJOR, TUTTI_MODULE_ABI_MINOR,
                     tutti_module_desc_t, TUTTI_MODULE_KIND_ALG,
                     "testshorttable", "1.0"),
    2, impls, NULL};
