/*
 * Configuration: built-in defaults, the environment, and the selection
 * rules (first match wins); the YAML file is read in config_yaml.c.
 * Loading works on a copy of the caller's configuration, which is replaced
 * only when everything parsed, so a bad file or variable leaves the
 * configuration as it was.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"
#include "base/log.h"
#include "base/sbuf.h"

#define NAME_LEN_MAX 63
#define ALGO_ENV "TUTTI_ALGO"

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

/* ---- string lists, rules ------------------------------------------------ */

tutti_status_t tutti__cfg_strlist_push(tutti__strlist_t *l, const char *s)
{
    return tutti__strlist_push(l, s) == TUTTI_OK ? TUTTI_OK : tutti__cfg_oom();
}

static tutti_status_t strlist_append(tutti__strlist_t *dst,
                                     const tutti__strlist_t *src)
{
    return tutti__strlist_append(dst, src) == TUTTI_OK ? TUTTI_OK
                                                      : tutti__cfg_oom();
}

void tutti__cfg_rule_init(tutti__rule_t *r)
{
    memset(r, 0, sizeof(*r));
    r->size_max = UINT64_MAX;
    r->group_max = INT32_MAX;
    r->tasks_max = INT32_MAX;
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
    tutti__cfg_rule_init(r);
}

void tutti__cfg_rules_free(tutti__rule_t *rules, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tutti__cfg_rule_free(&rules[i]);
    free(rules);
}

tutti_status_t tutti__cfg_param_add(tutti__rule_t *r, const char *key,
                                    const char *value)
{
    tutti__kv_t *params =
        realloc(r->params, (r->num_params + 1) * sizeof(*params));
    tutti__kv_t *kv;

    if (params == NULL)
        return tutti__cfg_oom();
    r->params = params;
    kv = &params[r->num_params];
    kv->key = strdup(key);
    kv->value = strdup(value);
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
    dst->algorithm = dst->file = dst->skip_reason = NULL;
    dst->params = NULL;
    dst->num_params = 0;
    st = tutti__cfg_set_str(&dst->algorithm, src->algorithm);
    if (st == TUTTI_OK)
        st = tutti__cfg_set_str(&dst->file, src->file);
    if (st == TUTTI_OK)
        st = tutti__cfg_set_str(&dst->skip_reason, src->skip_reason);
    for (size_t i = 0; i < src->num_params && st == TUTTI_OK; i++)
        st = tutti__cfg_param_add(dst, src->params[i].key,
                                  src->params[i].value);
    if (st != TUTTI_OK)
        tutti__cfg_rule_free(dst);
    return st;
}

/* Move @p r onto the end of the array; on failure @p r is still the
 * caller's. */
tutti_status_t tutti__cfg_rules_push(tutti__rule_t **rules, size_t *n,
                                     tutti__rule_t *r)
{
    tutti__rule_t *grown = realloc(*rules, (*n + 1) * sizeof(*grown));

    if (grown == NULL)
        return tutti__cfg_oom();
    grown[*n] = *r;
    *rules = grown;
    (*n)++;
    tutti__cfg_rule_init(r);
    return TUTTI_OK;
}

static bool is_env_rule(const tutti__rule_t *r)
{
    return r->line == 0 && r->file != NULL && strcmp(r->file, ALGO_ENV) == 0;
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
    cfg->shm_single_copy = TUTTI_SHM_SINGLE_COPY_AUTO;
    cfg->tcp_family = TUTTI_TCP_FAMILY_ANY;
    cfg->tcp_connections = 2;
    (void)tutti__cfg_strlist_push(&cfg->transports, "shm");
}

void tutti__config_free(tutti__config_t *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->path);
    free(cfg->log_level);
    tutti__strlist_free(&cfg->module_path);
    tutti__strlist_free(&cfg->module_load);
    tutti__strlist_free(&cfg->transports);
    tutti__cfg_rules_free(cfg->rules, cfg->num_rules);
    memset(cfg, 0, sizeof(*cfg));
}

