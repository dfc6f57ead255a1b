/*
 * What the suite's transport modules share: ops that do nothing, for
 * modules that are loaded, listed and refused but never carry data.
 * Included by each, so every one is a complete, loadable .so.
 */
#ifndef TUTTI_TEST_TP_COMMON_H
#define TUTTI_TEST_TP_COMMON_H

#include <stddef.h>

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
        .size = sizeof(tutti_tp_ops_t),                                        \
        .name = (tp_name),                                                     \
        .connect = stub_connect,                                               \
        .send = stub_op,                                                       \
        .recv = stub_op,                                                       \
        .progress = stub_progress,                                             \
        .disconnect = stub_disconnect,                                         \
        .reachable = (reach),                                                  \
    }

#endif
