/*
 * Modules' settings (config.h): a module declares rows; its values start
 * at their defaults, take what the file said in the module's section
 * (kept as text until the module came) and then the environment's.  The
 * module gets its settings struct, typed; nothing formats a value for it
 * to parse again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/strlist.h"
#include "base/size.h"
#include "base/sbuf.h"
#include "config/config.h"
#include "config/setting.h"

static const tutti_setting_t *find_row(const tutti_setting_t *rows, size_t n,
                                       const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* "<file>:<line>:<column>: <found>; expected <expected>", as yaml.c says
 * it of the core's keys. */
static tutti_status_t place_error(const tutti__config_t *cfg, int line,
                                  int column, const char *found,
                                  const char *expected)
{
    return tutti__error(TUTTI_ERR_CONFIG, "config", "%s:%d:%d: %s; expected "
                        "%s", cfg->path ? cfg->path : "(file)", line, column,
                        found, expected);
}

/* The file's values for @p m, in the order it gave them. */
static tutti_status_t take_pending(tutti__config_t *cfg,
                                   tutti__module_settings_t *m)
{
    char found[160], expected[256];
    for (size_t i = 0; i < cfg->num_pending; i++) {
        const tutti__pending_t *p = &cfg->pending[i];
        if (p->key == NULL || strcmp(p->section, m->section) != 0)
            continue;
        const tutti_setting_t *row = find_row(m->rows, m->num_rows, p->key);
        if (row == NULL) {
            tutti__sbuf_t sb = {expected, sizeof(expected), 0};
            tutti__sbuf_printf(&sb, "one of ");
            for (size_t k = 0; k < m->num_rows; k++)
                tutti__sbuf_printf(&sb, "%s%s", k ? ", " : "",
                                   m->rows[k].name);
            snprintf(found, sizeof(found), "unknown key '%.60s' in %s",
                     p->key, m->section);
            return place_error(cfg, p->line, p->column, found, expected);
        }
        tutti_status_t st = tutti__setting_set(row, p->value, m->values);
        if (st == TUTTI_ERR_NO_MEMORY)
            return tutti__cfg_oom();
        if (st != TUTTI_OK) {
            snprintf(found, sizeof(found), "found '%.60s%s' for %s",
                     p->value, strlen(p->value) > 60 ? "..." : "", p->key);
            return place_error(cfg, p->value_line, p->value_column, found,
                               tutti__setting_expected(row, expected,
                                                       sizeof(expected)));
        }
        m->src[row - m->rows] = TUTTI_SRC_FILE;
    }
    return TUTTI_OK;
}

/* Module @p m's values: defaults, the file's, the environment's. */
static tutti_status_t fill_module(tutti__config_t *cfg,
                                  tutti__module_settings_t *m)
{
    char expected[256];
    for (size_t i = 0; i < m->num_rows; i++) {
        const tutti_setting_t *row = &m->rows[i];
        tutti_status_t st = tutti__setting_set(row, row->default_value,
                                               m->values);
        if (st == TUTTI_ERR_NO_MEMORY)
            return tutti__cfg_oom();
        if (st != TUTTI_OK)
            return tutti__error(TUTTI_ERR_MODULE, "config", "module %s: "
                                "setting '%s' has the default '%s'; expected "
                                "%s", m->section, row->name,
                                row->default_value,
                                tutti__setting_expected(row, expected,
                                                        sizeof(expected)));
    }
    tutti_status_t st = take_pending(cfg, m);
    if (st == TUTTI_OK)
        st = tutti__cfg_env_rows(m->section, m->rows, m->num_rows, m->values,
                                 m->src);
    return st;
}

tutti_status_t tutti__config_add_module(tutti__config_t *cfg,
                                        const char *section,
                                        const tutti_setting_t *rows,
                                        size_t num_rows, size_t size)
{
    tutti__module_settings_t m = {
        strdup(section), rows, num_rows, calloc(1, size ? size : 1),
        calloc(num_rows ? num_rows : 1, sizeof(tutti__source_t))};
    tutti__module_settings_t *slot = NULL;
    tutti_status_t st = TUTTI_OK;

    if (m.section == NULL || m.values == NULL || m.src == NULL)
        st = tutti__cfg_oom();
    if (st == TUTTI_OK)
        st = fill_module(cfg, &m);
    if (st == TUTTI_OK &&
        (slot = tutti__cfg_grow(&cfg->modules, cfg->num_modules,
                            sizeof(*slot))) == NULL)
        st = tutti__cfg_oom();
    if (st != TUTTI_OK) {
        tutti__cfg_module_free(&m);
        return st;
    }
    *slot = m;
    cfg->num_modules++;
    tutti__cfg_pending_drop(cfg, section);
    return TUTTI_OK;
}

