/*
 * Configuration from a YAML file: parsing the document with libyaml and
 * applying each key to a copy of the caller's configuration, which replaces
 * it only when the whole file parsed.  Errors name <path>:<line>:<column>,
 * what was found and what was expected.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config/config.h"
#include "config/setting.h"
#include "base/log.h"
#include "base/size.h"
#include "base/sbuf.h"

#define CONFIG_FILE_MAX (16u << 20)

#define NAME_EXPECTED                                                          \
    "a name of 1 to 63 characters without spaces, e.g. RingAllreduce"
#define INT_RANGE_EXPECTED                                                     \
    "a whole number or a range LO-HI, LO- or -HI, inclusive, e.g. 4, 2-8, 4-"

/* ---- YAML: nodes and messages ------------------------------------------- */

typedef struct {
    const char *path;
    yaml_document_t *doc;
} parse_t;

static tutti_status_t node_error(const parse_t *p, const yaml_node_t *node,
                                 const char *expected, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static tutti_status_t node_error(const parse_t *p, const yaml_node_t *node,
                                 const char *expected, const char *fmt, ...)
{
    char found[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(found, sizeof(found), fmt, ap);
    va_end(ap);
    return tutti__error(TUTTI_ERR_CONFIG, "config",
                        "%s:%zu:%zu: %s; expected %s", p->path,
                        node->start_mark.line + 1, node->start_mark.column + 1,
                        found, expected);
}

static bool is_null(const yaml_node_t *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};

    if (n->type != YAML_SCALAR_NODE ||
        n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
        if (strcmp((const char *)n->data.scalar.value, nulls[i]) == 0)
            return true;
    }
    return false;
}

static tutti_status_t type_error(const parse_t *p, const yaml_node_t *n,
                                 const char *expected)
{
    const char *v;

    if (n->type == YAML_SEQUENCE_NODE)
        return node_error(p, n, expected, "found a list");
    if (n->type == YAML_MAPPING_NODE)
        return node_error(p, n, expected, "found a mapping");
    if (is_null(n))
        return node_error(p, n, expected, "found no value");
    v = (const char *)n->data.scalar.value;
    return node_error(p, n, expected, "found '%.60s%s'", v,
                      strlen(v) > 60 ? "..." : "");
}

static tutti_status_t get_scalar(const parse_t *p, const yaml_node_t *n,
                                 const char *expected, const char **out)
{
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return type_error(p, n, expected);
    if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
        return node_error(p, n, expected, "found a string with a NUL byte");
    *out = (const char *)n->data.scalar.value;
    return TUTTI_OK;
}

typedef tutti_status_t (*item_fn)(const parse_t *p, yaml_node_t *item,
                                  void *arg);

/* Call @p fn on each item of a list, or on a single scalar.  No value is an
 * empty list where @p allow_empty. */
static tutti_status_t for_each_item(const parse_t *p, yaml_node_t *n,
                                    const char *expected, bool allow_empty,
                                    item_fn fn, void *arg)
{
    yaml_node_item_t *it;
    tutti_status_t st = TUTTI_OK;

    if (is_null(n) && allow_empty)
        return TUTTI_OK;
    if (n->type == YAML_SCALAR_NODE && !is_null(n))
        return fn(p, n, arg);
    if (n->type != YAML_SEQUENCE_NODE)
        return type_error(p, n, expected);
    it = n->data.sequence.items.start;
    if (!allow_empty && it == n->data.sequence.items.top)
        return node_error(p, n, expected, "found an empty list");
    for (; it < n->data.sequence.items.top && st == TUTTI_OK; it++)
        st = fn(p, yaml_document_get_node(p->doc, *it), arg);
    return st;
}

typedef tutti_status_t (*key_fn)(const parse_t *p, yaml_node_t *value,
                                 void *target);
typedef struct {
    const char *name;
    key_fn fn;
} keydef_t;

typedef struct {
    const char *where; /* "at top level", "in selection rule" */
    const keydef_t *keys;
} section_t;

static void key_names(const keydef_t *keys, char *buf, size_t len)
{
    tutti__sbuf_t sb = {buf, len, 0};

    buf[0] = '\0';
    for (; keys->name != NULL; keys++)
        tutti__sbuf_printf(&sb, "%s%s", sb.pos > 0 ? ", " : "", keys->name);
}

/* The key of @p pair as a name, refusing one seen earlier in @p map. */
static tutti_status_t pair_key(const parse_t *p, const yaml_node_t *map,
                               const yaml_node_pair_t *pair,
                               const char **name_out)
{
    yaml_node_t *key = yaml_document_get_node(p->doc, pair->key);
    tutti_status_t st = get_scalar(p, key, "a key name", name_out);
    const yaml_node_pair_t *q = map->data.mapping.pairs.start;

    for (; st == TUTTI_OK && q < pair; q++) {
        yaml_node_t *k = yaml_document_get_node(p->doc, q->key);
        if (k->type == YAML_SCALAR_NODE &&
            strcmp((const char *)k->data.scalar.value, *name_out) == 0)
            st = node_error(p, key, "each key once",
                            "duplicate key '%s' (first at line %zu)",
                            *name_out, k->start_mark.line + 1);
    }
    return st;
}

static tutti_status_t section_key(const parse_t *p, const section_t *sec,
                                  const yaml_node_pair_t *pair,
                                  const char *name, const keydef_t **def_out)
{
    char expected[300] = "one of ";

    for (const keydef_t *d = sec->keys; d->name != NULL; d++) {
        if (strcmp(d->name, name) == 0) {
            *def_out = d;
            return TUTTI_OK;
        }
    }
    key_names(sec->keys, expected + strlen(expected),
              sizeof(expected) - strlen(expected));
    return node_error(p, yaml_document_get_node(p->doc, pair->key), expected,
                      "unknown key '%.60s' %s", name, sec->where);
}

/* Each key of the mapping @p map goes to its handler in @p sec. */
static tutti_status_t parse_section(const parse_t *p, yaml_node_t *map,
                                    const section_t *sec, void *target)
{
    char expected[300] = "a mapping with keys ";
    tutti_status_t st = TUTTI_OK;

    if (map->type != YAML_MAPPING_NODE) {
        key_names(sec->keys, expected + strlen(expected),
                  sizeof(expected) - strlen(expected));
        return type_error(p, map, expected);
    }
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
         pair < map->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *name = NULL;
        const keydef_t *def = NULL;
        st = pair_key(p, map, pair, &name);
        if (st == TUTTI_OK)
            st = section_key(p, sec, pair, name, &def);
        if (st == TUTTI_OK)
            st = def->fn(p, yaml_document_get_node(p->doc, pair->value),
                         target);
    }
    return st;
}

