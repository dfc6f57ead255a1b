/* A transport module whose whole-number row lies inside its settings
 * struct but at an offset a uint64_t cannot have: refused, naming the
 * row. */
#include "tp_common.h"

static const tutti_setting_t rows[] = {
    STUB_ROW("depth", "2", offsetof(stub_settings_t, depth) + 4),
};

STUB_TP_MODULE_WITH_ROWS("badalign", rows);
