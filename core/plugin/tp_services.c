/*
 * The services transport modules get (tutti_tp_core_ops_t, transport.h):
 * errors, log, the clock, settings, the core's slot-ring channels, the
 * store and the exchange of addresses over the control plane.
 */
#include <stdarg.h>
#include <stddef.h>

#include "job/store.h"
#include "job/xchg.h"
#include "base/clock.h"
#include "base/log.h"
#include "config/config.h"
#include "plugin/services.h"
#include "transport/chan.h"

static tutti_status_t core_error(tutti_status_t st, const char *subsys,
                                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = tutti__verror(st, subsys, fmt, ap);
    va_end(ap);
    return st;
}

static void core_log(int level, const char *subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tutti__module_vlog(level, subsys, fmt, ap);
    va_end(ap);
}

static const char *core_config_get(const void *config, const char *key,
                                   char *buf, size_t len)
{
    return tutti__config_get_text(config, key, buf, len);
}

/* The group's plane is its job (group.c), absent for the control plane's
 * own group. */
static tutti_status_t core_exchange(const void *group, const char *what,
                                    const void *mine, size_t len,
                                    void *peers, size_t stride, size_t *lens)
{
    const tutti_tp_group_t *g = group;
    if (g == NULL || g->size < offsetof(tutti_tp_group_t, plane) +
                                   sizeof(g->plane) || g->plane == NULL)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "xchg", "%s: no "
                            "exchange of addresses for the control plane's "
                            "own connections (it carries the exchange)",
                            what);
    return tutti__xchg((tutti__job_t *)g->plane, g, what, mine, len, peers,
                       stride, lens);
}

const tutti_tp_core_ops_t tutti__tp_core_ops = {
    .size = sizeof(tutti_tp_core_ops_t),
    .error = core_error,
    .log = core_log,
    .now = tutti__now,
    .config_get = core_config_get,
    .chan_bytes = tutti__chan_bytes,
    .chan_init = tutti__chan_api_init,
    .chan_ep_create = tutti__chan_api_create,
    .chan_ep_destroy = tutti__chan_api_destroy,
    .chan_attach = tutti__chan_api_attach,
    .chan_send = tutti__chan_api_send,
    .chan_recv = tutti__chan_api_recv,
    .chan_progress = tutti__chan_api_progress,
    .chan_enable_single_copy = tutti__chan_api_enable_single_copy,
    .chan_set_verify = tutti__chan_api_set_verify,
    .chan_attach_bell = tutti__chan_api_attach_bell,
    .chan_sleep = tutti__chan_api_sleep,
    .chan_set_single_copy_range = tutti__chan_api_set_single_copy_range,
    .store_set = tutti__store_set,
    .store_get = tutti__store_get,
    .chan_enable_mapped = tutti__chan_api_enable_mapped,
    .chan_set_mapped_min = tutti__chan_api_set_mapped_min,
    .exchange = core_exchange,
};