static tutti_status_t value_error(const parse_t *p, const yaml_node_t *n,
                                  const char *key, const char *expected)
{
    const char *v = (const char *)n->data.scalar.value;

    return node_error(p, n, expected, "found '%.60s%s' for %s", v,
                      strlen(v) > 60 ? "..." : "", key);
}

/* ---- YAML: selection rules ---------------------------------------------- */

typedef struct {
    const tutti__cfg_name_kind_t *kind;
    const char *expected;
    uint32_t *mask;
} mask_arg_t;

static tutti_status_t mask_item(const parse_t *p, yaml_node_t *n, void *arg)
{
    mask_arg_t *a = arg;
    const char *s = NULL;
    tutti_status_t st = get_scalar(p, n, a->expected, &s);
    int i;

    if (st != TUTTI_OK)
        return st;
    i = tutti__cfg_kind_lookup(a->kind, s);
    if (i < 0)
        return value_error(p, n, a->kind->key, a->expected);
    *a->mask |= 1u << i;
    return TUTTI_OK;
}

static tutti_status_t parse_mask(const parse_t *p, yaml_node_t *v,
                                 const tutti__cfg_name_kind_t *kind,
                                 uint32_t *mask)
{
    char names[200], expected[300];
    mask_arg_t a = {kind, expected, mask};

    tutti__cfg_mask_names(kind, ~0u, ", ", names, sizeof(names));
    snprintf(expected, sizeof(expected), "one of %s, or a list of them",
             names);
    *mask = 0;
    return for_each_item(p, v, expected, false, mask_item, &a);
}

