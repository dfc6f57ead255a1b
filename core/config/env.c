/*
 * Configuration from the environment: every row's variable (the core's
 * here, a module's when its rows come), and TUTTI_ALGO's rules.  A
 * variable set to the empty string counts as unset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/size.h"
#include "config/config.h"
#include "config/setting.h"

static tutti_status_t env_error(const char *var, const char *value,
                                const char *found, const char *expected)
{
    return tutti__error(TUTTI_ERR_CONFIG, "config", "%s='%s': %s; expected %s",
                        var, value, found, expected);
}

/* Next @p sep separated field with blanks trimmed; NULL after the last. */
static char *next_field(char **cursor, char sep)
{
    char *start = *cursor, *end;

    if (start == NULL)
        return NULL;
    end = strchr(start, sep);
    if (end != NULL)
        *end++ = '\0';
    *cursor = end;
    return tutti__trim(start);
}

tutti_status_t tutti__cfg_env_rows(const char *section,
                                   const tutti_setting_t *rows, size_t n,
                                   void *values, tutti__source_t *src)
{
    char env[96], key[96], expected[256], found[160];
    for (size_t i = 0; i < n; i++) {
        const char *var = tutti__setting_env(&rows[i], section, env,
                                             sizeof(env));
        const char *value = getenv(var);
        if (value == NULL || *value == '\0')
            continue;
        char *copy = strdup(value);
        if (copy == NULL)
            return tutti__cfg_oom();
        tutti_status_t st = tutti__setting_set(&rows[i],
                                               tutti__trim(copy), values);
        free(copy);
        if (st == TUTTI_ERR_NO_MEMORY)
            return tutti__cfg_oom();
        if (st != TUTTI_OK) {
            snprintf(key, sizeof(key), "%s%s%s", section ? section : "",
                     section ? "." : "", rows[i].name);
            snprintf(found, sizeof(found), "not a valid %s", key);
            return env_error(var, value, found,
                             tutti__setting_expected(&rows[i], expected,
                                                     sizeof(expected)));
        }
        src[i] = TUTTI_SRC_ENV;
    }
    return TUTTI_OK;
}

#define ALGO_EXPECTED                                                          \
    "comma-separated collective:implementation pairs, e.g. "                   \
    "allreduce:RingAllreduce,broadcast:HierarchicalTreeBroadcast"

/* One "collective:Implementation" entry of TUTTI_ALGO as a rule. */
static tutti_status_t algo_entry(char *entry, const char *value,
                                 tutti__rule_t *r)
{
    char *colon = strchr(entry, ':');
    char *impl = colon != NULL ? tutti__trim(colon + 1) : NULL;
    char found[160];
    int coll;

    if (colon != NULL)
        *colon = '\0';
    coll = tutti__cfg_kind_lookup(&tutti__cfg_coll_kind, tutti__trim(entry));
    if (impl == NULL || !tutti__cfg_valid_name(impl) ||
        strchr(impl, ':') != NULL) {
        snprintf(found, sizeof(found), "entry '%.60s' is not collective:name",
                 entry);
        return env_error(TUTTI__ALGO_ENV, value, found, ALGO_EXPECTED);
    }
    if (coll < 0) {
        char names[200], expected[240];
        tutti__cfg_mask_names(&tutti__cfg_coll_kind, ~0u, ", ", names,
                              sizeof(names));
        snprintf(expected, sizeof(expected), "a collective, one of %s", names);
        snprintf(found, sizeof(found), "unknown collective '%.60s'",
                 tutti__trim(entry));
        return env_error(TUTTI__ALGO_ENV, value, found, expected);
    }
    tutti__cfg_rule_init(r);
    r->collectives = 1u << coll;
    if (tutti__cfg_set_str(&r->algorithm, impl) != TUTTI_OK ||
        tutti__cfg_set_str(&r->file, TUTTI__ALGO_ENV) != TUTTI_OK) {
        tutti__cfg_rule_free(r);
        return TUTTI_ERR_NO_MEMORY;
    }
    return TUTTI_OK;
}

static tutti_status_t env_algo(tutti__config_t *cfg, const char *value)
{
    tutti__cfg_rules_t a = {NULL, 0};
    char *copy = strdup(value), *cursor = copy, *entry;
    tutti_status_t st = copy != NULL ? TUTTI_OK : tutti__cfg_oom();
    tutti__rule_t r;

    while (st == TUTTI_OK && (entry = next_field(&cursor, ',')) != NULL) {
        st = algo_entry(entry, value, &r);
        if (st != TUTTI_OK)
            break;
        st = tutti__cfg_rules_push(&a.rules, &a.count, &r);
        if (st != TUTTI_OK)
            tutti__cfg_rule_free(&r);
    }
    free(copy);
    if (st != TUTTI_OK) {
        tutti__cfg_rules_free(a.rules, a.count);
        return st;
    }
    return tutti__cfg_rules_replace(cfg, true, a.rules, a.count);
}

tutti_status_t tutti__config_apply_env(tutti__config_t *cfg)
{
    tutti__config_t tmp;
    tutti_status_t st;

    if (cfg == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "config",
                            "no configuration to apply the environment to");
    st = tutti__cfg_config_copy(&tmp, cfg);
    if (st != TUTTI_OK)
        return st;
    st = tutti__cfg_env_rows(NULL, tutti__core_settings, TUTTI__CORE_SETTINGS,
                             &tmp, tmp.src);
    const char *algo = getenv(TUTTI__ALGO_ENV);
    if (st == TUTTI_OK && algo != NULL && *algo != '\0')
        st = env_algo(&tmp, algo);
    if (st != TUTTI_OK) {
        tutti__config_free(&tmp);
        return st;
    }
    tutti__cfg_config_replace(cfg, &tmp);
    return TUTTI_OK;
}
