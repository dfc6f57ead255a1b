/* A transport module whose settings row lies past the end of its settings
 * struct: refused, naming the row, its offset and the struct's size. */
#include "tp_common.h"

static const tutti_setting_t rows[] = {
    STUB_ROW("depth", "2", sizeof(stub_settings_t)),
};

STUB_TP_MODULE_WITH_ROWS("badoffset", rows);
