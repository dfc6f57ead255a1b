/*
 * Configuration: the object and its rules (config.h).  The core's settings
 * are rows (keys.c) read by setting.c; the YAML file is read in yaml.c,
 * the environment in env.c, modules' settings are kept in modules.c, and
 * print.c writes it all.  Loading works on a copy of the caller's
 * configuration, which is replaced only when everything parsed, so a bad
 * file or variable leaves the configuration as it was.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/size.h"
#include "base/strlist.h"
#include "base/sbuf.h"
#include "config/config.h"
#include "config/setting.h"

#define NAME_LEN_MAX 63

/* ---- small helpers ------------------------------------------------------ */

tutti_status_t tutti__cfg_oom(void)
{
    return tutti__error(TUTTI_ERR_NO_MEMORY, "config",
                        "out of memory while building the configuration");
}

/* Replace *field by a copy of @p value (NULL allowed). */
tutti_status_t tutti__cfg_set_str(char **field, const char *value)
{
    char *copy = NULL;

    if (value != NULL && (copy = strdup(value)) == NULL)
        return tutti__cfg_oom();
    free(*field);
    *field = copy;
    return TUTTI_OK;
}

bool tutti__cfg_valid_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > NAME_LEN_MAX)
        return false;
    for (; *s != '\0'; s++) {
        if (!isgraph((unsigned char)*s))
            return false;
    }
    return true;
}

/* Capacity max(4, the power of two at or above count): realloc only when
 * count reaches it, so n pushes cost O(n) copies, not O(n^2). */
void *tutti__cfg_grow(void *array, size_t count, size_t size)
{
    void **at = array;
    size_t cap = count;

    if (count == 0)
        cap = 4;
    else if (count >= 4 && (count & (count - 1)) == 0)
        cap = 2 * count;
    if (cap != count || *at == NULL) {
        char *grown;
        if (cap < count || cap > SIZE_MAX / size)
            return NULL;
        grown = realloc(*at, cap * size);
        if (grown == NULL)
            return NULL;
        *at = grown;
    }
    memset((char *)*at + count * size, 0, size);
    return (char *)*at + count * size;
}

/* FNV-1a. */
static size_t name_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

tutti_status_t tutti__cfg_names_init(tutti__cfg_names_t *h, size_t max)
{
    size_t cap = 8;

    while (cap < 2 * max && cap < SIZE_MAX / 4)
        cap *= 2;
    h->names = calloc(cap, sizeof(*h->names));
    h->values = calloc(cap, sizeof(*h->values));
    h->mask = cap - 1;
    if (h->names == NULL || h->values == NULL) {
        tutti__cfg_names_free(h);
        return tutti__cfg_oom();
    }
    return TUTTI_OK;
}

/* Open addressing, linear probing; the set is at most half full. */
size_t *tutti__cfg_names_find(const tutti__cfg_names_t *h, const char *name)
{
    for (size_t i = name_hash(name) & h->mask; h->names[i] != NULL;
         i = (i + 1) & h->mask) {
        if (strcmp(h->names[i], name) == 0)
            return &h->values[i];
    }
    return NULL;
}

void tutti__cfg_names_add(tutti__cfg_names_t *h, const char *name,
                          size_t value)
{
    size_t i = name_hash(name) & h->mask;

    while (h->names[i] != NULL)
        i = (i + 1) & h->mask;
    h->names[i] = name;
    h->values[i] = value;
}

void tutti__cfg_names_free(tutti__cfg_names_t *h)
{
    free(h->names);
    free(h->values);
    h->names = NULL;
    h->values = NULL;
}

/* ---- string lists, rules ------------------------------------------------ */

void tutti__cfg_rule_init(tutti__rule_t *r)
{
    memset(r, 0, sizeof(*r));
    r->size_max = UINT64_MAX;
    r->group_max = INT32_MAX;
    r->tasks_max = INT32_MAX;
    r->hosts_max = INT32_MAX;
}

