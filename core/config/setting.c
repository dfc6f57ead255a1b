/*
 * One setting's row at work (setting.h): parse, check, print, explain.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/size.h"
#include "base/strlist.h"
#include "config/setting.h"

#define NAME_MAX_LEN 31
#define STRING_MAX (4u << 10)

static bool is_list(const tutti_setting_t *row)
{
    return (int)row->type == TUTTI__SETTING_PATHS ||
           (int)row->type == TUTTI__SETTING_NAMES;
}

/* Bytes the value takes in the settings struct. */
static size_t value_size(const tutti_setting_t *row)
{
    switch ((int)row->type) {
    case TUTTI_SETTING_UINT:
    case TUTTI_SETTING_SIZE: return sizeof(uint64_t);
    case TUTTI_SETTING_SECONDS: return sizeof(double);
    case TUTTI_SETTING_CHOICE: return sizeof(int);
    case TUTTI_SETTING_STRING: return (size_t)row->max;
    case TUTTI_SETTING_RANGE: return 2 * sizeof(uint64_t);
    case TUTTI__SETTING_PATHS:
    case TUTTI__SETTING_NAMES: return sizeof(tutti__strlist_t);
    }
    return 0;
}

static size_t value_align(const tutti_setting_t *row)
{
    switch ((int)row->type) {
    case TUTTI_SETTING_STRING: return 1;
    case TUTTI_SETTING_CHOICE: return _Alignof(int);
    case TUTTI_SETTING_SECONDS: return _Alignof(double);
    case TUTTI__SETTING_PATHS:
    case TUTTI__SETTING_NAMES: return _Alignof(tutti__strlist_t);
    default: return _Alignof(uint64_t);
    }
}

static bool valid_key(const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    for (; *s != '\0'; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) &&
            *s != '_' && *s != '.')
            return false;
    return true;
}

/* 1 to 63 printable characters without spaces. */
static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= TUTTI_NAME_MAX)
        return false;
    for (; *s != '\0'; s++)
        if (!isgraph((unsigned char)*s))
            return false;
    return true;
}

static void *field(const tutti_setting_t *row, void *values)
{
    return (char *)values + row->offset;
}

static const void *cfield(const tutti_setting_t *row, const void *values)
{
    return (const char *)values + row->offset;
}

bool tutti__setting_row_ok(const tutti_setting_t *row, size_t size, char *why,
                           size_t len)
{
    size_t vsize = value_size(row);
    if (!valid_key(row->name) || strchr(row->name, '.') != NULL) {
        snprintf(why, len, "a setting's name is missing or not 1 to %d of "
                 "[a-z0-9_]", NAME_MAX_LEN);
        return false;
    }
    if (vsize == 0 || is_list(row)) {
        snprintf(why, len, "setting '%s' has type %d, not a "
                 "tutti_setting_type_t", row->name, (int)row->type);
        return false;
    }
    if (row->offset > size || vsize > size - row->offset ||
        row->offset % value_align(row) != 0) {
        snprintf(why, len, "setting '%s' lies at offset %zu (%zu bytes), "
                 "outside or misaligned in its %zu-byte settings struct",
                 row->name, row->offset, vsize, size);
        return false;
    }
    if ((row->type == TUTTI_SETTING_UINT || row->type == TUTTI_SETTING_SIZE ||
         row->type == TUTTI_SETTING_RANGE) && row->min > row->max) {
        snprintf(why, len, "setting '%s' has min %" PRIu64 " above max "
                 "%" PRIu64, row->name, row->min, row->max);
        return false;
    }
    if (row->type == TUTTI_SETTING_STRING &&
        (row->max < 2 || row->max > STRING_MAX)) {
        snprintf(why, len, "setting '%s' is a string of %" PRIu64 " bytes; "
                 "expected 2 to %u", row->name, row->max, STRING_MAX);
        return false;
    }
    if (row->type == TUTTI_SETTING_CHOICE &&
        (row->choices == NULL || row->choices[0] == NULL)) {
        snprintf(why, len, "setting '%s' is a choice without choices",
                 row->name);
        return false;
    }
    if (row->default_value == NULL) {
        snprintf(why, len, "setting '%s' has no default", row->name);
        return false;
    }
    return true;
}

/* ---- text to value ------------------------------------------------------ */

static bool in_bounds(const tutti_setting_t *row, uint64_t v)
{
    return v >= row->min && v <= row->max;
}

