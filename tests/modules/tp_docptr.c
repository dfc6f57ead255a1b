/* A transport module whose second settings row's doc points at a
 * stack-like address: refused naming the row and the field. */
#include <stdint.h>

#include "tp_common.h"

static const tutti_setting_t rows[] = {
    STUB_ROW("depth", "2", 0),
    {.name = "width", .default_value = "1",
     .doc = (const char *)(uintptr_t)0x7ffffffde000ull,
     .type = TUTTI_SETTING_UINT, .offset = 8, .min = 1, .max = 8},
};

STUB_TP_MODULE_WITH_ROWS("docptr", rows);