void tutti__cfg_rule_free(tutti__rule_t *r)
{
    for (size_t i = 0; i < r->num_params; i++) {
        free(r->params[i].key);
        free(r->params[i].value);
    }
    free(r->params);
    free(r->algorithm);
    free(r->file);
    free(r->skip_reason);
    free(r->written);
    tutti__cfg_rule_init(r);
}

void tutti__cfg_rules_free(tutti__rule_t *rules, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tutti__cfg_rule_free(&rules[i]);
    free(rules);
}

tutti_status_t tutti__cfg_param_add(tutti__rule_t *r,
                                    const tutti__kv_t *from)
{
    tutti__kv_t *kv = tutti__cfg_grow(&r->params, r->num_params, sizeof(*kv));

    if (kv == NULL)
        return tutti__cfg_oom();
    *kv = *from;
    kv->key = strdup(from->key);
    kv->value = strdup(from->value);
    if (kv->key == NULL || kv->value == NULL) {
        free(kv->key);
        free(kv->value);
        return tutti__cfg_oom();
    }
    r->num_params++;
    return TUTTI_OK;
}

static tutti_status_t rule_copy(tutti__rule_t *dst, const tutti__rule_t *src)
{
    tutti_status_t st;

    *dst = *src;
    dst->algorithm = dst->file = dst->skip_reason = dst->written = NULL;
    dst->params = NULL;
    dst->num_params = 0;
    st = tutti__cfg_set_str(&dst->algorithm, src->algorithm);
    if (st == TUTTI_OK)
        st = tutti__cfg_set_str(&dst->file, src->file);
    if (st == TUTTI_OK)
        st = tutti__cfg_set_str(&dst->skip_reason, src->skip_reason);
    if (st == TUTTI_OK)
        st = tutti__cfg_set_str(&dst->written, src->written);
    for (size_t i = 0; i < src->num_params && st == TUTTI_OK; i++)
        st = tutti__cfg_param_add(dst, &src->params[i]);
    if (st != TUTTI_OK)
        tutti__cfg_rule_free(dst);
    return st;
}

/* Move @p r onto the end of the array; on failure @p r is still the
 * caller's. */
tutti_status_t tutti__cfg_rules_push(tutti__rule_t **rules, size_t *n,
                                     tutti__rule_t *r)
{
    tutti__rule_t *slot = tutti__cfg_grow(rules, *n, sizeof(*slot));

    if (slot == NULL)
        return tutti__cfg_oom();
    *slot = *r;
    (*n)++;
    tutti__cfg_rule_init(r);
    return TUTTI_OK;
}

static bool is_env_rule(const tutti__rule_t *r)
{
    return r->line == 0 && r->file != NULL &&
           strcmp(r->file, TUTTI__ALGO_ENV) == 0;
}

/* Replace the rules of one origin (TUTTI_ALGO if @p env, else files) by
 * @p add; TUTTI_ALGO rules stay in front.  Takes @p add in all cases. */
tutti_status_t tutti__cfg_rules_replace(tutti__config_t *cfg, bool env,
                                        tutti__rule_t *add, size_t num_add)
{
    tutti__rule_t *out = calloc(cfg->num_rules + num_add + 1, sizeof(*out));
    size_t n = 0;

    if (out == NULL) {
        tutti__cfg_rules_free(add, num_add);
        return tutti__cfg_oom();
    }
    for (size_t i = 0; !env && i < cfg->num_rules; i++) {
        if (is_env_rule(&cfg->rules[i]))
            out[n++] = cfg->rules[i];
    }
    for (size_t i = 0; i < num_add; i++)
        out[n++] = add[i];
    for (size_t i = 0; env && i < cfg->num_rules; i++) {
        if (!is_env_rule(&cfg->rules[i]))
            out[n++] = cfg->rules[i];
    }
    for (size_t i = 0; i < cfg->num_rules; i++) {
        if (is_env_rule(&cfg->rules[i]) == env)
            tutti__cfg_rule_free(&cfg->rules[i]);
    }
    free(add);
    free(cfg->rules);
    cfg->rules = out;
    cfg->num_rules = n;
    return TUTTI_OK;
}

