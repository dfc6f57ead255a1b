/* A transport module whose settings row has a default outside its own
 * bounds: refused, naming the row and what it accepts. */
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#include "tp_common.h"

STUB_TP_OPS(ops, "badset", NULL);

typedef struct {
    uint64_t depth;
} badset_settings_t;

static const tutti_setting_t rows[] = {
    {.name = "depth", .default_value = "0", .doc = "how deep",
     .type = TUTTI_SETTING_UINT, .offset = offsetof(badset_settings_t, depth),
     .min = 1, .max = 8},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("testbadset", "1.0", ops, rows,
                                badset_settings_t);