static tutti_status_t key_collective(const parse_t *p, yaml_node_t *v,
                                     void *target)
{
    return parse_mask(p, v, &tutti__cfg_coll_kind,
                      &((tutti__rule_t *)target)->collectives);
}

static tutti_status_t key_device(const parse_t *p, yaml_node_t *v,
                                 void *target)
{
    return parse_mask(p, v, &tutti__cfg_device_kind,
                      &((tutti__rule_t *)target)->device_types);
}

static tutti_status_t key_dtype(const parse_t *p, yaml_node_t *v, void *target)
{
    return parse_mask(p, v, &tutti__cfg_dtype_kind,
                      &((tutti__rule_t *)target)->dtypes);
}

static tutti_status_t parse_range_key(const parse_t *p, yaml_node_t *v,
                                      const char *key, bool sizes,
                                      uint64_t max, uint64_t *lo, uint64_t *hi)
{
    const char *expected =
        sizes ? TUTTI__SIZE_RANGE_EXPECTED : INT_RANGE_EXPECTED;
    const char *s = NULL;
    tutti_status_t st = get_scalar(p, v, expected, &s);
    int r;

    if (st != TUTTI_OK)
        return st;
    r = tutti__range_value(s, sizes, max, lo, hi);
    if (r == TUTTI__RANGE_MALFORMED)
        return node_error(p, v, expected, "%s range '%.60s' is not valid",
                          key, s);
    if (r == TUTTI__RANGE_INVERTED)
        return node_error(p, v, TUTTI__RANGE_ORDER_EXPECTED,
                          "%s range '%.60s' has its lower bound above its "
                          "upper",
                          key, s);
    return TUTTI_OK;
}

static tutti_status_t key_size(const parse_t *p, yaml_node_t *v, void *target)
{
    tutti__rule_t *r = target;

    return parse_range_key(p, v, "size", true, UINT64_MAX, &r->size_min,
                           &r->size_max);
}

static tutti_status_t int_range_key(const parse_t *p, yaml_node_t *v,
                                    const char *key, int *lo, int *hi)
{
    uint64_t a, b;
    tutti_status_t st = parse_range_key(p, v, key, false, INT32_MAX, &a, &b);

    if (st == TUTTI_OK) {
        *lo = (int)a;
        *hi = (int)b;
    }
    return st;
}

static tutti_status_t key_group_size(const parse_t *p, yaml_node_t *v,
                                     void *target)
{
    tutti__rule_t *r = target;

    return int_range_key(p, v, "group_size", &r->group_min, &r->group_max);
}

static tutti_status_t key_num_tasks(const parse_t *p, yaml_node_t *v,
                                    void *target)
{
    tutti__rule_t *r = target;

    return int_range_key(p, v, "num_tasks", &r->tasks_min, &r->tasks_max);
}

static tutti_status_t key_algorithm(const parse_t *p, yaml_node_t *v,
                                    void *target)
{
    const char *s = NULL;
    tutti_status_t st = get_scalar(p, v, NAME_EXPECTED, &s);

    if (st != TUTTI_OK)
        return st;
    if (!tutti__cfg_valid_name(s))
        return value_error(p, v, "algorithm", NAME_EXPECTED);
    return tutti__cfg_set_str(&((tutti__rule_t *)target)->algorithm, s);
}

#define PARAMS_EXPECTED                                                        \
    "a mapping of parameter names to values, e.g. {chunk: 1M}"