/* ---- configuration object ----------------------------------------------- */

const char *tutti__source_name(tutti__source_t src)
{
    switch (src) {
    case TUTTI_SRC_DEFAULT:
        return "default";
    case TUTTI_SRC_FILE:
        return "file";
    case TUTTI_SRC_ENV:
        return "env";
    case TUTTI_SRC_API:
        return "api";
    }
    return "unknown";
}

/* Every core row's default parses (keys.c says so), except when memory
 * runs out: a list then stays empty. */
void tutti__config_init(tutti__config_t *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof(*cfg));
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++)
        (void)tutti__setting_set(&tutti__core_settings[i],
                                 tutti__core_settings[i].default_value, cfg);
}

static void pending_free(tutti__pending_t *p)
{
    free(p->section);
    free(p->key);
    free(p->value);
}

void tutti__config_free(tutti__config_t *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->path);
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++)
        tutti__setting_clear(&tutti__core_settings[i], cfg);
    tutti__cfg_rules_free(cfg->rules, cfg->num_rules);
    for (size_t i = 0; i < cfg->num_pending; i++)
        pending_free(&cfg->pending[i]);
    free(cfg->pending);
    for (size_t i = 0; i < cfg->num_modules; i++)
        tutti__cfg_module_free(&cfg->modules[i]);
    free(cfg->modules);
    free(cfg->load_found);
    memset(cfg, 0, sizeof(*cfg));
}

tutti_status_t tutti__cfg_pending_add(tutti__config_t *cfg,
                                      const tutti__pending_t *from)
{
    tutti__pending_t *p =
        tutti__cfg_grow(&cfg->pending, cfg->num_pending, sizeof(*p));
    if (p == NULL)
        return tutti__cfg_oom();
    *p = *from;
    p->section = strdup(from->section);
    p->key = from->key ? strdup(from->key) : NULL;
    p->value = from->value ? strdup(from->value) : NULL;
    if (p->section == NULL || (from->key && p->key == NULL) ||
        (from->value && p->value == NULL)) {
        pending_free(p);
        return tutti__cfg_oom();
    }
    cfg->num_pending++;
    return TUTTI_OK;
}

/* Forgets the pending values of @p section (a file's section replaces
 * what an earlier file said of it). */
void tutti__cfg_pending_drop(tutti__config_t *cfg, const char *section)
{
    size_t n = 0;
    for (size_t i = 0; i < cfg->num_pending; i++) {
        if (strcmp(cfg->pending[i].section, section) == 0)
            pending_free(&cfg->pending[i]);
        else
            cfg->pending[n++] = cfg->pending[i];
    }
    cfg->num_pending = n;
}

/* A deep copy of what a file or the environment may change: the core's
 * values, the rules and the pending module values.  Module settings come
 * after loading, when no file is read any more: they are not copied. */
tutti_status_t tutti__cfg_config_copy(tutti__config_t *dst,
                                      const tutti__config_t *src)
{
    tutti_status_t st = TUTTI_OK;

    memset(dst, 0, sizeof(*dst));
    memcpy(dst->src, src->src, sizeof(dst->src));
    if (src->num_modules > 0)
        return tutti__error(TUTTI_ERR_INTERNAL, "config", "a configuration "
                            "is copied after modules declared settings");
    st = tutti__cfg_set_str(&dst->path, src->path);
    for (int i = 0; st == TUTTI_OK && i < TUTTI__CORE_SETTINGS; i++)
        if (tutti__setting_copy(&tutti__core_settings[i], dst, src) !=
            TUTTI_OK)
            st = tutti__cfg_oom();
    if (st == TUTTI_OK && src->num_rules > 0) {
        dst->rules = calloc(src->num_rules, sizeof(*dst->rules));
        st = dst->rules != NULL ? TUTTI_OK : tutti__cfg_oom();
    }
    for (size_t i = 0; i < src->num_rules && st == TUTTI_OK; i++) {
        st = rule_copy(&dst->rules[i], &src->rules[i]);
        if (st == TUTTI_OK)
            dst->num_rules++;
    }
    for (size_t i = 0; i < src->num_pending && st == TUTTI_OK; i++)
        st = tutti__cfg_pending_add(dst, &src->pending[i]);
    if (st != TUTTI_OK)
        tutti__config_free(dst);
    return st;
}

