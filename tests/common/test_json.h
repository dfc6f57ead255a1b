/*
 * A small strict JSON reader for the tests (header-only, static): RFC 8259
 * text into a tree of values, refusing what the grammar does not allow
 * (trailing commas, bare words, leading zeros, control characters in
 * strings, anything after the value) with the byte offset and what was
 * expected.  Numbers keep their text, so a test reads them as exactly as
 * it needs (test_json_ns: microseconds with three decimals, to the ns).
 */
#ifndef TUTTI_TEST_JSON_H
#define TUTTI_TEST_JSON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    TEST_JSON_NULL,
    TEST_JSON_BOOL,
    TEST_JSON_NUMBER,
    TEST_JSON_STRING,
    TEST_JSON_ARRAY,
    TEST_JSON_OBJECT
} test_json_type_t;

typedef struct test_json {
    test_json_type_t type;
    int boolean;
    char *text;               /* string: decoded (UTF-8); number: as written */
    struct test_json *items;  /* array: its items; object: its values */
    char **keys;              /* object: the keys, as items */
    size_t count;
} test_json_t;

typedef struct {
    const char *s;
    size_t pos;
    int depth;
    char err[160];
} test_json_reader_t;

#define TEST_JSON_DEPTH_MAX 64

static inline int test_json_value_(test_json_reader_t *r,
                                   test_json_t *v);

static inline int test_json_fail_(test_json_reader_t *r,
                                  const char *expected)
{
    if (r->err[0] == '\0')
        snprintf(r->err, sizeof(r->err), "byte %zu: expected %s, found "
                 "'%.12s'", r->pos, expected, r->s + r->pos);
    return -1;
}

static inline void test_json_space_(test_json_reader_t *r)
{
    while (strchr(" \t\r\n", r->s[r->pos]) != NULL && r->s[r->pos] != '\0')
        r->pos++;
}

static inline int test_json_digits_(test_json_reader_t *r)
{
    size_t start = r->pos;
    while (r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
        r->pos++;
    return r->pos > start ? 0 : test_json_fail_(r, "a digit");
}

static inline int test_json_number_(test_json_reader_t *r, test_json_t *v)
{
    size_t start = r->pos;
    if (r->s[r->pos] == '-')
        r->pos++;
    if (r->s[r->pos] == '0')
        r->pos++;
    else if (test_json_digits_(r) != 0)
        return -1;
    if (r->s[r->pos] == '.') {
        r->pos++;
        if (test_json_digits_(r) != 0)
            return -1;
    }
    if (r->s[r->pos] == 'e' || r->s[r->pos] == 'E') {
        r->pos++;
        if (r->s[r->pos] == '+' || r->s[r->pos] == '-')
            r->pos++;
        if (test_json_digits_(r) != 0)
            return -1;
    }
    v->type = TEST_JSON_NUMBER;
    v->text = strndup(r->s + start, r->pos - start);
    return v->text != NULL ? 0 : test_json_fail_(r, "memory");
}

static inline int test_json_hex4_(test_json_reader_t *r, unsigned *out)
{
    *out = 0;
    for (int i = 0; i < 4; i++) {
        char c = r->s[r->pos];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16)
            return test_json_fail_(r, "4 hexadecimal digits");
        *out = *out * 16 + d;
        r->pos++;
    }
    return 0;
}

