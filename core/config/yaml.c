/*
 * Configuration from a YAML file: parsing the document with libyaml and
 * applying each key to a copy of the caller's configuration, which replaces
 * it only when the whole file parsed.  Errors name <path>:<line>:<column>,
 * what was found and what was expected.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The keys whose values enclose the node being read ("selection",
 * "params"), for messages; the walk goes only as deep as the keys do. */
#define KEYS_MAX 8
typedef struct {
    const char *names[KEYS_MAX];
    int count;
} keys_t;

typedef struct {
    const char *path;
    yaml_document_t *doc;
    keys_t *keys;
} parse_t;

static void push_key(const parse_t *p, const char *name)
{
    if (p->keys->count < KEYS_MAX)
        p->keys->names[p->keys->count] = name;
    p->keys->count++;
}

static void pop_key(const parse_t *p)
{
    p->keys->count--;
}

/* " for 'selection.params.chunk'": the key a value was given for. */
static const char *for_key(const parse_t *p, char *buf, size_t len)
{
    char path[200];
    int n = p->keys->count < KEYS_MAX ? p->keys->count : KEYS_MAX;

    tutti__cfg_yaml_key_path(p->keys->names, n, path, sizeof(path));
    if (path[0] == '\0')
        buf[0] = '\0';
    else
        snprintf(buf, len, " for '%s'", path);
    return buf;
}

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
    char key[220];
    const char *v;

    for_key(p, key, sizeof(key));
    if (n->type == YAML_SEQUENCE_NODE)
        return node_error(p, n, expected, "found a list%s", key);
    if (n->type == YAML_MAPPING_NODE)
        return node_error(p, n, expected, "found a mapping%s", key);
    if (is_null(n))
        return node_error(p, n, expected, "found no value%s", key);
    v = (const char *)n->data.scalar.value;
    return node_error(p, n, expected, "found '%.60s%s'%s", v,
                      strlen(v) > 60 ? "..." : "", key);
}

static tutti_status_t get_scalar(const parse_t *p, const yaml_node_t *n,
                                 const char *expected, const char **out)
{
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return type_error(p, n, expected);
    if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length) {
        char key[220];
        return node_error(p, n, expected, "found a string with a NUL "
                          "byte%s", for_key(p, key, sizeof(key)));
    }
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
    if (!allow_empty && it == n->data.sequence.items.top) {
        char key[220];
        return node_error(p, n, expected, "found an empty list%s",
                          for_key(p, key, sizeof(key)));
    }
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

/* The key of @p pair as a name (check_keys() refused duplicates). */
static tutti_status_t pair_key(const parse_t *p, const yaml_node_pair_t *pair,
                               const char **name_out)
{
    return get_scalar(p, yaml_document_get_node(p->doc, pair->key),
                      "a key name", name_out);
}

/* Refuses a mapping that gives a key twice, at the second, naming the
 * first's line: hashed, as a mapping may have many keys.  @p what is
 * "key" or "parameter". */
static tutti_status_t check_keys(const parse_t *p, const yaml_node_t *map,
                                 const char *what)
{
    const yaml_node_pair_t *start = map->data.mapping.pairs.start;
    size_t n = (size_t)(map->data.mapping.pairs.top - start);
    tutti__cfg_names_t seen;
    tutti_status_t st;

    if (n < 2)
        return TUTTI_OK;
    st = tutti__cfg_names_init(&seen, n);
    for (size_t i = 0; i < n && st == TUTTI_OK; i++) {
        const yaml_node_t *k = yaml_document_get_node(p->doc, start[i].key);
        const char *name = (const char *)k->data.scalar.value;
        const size_t *first;
        if (k->type != YAML_SCALAR_NODE)
            continue;
        first = tutti__cfg_names_find(&seen, name);
        if (first == NULL) {
            tutti__cfg_names_add(&seen, name, i);
            continue;
        }
        k = yaml_document_get_node(p->doc, start[*first].key);
        st = node_error(p, yaml_document_get_node(p->doc, start[i].key),
                        strcmp(what, "key") == 0 ? "each key once"
                                                 : "each parameter once",
                        "duplicate %s '%.60s' (first at line %zu)", what,
                        name, k->start_mark.line + 1);
    }
    tutti__cfg_names_free(&seen);
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
    st = check_keys(p, map, "key");
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
         pair < map->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *name = NULL;
        const keydef_t *def = NULL;
        st = pair_key(p, pair, &name);
        if (st == TUTTI_OK)
            st = section_key(p, sec, pair, name, &def);
        if (st != TUTTI_OK)
            break;
        push_key(p, name);
        st = def->fn(p, yaml_document_get_node(p->doc, pair->value), target);
        pop_key(p);
    }
    return st;
}

