/*
 * A strict JSON reader for the tests (header-only, static): RFC 8259's
 * grammar and nothing more (no trailing commas, no comments, no NaN, no
 * control characters in strings, one value then only white space), with
 * duplicate keys refused too, into a tree the tests walk.  The tools' JSON
 * is checked by this, not by a library the project does not install.
 * Numbers keep their text as well, so a test reads them as exactly as it
 * needs (test_json_int, test_json_ns: microseconds with three decimals, to
 * the nanosecond, where a double would round).
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

/* One value; an object's members carry their key. */
typedef struct test_json {
    test_json_type_t type;
    double number;            /* a number; a bool: 0 or 1 */
    char *string;             /* a string, its escapes decoded to UTF-8 */
    char *raw;                /* a number: its text as written */
    char *key;                /* a member's key, else NULL */
    struct test_json *items;  /* an array's elements, an object's members */
    size_t n;
} test_json_t;

typedef struct {
    const char *s, *p;  /* the text, where the reader is */
    char *err;
    size_t errlen;
    int depth;
} test_json_reader_t;

static inline void test_json_free_items(test_json_t *v)
{
    for (size_t i = 0; i < v->n; i++)
        test_json_free_items(&v->items[i]);
    free(v->items);
    free(v->string);
    free(v->raw);
    free(v->key);
}

/* Frees a tree from test_json_parse(); NULL ok. */
static inline void test_json_free(test_json_t *v)
{
    if (v == NULL)
        return;
    test_json_free_items(v);
    free(v);
}

/* Records the first error, with the offset it was found at; returns -1. */
static inline int test_json_fail(test_json_reader_t *r, const char *what)
{
    if (r->err[0] == '\0')
        snprintf(r->err, r->errlen, "offset %ld: %s", (long)(r->p - r->s),
                 what);
    return -1;
}

static inline void test_json_ws(test_json_reader_t *r)
{
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')
        r->p++;
}

/* Four hex digits at r->p into @p out. */
static inline int test_json_hex4(test_json_reader_t *r, unsigned *out)
{
    *out = 0;
    for (int i = 0; i < 4; i++, r->p++) {
        char c = *r->p;
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return test_json_fail(r, "bad \\u escape");
        *out = *out * 16 + (unsigned)d;
    }
    return 0;
}

/* Appends code point @p cp as UTF-8 at @p o; returns the bytes written. */
static inline size_t test_json_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string at r->p (its opening quote) into a new buffer at *out. */
static inline int test_json_string(test_json_reader_t *r, char **out)
{
    const char *q = r->p + 1;
    size_t n = 0;
    unsigned cp, lo;

    /* Decoded, a string is never longer than its text up to the closing
     * quote (or the end, an error found below). */
    while (*q != '\0' && *q != '"')
        q += q[0] == '\\' && q[1] != '\0' ? 2 : 1;
    char *o = malloc((size_t)(q - r->p) + 1);

    if (o == NULL)
        return test_json_fail(r, "no memory");
    for (r->p++; *r->p != '"'; r->p++) {
        unsigned char c = (unsigned char)*r->p;
        if (c == '\0' || c < 0x20) {
            free(o);
            return test_json_fail(r, c ? "control character in a string"
                                       : "unterminated string");
        }
        if (c != '\\') {
            o[n++] = (char)c;
            continue;
        }
        const char *esc = strchr("\"\\/bfnrt", *++r->p);
        if (*r->p != '\0' && esc != NULL) {
            o[n++] = "\"\\/\b\f\n\r\t"[esc - "\"\\/bfnrt"];
            continue;
        }
        if (*r->p != 'u') {
            free(o);
            return test_json_fail(r, "bad escape");
        }
        r->p++;
        if (test_json_hex4(r, &cp) != 0)
            goto err;
        if (cp >= 0xd800 && cp < 0xdc00) {
            /* A high surrogate: its low half must follow. */
            if (r->p[0] != '\\' || r->p[1] != 'u')
                goto err_surrogate;
            r->p += 2;
            if (test_json_hex4(r, &lo) != 0)
                goto err;
            if (lo < 0xdc00 || lo > 0xdfff)
                goto err_surrogate;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
            goto err_surrogate;
        }
        n += test_json_utf8(o + n, cp);
        r->p--; /* the loop steps past the last hex digit */
    }
    r->p++;
    o[n] = '\0';
    *out = o;
    return 0;
err_surrogate:
    test_json_fail(r, "unpaired surrogate");
err:
    free(o);
    return -1;
}

/* A number, by the grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static inline int test_json_number(test_json_reader_t *r, double *out)
{
    const char *q = r->p;

    if (*q == '-')
        q++;
    if (*q == '0')
        q++;
    else if (*q >= '1' && *q <= '9')
        while (*q >= '0' && *q <= '9')
            q++;
    else
        return test_json_fail(r, "expected a value");
    if (*q == '.') {
        if (*++q < '0' || *q > '9')
            return test_json_fail(r, "digits expected after '.'");
        while (*q >= '0' && *q <= '9')
            q++;
    }
    if (*q == 'e' || *q == 'E') {
        if (*++q == '+' || *q == '-')
            q++;
        if (*q < '0' || *q > '9')
            return test_json_fail(r, "digits expected in the exponent");
        while (*q >= '0' && *q <= '9')
            q++;
    }
    *out = strtod(r->p, NULL);
    r->p = q;
    return 0;
}

static inline int test_json_value(test_json_reader_t *r, test_json_t *v);

/* The members of an object or elements of an array, r->p past its
 * opening bracket; @p close is '}' or ']'. */
