/* A transport module whose descriptor counts 3 settings rows while its
 * table holds 1: refused naming the table and what its variable holds,
 * before the second row is read. */
#include "tp_common.h"

static const tutti_setting_t rows[] = {STUB_ROW("depth", "2", 0)};

STUB_TP_OPS(stub_ops, "shortset", NULL);
TUTTI_TP_DESC_("testshortset", "1.0", stub_ops, rows, 3,
               (uint32_t)sizeof(stub_settings_t));