void tutti__cfg_config_replace(tutti__config_t *cfg, tutti__config_t *tmp)
{
    tutti__config_free(cfg);
    *cfg = *tmp;
}

int tutti__config_log_level(const tutti__config_t *cfg)
{
    /* The row's choices run error..trace (0..4), then off. */
    return cfg->log_level <= TUTTI_LOG_TRACE ? cfg->log_level : TUTTI_LOG_OFF;
}

tutti_status_t tutti__config_set_log_level(tutti__config_t *cfg,
                                           const char *text,
                                           tutti__source_t src)
{
    char expected[128];
    const tutti_setting_t *row = &tutti__core_settings[TUTTI__SET_LOG_LEVEL];
    if (tutti__setting_set(row, text, cfg) != TUTTI_OK)
        return tutti__error(TUTTI_ERR_CONFIG, "config", "log level '%s' "
                            "(%s): expected %s", text,
                            tutti__source_name(src),
                            tutti__setting_expected(row, expected,
                                                    sizeof(expected)));
    cfg->src[TUTTI__SET_LOG_LEVEL] = src;
    return TUTTI_OK;
}

/* ---- names of collectives, device types, data types --------------------- */

static const char *coll_name(int i)
{
    return tutti_collective_name((tutti_collective_t)i);
}

static const char *device_name(int i)
{
    return tutti_device_type_name((tutti_device_type_t)i);
}

static const char *dtype_name(int i)
{
    return tutti_dtype_name((tutti_dtype_t)i);
}

const tutti__cfg_name_kind_t tutti__cfg_coll_kind = {
    "collective", TUTTI_COLL_COUNT, coll_name};
const tutti__cfg_name_kind_t tutti__cfg_device_kind = {
    "device", TUTTI_DEVICE_COUNT, device_name};
const tutti__cfg_name_kind_t tutti__cfg_dtype_kind = {
    "dtype", TUTTI_DTYPE_COUNT, dtype_name};

int tutti__cfg_kind_lookup(const tutti__cfg_name_kind_t *kind, const char *s)
{
    for (int i = 0; i < kind->count; i++) {
        if (strcmp(kind->name(i), s) == 0)
            return i;
    }
    return -1;
}

/* Names of the bits set in @p mask (all names when @p mask is ~0u),
 * joined by @p sep. */
void tutti__cfg_mask_names(const tutti__cfg_name_kind_t *kind, uint32_t mask,
                           const char *sep, char *buf, size_t len)
{
    tutti__sbuf_t sb = {buf, len, 0};

    buf[0] = '\0';
    for (int i = 0; i < kind->count; i++) {
        if (mask & (1u << i))
            tutti__sbuf_printf(&sb, "%s%s", sb.pos > 0 ? sep : "",
                                 kind->name(i));
    }
}

/* ---- rules as messages name them ---------------------------------------- */

/* Rules built through the API may lack a name; never print NULL. */
const char *tutti__config_rule_algo(const tutti__rule_t *r)
{
    return r->algorithm != NULL ? r->algorithm : "(none)";
}

/* "file:line", or the file alone for rules not from a file. */
void tutti__config_rule_where(const tutti__rule_t *r, char *buf, size_t len)
{
    const char *file = r->file != NULL ? r->file : "(api)";

    if (r->line > 0)
        snprintf(buf, len, "%s:%d", file, r->line);
    else
        snprintf(buf, len, "%s", file);
}

/* A module's values own nothing (its rows hold no lists), so its rows,
 * which go with the module, are not read here. */
void tutti__cfg_module_free(tutti__module_settings_t *m)
{
    free(m->section);
    free(m->values);
    free(m->src);
}