/* A scalar of the right type but not a valid value. */
static tutti_status_t value_error(const parse_t *p, const yaml_node_t *n,
                                  const char *expected)
{
    char key[220];
    const char *v = (const char *)n->data.scalar.value;

    return node_error(p, n, expected, "found '%.60s%s'%s", v,
                      strlen(v) > 60 ? "..." : "",
                      for_key(p, key, sizeof(key)));
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
        return value_error(p, n, a->expected);
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

static tutti_status_t key_hosts(const parse_t *p, yaml_node_t *v,
                                void *target)
{
    tutti__rule_t *r = target;

    return int_range_key(p, v, "hosts", &r->hosts_min, &r->hosts_max);
}

static tutti_status_t key_algorithm(const parse_t *p, yaml_node_t *v,
                                    void *target)
{
    const char *s = NULL;
    tutti_status_t st = get_scalar(p, v, NAME_EXPECTED, &s);

    if (st != TUTTI_OK)
        return st;
    if (!tutti__cfg_valid_name(s))
        return value_error(p, v, NAME_EXPECTED);
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
        return value_error(p, kn, "a parameter name, " NAME_EXPECTED);
    push_key(p, key);
    st = get_scalar(p, vn, "a single value, e.g. 1M or 2", &value);
    /* Implementations read parameters as sizes (core->param_size). */
    tutti__kv_t kv = {(char *)key, (char *)value, 0,
                      (int)kn->start_mark.line + 1,
                      (int)kn->start_mark.column + 1};
    if (st == TUTTI_OK && !tutti__size_value(value, &kv.size))
        st = value_error(p, vn, "a size, e.g. 2, 64K or 1M");
    pop_key(p);
    if (st == TUTTI_OK)
        st = tutti__cfg_param_add(r, &kv);
    return st;
}

static tutti_status_t key_params(const parse_t *p, yaml_node_t *v,
                                 void *target)
{
    tutti_status_t st = TUTTI_OK;

    if (v->type != YAML_MAPPING_NODE)
        return type_error(p, v, PARAMS_EXPECTED);
    st = check_keys(p, v, "parameter");
    for (yaml_node_pair_t *pair = v->data.mapping.pairs.start;
         pair < v->data.mapping.pairs.top && st == TUTTI_OK; pair++)
        st = param_pair(p, target, pair);
    return st;
}

static const keydef_t rule_keys[] = {
    {"collective", key_collective}, {"device", key_device},
    {"dtype", key_dtype},           {"size", key_size},
    {"group_size", key_group_size}, {"num_tasks", key_num_tasks},
    {"hosts", key_hosts},           {"algorithm", key_algorithm},
    {"params", key_params},         {NULL, NULL}};
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
    tutti_status_t st;

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
            return value_error(p, v, expected);
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
    st = check_keys(p, map, "key");
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
         pair < map->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *key = NULL;
        st = pair_key(p, pair, &key);
        if (st != TUTTI_OK)
            break;
        const tutti_setting_t *row = core_row(name, key);
        if (row == NULL) {
            snprintf(expected, sizeof(expected), "one of %s", keys);
            return node_error(p, yaml_document_get_node(p->doc, pair->key),
                              expected, "unknown key '%.60s' in %s", key,
                              name);
        }
        push_key(p, key);
        st = parse_row(p, row, yaml_document_get_node(p->doc, pair->value),
                       cfg);
        pop_key(p);
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
    if (st == TUTTI_OK)
        st = check_keys(p, map, "key");
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
         pair < map->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *key = NULL, *value = "";
        const yaml_node_t *k = yaml_document_get_node(p->doc, pair->key);
        yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
        st = pair_key(p, pair, &key);
        push_key(p, key);
        if (st == TUTTI_OK && !is_null(v))
            st = get_scalar(p, v, "one value (a module's setting)", &value);
        pop_key(p);
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

/* What a top-level key may be (@p buf of TOP_EXPECTED_MAX). */
#define TOP_EXPECTED_MAX 512
static const char *top_expected(char *buf)
{
    snprintf(buf, TOP_EXPECTED_MAX, "one of %s, or a module's section (a "
             "mapping), e.g. shm or tcp", tutti__config_top_keys());
    return buf;
}

static tutti_status_t parse_top(const parse_t *p, yaml_node_t *root,
                                tutti__config_t *cfg)
{
    tutti_status_t st = TUTTI_OK;
    char expected[TOP_EXPECTED_MAX], what[TOP_EXPECTED_MAX + 32];
    if (root->type != YAML_MAPPING_NODE) {
        snprintf(what, sizeof(what), "a mapping of settings, %s",
                 top_expected(expected));
        return type_error(p, root, what);
    }
    st = check_keys(p, root, "key");
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top && st == TUTTI_OK; pair++) {
        const char *name = NULL;
        const tutti_setting_t *row;
        yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
        st = pair_key(p, pair, &name);
        if (st != TUTTI_OK)
            break;
        push_key(p, name);
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
                            top_expected(expected),
                            "unknown key '%.60s' at top level",
                            name);
        pop_key(p);
    }
    return st;
}