/* A string at r->pos (its opening quote) into *out, decoded. */
static inline int test_json_string_(test_json_reader_t *r, char **out)
{
    size_t cap = 16, n = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return test_json_fail_(r, "memory");
    r->pos++;
    for (;;) {
        unsigned char c = (unsigned char)r->s[r->pos];
        unsigned cp;
        if (cap - n < 5) {
            char *grown = realloc(buf, cap *= 2);
            if (grown == NULL) {
                free(buf);
                return test_json_fail_(r, "memory");
            }
            buf = grown;
        }
        if (c == '"') {
            r->pos++;
            break;
        }
        if (c < 0x20) {
            free(buf);
            return test_json_fail_(r, "a closing quote (control characters "
                                      "must be escaped)");
        }
        r->pos++;
        if (c != '\\') {
            buf[n++] = (char)c;
            continue;
        }
        c = (unsigned char)r->s[r->pos++];
        const char *esc = strchr("\"\\/bfnrt", c);
        if (c != '\0' && esc != NULL) {
            buf[n++] = "\"\\/\b\f\n\r\t"[esc - "\"\\/bfnrt"];
            continue;
        }
        if (c != 'u' || test_json_hex4_(r, &cp) != 0) {
            free(buf);
            r->pos--;
            return test_json_fail_(r, "an escape");
        }
        if (cp >= 0xd800 && cp < 0xdc00) {
            unsigned lo;
            if (r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u') {
                free(buf);
                return test_json_fail_(r, "a low surrogate");
            }
            r->pos += 2;
            if (test_json_hex4_(r, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff) {
                free(buf);
                return test_json_fail_(r, "a low surrogate");
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (cp < 0x80) {
            buf[n++] = (char)cp;
        } else if (cp < 0x800) {
            buf[n++] = (char)(0xc0 | cp >> 6);
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            buf[n++] = (char)(0xe0 | cp >> 12);
            buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        } else {
            buf[n++] = (char)(0xf0 | cp >> 18);
            buf[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
            buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
            buf[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

/* One more slot in @p v's items (and keys, for an object). */
static inline test_json_t *test_json_push_(test_json_reader_t *r,
                                           test_json_t *v, size_t *cap)
{
    if (v->count == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        test_json_t *items = realloc(v->items, c * sizeof(*items));
        if (items == NULL)
            return test_json_fail_(r, "memory"), NULL;
        v->items = items;
        if (v->type == TEST_JSON_OBJECT) {
            char **keys = realloc(v->keys, c * sizeof(*keys));
            if (keys == NULL)
                return test_json_fail_(r, "memory"), NULL;
            v->keys = keys;
        }
        *cap = c;
    }
    test_json_t *item = &v->items[v->count];
    memset(item, 0, sizeof(*item));
    if (v->type == TEST_JSON_OBJECT)
        v->keys[v->count] = NULL;
    v->count++;
    return item;
}

/* An array or object at r->pos (its opening bracket). */
static inline int test_json_container_(test_json_reader_t *r,
                                       test_json_t *v)
{
    int object = r->s[r->pos] == '{';
    char close = object ? '}' : ']';
    size_t cap = 0;
    v->type = object ? TEST_JSON_OBJECT : TEST_JSON_ARRAY;
    if (++r->depth > TEST_JSON_DEPTH_MAX)
        return test_json_fail_(r, "less nesting");
    r->pos++;
    test_json_space_(r);
    if (r->s[r->pos] == close) {
        r->pos++;
        r->depth--;
        return 0;
    }
    for (;;) {
        test_json_t *item = test_json_push_(r, v, &cap);
        if (item == NULL)
            return -1;
        test_json_space_(r);
        if (object) {
            if (r->s[r->pos] != '"')
                return test_json_fail_(r, "a key (a string)");
            if (test_json_string_(r, &v->keys[v->count - 1]) != 0)
                return -1;
            test_json_space_(r);
            if (r->s[r->pos] != ':')
                return test_json_fail_(r, "':'");
            r->pos++;
        }
        if (test_json_value_(r, item) != 0)
            return -1;
        test_json_space_(r);
        if (r->s[r->pos] == close) {
            r->pos++;
            r->depth--;
            return 0;
        }
        if (r->s[r->pos] != ',')
            return test_json_fail_(r, object ? "',' or '}'" : "',' or ']'");
        r->pos++;
    }
}

static inline int test_json_value_(test_json_reader_t *r, test_json_t *v)
{
    static const char *const words[] = {"null", "true", "false"};
    test_json_space_(r);
    char c = r->s[r->pos];
    if (c == '{' || c == '[')
        return test_json_container_(r, v);
    if (c == '"') {
        v->type = TEST_JSON_STRING;
        return test_json_string_(r, &v->text);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return test_json_number_(r, v);
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if (strncmp(r->s + r->pos, words[i], n) == 0) {
            v->type = i == 0 ? TEST_JSON_NULL : TEST_JSON_BOOL;
            v->boolean = i == 1;
            r->pos += n;
            return 0;
        }
    }
    return test_json_fail_(r, "a value");
}

static inline void test_json_free(test_json_t *v)
{
    for (size_t i = 0; i < v->count; i++) {
        test_json_free(&v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    memset(v, 0, sizeof(*v));
}

/* Reads @p text (one value, whitespace around it) into @p v: 0, or -1 with
 * what is wrong in @p err; @p v then holds nothing. */
static inline int test_json_parse(const char *text, test_json_t *v,
                                  char *err, size_t len)
{
    test_json_reader_t r = {text, 0, 0, ""};
    memset(v, 0, sizeof(*v));
    if (test_json_value_(&r, v) == 0) {
        test_json_space_(&r);
        if (text[r.pos] == '\0')
            return 0;
        test_json_fail_(&r, "the end of the text");
    }
    snprintf(err, len, "%s", r.err);
    test_json_free(v);
    return -1;
}

/* Object @p v's value of @p key, or NULL (also when @p v is no object). */
static inline const test_json_t *test_json_get(const test_json_t *v,
                                               const char *key)
{
    if (v == NULL || v->type != TEST_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

/* The string @p key of object @p v, or NULL. */
static inline const char *test_json_str(const test_json_t *v, const char *key)
{
    const test_json_t *s = test_json_get(v, key);
    return s != NULL && s->type == TEST_JSON_STRING ? s->text : NULL;
}

/* A number of microseconds written with at most three decimals, as
 * nanoseconds in *ns_out (exact, where a double would round); -1 if
 * @p v is not such a number. */
static inline int test_json_ns(const test_json_t *v, uint64_t *ns_out)
{
    uint64_t ns = 0;
    int decimals = -1;
    if (v == NULL || v->type != TEST_JSON_NUMBER || v->text[0] == '-')
        return -1;
    for (const char *p = v->text; *p; p++) {
        if (*p == '.' && decimals < 0) {
            decimals = 0;
            continue;
        }
        if (*p < '0' || *p > '9' || decimals == 3)
            return -1;
        ns = ns * 10 + (uint64_t)(*p - '0');
        if (decimals >= 0)
            decimals++;
    }
    for (int d = decimals < 0 ? 0 : decimals; d < 3; d++)
        ns *= 10;
    *ns_out = ns;
    return 0;
}

/* A whole number @p v (no fraction or exponent) in *out; -1 if not. */
static inline int test_json_int(const test_json_t *v, long long *out)
{
    char *end;
    if (v == NULL || v->type != TEST_JSON_NUMBER)
        return -1;
    *out = strtoll(v->text, &end, 10);
    return *end == '\0' ? 0 : -1;
}

/* The whole file @p path (NUL-terminated, malloc'd), or NULL. */
static inline char *test_json_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;
    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, f) == (size_t)len) {
        buf[len] = '\0';
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

#endif
