/*
 * Configuration: built-in defaults, the YAML file, the environment, and the
 * selection rules (first match wins).  Loading works on a copy of the
 * caller's configuration, which is replaced only when everything parsed, so
 * a bad file or variable leaves the configuration as it was.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config.h"
#include "log.h"

#define NAME_LEN_MAX 63
#define ALGO_ENV "TUTTI_ALGO"
#define SHM_SLOT_SIZE_MIN (UINT64_C(4) << 10)
#define SHM_SLOT_SIZE_MAX (UINT64_C(16) << 20)
#define SHM_SLOTS_MIN 2
#define SHM_SLOTS_MAX 1024
#define CONFIG_FILE_MAX (16u << 20)

#define NAME_EXPECTED                                                          \
    "a name of 1 to 63 characters without spaces, e.g. RingReduce"
#define SECONDS_EXPECTED "a number of seconds above 0, e.g. 300 or 0.5"
#define LEVEL_EXPECTED "one of error, warn, info, debug, trace, off"

/* ---- small helpers ------------------------------------------------------ */

static tutti_status_t oom(void)
{
    return tutti__error(TUTTI_ERR_NO_MEMORY, "config",
                        "out of memory while building the configuration");
}

/* Replace *field by a copy of @p value (NULL allowed). */
static tutti_status_t set_str(char **field, const char *value)
{
    char *copy = NULL;

    if (value != NULL && (copy = strdup(value)) == NULL)
        return oom();
    free(*field);
    *field = copy;
    return TUTTI_OK;
}

static char *trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static bool valid_name(const char *s)
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

/* Appends to a caller's buffer; stops quietly when it is full. */
typedef struct {
    char *buf;
    size_t len;
    size_t pos;
} sbuf_t;

