/* A transport module built against transport ABI 2.0: its descriptor ends
 * before the settings fields that 2.1 added.  It still loads (a minor
 * version only grows the tables at their end). */
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#include "tp_common.h"

STUB_TP_OPS(ops, "v20", NULL);

/* The descriptor as transport.h 2.0 laid it out. */
typedef struct {
    uint32_t abi_major, abi_minor, size, kind;
    const char *name, *version;
    const tutti_tp_ops_t *ops;
} desc_v20_t;

TUTTI_MODULE_EXPORT_ const desc_v20_t TUTTI_MODULE_SYMBOL = {
    2, 0, (uint32_t)sizeof(desc_v20_t), TUTTI_MODULE_KIND_TP, "testv20",
    "2.0", &ops};
