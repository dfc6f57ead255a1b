/* A transport module built for another transport ABI major: refused. */
#include <tutti/transport.h>

static tutti_status_t no_connect(const tutti_tp_group_t *g,
                                 tutti_tp_ep_t **ep_out)
{
    (void)g;
    (void)ep_out;
    return TUTTI_ERR_UNSUPPORTED;
}

static const tutti_tp_ops_t ops = {
    sizeof(tutti_tp_ops_t), "testtp", no_connect, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL,
};

TUTTI_TP_EXPORT_ const tutti_tp_module_desc_t TUTTI_MODULE_SYMBOL = {
    TUTTI_TP_ABI_MAJOR + 1, 0, sizeof(tutti_tp_module_desc_t),
    TUTTI_MODULE_KIND_TP, "testbadtp", "1.0", &ops, NULL, 0, 0};
