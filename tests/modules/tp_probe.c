/*
 * A transport module that declares settings of its own and reads them
 * typed: it reaches no peer (reachable() says no, so the next transport of
 * the list serves), but first says, once per process, the values the core
 * handed it in group->settings.  One row of each type.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include <tutti/transport.h>

#include "tp_common.h"

typedef struct {
    char greeting[32];
    uint64_t depth;
    int mode;
    uint64_t window;
    uint64_t ports[2];
    double patience;
} probe_settings_t;

static const char *const modes[] = {"fast", "careful", NULL};

static int said;

static int probe_reachable(const tutti_tp_group_t *g, int peer)
{
    (void)peer;
    if (g->size < offsetof(tutti_tp_group_t, settings) + sizeof(void *) ||
        g->settings == NULL) {
        g->core->log(0, "probe", "no settings were handed to probe");
        return 0;
    }
    const probe_settings_t *s = g->settings;
    if (!said++)
        g->core->log(1, "probe", "greeting '%s', depth %" PRIu64 ", mode "
                     "%s, window %" PRIu64 ", ports %" PRIu64 "-%" PRIu64
                     ", patience %g", s->greeting, s->depth, modes[s->mode],
                     s->window, s->ports[0], s->ports[1], s->patience);
    return 0;
}

STUB_TP_OPS(probe_ops, "probe", probe_reachable);

static const tutti_setting_t probe_rows[] = {
    {.name = "greeting", .default_value = "hello", .doc = "a word",
     .type = TUTTI_SETTING_STRING,
     .offset = offsetof(probe_settings_t, greeting),
     .max = sizeof(((probe_settings_t *)0)->greeting)},
    {.name = "depth", .default_value = "2", .doc = "how deep",
     .type = TUTTI_SETTING_UINT, .offset = offsetof(probe_settings_t, depth),
     .min = 1, .max = 8},
    {.name = "mode", .default_value = "fast", .doc = "how",
     .type = TUTTI_SETTING_CHOICE, .offset = offsetof(probe_settings_t, mode),
     .choices = modes},
    {.name = "window", .default_value = "64K", .doc = "how wide",
     .type = TUTTI_SETTING_SIZE, .offset = offsetof(probe_settings_t, window),
     .min = 4096, .max = 1u << 20, .flags = TUTTI_SETTING_POW2},
    {.name = "ports", .env = "PROBE_PORTS", .default_value = "0",
     .doc = "where", .type = TUTTI_SETTING_RANGE,
     .offset = offsetof(probe_settings_t, ports), .min = 1, .max = 65535,
     .flags = TUTTI_SETTING_ZERO_ANY},
    {.name = "patience", .default_value = "1.5", .doc = "how long",
     .type = TUTTI_SETTING_SECONDS,
     .offset = offsetof(probe_settings_t, patience)},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("probe", "1.0", probe_ops, probe_rows,
                                probe_settings_t);
