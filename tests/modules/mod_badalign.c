/* A transport module whose whole-number row lies inside its settings
 * struct but at an offset a uint64_t cannot have: refused, naming the
 * row. */
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#include "tp_common.h"

STUB_TP_OPS(ops, "badalign", NULL);

typedef struct {
    uint64_t depth, spare;
} badalign_settings_t;

static const tutti_setting_t rows[] = {
    {.name = "depth", .default_value = "2", .doc = "how deep",
     .type = TUTTI_SETTING_UINT,
     .offset = offsetof(badalign_settings_t, depth) + 4, .min = 1, .max = 8},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("testbadalign", "1.0", ops, rows,
                                badalign_settings_t);