static void sb_printf(sbuf_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (sb->buf == NULL || sb->pos + 1 >= sb->len)
        return;
    va_start(ap, fmt);
    n = vsnprintf(sb->buf + sb->pos, sb->len - sb->pos, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb->pos = sb->pos + (size_t)n < sb->len ? sb->pos + (size_t)n
                                                : sb->len - 1;
}

/* ---- string lists, rules ------------------------------------------------ */

static void strlist_free(tutti__strlist_t *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

static tutti_status_t strlist_push(tutti__strlist_t *l, const char *s)
{
    char **items = realloc(l->items, (l->count + 1) * sizeof(*items));

    if (items == NULL)
        return oom();
    l->items = items;
    items[l->count] = strdup(s);
    if (items[l->count] == NULL)
        return oom();
    l->count++;
    return TUTTI_OK;
}

static tutti_status_t strlist_append(tutti__strlist_t *dst,
                                     const tutti__strlist_t *src)
{
    tutti_status_t st = TUTTI_OK;

    for (size_t i = 0; i < src->count && st == TUTTI_OK; i++)
        st = strlist_push(dst, src->items[i]);
    return st;
}

static void rule_init(tutti__rule_t *r)
{
    memset(r, 0, sizeof(*r));
    r->size_max = UINT64_MAX;
    r->group_max = INT32_MAX;
    r->tasks_max = INT32_MAX;
}

static void rule_free(tutti__rule_t *r)
{
    for (size_t i = 0; i < r->num_params; i++) {
        free(r->params[i].key);
        free(r->params[i].value);
    }
    free(r->params);
    free(r->algorithm);
    free(r->file);
    free(r->skip_reason);
    rule_init(r);
}

static void rules_free(tutti__rule_t *rules, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rule_free(&rules[i]);
    free(rules);
}

static tutti_status_t param_add(tutti__rule_t *r, const char *key,
                                const char *value)
{
    tutti__kv_t *params =
        realloc(r->params, (r->num_params + 1) * sizeof(*params));
    tutti__kv_t *kv;

    if (params == NULL)
        return oom();
    r->params = params;
    kv = &params[r->num_params];
    kv->key = strdup(key);
    kv->value = strdup(value);
    if (kv->key == NULL || kv->value == NULL) {
        free(kv->key);
        free(kv->value);
        return oom();
    }
    r->num_params++;
    return TUTTI_OK;
}

static tutti_status_t rule_copy(tutti__rule_t *dst, const tutti__rule_t *src)
{
    tutti_status_t st;

    *dst = *src;
    dst->algorithm = dst->file = dst->skip_reason = NULL;
    dst->params = NULL;
    dst->num_params = 0;
    st = set_str(&dst->algorithm, src->algorithm);
    if (st == TUTTI_OK)
        st = set_str(&dst->file, src->file);
    if (st == TUTTI_OK)
        st = set_str(&dst->skip_reason, src->skip_reason);
    for (size_t i = 0; i < src->num_params && st == TUTTI_OK; i++)
        st = param_add(dst, src->params[i].key, src->params[i].value);
    if (st != TUTTI_OK)
        rule_free(dst);
    return st;
}

/* Move @p r onto the end of the array; on failure @p r is still the
 * caller's. */
static tutti_status_t rules_push(tutti__rule_t **rules, size_t *n,
                                 tutti__rule_t *r)
{
    tutti__rule_t *grown = realloc(*rules, (*n + 1) * sizeof(*grown));

    if (grown == NULL)
        return oom();
    grown[*n] = *r;
    *rules = grown;
    (*n)++;
    rule_init(r);
    return TUTTI_OK;
}

static bool is_env_rule(const tutti__rule_t *r)
{
    return r->line == 0 && r->file != NULL && strcmp(r->file, ALGO_ENV) == 0;
}

/* Replace the rules of one origin (TUTTI_ALGO if @p env, else files) by
 * @p add; TUTTI_ALGO rules stay in front.  Takes @p add in all cases. */
static tutti_status_t rules_replace(tutti__config_t *cfg, bool env,
                                    tutti__rule_t *add, size_t num_add)
{
    tutti__rule_t *out = calloc(cfg->num_rules + num_add + 1, sizeof(*out));
    size_t n = 0;

    if (out == NULL) {
        rules_free(add, num_add);
        return oom();
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
            rule_free(&cfg->rules[i]);
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

/* On allocation failure a string field stays NULL; readers treat that as
 * the default. */
void tutti__config_init(tutti__config_t *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->log_level = strdup("warn");
    cfg->timeout = 300.0;
    cfg->shm_slot_size = UINT64_C(64) << 10;
    cfg->shm_slots = 16;
    (void)strlist_push(&cfg->transports, "shm");
}

void tutti__config_free(tutti__config_t *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->path);
    free(cfg->log_level);
    strlist_free(&cfg->module_path);
    strlist_free(&cfg->module_load);
    strlist_free(&cfg->transports);
    rules_free(cfg->rules, cfg->num_rules);
    memset(cfg, 0, sizeof(*cfg));
}

static tutti_status_t config_copy(tutti__config_t *dst,
                                  const tutti__config_t *src)
{
    tutti_status_t st;

    *dst = *src;
    dst->path = dst->log_level = NULL;
    memset(&dst->module_path, 0, sizeof(dst->module_path));
    memset(&dst->module_load, 0, sizeof(dst->module_load));
    memset(&dst->transports, 0, sizeof(dst->transports));
    dst->rules = NULL;
    dst->num_rules = 0;
    st = set_str(&dst->path, src->path);
    if (st == TUTTI_OK)
        st = set_str(&dst->log_level, src->log_level);
    if (st == TUTTI_OK)
        st = strlist_append(&dst->module_path, &src->module_path);
    if (st == TUTTI_OK)
        st = strlist_append(&dst->module_load, &src->module_load);
    if (st == TUTTI_OK)
        st = strlist_append(&dst->transports, &src->transports);
    if (st == TUTTI_OK && src->num_rules > 0) {
        dst->rules = calloc(src->num_rules, sizeof(*dst->rules));
        st = dst->rules != NULL ? TUTTI_OK : oom();
    }
    for (size_t i = 0; i < src->num_rules && st == TUTTI_OK; i++) {
        st = rule_copy(&dst->rules[i], &src->rules[i]);
        if (st == TUTTI_OK)
            dst->num_rules++;
    }
    if (st != TUTTI_OK)
        tutti__config_free(dst);
    return st;
}

static void config_replace(tutti__config_t *cfg, tutti__config_t *tmp)
{
    tutti__config_free(cfg);
    *cfg = *tmp;
}

/* ---- values: sizes, ranges, seconds ------------------------------------- */

/* Digits, then an optional K/M/G/T and an optional B, any case. */
static bool size_value(const char *s, uint64_t *out)
{
    static const char units[] = "KMGT";
    const char *p = s, *unit;
    uint64_t v = 0;
    unsigned shift = 0;

    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (p == s)
        return false;
    if (*p != '\0' && (unit = strchr(units, toupper((unsigned char)*p)))) {
        shift = 10u * (unsigned)(unit - units + 1);
        p++;
    }
    if (*p == 'b' || *p == 'B')
        p++;
    if (*p != '\0' || (shift > 0 && v > (UINT64_MAX >> shift)))
        return false;
    *out = v << shift;
    return true;
}

static bool uint_value(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (!isdigit((unsigned char)*s))
        return false;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (*s != '\0')
        return false;
    *out = v;
    return true;
}

tutti_status_t tutti__parse_size(const char *s, uint64_t *out)
{
    uint64_t v;

    if (s == NULL || out == NULL)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "no size given");
    if (!size_value(s, &v))
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG,
                                  "'%s' is not a size; expected a whole "
                                  "number of bytes with an optional K, M, G "
                                  "or T suffix, e.g. 4096 or 64K",
                                  s);
    *out = v;
    return TUTTI_OK;
}

enum { RANGE_OK, RANGE_MALFORMED, RANGE_INVERTED };

/* "LO-HI", "LO-", "-HI" or "N"; bounds are sizes or plain integers <= max.
 * An open upper bound is @p max. */
static int range_value(const char *s, bool sizes, uint64_t max, uint64_t *lo,
                       uint64_t *hi)
{
    char buf[64], *a, *b, *dash;

    if (strlen(s) >= sizeof(buf))
        return RANGE_MALFORMED;
    strcpy(buf, s);
    dash = strchr(buf, '-');
    if (dash != NULL)
        *dash = '\0';
    a = trim(buf);
    b = dash != NULL ? trim(dash + 1) : a;
    *lo = 0;
    *hi = max;
    if ((*a == '\0' && *b == '\0') || strchr(b, '-') != NULL)
        return RANGE_MALFORMED;
    if (*a != '\0' && !(sizes ? size_value(a, lo) : uint_value(a, max, lo)))
        return RANGE_MALFORMED;
    if (*b != '\0' && !(sizes ? size_value(b, hi) : uint_value(b, max, hi)))
        return RANGE_MALFORMED;
    return *lo <= *hi ? RANGE_OK : RANGE_INVERTED;
}

#define SIZE_RANGE_EXPECTED                                                    \
    "LO-HI, LO- or -HI in bytes, inclusive, or one size, with optional K, "   \
    "M, G, T suffixes, e.g. 0-16K, 1M-, -4K, 64"
#define INT_RANGE_EXPECTED                                                     \
    "a whole number or a range LO-HI, LO- or -HI, inclusive, e.g. 4, 2-8, 4-"
#define RANGE_ORDER_EXPECTED "the lower bound not above the upper, e.g. 1K-16K"

tutti_status_t tutti__parse_size_range(const char *s, uint64_t *lo_out,
                                       uint64_t *hi_out)
{
    uint64_t lo, hi;
    int r;

    if (s == NULL || lo_out == NULL || hi_out == NULL)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "no size range given");
    r = range_value(s, true, UINT64_MAX, &lo, &hi);
    if (r == RANGE_MALFORMED)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG,
                                  "size range '%s' is not valid; expected %s",
                                  s, SIZE_RANGE_EXPECTED);
    if (r == RANGE_INVERTED)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG,
                                  "size range '%s' has its lower bound above "
                                  "its upper; expected %s",
                                  s, RANGE_ORDER_EXPECTED);
    *lo_out = lo;
    *hi_out = hi;
    return TUTTI_OK;
}