static tutti_status_t set_scalar(const tutti_setting_t *row, const char *t,
                                 void *values)
{
    uint64_t v, lo, hi;
    double d;
    void *f = field(row, values);

    switch ((int)row->type) {
    case TUTTI_SETTING_UINT:
        if (!tutti__uint_value(t, UINT64_MAX, &v) || !in_bounds(row, v))
            return TUTTI_ERR_CONFIG;
        memcpy(f, &v, sizeof(v));
        return TUTTI_OK;
    case TUTTI_SETTING_SIZE:
        if (!tutti__size_value(t, &v) || !in_bounds(row, v) ||
            ((row->flags & TUTTI_SETTING_POW2) && (v & (v - 1)) != 0))
            return TUTTI_ERR_CONFIG;
        memcpy(f, &v, sizeof(v));
        return TUTTI_OK;
    case TUTTI_SETTING_SECONDS:
        if (!tutti__seconds_value(t, &d))
            return TUTTI_ERR_CONFIG;
        /* Far more than any call may wait; what is more would overflow
         * the deadlines it becomes.  Said where it happens: the caller
         * only learns that the value was taken. */
        if (d > TUTTI__SECONDS_MAX) {
            tutti__log(TUTTI_LOG_WARN, "config", "%s: %s seconds is more "
                       "than the most a call may wait; using %g",
                       row->name, t, TUTTI__SECONDS_MAX);
            d = TUTTI__SECONDS_MAX;
        }
        memcpy(f, &d, sizeof(d));
        return TUTTI_OK;
    case TUTTI_SETTING_CHOICE:
        for (int i = 0; row->choices[i] != NULL; i++) {
            if (strcmp(row->choices[i], t) == 0) {
                memcpy(f, &i, sizeof(i));
                return TUTTI_OK;
            }
        }
        return TUTTI_ERR_CONFIG;
    case TUTTI_SETTING_STRING:
        if (strlen(t) >= row->max || (row->check != NULL && !row->check(t)))
            return TUTTI_ERR_CONFIG;
        memcpy(f, t, strlen(t) + 1);
        return TUTTI_OK;
    case TUTTI_SETTING_RANGE:
        if ((row->flags & TUTTI_SETTING_ZERO_ANY) && strcmp(t, "0") == 0) {
            lo = hi = 0;
        } else if (tutti__range_value(t, false, row->max, &lo, &hi) !=
                       TUTTI__RANGE_OK ||
                   !in_bounds(row, lo) || t[0] == '-' ||
                   t[strlen(t) - 1] == '-') {
            return TUTTI_ERR_CONFIG; /* open ends are not ranges here */
        }
        memcpy(f, &lo, sizeof(lo));
        memcpy((char *)f + sizeof(lo), &hi, sizeof(hi));
        return TUTTI_OK;
    }
    return TUTTI_ERR_CONFIG;
}

tutti_status_t tutti__setting_add_item(const tutti_setting_t *row,
                                       const char *text, void *values)
{
    tutti__strlist_t *l = field(row, values);
    if ((int)row->type == TUTTI__SETTING_NAMES ? !valid_name(text)
                                               : text[0] == '\0')
        return TUTTI_ERR_CONFIG;
    return tutti__strlist_push(l, text);
}

void tutti__setting_clear(const tutti_setting_t *row, void *values)
{
    if (is_list(row))
        tutti__strlist_free(field(row, values));
}

/* An environment list: PATHS split at ':' (empty entries passed over),
 * NAMES at ',' with blanks around names trimmed. */
static tutti_status_t set_list(const tutti_setting_t *row, const char *text,
                               void *values)
{
    tutti__strlist_t items = {NULL, 0};
    tutti_status_t st = TUTTI_OK;
    int names = (int)row->type == TUTTI__SETTING_NAMES;
    const char *s = text;

    while (st == TUTTI_OK && *s != '\0') {
        const char *end = strchr(s, names ? ',' : ':');
        size_t n = end != NULL ? (size_t)(end - s) : strlen(s);
        char *item = strndup(s, n);
        char *a = item;
        if (item == NULL) {
            st = TUTTI_ERR_NO_MEMORY;
            break;
        }
        if (names) {
            a = tutti__trim(a);
            st = valid_name(a) ? tutti__strlist_push(&items, a)
                               : TUTTI_ERR_CONFIG;
        } else if (*a != '\0') {
            st = tutti__strlist_push(&items, a);
        }
        free(item);
        s += n + (end != NULL);
    }
    if (st != TUTTI_OK) {
        tutti__strlist_free(&items);
        return st;
    }
    tutti__strlist_t *l = field(row, values);
    if (!names) /* the environment's directories come first */
        st = tutti__strlist_append(&items, l);
    if (st != TUTTI_OK) {
        tutti__strlist_free(&items);
        return st;
    }
    tutti__strlist_free(l);
    *l = items;
    return TUTTI_OK;
}

tutti_status_t tutti__setting_set(const tutti_setting_t *row,
                                  const char *text, void *values)
{
    return is_list(row) ? set_list(row, text, values)
                        : set_scalar(row, text, values);
}

/* ---- value to text ------------------------------------------------------ */

