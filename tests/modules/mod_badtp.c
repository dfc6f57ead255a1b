/* A transport module built for another transport ABI major: refused. */
#include <tutti/transport.h>

#include "tp_common.h"

STUB_TP_OPS(ops, "testtp", NULL);

TUTTI_TP_EXPORT_ const tutti_tp_module_desc_t TUTTI_MODULE_SYMBOL = {
    TUTTI_TP_ABI_MAJOR + 1, 0, sizeof(tutti_tp_module_desc_t),
    TUTTI_MODULE_KIND_TP, "testbadtp", "1.0", &ops, NULL, 0, 0};