static tutti_status_t param_pair(const parse_t *p, tutti__rule_t *r,
                                 yaml_node_pair_t *pair)
{
    yaml_node_t *kn = yaml_document_get_node(p->doc, pair->key);
    yaml_node_t *vn = yaml_document_get_node(p->doc, pair->value);
    const char *key = NULL, *value = NULL;
    tutti_status_t st = get_scalar(p, kn, "a parameter name", &key);

    if (st != TUTTI_OK)
        return st;
    if (!tutti__cfg_valid_name(key))
        return value_error(p, kn, "a parameter name", NAME_EXPECTED);
    for (size_t i = 0; i < r->num_params; i++) {
        if (strcmp(r->params[i].key, key) == 0)
            return node_error(p, kn, "each parameter once",
                              "duplicate parameter '%s'", key);
    }
    st = get_scalar(p, vn, "a single value, e.g. 1M or 2", &value);
    if (st == TUTTI_OK)
        st = tutti__cfg_param_add(r, key, value);
    return st;
}

static tutti_status_t key_params(const parse_t *p, yaml_node_t *v,
                                 void *target)
{
    tutti_status_t st = TUTTI_OK;

    if (v->type != YAML_MAPPING_NODE)
        return type_error(p, v, PARAMS_EXPECTED);
    for (yaml_node_pair_t *pair = v->data.mapping.pairs.start;
         pair < v->data.mapping.pairs.top && st == TUTTI_OK; pair++)
        st = param_pair(p, target, pair);
    return st;
}

static const keydef_t rule_keys[] = {
    {"collective", key_collective}, {"device", key_device},
    {"dtype", key_dtype},           {"size", key_size},
    {"group_size", key_group_size}, {"num_tasks", key_num_tasks},
    {"algorithm", key_algorithm},   {"params", key_params},
    {NULL, NULL}};
static const section_t rule_section = {"in selection rule", rule_keys};

static tutti_status_t rule_item(const parse_t *p, yaml_node_t *n, void *arg)
{
    tutti__cfg_rules_t *a = arg;
    tutti__rule_t r;
    tutti_status_t st;

    tutti__cfg_rule_init(&r);
    r.line = (int)n->start_mark.line + 1;
    r.column = (int)n->start_mark.column + 1;
    st = tutti__cfg_set_str(&r.file, p->path);
    if (st == TUTTI_OK)
        st = parse_section(p, n, &rule_section, &r);
    if (st == TUTTI_OK && r.algorithm == NULL)
        st = node_error(p, n, "algorithm: <implementation name>",
                        "selection rule without 'algorithm'");
    if (st == TUTTI_OK)
        st = tutti__cfg_rules_push(&a->rules, &a->count, &r);
    tutti__cfg_rule_free(&r);
    return st;
}

/* ---- YAML: top-level keys ----------------------------------------------- */

static tutti_status_t key_selection(const parse_t *p, yaml_node_t *v,
                                    void *target)
{
    tutti__cfg_rules_t a = {NULL, 0};
    tutti_status_t st = for_each_item(p, v, "a list of selection rules", true,
                                      rule_item, &a);

    if (st != TUTTI_OK) {
        tutti__cfg_rules_free(a.rules, a.count);
        return st;
    }
    return tutti__cfg_rules_replace(target, false, a.rules, a.count);
}

/* ---- YAML: settings ------------------------------------------------------ */

typedef struct {
    const tutti_setting_t *row;
    tutti__config_t *cfg;
} item_arg_t;

static tutti_status_t list_item(const parse_t *p, yaml_node_t *n, void *arg)
{
    item_arg_t *a = arg;
    char expected[256];
    const char *s = NULL;
    tutti__setting_expected(a->row, expected, sizeof(expected));
    tutti_status_t st = get_scalar(p, n, expected, &s);
    if (st != TUTTI_OK)
        return st;
    st = tutti__setting_add_item(a->row, s, a->cfg);
    if (st == TUTTI_ERR_CONFIG)
        return type_error(p, n, expected);
    return st == TUTTI_ERR_NO_MEMORY ? tutti__cfg_oom() : st;
}