static bool seconds_value(const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v <= 0)
        return false;
    *out = v;
    return true;
}

/* "64K" where exact, else the number of bytes. */
static void format_size(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;

    while (u < 3 && v != 0 && (v & 1023) == 0) {
        v >>= 10;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%" PRIu64, v);
    else
        snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
}

/* "LO-HI", "LO-" (open), or "N"; @p human writes sizes with suffixes. */
static void format_range(uint64_t lo, uint64_t hi, uint64_t open, bool human,
                         char *buf, size_t len)
{
    char a[32], b[32];

    if (human) {
        format_size(lo, a, sizeof(a));
        format_size(hi, b, sizeof(b));
    } else {
        snprintf(a, sizeof(a), "%" PRIu64, lo);
        snprintf(b, sizeof(b), "%" PRIu64, hi);
    }
    if (lo == hi)
        snprintf(buf, len, "%s", a);
    else if (hi == open)
        snprintf(buf, len, "%s-", a);
    else
        snprintf(buf, len, "%s-%s", a, b);
}

/* ---- names of collectives, device types, data types --------------------- */

typedef struct {
    const char *key; /* YAML key and word in messages */
    int count;
    const char *(*name)(int index);
} name_kind_t;

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

static const name_kind_t coll_kind = {"collective", TUTTI_COLL_COUNT,
                                      coll_name};
static const name_kind_t device_kind = {"device", TUTTI_DEVICE_COUNT,
                                        device_name};
static const name_kind_t dtype_kind = {"dtype", TUTTI_DTYPE_COUNT, dtype_name};

static int kind_lookup(const name_kind_t *kind, const char *s)
{
    for (int i = 0; i < kind->count; i++) {
        if (strcmp(kind->name(i), s) == 0)
            return i;
    }
    return -1;
}

/* Names of the bits set in @p mask (all names when @p mask is ~0u),
 * joined by @p sep. */
static void mask_names(const name_kind_t *kind, uint32_t mask, const char *sep,
                       char *buf, size_t len)
{
    sbuf_t sb = {buf, len, 0};

    buf[0] = '\0';
    for (int i = 0; i < kind->count; i++) {
        if (mask & (1u << i))
            sb_printf(&sb, "%s%s", sb.pos > 0 ? sep : "", kind->name(i));
    }
}

static bool mask_has(uint32_t mask, int value)
{
    if (mask == 0)
        return true;
    return value >= 0 && value < 32 && (mask & (1u << value)) != 0;
}

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
    sbuf_t sb = {buf, len, 0};

    buf[0] = '\0';
    for (; keys->name != NULL; keys++)
        sb_printf(&sb, "%s%s", sb.pos > 0 ? ", " : "", keys->name);
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
    const name_kind_t *kind;
    const char *expected;
    uint32_t *mask;
} mask_arg_t;

static tutti_status_t mask_item(const parse_t *p, yaml_node_t *n, void *arg)
{
    mask_arg_t *a = arg;
    const char *s;
    tutti_status_t st = get_scalar(p, n, a->expected, &s);
    int i;

    if (st != TUTTI_OK)
        return st;
    i = kind_lookup(a->kind, s);
    if (i < 0)
        return value_error(p, n, a->kind->key, a->expected);
    *a->mask |= 1u << i;
    return TUTTI_OK;
}

static tutti_status_t parse_mask(const parse_t *p, yaml_node_t *v,
                                 const name_kind_t *kind, uint32_t *mask)
{
    char names[200], expected[300];
    mask_arg_t a = {kind, expected, mask};

    mask_names(kind, ~0u, ", ", names, sizeof(names));
    snprintf(expected, sizeof(expected), "one of %s, or a list of them",
             names);
    *mask = 0;
    return for_each_item(p, v, expected, false, mask_item, &a);
}