/* ---- YAML: loading a file ----------------------------------------------- */

/* A file holds one document: refuse anything after it. */
static tutti_status_t check_no_more(yaml_parser_t *ps, const char *path,
                                    const char *text, size_t len)
{
    yaml_document_t doc;
    yaml_node_t *root;
    tutti_status_t st = TUTTI_OK;

    if (!yaml_parser_load(ps, &doc))
        return tutti__cfg_yaml_syntax_error(ps, path, text, len, NULL);
    root = yaml_document_get_root_node(&doc);
    if (root != NULL) {
        keys_t keys = {{NULL}, 0};
        parse_t p = {path, &doc, &keys};
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

    /* Limits first: libyaml's loader recurses and expands as it goes. */
    st = tutti__cfg_yaml_check(path, text, len);
    if (st != TUTTI_OK)
        return st;
    if (!yaml_parser_initialize(&parser))
        return tutti__cfg_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        st = tutti__cfg_yaml_syntax_error(&parser, path, text, len, NULL);
        goto out_parser;
    }
    root = yaml_document_get_root_node(&doc);
    st = TUTTI_OK;
    if (root != NULL && !is_null(root)) {
        keys_t keys = {{NULL}, 0};
        parse_t p = {path, &doc, &keys};
        st = parse_top(&p, root, cfg);
    }
    yaml_document_delete(&doc);
    if (st == TUTTI_OK)
        st = check_no_more(&parser, path, text, len);
out_parser:
    yaml_parser_delete(&parser);
    return st;
}

/* What a file that is not a regular one is, for the message. */
static const char *file_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* Opened without blocking (a FIFO would wait for a writer), then refused
 * unless a regular file no larger than CONFIG_FILE_MAX. */
static tutti_status_t open_file(const char *path, int *fd_out, size_t *size_out)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    int err = errno;

    if (fd < 0)
        return tutti__error(err == ENOENT ? TUTTI_ERR_NOT_FOUND : TUTTI_ERR_IO,
                            "config", "cannot open config file '%s': %s",
                            path, strerror(err));
    if (fstat(fd, &sb) != 0) {
        err = errno;
        close(fd);
        return tutti__error(TUTTI_ERR_IO, "config", "cannot read config "
                            "file '%s': %s", path, strerror(err));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return tutti__error(TUTTI_ERR_IO, "config", "config file '%s' is "
                            "%s; expected a regular file", path,
                            file_kind(sb.st_mode));
    }
    if ((uintmax_t)sb.st_size > CONFIG_FILE_MAX) {
        close(fd);
        return tutti__error(TUTTI_ERR_CONFIG, "config", "config file '%s' "
                            "has %jd bytes; expected a small YAML file (at "
                            "most 16M)", path, (intmax_t)sb.st_size);
    }
    *fd_out = fd;
    *size_out = (size_t)sb.st_size;
    return TUTTI_OK;
}

/* The whole file, as long as fstat() said: one byte more is a file
 * that grew while read, refused rather than cut. */
static tutti_status_t read_file(const char *path, char **text_out,
                                size_t *len_out)
{
    size_t size = 0, len = 0;
    int fd = -1;
    tutti_status_t st = open_file(path, &fd, &size);
    char *text;

    if (st != TUTTI_OK)
        return st;
    text = malloc(size + 1);
    if (text == NULL) {
        close(fd);
        return tutti__cfg_oom();
    }
    while (len < size + 1) {
        ssize_t n = read(fd, text + len, size + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = tutti__error(TUTTI_ERR_IO, "config", "cannot read config "
                              "file '%s': %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (st == TUTTI_OK && len > size)
        st = tutti__error(TUTTI_ERR_CONFIG, "config", "config file '%s' "
                          "grew while it was read; expected a file that "
                          "does not change", path);
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