/* The core's setting @p row from @p v: a list (or one item, or nothing)
 * for the list types, else one scalar; "" where a string may be empty. */
static tutti_status_t parse_row(const parse_t *p, const tutti_setting_t *row,
                                yaml_node_t *v, tutti__config_t *cfg)
{
    char expected[256];
    const char *s = "";
    const char *name = strrchr(row->name, '.');
    tutti_status_t st;

    name = name != NULL ? name + 1 : row->name;
    tutti__setting_expected(row, expected, sizeof(expected));
    if ((int)row->type == TUTTI__SETTING_PATHS ||
        (int)row->type == TUTTI__SETTING_NAMES) {
        item_arg_t a = {row, cfg};
        tutti__setting_clear(row, cfg);
        st = for_each_item(p, v, expected, true, list_item, &a);
    } else {
        st = row->type == TUTTI_SETTING_STRING && is_null(v)
                 ? TUTTI_OK
                 : get_scalar(p, v, expected, &s);
        if (st != TUTTI_OK)
            return st;
        st = tutti__setting_set(row, s, cfg);
        if (st == TUTTI_ERR_CONFIG)
            return value_error(p, v, name, expected);
        if (st == TUTTI_ERR_NO_MEMORY)
            return tutti__cfg_oom();
    }
    if (st == TUTTI_OK)
        cfg->src[row - tutti__core_settings] = TUTTI_SRC_FILE;
    return st;
}

/* The core row whose dotted key is @p prefix.@p name (no prefix: @p name). */
static const tutti_setting_t *core_row(const char *prefix, const char *name)
{
    char key[96];
    snprintf(key, sizeof(key), "%s%s%s", prefix ? prefix : "",
             prefix ? "." : "", name);
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++)
        if (strcmp(tutti__core_settings[i].name, key) == 0)
            return &tutti__core_settings[i];
    return NULL;
}

/* Whether some core row's key starts with "@p name." (a section). */
static bool core_section(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++) {
        const char *k = tutti__core_settings[i].name;
        if (strncmp(k, name, n) == 0 && k[n] == '.')
            return true;
    }
    return false;
}

/* "path, load": the keys of core section @p name. */
static void section_keys(const char *name, char *buf, size_t len)
{
    tutti__sbuf_t sb = {buf, len, 0};
    size_t n = strlen(name);
    buf[0] = '\0';
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++) {
        const char *k = tutti__core_settings[i].name;
        if (strncmp(k, name, n) == 0 && k[n] == '.')
            tutti__sbuf_printf(&sb, "%s%s", sb.pos > 0 ? ", " : "", k + n + 1);
    }
}

static tutti_status_t parse_core_section(const parse_t *p, const char *name,
                                         yaml_node_t *map,
                                         tutti__config_t *cfg)
{
    char keys[200], expected[300];
    tutti_status_t st = TUTTI_OK;
    section_keys(name, keys, sizeof(keys));
    if (map->type != YAML_MAPPING_NODE) {
        snprintf(expected, sizeof(expected), "a mapping with keys %s", keys);
        return type_error(p, map, expected);
    }
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
         pair < map->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *key = NULL;
        st = pair_key(p, map, pair, &key);
        if (st != TUTTI_OK)
            break;
        const tutti_setting_t *row = core_row(name, key);
        if (row == NULL) {
            snprintf(expected, sizeof(expected), "one of %s", keys);
            return node_error(p, yaml_document_get_node(p->doc, pair->key),
                              expected, "unknown key '%.60s' in %s", key,
                              name);
        }
        st = parse_row(p, row, yaml_document_get_node(p->doc, pair->value),
                       cfg);
    }
    return st;
}

/* A section no core row knows: a module's settings, kept as text until the
 * module declares its rows (config/modules.c). */