static tutti_status_t key_collective(const parse_t *p, yaml_node_t *v,
                                     void *target)
{
    return parse_mask(p, v, &coll_kind,
                      &((tutti__rule_t *)target)->collectives);
}

static tutti_status_t key_device(const parse_t *p, yaml_node_t *v,
                                 void *target)
{
    return parse_mask(p, v, &device_kind,
                      &((tutti__rule_t *)target)->device_types);
}

static tutti_status_t key_dtype(const parse_t *p, yaml_node_t *v, void *target)
{
    return parse_mask(p, v, &dtype_kind, &((tutti__rule_t *)target)->dtypes);
}

static tutti_status_t parse_range_key(const parse_t *p, yaml_node_t *v,
                                      const char *key, bool sizes,
                                      uint64_t max, uint64_t *lo, uint64_t *hi)
{
    const char *expected = sizes ? SIZE_RANGE_EXPECTED : INT_RANGE_EXPECTED;
    const char *s;
    tutti_status_t st = get_scalar(p, v, expected, &s);
    int r;

    if (st != TUTTI_OK)
        return st;
    r = range_value(s, sizes, max, lo, hi);
    if (r == RANGE_MALFORMED)
        return node_error(p, v, expected, "%s range '%.60s' is not valid",
                          key, s);
    if (r == RANGE_INVERTED)
        return node_error(p, v, RANGE_ORDER_EXPECTED,
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
    const char *s;
    tutti_status_t st = get_scalar(p, v, NAME_EXPECTED, &s);

    if (st != TUTTI_OK)
        return st;
    if (!valid_name(s))
        return value_error(p, v, "algorithm", NAME_EXPECTED);
    return set_str(&((tutti__rule_t *)target)->algorithm, s);
}

#define PARAMS_EXPECTED                                                        \
    "a mapping of parameter names to values, e.g. {chunk: 1M}"

static tutti_status_t param_pair(const parse_t *p, tutti__rule_t *r,
                                 yaml_node_pair_t *pair)
{
    yaml_node_t *kn = yaml_document_get_node(p->doc, pair->key);
    yaml_node_t *vn = yaml_document_get_node(p->doc, pair->value);
    const char *key, *value;
    tutti_status_t st = get_scalar(p, kn, "a parameter name", &key);

    if (st != TUTTI_OK)
        return st;
    if (!valid_name(key))
        return value_error(p, kn, "a parameter name", NAME_EXPECTED);
    for (size_t i = 0; i < r->num_params; i++) {
        if (strcmp(r->params[i].key, key) == 0)
            return node_error(p, kn, "each parameter once",
                              "duplicate parameter '%s'", key);
    }
    st = get_scalar(p, vn, "a single value, e.g. 1M or 2", &value);
    if (st == TUTTI_OK)
        st = param_add(r, key, value);
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

typedef struct {
    tutti__rule_t *rules;
    size_t count;
} rules_arg_t;

static tutti_status_t rule_item(const parse_t *p, yaml_node_t *n, void *arg)
{
    rules_arg_t *a = arg;
    tutti__rule_t r;
    tutti_status_t st;

    rule_init(&r);
    r.line = (int)n->start_mark.line + 1;
    r.column = (int)n->start_mark.column + 1;
    st = set_str(&r.file, p->path);
    if (st == TUTTI_OK)
        st = parse_section(p, n, &rule_section, &r);
    if (st == TUTTI_OK && r.algorithm == NULL)
        st = node_error(p, n, "algorithm: <implementation name>",
                        "selection rule without 'algorithm'");
    if (st == TUTTI_OK)
        st = rules_push(&a->rules, &a->count, &r);
    rule_free(&r);
    return st;
}

/* ---- YAML: top-level keys ----------------------------------------------- */

static tutti_status_t key_log_level(const parse_t *p, yaml_node_t *v,
                                    void *target)
{
    tutti__config_t *cfg = target;
    const char *s;
    int level;
    tutti_status_t st = get_scalar(p, v, LEVEL_EXPECTED, &s);

    if (st != TUTTI_OK)
        return st;
    if (tutti__log_parse_level(s, &level) != TUTTI_OK)
        return value_error(p, v, "log_level", LEVEL_EXPECTED);
    cfg->log_level_src = TUTTI_SRC_FILE;
    return set_str(&cfg->log_level, s);
}

static tutti_status_t key_timeout(const parse_t *p, yaml_node_t *v,
                                  void *target)
{
    tutti__config_t *cfg = target;
    const char *s;
    tutti_status_t st = get_scalar(p, v, SECONDS_EXPECTED, &s);

    if (st != TUTTI_OK)
        return st;
    if (!seconds_value(s, &cfg->timeout))
        return value_error(p, v, "timeout", SECONDS_EXPECTED);
    cfg->timeout_src = TUTTI_SRC_FILE;
    return TUTTI_OK;
}

typedef struct {
    tutti__strlist_t list;
    const char *expected;
    bool names; /* names (no spaces, bounded) rather than paths */
} list_arg_t;

static tutti_status_t list_item(const parse_t *p, yaml_node_t *n, void *arg)
{
    list_arg_t *a = arg;
    const char *s;
    tutti_status_t st = get_scalar(p, n, a->expected, &s);

    if (st != TUTTI_OK)
        return st;
    if (a->names ? !valid_name(s) : *s == '\0')
        return type_error(p, n, a->expected);
    return strlist_push(&a->list, s);
}

static tutti_status_t parse_list(const parse_t *p, yaml_node_t *v,
                                 const char *expected, bool names,
                                 tutti__strlist_t *list, tutti__source_t *src)
{
    list_arg_t a = {{NULL, 0}, expected, names};
    tutti_status_t st = for_each_item(p, v, expected, true, list_item, &a);

    if (st != TUTTI_OK) {
        strlist_free(&a.list);
        return st;
    }
    strlist_free(list);
    *list = a.list;
    *src = TUTTI_SRC_FILE;
    return TUTTI_OK;
}

static tutti_status_t key_module_path(const parse_t *p, yaml_node_t *v,
                                      void *target)
{
    tutti__config_t *cfg = target;

    return parse_list(p, v, "a directory or a list of directories", false,
                      &cfg->module_path, &cfg->module_path_src);
}

static tutti_status_t key_module_load(const parse_t *p, yaml_node_t *v,
                                      void *target)
{
    tutti__config_t *cfg = target;

    return parse_list(p, v,
                      "a list of module names (empty: load all), e.g. [ring]",
                      true, &cfg->module_load, &cfg->module_load_src);
}

static tutti_status_t key_transports(const parse_t *p, yaml_node_t *v,
                                     void *target)
{
    tutti__config_t *cfg = target;

    return parse_list(p, v, "a list of transport names, e.g. [shm, tcp]",
                      true, &cfg->transports, &cfg->transports_src);
}

#define SLOT_SIZE_EXPECTED "a power of two from 4K to 16M, e.g. 64K"
#define SLOTS_EXPECTED "a whole number from 2 to 1024"

static tutti_status_t key_slot_size(const parse_t *p, yaml_node_t *v,
                                    void *target)
{
    tutti__config_t *cfg = target;
    const char *s;
    uint64_t size;
    tutti_status_t st = get_scalar(p, v, SLOT_SIZE_EXPECTED, &s);

    if (st != TUTTI_OK)
        return st;
    if (!size_value(s, &size) || size < SHM_SLOT_SIZE_MIN ||
        size > SHM_SLOT_SIZE_MAX || (size & (size - 1)) != 0)
        return value_error(p, v, "slot_size", SLOT_SIZE_EXPECTED);
    cfg->shm_slot_size = size;
    cfg->shm_slot_size_src = TUTTI_SRC_FILE;
    return TUTTI_OK;
}

static tutti_status_t key_slots(const parse_t *p, yaml_node_t *v, void *target)
{
    tutti__config_t *cfg = target;
    const char *s;
    uint64_t n;
    tutti_status_t st = get_scalar(p, v, SLOTS_EXPECTED, &s);

    if (st != TUTTI_OK)
        return st;
    if (!uint_value(s, UINT32_MAX, &n) || n < SHM_SLOTS_MIN ||
        n > SHM_SLOTS_MAX)
        return value_error(p, v, "slots", SLOTS_EXPECTED);
    cfg->shm_slots = n;
    cfg->shm_slots_src = TUTTI_SRC_FILE;
    return TUTTI_OK;
}

static const keydef_t module_keys[] = {
    {"path", key_module_path}, {"load", key_module_load}, {NULL, NULL}};
static const section_t module_section = {"in modules", module_keys};

static const keydef_t shm_keys[] = {
    {"slot_size", key_slot_size}, {"slots", key_slots}, {NULL, NULL}};
static const section_t shm_section = {"in shm", shm_keys};

static tutti_status_t key_modules(const parse_t *p, yaml_node_t *v,
                                  void *target)
{
    return parse_section(p, v, &module_section, target);
}

static tutti_status_t key_shm(const parse_t *p, yaml_node_t *v, void *target)
{
    return parse_section(p, v, &shm_section, target);
}

static tutti_status_t key_selection(const parse_t *p, yaml_node_t *v,
                                    void *target)
{
    rules_arg_t a = {NULL, 0};
    tutti_status_t st = for_each_item(p, v, "a list of selection rules", true,
                                      rule_item, &a);

    if (st != TUTTI_OK) {
        rules_free(a.rules, a.count);
        return st;
    }
    return rules_replace(target, false, a.rules, a.count);
}

static const keydef_t top_keys[] = {
    {"log_level", key_log_level},   {"timeout", key_timeout},
    {"modules", key_modules},       {"transports", key_transports},
    {"shm", key_shm},               {"selection", key_selection},
    {NULL, NULL}};
static const section_t top_section = {"at top level", top_keys};

/* ---- YAML: loading a file ----------------------------------------------- */

static tutti_status_t syntax_error(const yaml_parser_t *ps, const char *path)
{
    const char *problem = ps->problem != NULL ? ps->problem : "unreadable";

    if (ps->error == YAML_MEMORY_ERROR)
        return oom();
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
        return oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        st = syntax_error(&parser, path);
        goto out_parser;
    }
    root = yaml_document_get_root_node(&doc);
    st = TUTTI_OK;
    if (root != NULL && !is_null(root)) {
        parse_t p = {path, &doc};
        st = parse_section(&p, root, &top_section, cfg);
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
        return oom();
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
    st = config_copy(&tmp, cfg);
    if (st == TUTTI_OK) {
        st = parse_text(&tmp, path, text, len);
        if (st == TUTTI_OK)
            st = set_str(&tmp.path, path);
        if (st == TUTTI_OK)
            config_replace(cfg, &tmp);
        else
            tutti__config_free(&tmp);
    }
    free(text);
    return st;
}

/* ---- environment -------------------------------------------------------- */

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
    return trim(start);
}

static tutti_status_t env_log_level(tutti__config_t *cfg, const char *var,
                                    const char *value)
{
    char *copy = strdup(value);
    int level;
    tutti_status_t st = copy != NULL ? TUTTI_OK : oom();

    if (st == TUTTI_OK &&
        tutti__log_parse_level(trim(copy), &level) != TUTTI_OK)
        st = env_error(var, value, "unknown log level", LEVEL_EXPECTED);
    if (st == TUTTI_OK)
        st = set_str(&cfg->log_level, trim(copy));
    if (st == TUTTI_OK)
        cfg->log_level_src = TUTTI_SRC_ENV;
    free(copy);
    return st;
}

static tutti_status_t env_timeout(tutti__config_t *cfg, const char *var,
                                  const char *value)
{
    if (!seconds_value(value, &cfg->timeout))
        return env_error(var, value, "not a timeout", SECONDS_EXPECTED);
    cfg->timeout_src = TUTTI_SRC_ENV;
    return TUTTI_OK;
}

/* Directories in the variable come first; empty entries are skipped. */
static tutti_status_t env_module_path(tutti__config_t *cfg, const char *var,
                                      const char *value)
{
    tutti__strlist_t list = {NULL, 0};
    char *copy = strdup(value), *cursor = copy, *dir;
    tutti_status_t st = copy != NULL ? TUTTI_OK : oom();

    while (st == TUTTI_OK && (dir = next_field(&cursor, ':')) != NULL) {
        if (*dir != '\0')
            st = strlist_push(&list, dir);
    }
    if (st == TUTTI_OK)
        st = strlist_append(&list, &cfg->module_path);
    free(copy);
    if (st != TUTTI_OK) {
        strlist_free(&list);
        return st;
    }
    strlist_free(&cfg->module_path);
    cfg->module_path = list;
    cfg->module_path_src = TUTTI_SRC_ENV;
    return TUTTI_OK;
}

static tutti_status_t env_transports(tutti__config_t *cfg, const char *var,
                                     const char *value)
{
    tutti__strlist_t list = {NULL, 0};
    char *copy = strdup(value), *cursor = copy, *name;
    tutti_status_t st = copy != NULL ? TUTTI_OK : oom();

    while (st == TUTTI_OK && (name = next_field(&cursor, ',')) != NULL) {
        if (!valid_name(name))
            st = env_error(var, value, "a transport name is empty or invalid",
                           "comma-separated transport names, e.g. shm,tcp");
        else
            st = strlist_push(&list, name);
    }
    free(copy);
    if (st != TUTTI_OK) {
        strlist_free(&list);
        return st;
    }
    strlist_free(&cfg->transports);
    cfg->transports = list;
    cfg->transports_src = TUTTI_SRC_ENV;
    return TUTTI_OK;
}

#define ALGO_EXPECTED                                                          \
    "comma-separated collective:implementation pairs, e.g. "                   \
    "allreduce:RingReduce,broadcast:HierarchicalTreeBroadcast"

/* One "collective:Implementation" entry of TUTTI_ALGO as a rule. */
static tutti_status_t algo_entry(char *entry, const char *value,
                                 tutti__rule_t *r)
{
    char *colon = strchr(entry, ':');
    char *impl = colon != NULL ? trim(colon + 1) : NULL;
    char found[160];
    int coll;

    if (colon != NULL)
        *colon = '\0';
    coll = kind_lookup(&coll_kind, trim(entry));
    if (impl == NULL || !valid_name(impl) || strchr(impl, ':') != NULL) {
        snprintf(found, sizeof(found), "entry '%.60s' is not collective:name",
                 entry);
        return env_error(ALGO_ENV, value, found, ALGO_EXPECTED);
    }
    if (coll < 0) {
        char names[200], expected[240];
        mask_names(&coll_kind, ~0u, ", ", names, sizeof(names));
        snprintf(expected, sizeof(expected), "a collective, one of %s", names);
        snprintf(found, sizeof(found), "unknown collective '%.60s'",
                 trim(entry));
        return env_error(ALGO_ENV, value, found, expected);
    }
    rule_init(r);
    r->collectives = 1u << coll;
    if (set_str(&r->algorithm, impl) != TUTTI_OK ||
        set_str(&r->file, ALGO_ENV) != TUTTI_OK) {
        rule_free(r);
        return TUTTI_ERR_NO_MEMORY;
    }
    return TUTTI_OK;
}

static tutti_status_t env_algo(tutti__config_t *cfg, const char *var,
                               const char *value)
{
    rules_arg_t a = {NULL, 0};
    char *copy = strdup(value), *cursor = copy, *entry;
    tutti_status_t st = copy != NULL ? TUTTI_OK : oom();
    tutti__rule_t r;

    while (st == TUTTI_OK && (entry = next_field(&cursor, ',')) != NULL) {
        st = algo_entry(entry, value, &r);
        if (st != TUTTI_OK)
            break;
        st = rules_push(&a.rules, &a.count, &r);
        if (st != TUTTI_OK)
            rule_free(&r);
    }
    free(copy);
    if (st != TUTTI_OK) {
        rules_free(a.rules, a.count);
        return st;
    }
    return rules_replace(cfg, true, a.rules, a.count);
}

typedef tutti_status_t (*env_fn)(tutti__config_t *cfg, const char *var,
                                 const char *value);

static const struct {
    const char *var;
    env_fn fn;
} env_vars[] = {
    {"TUTTI_LOG_LEVEL", env_log_level},
    {"TUTTI_TIMEOUT", env_timeout},
    {"TUTTI_MODULE_PATH", env_module_path},
    {"TUTTI_TRANSPORTS", env_transports},
    {ALGO_ENV, env_algo},
};

/* A variable set to the empty string counts as unset. */
tutti_status_t tutti__config_apply_env(tutti__config_t *cfg)
{
    tutti__config_t tmp;
    tutti_status_t st;

    if (cfg == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "config",
                            "no configuration to apply the environment to");
    st = config_copy(&tmp, cfg);
    for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
        const char *value = getenv(env_vars[i].var);
        if (st == TUTTI_OK && value != NULL && *value != '\0')
            st = env_vars[i].fn(&tmp, env_vars[i].var, value);
    }
    if (st != TUTTI_OK) {
        tutti__config_free(&tmp);
        return st;
    }
    config_replace(cfg, &tmp);
    return TUTTI_OK;
}