tutti_status_t tutti__cfg_config_copy(tutti__config_t *dst,
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
    st = tutti__cfg_set_str(&dst->path, src->path);
    if (st == TUTTI_OK)
        st = tutti__cfg_set_str(&dst->log_level, src->log_level);
    if (st == TUTTI_OK)
        st = strlist_append(&dst->module_path, &src->module_path);
    if (st == TUTTI_OK)
        st = strlist_append(&dst->module_load, &src->module_load);
    if (st == TUTTI_OK)
        st = strlist_append(&dst->transports, &src->transports);
    if (st == TUTTI_OK && src->num_rules > 0) {
        dst->rules = calloc(src->num_rules, sizeof(*dst->rules));
        st = dst->rules != NULL ? TUTTI_OK : tutti__cfg_oom();
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

void tutti__cfg_config_replace(tutti__config_t *cfg, tutti__config_t *tmp)
{
    tutti__config_free(cfg);
    *cfg = *tmp;
}

/* ---- values: sizes, ranges, seconds ------------------------------------- */

bool tutti__cfg_single_copy_value(const char *s, tutti__single_copy_t *out)
{
    if (strcmp(s, "auto") == 0)
        *out = TUTTI_SHM_SINGLE_COPY_AUTO;
    else if (strcmp(s, "off") == 0)
        *out = TUTTI_SHM_SINGLE_COPY_OFF;
    else
        return false;
    return true;
}

const char *tutti__cfg_single_copy_name(tutti__single_copy_t v)
{
    return v == TUTTI_SHM_SINGLE_COPY_OFF ? "off" : "auto";
}

/* Linux's rules for interface names: below IFNAMSIZ, not "." or "..", no
 * '/', ':' or white space.  The empty name means any interface. */
bool tutti__cfg_ifname_value(const char *s, char out[TUTTI__TCP_IFNAME_MAX])
{
    size_t n = strlen(s);

    if (n >= TUTTI__TCP_IFNAME_MAX || strcmp(s, ".") == 0 ||
        strcmp(s, "..") == 0)
        return false;
    for (const char *c = s; *c != '\0'; c++) {
        if (!isgraph((unsigned char)*c) || *c == '/' || *c == ':')
            return false;
    }
    memcpy(out, s, n + 1);
    return true;
}

bool tutti__cfg_family_value(const char *s, tutti__tcp_family_t *out)
{
    if (strcmp(s, "any") == 0)
        *out = TUTTI_TCP_FAMILY_ANY;
    else if (strcmp(s, "ipv4") == 0)
        *out = TUTTI_TCP_FAMILY_IPV4;
    else if (strcmp(s, "ipv6") == 0)
        *out = TUTTI_TCP_FAMILY_IPV6;
    else
        return false;
    return true;
}

const char *tutti__cfg_family_name(tutti__tcp_family_t v)
{
    switch (v) {
    case TUTTI_TCP_FAMILY_IPV4:
        return "ipv4";
    case TUTTI_TCP_FAMILY_IPV6:
        return "ipv6";
    default:
        return "any";
    }
}

/* "0": any free port; "LO-HI" (or one port "N") from 1 to 65535. */
bool tutti__cfg_ports_value(const char *s, uint16_t *lo, uint16_t *hi)
{
    uint64_t a, b;

    if (strcmp(s, "0") == 0) {
        *lo = *hi = 0;
        return true;
    }
    if (tutti__range_value(s, false, 65535, &a, &b) != TUTTI__RANGE_OK ||
        a == 0 || strchr(s, '-') == s || s[strlen(s) - 1] == '-')
        return false;
    *lo = (uint16_t)a;
    *hi = (uint16_t)b;
    return true;
}

bool tutti__cfg_connections_value(const char *s, uint32_t *out)
{
    uint64_t v;

    if (!tutti__uint_value(s, UINT32_MAX, &v) || v < 1 ||
        v > TUTTI__TCP_CONNECTIONS_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* "0" or "LO-HI". */
static void format_ports(const tutti__config_t *cfg, char *buf, size_t len)
{
    if (cfg->tcp_port_lo == 0)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, "%u-%u", (unsigned)cfg->tcp_port_lo,
                 (unsigned)cfg->tcp_port_hi);
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
    tutti_status_t st = copy != NULL ? TUTTI_OK : tutti__cfg_oom();

    if (st == TUTTI_OK &&
        tutti__log_parse_level(trim(copy), &level) != TUTTI_OK)
        st = env_error(var, value, "unknown log level",
                       TUTTI__CFG_LEVEL_EXPECTED);
    if (st == TUTTI_OK)
        st = tutti__cfg_set_str(&cfg->log_level, trim(copy));
    if (st == TUTTI_OK)
        cfg->log_level_src = TUTTI_SRC_ENV;
    free(copy);
    return st;
}

static tutti_status_t env_timeout(tutti__config_t *cfg, const char *var,
                                  const char *value)
{
    if (!tutti__seconds_value(value, &cfg->timeout))
        return env_error(var, value, "not a timeout",
                         TUTTI__SECONDS_EXPECTED);
    cfg->timeout_src = TUTTI_SRC_ENV;
    return TUTTI_OK;
}

/* Directories in the variable come first; empty entries are skipped. */
static tutti_status_t env_module_path(tutti__config_t *cfg, const char *var,
                                      const char *value)
{
    tutti__strlist_t list = {NULL, 0};
    char *copy = strdup(value), *cursor = copy, *dir;
    tutti_status_t st = copy != NULL ? TUTTI_OK : tutti__cfg_oom();

    while (st == TUTTI_OK && (dir = next_field(&cursor, ':')) != NULL) {
        if (*dir != '\0')
            st = tutti__cfg_strlist_push(&list, dir);
    }
    if (st == TUTTI_OK)
        st = strlist_append(&list, &cfg->module_path);
    free(copy);
    if (st != TUTTI_OK) {
        tutti__strlist_free(&list);
        return st;
    }
    tutti__strlist_free(&cfg->module_path);
    cfg->module_path = list;
    cfg->module_path_src = TUTTI_SRC_ENV;
    return TUTTI_OK;
}

static tutti_status_t env_transports(tutti__config_t *cfg, const char *var,
                                     const char *value)
{
    tutti__strlist_t list = {NULL, 0};
    char *copy = strdup(value), *cursor = copy, *name;
    tutti_status_t st = copy != NULL ? TUTTI_OK : tutti__cfg_oom();

    while (st == TUTTI_OK && (name = next_field(&cursor, ',')) != NULL) {
        if (!tutti__cfg_valid_name(name))
            st = env_error(var, value, "a transport name is empty or invalid",
                           "comma-separated transport names, e.g. shm,tcp");
        else
            st = tutti__cfg_strlist_push(&list, name);
    }
    free(copy);
    if (st != TUTTI_OK) {
        tutti__strlist_free(&list);
        return st;
    }
    tutti__strlist_free(&cfg->transports);
    cfg->transports = list;
    cfg->transports_src = TUTTI_SRC_ENV;
    return TUTTI_OK;
}

static bool set_single_copy(tutti__config_t *cfg, const char *s)
{
    return tutti__cfg_single_copy_value(s, &cfg->shm_single_copy);
}

static bool set_tcp_interface(tutti__config_t *cfg, const char *s)
{
    return tutti__cfg_ifname_value(s, cfg->tcp_interface);
}

static bool set_tcp_family(tutti__config_t *cfg, const char *s)
{
    return tutti__cfg_family_value(s, &cfg->tcp_family);
}

static bool set_tcp_ports(tutti__config_t *cfg, const char *s)
{
    return tutti__cfg_ports_value(s, &cfg->tcp_port_lo, &cfg->tcp_port_hi);
}

static bool set_tcp_connections(tutti__config_t *cfg, const char *s)
{
    return tutti__cfg_connections_value(s, &cfg->tcp_connections);
}

#define SCALAR_SRC(field) offsetof(tutti__config_t, field)

const tutti__cfg_scalar_t tutti__cfg_scalars[] = {
    {"shm", "single_copy", "TUTTI_SHM_SINGLE_COPY",
     TUTTI__CFG_SINGLE_COPY_EXPECTED, "not a single-copy mode",
     set_single_copy, SCALAR_SRC(shm_single_copy_src)},
    {"tcp", "interface", "TUTTI_TCP_IFNAME", TUTTI__CFG_IFNAME_EXPECTED,
     "not an interface name", set_tcp_interface,
     SCALAR_SRC(tcp_interface_src)},
    {"tcp", "family", "TUTTI_TCP_FAMILY", TUTTI__CFG_FAMILY_EXPECTED,
     "not an address family", set_tcp_family, SCALAR_SRC(tcp_family_src)},
    {"tcp", "ports", "TUTTI_TCP_PORTS", TUTTI__CFG_PORTS_EXPECTED,
     "not a port range", set_tcp_ports, SCALAR_SRC(tcp_ports_src)},
    {"tcp", "connections", "TUTTI_TCP_CONNECTIONS",
     TUTTI__CFG_CONNECTIONS_EXPECTED, "not a number of connections",
     set_tcp_connections, SCALAR_SRC(tcp_connections_src)},
    {NULL, NULL, NULL, NULL, NULL, NULL, 0},
};

const tutti__cfg_scalar_t *tutti__cfg_scalar_find(const char *section,
                                                  const char *key,
                                                  const char *env)
{
    for (const tutti__cfg_scalar_t *d = tutti__cfg_scalars; d->key; d++) {
        if (env != NULL ? strcmp(d->env, env) == 0
                        : strcmp(d->section, section) == 0 &&
                              strcmp(d->key, key) == 0)
            return d;
    }
    return NULL;
}

/* TUTTI_SHM_SINGLE_COPY, TUTTI_TCP_*: see tutti__cfg_scalars. */
static tutti_status_t env_scalar(tutti__config_t *cfg, const char *var,
                                 const char *value)
{
    const tutti__cfg_scalar_t *d = tutti__cfg_scalar_find(NULL, NULL, var);
    if (d == NULL || !d->set(cfg, value))
        return env_error(var, value, d ? d->not_what : "unknown",
                         d ? d->expected : "");
    *(tutti__source_t *)((char *)cfg + d->src_offset) = TUTTI_SRC_ENV;
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
    coll = tutti__cfg_kind_lookup(&tutti__cfg_coll_kind, trim(entry));
    if (impl == NULL || !tutti__cfg_valid_name(impl) ||
        strchr(impl, ':') != NULL) {
        snprintf(found, sizeof(found), "entry '%.60s' is not collective:name",
                 entry);
        return env_error(ALGO_ENV, value, found, ALGO_EXPECTED);
    }
    if (coll < 0) {
        char names[200], expected[240];
        tutti__cfg_mask_names(&tutti__cfg_coll_kind, ~0u, ", ", names,
                              sizeof(names));
        snprintf(expected, sizeof(expected), "a collective, one of %s", names);
        snprintf(found, sizeof(found), "unknown collective '%.60s'",
                 trim(entry));
        return env_error(ALGO_ENV, value, found, expected);
    }
    tutti__cfg_rule_init(r);
    r->collectives = 1u << coll;
    if (tutti__cfg_set_str(&r->algorithm, impl) != TUTTI_OK ||
        tutti__cfg_set_str(&r->file, ALGO_ENV) != TUTTI_OK) {
        tutti__cfg_rule_free(r);
        return TUTTI_ERR_NO_MEMORY;
    }
    return TUTTI_OK;
}

static tutti_status_t env_algo(tutti__config_t *cfg, const char *var,
                               const char *value)
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
    {"TUTTI_SHM_SINGLE_COPY", env_scalar},
    {"TUTTI_TCP_IFNAME", env_scalar},
    {"TUTTI_TCP_FAMILY", env_scalar},
    {"TUTTI_TCP_PORTS", env_scalar},
    {"TUTTI_TCP_CONNECTIONS", env_scalar},
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
    st = tutti__cfg_config_copy(&tmp, cfg);
    for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
        const char *value = getenv(env_vars[i].var);
        if (st == TUTTI_OK && value != NULL && *value != '\0')
            st = env_vars[i].fn(&tmp, env_vars[i].var, value);
    }
    if (st != TUTTI_OK) {
        tutti__config_free(&tmp);
        return st;
    }
    tutti__cfg_config_replace(cfg, &tmp);
    return TUTTI_OK;
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

/* ---- printing ----------------------------------------------------------- */

static void print_list(FILE *out, const char *key, const tutti__strlist_t *l,
                       tutti__source_t src)
{
    fprintf(out, "%s = [", key);
    for (size_t i = 0; i < l->count; i++)
        fprintf(out, "%s%s", i > 0 ? ", " : "", l->items[i]);
    fprintf(out, "] (%s)\n", tutti__source_name(src));
}

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
    fprintf(out, " -> %s", tutti__config_rule_algo(r));
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
    tutti__size_format(cfg->shm_slot_size, size, sizeof(size));
    fprintf(out, "shm.slot_size = %s (%s)\n", size,
            tutti__source_name(cfg->shm_slot_size_src));
    fprintf(out, "shm.slots = %" PRIu64 " (%s)\n", cfg->shm_slots,
            tutti__source_name(cfg->shm_slots_src));
    fprintf(out, "shm.single_copy = %s (%s)\n",
            tutti__cfg_single_copy_name(cfg->shm_single_copy),
            tutti__source_name(cfg->shm_single_copy_src));
    fprintf(out, "tcp.interface = \"%s\"%s (%s)\n", cfg->tcp_interface,
            cfg->tcp_interface[0] == '\0' ? " (any)" : "",
            tutti__source_name(cfg->tcp_interface_src));
    fprintf(out, "tcp.family = %s (%s)\n",
            tutti__cfg_family_name(cfg->tcp_family),
            tutti__source_name(cfg->tcp_family_src));
    format_ports(cfg, size, sizeof(size));
    fprintf(out, "tcp.ports = %s (%s)\n", size,
            tutti__source_name(cfg->tcp_ports_src));
    fprintf(out, "tcp.connections = %" PRIu32 " (%s)\n", cfg->tcp_connections,
            tutti__source_name(cfg->tcp_connections_src));
    fprintf(out, "selection: %zu rule%s, first match wins\n", cfg->num_rules,
            cfg->num_rules == 1 ? "" : "s");
    for (size_t i = 0; i < cfg->num_rules; i++)
        print_rule(out, i, &cfg->rules[i]);
}

const char *tutti__config_get_text(const tutti__config_t *cfg, const char *key,
                                   char *buf, size_t len)
{
    if (cfg == NULL || key == NULL || len == 0)
        return NULL;
    if (strcmp(key, "shm.slots") == 0)
        snprintf(buf, len, "%" PRIu64, cfg->shm_slots);
    else if (strcmp(key, "shm.slot_size") == 0)
        snprintf(buf, len, "%" PRIu64, cfg->shm_slot_size);
    else if (strcmp(key, "timeout") == 0)
        snprintf(buf, len, "%g", cfg->timeout);
    else if (strcmp(key, "shm.single_copy") == 0)
        snprintf(buf, len, "%s",
                 tutti__cfg_single_copy_name(cfg->shm_single_copy));
    else if (strcmp(key, "tcp.interface") == 0)
        snprintf(buf, len, "%s", cfg->tcp_interface);
    else if (strcmp(key, "tcp.family") == 0)
        snprintf(buf, len, "%s", tutti__cfg_family_name(cfg->tcp_family));
    else if (strcmp(key, "tcp.ports") == 0)
        format_ports(cfg, buf, len);
    else if (strcmp(key, "tcp.connections") == 0)
        snprintf(buf, len, "%" PRIu32, cfg->tcp_connections);
    else
        return NULL;
    return buf;
}