static tutti_status_t parse_module_section(const parse_t *p,
                                           const yaml_node_t *name_node,
                                           const char *name, yaml_node_t *map,
                                           tutti__config_t *cfg)
{
    tutti__pending_t e = {.section = (char *)name,
                          .line = (int)name_node->start_mark.line + 1,
                          .column = (int)name_node->start_mark.column + 1};
    /* An empty section keeps what an earlier file said of the module; a
     * section with values replaces it. */
    if (!is_null(map))
        tutti__cfg_pending_drop(cfg, name);
    tutti_status_t st = tutti__cfg_pending_add(cfg, &e);
    if (is_null(map))
        return st;
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
         pair < map->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *key = NULL, *value = "";
        const yaml_node_t *k = yaml_document_get_node(p->doc, pair->key);
        yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
        st = pair_key(p, map, pair, &key);
        if (st == TUTTI_OK && !is_null(v))
            st = get_scalar(p, v, "one value (a module's setting)", &value);
        e.key = (char *)key;
        e.value = (char *)value;
        e.line = (int)k->start_mark.line + 1;
        e.column = (int)k->start_mark.column + 1;
        e.value_line = (int)v->start_mark.line + 1;
        e.value_column = (int)v->start_mark.column + 1;
        if (st == TUTTI_OK)
            st = tutti__cfg_pending_add(cfg, &e);
    }
    return st;
}

#define TOP_EXPECTED                                                           \
    "one of log_level, timeout, modules, transports, selection, or a "         \
    "module's section (a mapping), e.g. shm or tcp"

static tutti_status_t parse_top(const parse_t *p, yaml_node_t *root,
                                tutti__config_t *cfg)
{
    tutti_status_t st = TUTTI_OK;
    if (root->type != YAML_MAPPING_NODE)
        return type_error(p, root, "a mapping of settings, " TOP_EXPECTED);
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *name = NULL;
        const tutti_setting_t *row;
        yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
        st = pair_key(p, root, pair, &name);
        if (st != TUTTI_OK)
            break;
        if (strcmp(name, "selection") == 0)
            st = key_selection(p, v, cfg);
        else if ((row = core_row(NULL, name)) != NULL)
            st = parse_row(p, row, v, cfg);
        else if (core_section(name))
            st = parse_core_section(p, name, v, cfg);
        else if (v->type == YAML_MAPPING_NODE || is_null(v))
            st = parse_module_section(
                p, yaml_document_get_node(p->doc, pair->key), name, v, cfg);
        else if (v->type == YAML_SEQUENCE_NODE)
            st = node_error(p, v, "a mapping of a module's settings",
                            "found a list for '%.60s'", name);
        else
            st = node_error(p, yaml_document_get_node(p->doc, pair->key),
                            TOP_EXPECTED, "unknown key '%.60s' at top level",
                            name);
    }
    return st;
}

/* ---- YAML: loading a file ----------------------------------------------- */

static tutti_status_t syntax_error(const yaml_parser_t *ps, const char *path)
{
    const char *problem = ps->problem != NULL ? ps->problem : "unreadable";

    if (ps->error == YAML_MEMORY_ERROR)
        return tutti__cfg_oom();
    if (ps->error == YAML_READER_ERROR)
        return tutti__error(TUTTI_ERR_CONFIG, "config",
                            "%s: byte %zu: %s; expected UTF-8 text", path,
                            ps->problem_offset, problem);
    if (ps->context != NULL &&
        (ps->context_mark.line != ps->problem_mark.line ||
         ps->context_mark.column != ps->problem_mark.column))
        return tutti__error(TUTTI_ERR_CONFIG, "config",
                            "%s:%zu:%zu: %s (%s started at line %zu, "
                            "column %zu); expected well-formed YAML",
                            path, ps->problem_mark.line + 1,
                            ps->problem_mark.column + 1, problem, ps->context,
                            ps->context_mark.line + 1,
                            ps->context_mark.column + 1);
    return tutti__error(TUTTI_ERR_CONFIG, "config",
                        "%s:%zu:%zu: %s; expected well-formed YAML", path,
                        ps->problem_mark.line + 1, ps->problem_mark.column + 1,
                        problem);
}