/* ---- checking rules and selecting --------------------------------------- */

/* Rules built through the API may lack a name; never print NULL. */
static const char *rule_algo(const tutti__rule_t *r)
{
    return r->algorithm != NULL ? r->algorithm : "(none)";
}

/* "file:line", or the file alone for rules not from a file. */
static void rule_where(const tutti__rule_t *r, char *buf, size_t len)
{
    const char *file = r->file != NULL ? r->file : "(api)";

    if (r->line > 0)
        snprintf(buf, len, "%s:%d", file, r->line);
    else
        snprintf(buf, len, "%s", file);
}

static void skip_rule(tutti__rule_t *r, const char *reason)
{
    char where[300];

    rule_where(r, where, sizeof(where));
    r->skipped = 1;
    free(r->skip_reason);
    r->skip_reason = strdup(reason);
    tutti__log(TUTTI_LOG_WARN, "config", "%s: %s; rule skipped", where, reason);
}

static void check_rule(tutti__rule_t *r, tutti__impl_lookup_fn has_impl,
                       void *arg)
{
    uint32_t colls = 0, missing;
    char names[200], reason[400];

    r->skipped = 0;
    free(r->skip_reason);
    r->skip_reason = NULL;
    if (!has_impl(arg, rule_algo(r), &colls)) {
        snprintf(reason, sizeof(reason),
                 "rule names implementation '%s' that no loaded module "
                 "provides",
                 rule_algo(r));
        skip_rule(r, reason);
        return;
    }
    missing = r->collectives & ~colls;
    if (missing != 0) {
        mask_names(&coll_kind, missing, ",", names, sizeof(names));
        snprintf(reason, sizeof(reason),
                 "implementation '%s' does not support %s", rule_algo(r),
                 names);
        skip_rule(r, reason);
    }
}