void tutti__config_module_absent(tutti__config_t *cfg, const char *section,
                                 const char *why)
{
    for (size_t i = 0; i < cfg->num_pending; i++) {
        const tutti__pending_t *p = &cfg->pending[i];
        if (strcmp(p->section, section) == 0) {
            tutti__log(TUTTI_LOG_WARN, "config", "%s:%d:%d: section '%s' "
                       "ignored: module %s is not loaded (%s)",
                       cfg->path ? cfg->path : "(file)", p->line, p->column,
                       section, section, why);
            tutti__cfg_pending_drop(cfg, section);
            return;
        }
    }
}

void tutti__config_module_found(tutti__config_t *cfg, const char *name)
{
    const tutti__strlist_t *l = &cfg->module_load;

    if (l->count == 0 || name == NULL)
        return;
    if (cfg->load_found == NULL &&
        (cfg->load_found = calloc(l->count, 1)) == NULL)
        return; /* then every name is reported: no worse than before */
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i], name) == 0)
            cfg->load_found[i] = 1;
}

/* A name in modules.load that no module found answers to. */
static tutti_status_t check_load(const tutti__config_t *cfg)
{
    const tutti__strlist_t *l = &cfg->module_load;
    const char *from;

    switch (cfg->src[TUTTI__SET_MODULE_LOAD]) {
    case TUTTI_SRC_ENV:
        from = "TUTTI_MODULES_LOAD";
        break;
    case TUTTI_SRC_FILE:
        from = cfg->path != NULL ? cfg->path : "the config file";
        break;
    default:
        from = tutti__source_name(cfg->src[TUTTI__SET_MODULE_LOAD]);
    }
    for (size_t i = 0; i < l->count; i++) {
        if (cfg->load_found != NULL && cfg->load_found[i])
            continue;
        return tutti__error(TUTTI_ERR_CONFIG, "config", "modules.load (from "
                            "%s) names '%.60s', which no module found "
                            "answers to; expected the name of a module in "
                            "the module path (tutti-info lists them)", from,
                            l->items[i]);
    }
    return TUTTI_OK;
}

tutti_status_t tutti__config_modules_done(tutti__config_t *cfg)
{
    char found[160], expected[512];
    tutti_status_t st = check_load(cfg);
    if (st != TUTTI_OK || cfg->num_pending == 0)
        return st;
    tutti__sbuf_t sb = {expected, sizeof(expected), 0};
    tutti__sbuf_printf(&sb, "one of %s, or the section of a loaded module "
                       "with settings", tutti__config_top_keys());
    for (size_t i = 0; i < cfg->num_modules; i++)
        tutti__sbuf_printf(&sb, "%s%s", i ? ", " : " (",
                           cfg->modules[i].section);
    tutti__sbuf_printf(&sb, "%s", cfg->num_modules ? ")" : "");
    snprintf(found, sizeof(found), "unknown key '%.60s' at top level",
             cfg->pending[0].section);
    return place_error(cfg, cfg->pending[0].line, cfg->pending[0].column,
                       found, expected);
}

static const tutti__module_settings_t *
find_module(const tutti__config_t *cfg, const char *section, size_t len)
{
    for (size_t i = 0; i < cfg->num_modules; i++) {
        const char *s = cfg->modules[i].section;
        if (strlen(s) == len && strncmp(s, section, len) == 0)
            return &cfg->modules[i];
    }
    return NULL;
}

const void *tutti__config_module_values(const tutti__config_t *cfg,
                                        const char *section)
{
    const tutti__module_settings_t *m =
        find_module(cfg, section, strlen(section));
    return m != NULL ? m->values : NULL;
}

const char *tutti__config_get_text(const tutti__config_t *cfg, const char *key,
                                   char *buf, size_t len)
{
    if (cfg == NULL || key == NULL || len == 0)
        return NULL;
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++) {
        if (strcmp(tutti__core_settings[i].name, key) == 0) {
            tutti__setting_print(&tutti__core_settings[i], cfg, buf, len);
            return buf;
        }
    }
    const char *dot = strchr(key, '.');
    const tutti__module_settings_t *m =
        dot != NULL ? find_module(cfg, key, (size_t)(dot - key)) : NULL;
    const tutti_setting_t *row =
        m != NULL ? find_row(m->rows, m->num_rows, dot + 1) : NULL;
    if (row == NULL)
        return NULL;
    tutti__setting_print(row, m->values, buf, len);
    return buf;
}
