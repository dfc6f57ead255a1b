/*
 * The core's own settings, one row each (config.h): name, environment
 * variable, default, doc, type and place.  YAML, the environment,
 * tutti-info's listing and the checks all come from these rows; transports
 * declare theirs in their descriptors (plugin.h).
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "base/log.h"
#include "base/sbuf.h"
#include "config/config.h"
#include "config/setting.h"

#define AT(field) offsetof(tutti__config_t, field)

/* In the order of TUTTI__CUDA_SETUP_* (config.h). */
static const char *const cuda_setup_modes[] = {"join", "first_use", NULL};

/* In the order of TUTTI_TP_VERIFY_* (transport.h). */
static const char *const verify_modes[] = {"off", "checksum", "mac", NULL};

const tutti_setting_t tutti__core_settings[] = {
    [TUTTI__SET_LOG_LEVEL] = {
        .name = "log_level",
        .default_value = "warn",
        .doc = "lines below this level are not written",
        .type = TUTTI_SETTING_CHOICE,
        .offset = AT(log_level),
        .choices = tutti__log_level_names,
    },
    [TUTTI__SET_TIMEOUT] = {
        .name = "timeout",
        .default_value = "300",
        .doc = "seconds a call may make no progress before it fails",
        .type = TUTTI_SETTING_SECONDS,
        .offset = AT(timeout),
    },
    [TUTTI__SET_MODULE_PATH] = {
        .name = "modules.path",
        .env = "TUTTI_MODULE_PATH",
        .default_value = "",
        .doc = "directories searched for modules before the built-in one",
        .type = (tutti_setting_type_t)TUTTI__SETTING_PATHS,
        .offset = AT(module_path),
    },
    [TUTTI__SET_MODULE_LOAD] = {
        .name = "modules.load",
        .default_value = "",
        .doc = "modules to load by name; empty loads every one found",
        .type = (tutti_setting_type_t)TUTTI__SETTING_NAMES,
        .offset = AT(module_load),
        .expected = "a list of module names (empty: load all), e.g. [ring]",
    },
    [TUTTI__SET_TRANSPORTS] = {
        .name = "transports",
        .default_value = "shm, tcp",
        .doc = "transports tried in order for peers in other processes",
        .type = (tutti_setting_type_t)TUTTI__SETTING_NAMES,
        .offset = AT(transports),
        .expected = "a list of transport names, e.g. [shm, tcp]",
    },
    /* One key for every transport: the ends of a transfer must agree, and
     * a user asks for checked data, not for a transport's feature.  The
     * core hands the value to each transport's connect (group->verify). */
    [TUTTI__SET_VERIFY] = {
        .name = "verify",
        .default_value = "off",
        .doc = "checksum: shm and tcp check a CRC32C of every chunk and "
               "fail the transfer naming the sender where it differs; mac: "
               "tcp checks a keyed tag (Poly1305 under the connection's "
               "session key) instead, shm the CRC32C",
        .type = TUTTI_SETTING_CHOICE,
        .offset = AT(verify),
        .choices = verify_modes,
    },
    [TUTTI__SET_LOG_SUBSYSTEMS] = {
        .name = "log_subsystems",
        /* Not the derived TUTTI_LOG_SUBSYSTEMS: the short name is the one
         * typed at a prompt (TUTTI_LOG=registry:debug), as documented. */
        .env = "TUTTI_LOG",
        .default_value = "",
        .doc = "levels for some subsystems, over log_level: "
               "registry:debug,tcp:trace",
        .type = TUTTI_SETTING_STRING,
        .offset = AT(log_subsystems),
        .max = TUTTI__LOG_SUBSYSTEMS_MAX,
        .check = tutti__log_subsystems_ok,
        .expected = "a comma list of SUBSYSTEM:LEVEL (subsystem names of "
                    "[a-z0-9_], at most 16; levels error, warn, info, "
                    "debug, trace or off), e.g. registry:debug,tcp:trace",
    },
    [TUTTI__SET_LOG_FILE] = {
        .name = "log_file",
        .default_value = "",
        .doc = "log to this file instead of stderr, one per task: %t is "
               "the task, else .TASK is appended",
        .type = TUTTI_SETTING_STRING,
        .offset = AT(log_file),
        .max = TUTTI__LOG_FILE_MAX,
        .expected = "a file path (\"\": stderr), e.g. /tmp/job.%t.log",
    },
    /* Read by the context (exec/timeline.c writes the file). */
    [TUTTI__SET_TIMELINE] = {
        .name = "timeline",
        .default_value = "",
        .doc = "each task writes a Chrome trace (Perfetto) of its "
               "executions, phases and transfers here: %t is the task, "
               "else .TASK goes before .json; empty: none",
        .type = TUTTI_SETTING_STRING,
        .offset = AT(timeline),
        .max = TUTTI__TIMELINE_PATH_MAX,
        .expected = "a file path, e.g. /tmp/trace.%t.json (empty: no "
                    "timeline)",
    },
    /* Read by the join (exec/cuda_setup.c). */
    [TUTTI__SET_CUDA_GROUP_SETUP] = {
        .name = "cuda.group_setup",
        .default_value = "join",
        .doc = "when a CUDA group's modules with state on the device "
               "(NCCL) set it up: join runs one call through each in "
               "tutti_group_join, before any stream is held; first_use at "
               "the first execution that needs it, behind its held stream",
        .type = TUTTI_SETTING_CHOICE,
        .offset = AT(cuda_group_setup),
        .choices = cuda_setup_modes,
    },
};

_Static_assert(sizeof(tutti__core_settings) / sizeof(tutti__core_settings[0])
                   == TUTTI__CORE_SETTINGS,
               "one row per core setting");

static char top_keys[256];
static pthread_once_t top_keys_once = PTHREAD_ONCE_INIT;

/* The first part of each dotted key, once each, then selection. */
static void make_top_keys(void)
{
    tutti__sbuf_t sb = {top_keys, sizeof(top_keys), 0};
    for (size_t i = 0; i < TUTTI__CORE_SETTINGS; i++) {
        const char *name = tutti__core_settings[i].name;
        size_t n = strcspn(name, ".");
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *other = tutti__core_settings[j].name;
            seen = strncmp(other, name, n) == 0 &&
                   (other[n] == '.' || other[n] == '\0');
        }
        if (!seen)
            tutti__sbuf_printf(&sb, "%s%.*s", i ? ", " : "", (int)n, name);
    }
    tutti__sbuf_printf(&sb, ", selection");
}

const char *tutti__config_top_keys(void)
{
    pthread_once(&top_keys_once, make_top_keys);
    return top_keys;
}
