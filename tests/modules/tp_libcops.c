/* A transport module whose ops table pointer points into libc (at puts):
 * refused naming the transport table and where it points, never read. */
#include <stdio.h>

#include <tutti/transport.h>

TUTTI_MODULE_EXPORT_ const tutti_tp_module_desc_t TUTTI_MODULE_SYMBOL = {
    TUTTI_DESC_HEAD_(TUTTI_TP_ABI_MAJOR, TUTTI_TP_ABI_MINOR,
                     tutti_tp_module_desc_t, TUTTI_MODULE_KIND_TP,
                     "testlibcops", "1.0"),
    (const tutti_tp_ops_t *)(const void *)&puts, NULL, 0, 0};