void tutti__config_check_rules(tutti__config_t *cfg,
                               tutti__impl_lookup_fn has_impl, void *arg)
{
    if (cfg == NULL || has_impl == NULL)
        return;
    for (size_t i = 0; i < cfg->num_rules; i++)
        check_rule(&cfg->rules[i], has_impl, arg);
}

static bool mask_mismatch(const name_kind_t *kind, uint32_t mask, int value,
                          char *why, size_t len)
{
    char names[200];
    const char *name =
        value >= 0 && value < kind->count ? kind->name(value) : "(invalid)";

    if (mask_has(mask, value))
        return false;
    mask_names(kind, mask, ",", names, sizeof(names));
    snprintf(why, len, "%s %s not in %s", kind->key, name, names);
    return true;
}

static bool int_mismatch(const char *key, int v, int lo, int hi, char *why,
                         size_t len)
{
    char range[64];

    if (v >= lo && v <= hi)
        return false;
    format_range((uint64_t)lo, (uint64_t)hi, INT32_MAX, false, range,
                 sizeof(range));
    snprintf(why, len, "%s %d outside %s", key, v, range);
    return true;
}

/* Why @p r does not match @p q, or false when it does. */
static bool rule_mismatch(const tutti__rule_t *r,
                          const tutti_select_query_t *q, char *why, size_t len)
{
    char range[64];

    if (mask_mismatch(&coll_kind, r->collectives, (int)q->collective, why,
                      len) ||
        mask_mismatch(&device_kind, r->device_types, (int)q->device_type, why,
                      len) ||
        mask_mismatch(&dtype_kind, r->dtypes, (int)q->dtype, why, len))
        return true;
    if ((uint64_t)q->bytes < r->size_min || (uint64_t)q->bytes > r->size_max) {
        format_range(r->size_min, r->size_max, UINT64_MAX, false, range,
                     sizeof(range));
        snprintf(why, len, "size %zu outside %s", q->bytes, range);
        return true;
    }
    return int_mismatch("group_size", q->group_size, r->group_min,
                        r->group_max, why, len) ||
           int_mismatch("num_tasks", q->num_tasks, r->tasks_min, r->tasks_max,
                        why, len);
}

