/* A descriptor whose table says 3 implementations but holds none: refused. */
#include <tutti/module.h>

TUTTI_MODULE_EXPORT_ const tutti_module_desc_t TUTTI_MODULE_SYMBOL = {
    TUTTI_MODULE_ABI_MAJOR, TUTTI_MODULE_ABI_MINOR, sizeof(tutti_module_desc_t),
    TUTTI_MODULE_KIND_ALG, "testmalformed", "1.0", 3, NULL, NULL};
