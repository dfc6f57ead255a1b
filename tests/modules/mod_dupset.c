/* A transport module with two settings rows of one name: refused, naming
 * the row. */
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#include "tp_common.h"

STUB_TP_OPS(ops, "dupset", NULL);

typedef struct {
    uint64_t depth, width;
} dupset_settings_t;

static const tutti_setting_t rows[] = {
    {.name = "depth", .default_value = "2", .doc = "how deep",
     .type = TUTTI_SETTING_UINT, .offset = offsetof(dupset_settings_t, depth),
     .min = 1, .max = 8},
    {.name = "depth", .default_value = "3", .doc = "how wide",
     .type = TUTTI_SETTING_UINT, .offset = offsetof(dupset_settings_t, width),
     .min = 1, .max = 8},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("testdupset", "1.0", ops, rows,
                                dupset_settings_t);
