/* A transport module whose settings row lies past the end of its settings
 * struct: refused, naming the row, its offset and the struct's size. */
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#include "tp_common.h"

STUB_TP_OPS(ops, "badoffset", NULL);

typedef struct {
    uint64_t depth;
} badoffset_settings_t;

static const tutti_setting_t rows[] = {
    {.name = "depth", .default_value = "2", .doc = "how deep",
     .type = TUTTI_SETTING_UINT, .offset = sizeof(badoffset_settings_t),
     .min = 1, .max = 8},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("testbadoffset", "1.0", ops, rows,
                                badoffset_settings_t);
