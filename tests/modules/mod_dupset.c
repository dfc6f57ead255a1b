/* A transport module with two settings rows of one name: refused, naming
 * the row. */
#include "tp_common.h"

static const tutti_setting_t rows[] = {
    STUB_ROW("depth", "2", offsetof(stub_settings_t, depth)),
    STUB_ROW("depth", "3", offsetof(stub_settings_t, width)),
};

STUB_TP_MODULE_WITH_ROWS("dupset", rows);
