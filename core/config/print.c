/*
 * Printing the configuration (config.h): every setting with its value and
 * source, the rules with the reasons any were skipped, and for tutti-info
 * every setting's doc, default, variable and what it accepts.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/size.h"
#include "config/config.h"
#include "config/setting.h"

static void print_mask(FILE *out, const tutti__cfg_name_kind_t *kind,
                       uint32_t mask)
{
    char names[200];

    if (mask == 0)
        return;
    tutti__cfg_mask_names(kind, mask, ",", names, sizeof(names));
    fprintf(out, " %s=%s", kind->key, names);
}

static void print_int_range(FILE *out, const char *key, int lo, int hi)
{
    char range[64];

    if (lo == 0 && hi == INT32_MAX)
        return;
    tutti__range_format((uint64_t)lo, (uint64_t)hi, INT32_MAX, false, range,
                 sizeof(range));
    fprintf(out, " %s=%s", key, range);
}

static void print_rule(FILE *out, size_t index, const tutti__rule_t *r)
{
    char where[300], range[64];

    tutti__config_rule_where(r, where, sizeof(where));
    if (r->line > 0)
        snprintf(where + strlen(where), sizeof(where) - strlen(where), ":%d",
                 r->column);
    fprintf(out, "  %zu. %s:", index + 1, where);
    print_mask(out, &tutti__cfg_coll_kind, r->collectives);
    print_mask(out, &tutti__cfg_device_kind, r->device_types);
    print_mask(out, &tutti__cfg_dtype_kind, r->dtypes);
    if (r->size_min != 0 || r->size_max != UINT64_MAX) {
        tutti__range_format(r->size_min, r->size_max, UINT64_MAX, true, range,
                     sizeof(range));
        fprintf(out, " size=%s", range);
    }
    print_int_range(out, "group_size", r->group_min, r->group_max);
    print_int_range(out, "num_tasks", r->tasks_min, r->tasks_max);
    print_int_range(out, "hosts", r->hosts_min, r->hosts_max);
    fprintf(out, " -> %s", tutti__config_rule_algo(r));
    if (r->written != NULL)
        fprintf(out, " (written %s)", r->written);
    for (size_t i = 0; i < r->num_params; i++)
        fprintf(out, "%s%s: %s", i == 0 ? " {" : ", ", r->params[i].key,
                r->params[i].value);
    fprintf(out, "%s", r->num_params > 0 ? "}" : "");
    if (r->skipped)
        fprintf(out, " [skipped: %s]", r->skip_reason ? r->skip_reason : "");
    fprintf(out, "\n");
}

/* "key = value (source)": strings quoted, lists bracketed. */
static void print_row(FILE *out, const char *section,
                      const tutti_setting_t *row, const void *values,
                      tutti__source_t src)
{
    char value[512];
    tutti__setting_print(row, values, value, sizeof(value));
    if (row->type == TUTTI_SETTING_STRING)
        fprintf(out, "%s%s%s = \"%s\" (%s)\n", section ? section : "",
                section ? "." : "", row->name, value,
                tutti__source_name(src));
    else
        fprintf(out, "%s%s%s = %s (%s)\n", section ? section : "",
                section ? "." : "", row->name, value, tutti__source_name(src));
}

void tutti__config_print(const tutti__config_t *cfg, FILE *out)
{
    if (cfg == NULL || out == NULL)
        return;
    fprintf(out, "config file = %s\n", cfg->path ? cfg->path : "(none)");
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++)
        print_row(out, NULL, &tutti__core_settings[i], cfg, cfg->src[i]);
    for (size_t m = 0; m < cfg->num_modules; m++) {
        const tutti__module_settings_t *ms = &cfg->modules[m];
        for (size_t i = 0; i < ms->num_rows; i++)
            print_row(out, ms->section, &ms->rows[i], ms->values, ms->src[i]);
    }
    fprintf(out, "selection: %zu rule%s, first match wins\n", cfg->num_rules,
            cfg->num_rules == 1 ? "" : "s");
    for (size_t i = 0; i < cfg->num_rules; i++)
        print_rule(out, i, &cfg->rules[i]);
}

static void describe_row(FILE *out, const char *section,
                         const tutti_setting_t *row)
{
    char env[96], expected[256], key[96];
    snprintf(key, sizeof(key), "%s%s%s", section ? section : "",
             section ? "." : "", row->name);
    fprintf(out, "%-20s %s\n", key, row->doc ? row->doc : "");
    fprintf(out, "%-20s   default %s%s%s, environment %s\n", "",
            row->default_value[0] || row->type == TUTTI_SETTING_STRING
                ? "'" : "",
            row->default_value[0] ? row->default_value
            : row->type == TUTTI_SETTING_STRING ? "" : "none",
            row->default_value[0] || row->type == TUTTI_SETTING_STRING
                ? "'" : "",
            tutti__setting_env(row, section, env, sizeof(env)));
    fprintf(out, "%-20s   %s\n", "",
            tutti__setting_expected(row, expected, sizeof(expected)));
}

void tutti__config_print_settings(const tutti__config_t *cfg, FILE *out)
{
    if (cfg == NULL || out == NULL)
        return;
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++)
        describe_row(out, NULL, &tutti__core_settings[i]);
    for (size_t m = 0; m < cfg->num_modules; m++) {
        const tutti__module_settings_t *ms = &cfg->modules[m];
        for (size_t i = 0; i < ms->num_rows; i++)
            describe_row(out, ms->section, &ms->rows[i]);
    }
}
