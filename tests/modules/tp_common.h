/*
 * What the suite's transport modules share: ops that do nothing, for
 * modules that are loaded, listed and refused but never carry data.
 * Included by each, so every one is a complete, loadable .so.
 */
#ifndef TUTTI_TEST_TP_COMMON_H
#define TUTTI_TEST_TP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

static tutti_status_t stub_connect(const tutti_tp_group_t *g,
                                   tutti_tp_ep_t **ep_out)
{
    (void)ep_out;
    return g->core->error(TUTTI_ERR_UNSUPPORTED, "test", "this test "
                          "transport connects no one");
}

static tutti_status_t stub_op(tutti_tp_ep_t *ep, tutti_tp_op_t *op)
{
    (void)ep;
    (void)op;
    return TUTTI_ERR_UNSUPPORTED;
}

static int stub_progress(tutti_tp_ep_t *ep)
{
    (void)ep;
    return 0;
}

static void stub_disconnect(tutti_tp_ep_t *ep)
{
    (void)ep;
}

/* An ops table of stubs named @p tp_name, with reachable @p reach (NULL:
 * every peer). */
#define STUB_TP_OPS(var, tp_name, reach)                                       \
    static const tutti_tp_ops_t var = {                                        \
        .size = sizeof(tutti_tp_ops_t), .name = (tp_name),                     \
        .connect = stub_connect, .send = stub_op, .recv = stub_op,             \
        .progress = stub_progress, .disconnect = stub_disconnect,              \
        .reachable = (reach)}

/* The settings struct of the suite's modules whose rows are refused. */
typedef struct {
    uint64_t depth, width;
} stub_settings_t;

/* A whole-number row of stub_settings_t: 1 to 8, default @p dflt, at byte
 * @p off. */
#define STUB_ROW(row_name, dflt, off)                                          \
    {.name = (row_name), .default_value = (dflt), .doc = "how deep",           \
     .type = TUTTI_SETTING_UINT, .offset = (off), .min = 1, .max = 8}

/* Transport module "test<tp_name>" (transport @p tp_name) of stub ops,
 * whose settings are @p rows over stub_settings_t. */
#define STUB_TP_MODULE_WITH_ROWS(tp_name, rows)                                \
    STUB_TP_OPS(stub_ops, tp_name, NULL);                                      \
    TUTTI_TP_MODULE_DEFINE_SETTINGS("test" tp_name, "1.0", stub_ops, rows,     \
                                    stub_settings_t)

#endif