const tutti__rule_t *tutti__config_select(const tutti__config_t *cfg,
                                          const tutti_select_query_t *q,
                                          char *explain, size_t explain_len)
{
    sbuf_t sb = {explain_len > 0 ? explain : NULL, explain_len, 0};
    char where[300], why[400];

    if (sb.buf != NULL)
        explain[0] = '\0';
    if (cfg == NULL || q == NULL)
        return NULL;
    for (size_t i = 0; i < cfg->num_rules; i++) {
        const tutti__rule_t *r = &cfg->rules[i];
        rule_where(r, where, sizeof(where));
        if (r->skipped) {
            sb_printf(&sb, "%s: %s: skipped (%s)\n", where, rule_algo(r),
                      r->skip_reason != NULL ? r->skip_reason : "");
        } else if (rule_mismatch(r, q, why, sizeof(why))) {
            sb_printf(&sb, "%s: %s: no (%s)\n", where, rule_algo(r), why);
        } else {
            sb_printf(&sb, "%s: %s: matches\nchosen: %s (%s)\n", where,
                      rule_algo(r), rule_algo(r), where);
            return r;
        }
    }
    sb_printf(&sb, "chosen: none (no rule matches)\n");
    return NULL;
}

/* ---- printing ----------------------------------------------------------- */

