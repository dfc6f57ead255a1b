/* A transport module whose settings row has a default outside its own
 * bounds: refused, naming the row and what it accepts. */
#include "tp_common.h"

static const tutti_setting_t rows[] = {
    STUB_ROW("depth", "0", offsetof(stub_settings_t, depth)),
};

STUB_TP_MODULE_WITH_ROWS("badset", rows);