/* A file holds one document: refuse anything after it. */
static tutti_status_t check_no_more(yaml_parser_t *ps, const char *path)
{
    yaml_document_t doc;
    yaml_node_t *root;
    tutti_status_t st = TUTTI_OK;

    if (!yaml_parser_load(ps, &doc))
        return syntax_error(ps, path);
    root = yaml_document_get_root_node(&doc);
    if (root != NULL) {
        parse_t p = {path, &doc};
        st = node_error(&p, root, "one document per file",
                        "found a second YAML document");
    }
    yaml_document_delete(&doc);
    return st;
}

static tutti_status_t parse_text(tutti__config_t *cfg, const char *path,
                                 const char *text, size_t len)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *root;
    tutti_status_t st;

    if (!yaml_parser_initialize(&parser))
        return tutti__cfg_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        st = syntax_error(&parser, path);
        goto out_parser;
    }
    root = yaml_document_get_root_node(&doc);
    st = TUTTI_OK;
    if (root != NULL && !is_null(root)) {
        parse_t p = {path, &doc};
        st = parse_top(&p, root, cfg);
    }
    yaml_document_delete(&doc);
    if (st == TUTTI_OK)
        st = check_no_more(&parser, path);
out_parser:
    yaml_parser_delete(&parser);
    return st;
}

static tutti_status_t grow_buffer(char **text, size_t *cap, const char *path)
{
    size_t want = *cap != 0 ? *cap * 2 : 4096;
    char *grown;

    if (*cap >= CONFIG_FILE_MAX)
        return tutti__error(TUTTI_ERR_CONFIG, "config",
                            "config file '%s' is larger than 16M; expected a "
                            "small YAML file",
                            path);
    grown = realloc(*text, want);
    if (grown == NULL)
        return tutti__cfg_oom();
    *text = grown;
    *cap = want;
    return TUTTI_OK;
}

static tutti_status_t read_file(const char *path, char **text_out,
                                size_t *len_out)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    tutti_status_t st = TUTTI_OK;
    FILE *f = fopen(path, "rb");
    int err = errno; /* of fopen() */

    if (f == NULL)
        return tutti__error(err == ENOENT ? TUTTI_ERR_NOT_FOUND : TUTTI_ERR_IO,
                            "config", "cannot open config file '%s': %s",
                            path, strerror(err));
    while (st == TUTTI_OK && !feof(f) && !ferror(f)) {
        if (len == cap)
            st = grow_buffer(&text, &cap, path);
        if (st == TUTTI_OK)
            len += fread(text + len, 1, cap - len, f);
    }
    err = errno;
    if (st == TUTTI_OK && ferror(f))
        st = tutti__error(TUTTI_ERR_IO, "config",
                          "cannot read config file '%s': %s", path,
                          strerror(err));
    fclose(f);
    if (st != TUTTI_OK) {
        free(text);
        return st;
    }
    *text_out = text;
    *len_out = len;
    return TUTTI_OK;
}

tutti_status_t tutti__config_load_file(tutti__config_t *cfg, const char *path)
{
    tutti__config_t tmp;
    char *text = NULL;
    size_t len = 0;
    tutti_status_t st;

    if (cfg == NULL || path == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "config",
                            "no configuration or no path to load");
    st = read_file(path, &text, &len);
    if (st != TUTTI_OK)
        return st;
    st = tutti__cfg_config_copy(&tmp, cfg);
    if (st == TUTTI_OK) {
        st = parse_text(&tmp, path, text, len);
        if (st == TUTTI_OK)
            st = tutti__cfg_set_str(&tmp.path, path);
        if (st == TUTTI_OK)
            tutti__cfg_config_replace(cfg, &tmp);
        else
            tutti__config_free(&tmp);
    }
    free(text);
    return st;
}