static void print_list(FILE *out, const char *key, const tutti__strlist_t *l,
                       tutti__source_t src)
{
    fprintf(out, "%s = [", key);
    for (size_t i = 0; i < l->count; i++)
        fprintf(out, "%s%s", i > 0 ? ", " : "", l->items[i]);
    fprintf(out, "] (%s)\n", tutti__source_name(src));
}

static void print_mask(FILE *out, const name_kind_t *kind, uint32_t mask)
{
    char names[200];

    if (mask == 0)
        return;
    mask_names(kind, mask, ",", names, sizeof(names));
    fprintf(out, " %s=%s", kind->key, names);
}

static void print_int_range(FILE *out, const char *key, int lo, int hi)
{
    char range[64];

    if (lo == 0 && hi == INT32_MAX)
        return;
    format_range((uint64_t)lo, (uint64_t)hi, INT32_MAX, false, range,
                 sizeof(range));
    fprintf(out, " %s=%s", key, range);
}

static void print_rule(FILE *out, size_t index, const tutti__rule_t *r)
{
    char where[300], range[64];

    rule_where(r, where, sizeof(where));
    if (r->line > 0)
        snprintf(where + strlen(where), sizeof(where) - strlen(where), ":%d",
                 r->column);
    fprintf(out, "  %zu. %s:", index + 1, where);
    print_mask(out, &coll_kind, r->collectives);
    print_mask(out, &device_kind, r->device_types);
    print_mask(out, &dtype_kind, r->dtypes);
    if (r->size_min != 0 || r->size_max != UINT64_MAX) {
        format_range(r->size_min, r->size_max, UINT64_MAX, true, range,
                     sizeof(range));
        fprintf(out, " size=%s", range);
    }
    print_int_range(out, "group_size", r->group_min, r->group_max);
    print_int_range(out, "num_tasks", r->tasks_min, r->tasks_max);
    fprintf(out, " -> %s", rule_algo(r));
    for (size_t i = 0; i < r->num_params; i++)
        fprintf(out, "%s%s: %s", i == 0 ? " {" : ", ", r->params[i].key,
                r->params[i].value);
    fprintf(out, "%s", r->num_params > 0 ? "}" : "");
    if (r->skipped)
        fprintf(out, " [skipped: %s]", r->skip_reason ? r->skip_reason : "");
    fprintf(out, "\n");
}

void tutti__config_print(const tutti__config_t *cfg, FILE *out)
{
    char size[32];

    if (cfg == NULL || out == NULL)
        return;
    fprintf(out, "config file = %s\n", cfg->path ? cfg->path : "(none)");
    fprintf(out, "log_level = %s (%s)\n",
            cfg->log_level ? cfg->log_level : "warn",
            tutti__source_name(cfg->log_level_src));
    fprintf(out, "timeout = %g (%s)\n", cfg->timeout,
            tutti__source_name(cfg->timeout_src));
    print_list(out, "modules.path", &cfg->module_path, cfg->module_path_src);
    print_list(out, "modules.load", &cfg->module_load, cfg->module_load_src);
    print_list(out, "transports", &cfg->transports, cfg->transports_src);
    format_size(cfg->shm_slot_size, size, sizeof(size));
    fprintf(out, "shm.slot_size = %s (%s)\n", size,
            tutti__source_name(cfg->shm_slot_size_src));
    fprintf(out, "shm.slots = %" PRIu64 " (%s)\n", cfg->shm_slots,
            tutti__source_name(cfg->shm_slots_src));
    fprintf(out, "selection: %zu rule%s, first match wins\n", cfg->num_rules,
            cfg->num_rules == 1 ? "" : "s");
    for (size_t i = 0; i < cfg->num_rules; i++)
        print_rule(out, i, &cfg->rules[i]);
}