void tutti__setting_print(const tutti_setting_t *row, const void *values,
                          char *buf, size_t len)
{
    const void *f = cfield(row, values);
    uint64_t v, hi;
    double d;
    int i;

    switch ((int)row->type) {
    case TUTTI_SETTING_UINT:
        memcpy(&v, f, sizeof(v));
        snprintf(buf, len, "%" PRIu64, v);
        return;
    case TUTTI_SETTING_SIZE:
        memcpy(&v, f, sizeof(v));
        tutti__size_format(v, buf, len);
        return;
    case TUTTI_SETTING_SECONDS:
        memcpy(&d, f, sizeof(d));
        snprintf(buf, len, "%g", d);
        return;
    case TUTTI_SETTING_CHOICE:
        memcpy(&i, f, sizeof(i));
        snprintf(buf, len, "%s", row->choices[i]);
        return;
    case TUTTI_SETTING_STRING:
        snprintf(buf, len, "%s", (const char *)f);
        return;
    case TUTTI_SETTING_RANGE:
        memcpy(&v, f, sizeof(v));
        memcpy(&hi, (const char *)f + sizeof(v), sizeof(hi));
        if (v == 0 && hi == 0)
            snprintf(buf, len, "0");
        else
            tutti__range_format(v, hi, UINT64_MAX, false, buf, len);
        return;
    }
    const tutti__strlist_t *l = f;
    size_t n = (size_t)snprintf(buf, len, "[");
    for (size_t k = 0; k < l->count && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? ", " : "",
                              l->items[k]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

const char *tutti__setting_expected(const tutti_setting_t *row, char *buf,
                                    size_t len)
{
    char a[32], b[32];
    if (row->expected != NULL) {
        snprintf(buf, len, "%s", row->expected);
        return buf;
    }
    switch ((int)row->type) {
    case TUTTI_SETTING_UINT:
        snprintf(buf, len, "a whole number from %" PRIu64 " to %" PRIu64,
                 row->min, row->max);
        break;
    case TUTTI_SETTING_SIZE:
        tutti__size_format(row->min, a, sizeof(a));
        tutti__size_format(row->max, b, sizeof(b));
        snprintf(buf, len, "%s from %s to %s (suffixes K, M, G, T)",
                 (row->flags & TUTTI_SETTING_POW2) ? "a power of two"
                                                   : "a size",
                 a, b);
        break;
    case TUTTI_SETTING_SECONDS:
        snprintf(buf, len, "%s", TUTTI__SECONDS_EXPECTED);
        break;
    case TUTTI_SETTING_CHOICE: {
        size_t n = (size_t)snprintf(buf, len, "one of ");
        for (int i = 0; row->choices[i] != NULL && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
                                  row->choices[i]);
        break;
    }
    case TUTTI_SETTING_STRING:
        snprintf(buf, len, "text of at most %" PRIu64 " characters",
                 row->max - 1);
        break;
    case TUTTI_SETTING_RANGE:
        snprintf(buf, len, "%sa range LO-HI of whole numbers from %" PRIu64
                 " to %" PRIu64, (row->flags & TUTTI_SETTING_ZERO_ANY)
                                     ? "0 (any) or " : "",
                 row->min, row->max);
        break;
    case TUTTI__SETTING_PATHS:
        snprintf(buf, len, "a directory or a list of directories");
        break;
    case TUTTI__SETTING_NAMES:
        snprintf(buf, len, "a name or a list of names of 1 to %d characters "
                 "without spaces", TUTTI_NAME_MAX - 1);
        break;
    default:
        snprintf(buf, len, "a value");
    }
    return buf;
}

const char *tutti__setting_env(const tutti_setting_t *row,
                               const char *section, char *buf, size_t len)
{
    if (row->env != NULL)
        return row->env;
    size_t n = (size_t)snprintf(buf, len, "TUTTI_");
    const char *parts[2] = {section, row->name};
    for (int p = 0; p < 2; p++) {
        if (parts[p] == NULL || parts[p][0] == '\0')
            continue;
        if (p == 1 && section != NULL && section[0] != '\0' && n + 1 < len)
            buf[n++] = '_';
        for (const char *c = parts[p]; *c != '\0' && n + 1 < len; c++)
            buf[n++] = *c == '.' ? '_' : (char)toupper((unsigned char)*c);
    }
    buf[n < len ? n : len - 1] = '\0';
    return buf;
}

tutti_status_t tutti__setting_copy(const tutti_setting_t *row, void *dst,
                                   const void *src)
{
    if (!is_list(row)) {
        memcpy(field(row, dst), cfield(row, src), value_size(row));
        return TUTTI_OK;
    }
    tutti__strlist_t *d = field(row, dst);
    memset(d, 0, sizeof(*d));
    return tutti__strlist_append(d, cfield(row, src));
}