static inline int test_json_items(test_json_reader_t *r, test_json_t *v,
                                  char close)
{
    size_t cap = 0;

    test_json_ws(r);
    if (*r->p == close) {
        r->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        test_json_ws(r);
        if (close == '}') {
            if (*r->p != '"')
                return test_json_fail(r, "expected a key");
            if (test_json_string(r, &key) != 0)
                return -1;
            for (size_t i = 0; i < v->n; i++)
                if (strcmp(v->items[i].key, key) == 0) {
                    free(key);
                    return test_json_fail(r, "duplicate key");
                }
            test_json_ws(r);
            if (*r->p++ != ':') {
                free(key);
                return test_json_fail(r, "expected ':'");
            }
        }
        if (v->n == cap) {
            test_json_t *grown = realloc(v->items,
                                         (cap = cap ? 2 * cap : 8) *
                                             sizeof(*grown));
            if (grown == NULL) {
                free(key);
                return test_json_fail(r, "no memory");
            }
            v->items = grown;
        }
        test_json_t *item = &v->items[v->n++];
        memset(item, 0, sizeof(*item));
        item->key = key;
        if (test_json_value(r, item) != 0)
            return -1;
        test_json_ws(r);
        if (*r->p == close) {
            r->p++;
            return 0;
        }
        if (*r->p++ != ',')
            return test_json_fail(r, close == '}' ? "expected ',' or '}'"
                                                  : "expected ',' or ']'");
    }
}

static inline int test_json_value(test_json_reader_t *r, test_json_t *v)
{
    static const struct {
        const char *word;
        test_json_type_t type;
        double value;
    } words[] = {{"null", TEST_JSON_NULL, 0},
                 {"true", TEST_JSON_BOOL, 1},
                 {"false", TEST_JSON_BOOL, 0}};
    int st;

    test_json_ws(r);
    if (*r->p == '{' || *r->p == '[') {
        char close = *r->p == '{' ? '}' : ']';
        if (++r->depth > 64)
            return test_json_fail(r, "nested deeper than 64");
        v->type = close == '}' ? TEST_JSON_OBJECT : TEST_JSON_ARRAY;
        r->p++;
        st = test_json_items(r, v, close);
        r->depth--;
        return st;
    }
    if (*r->p == '"') {
        v->type = TEST_JSON_STRING;
        return test_json_string(r, &v->string);
    }
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t len = strlen(words[i].word);
        if (strncmp(r->p, words[i].word, len) == 0) {
            v->type = words[i].type;
            v->number = words[i].value;
            r->p += len;
            return 0;
        }
    }
    v->type = TEST_JSON_NUMBER;
    const char *start = r->p;
    if (test_json_number(r, &v->number) != 0)
        return -1;
    size_t len = (size_t)(r->p - start);
    if ((v->raw = malloc(len + 1)) == NULL)
        return test_json_fail(r, "no memory");
    memcpy(v->raw, start, len);
    v->raw[len] = '\0';
    return 0;
}

/* Reads @p text as one JSON document: its tree (free with
 * test_json_free()), or NULL with the first error and its offset in
 * @p err. */
static inline test_json_t *test_json_parse(const char *text, char *err,
                                           size_t errlen)
{
    test_json_reader_t r = {text, text, err, errlen, 0};
    test_json_t *v = calloc(1, sizeof(*v));

    err[0] = '\0';
    if (v == NULL) {
        snprintf(err, errlen, "no memory");
        return NULL;
    }
    if (test_json_value(&r, v) == 0) {
        test_json_ws(&r);
        if (*r.p == '\0')
            return v;
        test_json_fail(&r, "text after the document");
    }
    test_json_free(v);
    return NULL;
}

/* An object's member @p key, or NULL (no such member, not an object, or
 * @p v NULL, so that lookups chain). */
static inline const test_json_t *test_json_get(const test_json_t *v,
                                               const char *key)
{
    for (size_t i = 0; v != NULL && v->type == TEST_JSON_OBJECT && i < v->n;
         i++)
        if (strcmp(v->items[i].key, key) == 0)
            return &v->items[i];
    return NULL;
}

/* The string member @p key of object @p v, or NULL. */
static inline const char *test_json_str(const test_json_t *v, const char *key)
{
    const test_json_t *s = test_json_get(v, key);
    return s != NULL && s->type == TEST_JSON_STRING ? s->string : NULL;
}

/* A whole number @p v (written without fraction or exponent) in *out; -1
 * if @p v is not one (or NULL). */
static inline int test_json_int(const test_json_t *v, long long *out)
{
    char *end;
    if (v == NULL || v->type != TEST_JSON_NUMBER)
        return -1;
    *out = strtoll(v->raw, &end, 10);
    return *end == '\0' ? 0 : -1;
}

/* A number of microseconds written with at most three decimals, as
 * nanoseconds in *ns_out, exact; -1 if @p v is not such a number. */
static inline int test_json_ns(const test_json_t *v, uint64_t *ns_out)
{
    uint64_t ns = 0;
    int decimals = -1;
    if (v == NULL || v->type != TEST_JSON_NUMBER || v->raw[0] == '-')
        return -1;
    for (const char *p = v->raw; *p; p++) {
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
