/*
 * Readers of C sources, automake fragments and man pages for test_man
 * (man_scan.h): small scanners, not parsers, that know the few forms this
 * tree writes and say nothing of Tutti's names.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "man_scan.h"

/* ---- sets of strings ----------------------------------------------------- */

static char *xstrndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d == NULL) {
        fprintf(stderr, "man_scan: out of memory\n");
        exit(1);
    }
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL) {
        fprintf(stderr, "man_scan: out of memory\n");
        exit(1);
    }
    return p;
}

static long set_find(const strset_t *set, const char *s)
{
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->items[i], s) == 0)
            return (long)i;
    return -1;
}

void set_add(strset_t *set, const char *s, const char *note)
{
    if (set_find(set, s) >= 0)
        return;
    if (set->count == set->cap) {
        set->cap = set->cap ? 2 * set->cap : 32;
        set->items = xrealloc(set->items, set->cap * sizeof(char *));
        set->notes = xrealloc(set->notes, set->cap * sizeof(char *));
    }
    set->items[set->count] = xstrdup(s);
    set->notes[set->count++] = xstrdup(note != NULL ? note : "");
}

int set_has(const strset_t *set, const char *s)
{
    return set_find(set, s) >= 0;
}

const char *set_note(const strset_t *set, const char *s)
{
    long i = set_find(set, s);
    return i >= 0 ? set->notes[i] : "";
}

void set_free(strset_t *set)
{
    for (size_t i = 0; i < set->count; i++) {
        free(set->items[i]);
        free(set->notes[i]);
    }
    free(set->items);
    free(set->notes);
    memset(set, 0, sizeof(*set));
}

/* ---- files --------------------------------------------------------------- */

char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = NULL;
    size_t n = 0, cap = 0, got;

    if (f == NULL)
        return NULL;
    do {
        if (cap - n < 4096) {
            cap = cap ? 2 * cap : 16384;
            text = xrealloc(text, cap + 1);
        }
        got = fread(text + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    text[n] = '\0';
    return text;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_ext(const char *name, const char *const *exts)
{
    size_t n = strlen(name);
    for (; *exts != NULL; exts++) {
        size_t e = strlen(*exts);
        if (n > e && strcmp(name + n - e, *exts) == 0)
            return 1;
    }
    return 0;
}

void walk_files(const char *dir, const char *const *exts,
                void (*fn)(const char *path, void *arg), void *arg)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        names = xrealloc(names, (n + 1) * sizeof(char *));
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(char *), cmp_names);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            walk_files(path, exts, fn, arg);
        else if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                 has_ext(names[i], exts))
            fn(path, arg);
        free(names[i]);
    }
    free(names);
}

/* ---- C ------------------------------------------------------------------- */

static int is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* A whole TUTTI_ name: TUTTI_, capitals, digits and underscores, not
 * ending in an underscore. */
static int tutti_name(const char *s, size_t n)
{
    if (n <= 6 || strncmp(s, "TUTTI_", 6) != 0 || s[n - 1] == '_')
        return 0;
    for (size_t i = 6; i < n; i++)
        if (!isupper((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) &&
            s[i] != '_')
            return 0;
    return 1;
}

char *c_scan(const char *text, const char *path, strset_t *names)
{
    size_t n = strlen(text), i = 0;
    char *out = xstrndup(text, n);

    while (i < n) {
        char c = text[i];
        size_t j;
        if (c == '/' && text[i + 1] == '*') {
            const char *end = strstr(text + i + 2, "*/");
            j = end != NULL ? (size_t)(end - text) + 2 : n;
            for (; i < j; i++)
                out[i] = text[i] == '\n' ? '\n' : ' ';
        } else if (c == '/' && text[i + 1] == '/') {
            for (; i < n && text[i] != '\n'; i++)
                out[i] = ' ';
        } else if (c == '"' || c == '\'') {
            for (j = i + 1; j < n && text[j] != c && text[j] != '\n'; j++)
                if (text[j] == '\\' && j + 1 < n)
                    j++;
            if (c == '"' && names != NULL &&
                tutti_name(text + i + 1, j - i - 1)) {
                char *name = xstrndup(text + i + 1, j - i - 1);
                set_add(names, name, path);
                free(name);
            }
            i = j < n && text[j] == c ? j + 1 : j;
        } else {
            i++;
        }
    }
    return out;
}

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* The names of the rows `{ "name", ...` between @p p and @p end. */
static void row_names(const char *p, const char *end, strset_t *out)
{
    for (; p < end && (p = strchr(p, '{')) != NULL && p < end; p++) {
        const char *q = skip_space(p + 1), *close;
        if (*q != '"' || (close = strchr(q + 1, '"')) == NULL)
            continue;
        char *name = xstrndup(q + 1, (size_t)(close - q - 1));
        set_add(out, name, NULL);
        free(name);
    }
}

/* After a table's name at @p p: `[...] = {` ... `};`.  The table's body
 * in [*body, *end), or 0 if @p p is not at a table's definition. */
static int table_body(const char *p, const char **body, const char **end)
{
    p = skip_space(p);
    if (*p != '[' || (p = strchr(p, ']')) == NULL)
        return 0;
    p = skip_space(p + 1);
    if (*p != '=')
        return 0;
    p = skip_space(p + 1);
    if (*p != '{' || (*end = strstr(p, "};")) == NULL)
        return 0;
    *body = p + 1;
    return 1;
}

void c_options(const char *code, strset_t *out)
{
    const char *p = code, *body, *end;
    while ((p = strstr(p, "struct option")) != NULL) {
        p = skip_space(p + strlen("struct option"));
        while (is_ident(*p))
            p++;
        if (table_body(p, &body, &end))
            row_names(body, end, out);
    }
}

int c_table_names(const char *code, const char *table, strset_t *out)
{
    const char *p = code, *body, *end;
    size_t n = strlen(table);
    int found = 0;
    while ((p = strstr(p, table)) != NULL) {
        int alone = (p == code || !is_ident(p[-1])) && !is_ident(p[n]);
        p += n;
        if (alone && table_body(p, &body, &end)) {
            row_names(body, end, out);
            found = 1;
        }
    }
    return found;
}

/* The next line of @p *p, backslash-newlines joined, into @p buf; 0 at
 * the end. */
static int logical_line(const char **p, char *buf, size_t len)
{
    size_t n = 0;
    if (**p == '\0')
        return 0;
    while (**p != '\0') {
        char c = *(*p)++;
        if (c == '\\' && **p == '\n') {
            (*p)++;
            c = ' ';
        } else if (c == '\n') {
            break;
        }
        if (n + 1 < len)
            buf[n++] = c;
    }
    buf[n] = '\0';
    return 1;
}

/* Identifier at @p p into @p buf (empty if none); returns its end. */
static const char *ident(const char *p, char *buf, size_t len)
{
    size_t n = 0;
    while (is_ident(p[n]) && n + 1 < len) {
        buf[n] = p[n];
        n++;
    }
    buf[n] = '\0';
    return p + n;
}

/* The prefix an X-macro helper @p macro pastes to its first parameter
 * (TUTTI_OP_ for `TUTTI_OP_##up`), into @p prefix; 0 if it pastes none. */
static int paste_prefix(const char *code, const char *macro, char *prefix,
                        size_t len)
{
    char line[16384], name[128];
    const char *p = code;
    while (logical_line(&p, line, sizeof(line))) {
        const char *q = skip_space(line);
        if (*q != '#' || strncmp(skip_space(q + 1), "define", 6) != 0)
            continue;
        q = ident(skip_space(skip_space(q + 1) + 6), name, sizeof(name));
        if (strcmp(name, macro) != 0 || *q != '(')
            continue;
        const char *paste = strstr(q, "##");
        if (paste == NULL)
            return 0;
        const char *start = paste;
        while (start > q && is_ident(start[-1]))
            start--;
        snprintf(prefix, len, "%.*s", (int)(paste - start), start);
        return 1;
    }
    return 0;
}

void c_xlist_names(const char *code, const char *list, strset_t *out)
{
    char line[16384], name[128], prefix[128] = "";
    const char *p = code;
    size_t n = strlen(list);

    /* The enum's helper: LIST(HELPER) where HELPER pastes a prefix. */
    for (const char *u = code; (u = strstr(u, list)) != NULL; u += n) {
        if (u[n] != '(' || (u > code && is_ident(u[-1])))
            continue;
        ident(skip_space(u + n + 1), name, sizeof(name));
        if (strcmp(name, "X") != 0 &&
            paste_prefix(code, name, prefix, sizeof(prefix)))
            break;
    }
    if (prefix[0] == '\0')
        return;
    while (logical_line(&p, line, sizeof(line))) {
        const char *q = skip_space(line);
        if (*q != '#' || strncmp(skip_space(q + 1), "define", 6) != 0)
            continue;
        q = ident(skip_space(skip_space(q + 1) + 6), name, sizeof(name));
        if (strcmp(name, list) != 0)
            continue;
        for (const char *x = strstr(q + 1, "X("); x != NULL;
             x = strstr(x + 2, "X(")) {
            char entry[128], full[256];
            ident(skip_space(x + 2), entry, sizeof(entry));
            snprintf(full, sizeof(full), "%s%s", prefix, entry);
            set_add(out, full, list);
        }
    }
}

/* Every whole TUTTI_ name in @p text. */
static void upper_idents(const char *text, const char *what, strset_t *out)
{
    for (const char *p = text; (p = strstr(p, "TUTTI_")) != NULL; p++) {
        if (p > text && is_ident(p[-1]))
            continue;
        size_t n = 0;
        while (is_ident(p[n]))
            n++;
        if (tutti_name(p, n)) {
            char *name = xstrndup(p, n);
            set_add(out, name, what);
            free(name);
        }
        p += n > 0 ? n - 1 : 0;
    }
}

/* A preprocessor line: #define TUTTI_X that is not a guard or helper. */
static void define_name(const char *line, const char *what, strset_t *macros)
{
    char name[128];
    const char *q = skip_space(skip_space(line) + 1);
    if (strncmp(q, "define", 6) != 0)
        return;
    ident(skip_space(q + 6), name, sizeof(name));
    size_t n = strlen(name);
    if (macros != NULL && tutti_name(name, n) &&
        !(n > 2 && strcmp(name + n - 2, "_H") == 0))
        set_add(macros, name, what);
}

/* Each type name tutti_*_t of @p line into @p types, noting @p what. */
static void line_types(const char *line, const char *what, strset_t *types)
{
    strset_t found = {0};
    words_types(line, &found);
    for (size_t i = 0; i < found.count; i++)
        set_add(types, found.items[i], what);
    set_free(&found);
}

/* Functions: tutti_x( outside braces. */
static void line_functions(const char *line, int *depth, const char *what,
                           strset_t *functions)
{
    for (const char *c = line; *c != '\0'; c++) {
        if (*c == '{')
            (*depth)++;
        else if (*c == '}')
            (*depth)--;
        if (*depth != 0 || strncmp(c, "tutti_", 6) != 0 ||
            (c > line && is_ident(c[-1])))
            continue;
        const char *e = c;
        while (is_ident(*e))
            e++;
        if (functions != NULL && *skip_space(e) == '(') {
            char *name = xstrndup(c, (size_t)(e - c));
            set_add(functions, name, what);
            free(name);
        }
        c = e - 1;
    }
}

void c_header_names(const char *code, const char *what, strset_t *functions,
                    strset_t *types, strset_t *macros, strset_t *idents)
{
    char line[16384], lists[64][128], name[128];
    const char *p = code;
    int depth = 0, num_lists = 0, cplusplus = 0;

    while (logical_line(&p, line, sizeof(line))) {
        const char *q = skip_space(line);
        if (*q == '#') {
            /* extern "C" { ... } is C++'s, not a scope of C's */
            q = skip_space(q + 1);
            if (strncmp(q, "ifdef", 5) == 0 && strstr(q, "__cplusplus"))
                cplusplus = 1;
            else if (strncmp(q, "endif", 5) == 0)
                cplusplus = 0;
            define_name(line, what, macros);
            ident(skip_space(q + 6), name, sizeof(name));
            size_t n = strlen(name);
            if (strncmp(q, "define", 6) == 0 && n > 5 &&
                strcmp(name + n - 5, "_LIST") == 0 && num_lists < 64)
                snprintf(lists[num_lists++], 128, "%s", name);
        } else if (!cplusplus) {
            line_functions(line, &depth, what, functions);
        }
        if (types != NULL)
            line_types(line, what, types);
        if (idents != NULL)
            upper_idents(line, what, idents);
    }
    for (int i = 0; idents != NULL && i < num_lists; i++)
        c_xlist_names(code, lists[i], idents);
}

/* ---- automake ------------------------------------------------------------ */

void mk_words(const char *text, const char *var, strset_t *out)
{
    char line[16384];
    const char *p = text;
    size_t n = strlen(var);

    while (logical_line(&p, line, sizeof(line))) {
        const char *q = skip_space(line);
        if (strncmp(q, var, n) != 0 || is_ident(q[n]))
            continue;
        q = skip_space(q + n);
        if (*q == '+')
            q++;
        if (*q != '=')
            continue;
        char *hash = strchr(q, '#');
        if (hash != NULL)
            *hash = '\0';
        for (char *w = strtok((char *)q + 1, " \t"); w != NULL;
             w = strtok(NULL, " \t"))
            if (strchr(w, '$') == NULL)
                set_add(out, w, var);
    }
}

void mk_fragments(const char *srcdir, const char *makefile_am, strset_t *out)
{
    char path[4096], line[16384];
    const char *p;
    char *text;

    if (set_has(out, makefile_am))
        return;
    set_add(out, makefile_am, NULL);
    snprintf(path, sizeof(path), "%s/%s", srcdir, makefile_am);
    if ((text = read_text(path)) == NULL)
        return;
    p = text;
    while (logical_line(&p, line, sizeof(line))) {
        const char *q = skip_space(line);
        if (strncmp(q, "include", 7) != 0 || !isspace((unsigned char)q[7]))
            continue;
        char *inc = (char *)skip_space(q + 7);
        inc[strcspn(inc, " \t#")] = '\0';
        if (strncmp(inc, "$(srcdir)/", 10) == 0)
            inc += 10;
        else if (strncmp(inc, "$(top_srcdir)/", 14) == 0)
            inc += 14;
        mk_fragments(srcdir, inc, out);
    }
    free(text);
}

/* ---- man pages ----------------------------------------------------------- */

/* Appends text to a growing buffer. */
typedef struct {
    char *s;
    size_t n, cap;
} buf_t;

static void buf_put(buf_t *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

/* Escape \(xx as text. */
static const char *special(const char *xx)
{
    static const char *const map[][2] = {
        {"lq", "\""}, {"rq", "\""}, {"oq", "'"}, {"cq", "'"}, {"aq", "'"},
        {"dq", "\""}, {"en", "-"},  {"em", "-"}, {"hy", "-"}, {"mi", "-"},
        {"la", "<"},  {"ra", ">"},  {"ti", "~"}, {"bu", "*"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strncmp(xx, map[i][0], 2) == 0)
            return map[i][1];
    return " ";
}

/* @p in (@p n bytes) as a reader sees it, appended to @p b. */
static void roff_text(const char *in, size_t n, buf_t *b)
{
    for (size_t i = 0; i < n; i++) {
        if (in[i] != '\\' || i + 1 >= n) {
            buf_put(b, in + i, 1);
            continue;
        }
        char c = in[++i];
        const char *s;
        switch (c) {
            case '-':
                buf_put(b, "-", 1);
                break;
            case 'e':
                buf_put(b, "\\", 1);
                break;
            case '~':
            case ' ':
            case '0':
                buf_put(b, " ", 1);
                break;
            case '"':
                return; /* a comment to the end */
            case '(':
                if (i + 2 < n) {
                    s = special(in + i + 1);
                    buf_put(b, s, strlen(s));
                    i += 2;
                }
                break;
            case '[':
                while (i < n && in[i] != ']')
                    i++;
                break;
            case 'f':
            case '*':
                if (i + 1 < n && in[i + 1] == '(')
                    i += 3;
                else if (i + 1 < n && in[i + 1] == '[')
                    for (i++; i < n && in[i] != ']'; i++)
                        ;
                else
                    i++;
                break;
            case 's':
                if (i + 1 < n && (in[i + 1] == '+' || in[i + 1] == '-'))
                    i++;
                while (i + 1 < n && isdigit((unsigned char)in[i + 1]))
                    i++;
                break;
            case '&':
            case '|':
            case '^':
            case ',':
            case '/':
            case '%':
            case 'c':
            case ')':
                break;
            default:
                buf_put(b, &c, 1);
        }
    }
}

/* A macro line's arguments as text: quoted ones whole, joined with
 * @p sep. */
static char *macro_args(const char *args, const char *sep)
{
    buf_t b = {NULL, 0, 0};
    int first = 1;
    buf_put(&b, "", 0);
    for (const char *p = skip_space(args); *p != '\0'; p = skip_space(p)) {
        buf_t arg = {NULL, 0, 0};
        buf_put(&arg, "", 0);
        if (*p == '"') {
            for (p++; *p != '\0'; p++) {
                if (*p == '"' && p[1] == '"')
                    buf_put(&arg, p++, 1);
                else if (*p == '"')
                    break;
                else
                    buf_put(&arg, p, 1);
            }
            if (*p == '"')
                p++;
        } else {
            const char *e = p;
            while (*e != '\0' && !isspace((unsigned char)*e))
                e++;
            buf_put(&arg, p, (size_t)(e - p));
            p = e;
        }
        if (!first)
            buf_put(&b, sep, strlen(sep));
        first = 0;
        roff_text(arg.s, arg.n, &b);
        free(arg.s);
    }
    return b.s;
}

static void add_line(man_page_t *pg, char *text, const char *section, int item,
                     int tag)
{
    pg->lines = xrealloc(pg->lines, (pg->count + 1) * sizeof(man_line_t));
    pg->lines[pg->count++] = (man_line_t){text, xstrdup(section), item, tag};
}

static int is_one_of(const char *name, const char *const *names)
{
    for (; *names != NULL; names++)
        if (strcmp(name, *names) == 0)
            return 1;
    return 0;
}

int man_read(const char *file, const char *name, man_page_t *pg)
{
    static const char *const joined[] = {"BR", "RB", "BI", "IB",
                                         "IR", "RI", NULL};
    static const char *const spaced[] = {"B", "I", "SM", "SB", "SS", NULL};
    static const char *const ends[] = {"PP", "P", "LP", "HP", "SS", "IP", NULL};
    char *text = read_text(file), *line, *save = NULL;
    char section[256] = "";
    int items = 0, item = 0, tag = 0;

    memset(pg, 0, sizeof(*pg));
    if (text == NULL)
        return -1;
    pg->path = xstrdup(name);
    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, ".\\\"", 3) == 0 || strncmp(line, "'\\\"", 3) == 0)
            continue;
        if (line[0] != '.' && line[0] != '\'') {
            buf_t b = {NULL, 0, 0};
            buf_put(&b, "", 0);
            roff_text(line, strlen(line), &b);
            add_line(pg, b.s, section, item, tag);
            tag = 0;
            continue;
        }
        char macro[16];
        const char *args = ident(skip_space(line + 1), macro, sizeof(macro));
        if (strcmp(macro, "SH") == 0) {
            char *s = macro_args(args, " ");
            snprintf(section, sizeof(section), "%s", s);
            free(s);
            item = tag = 0;
            continue;
        }
        if (strcmp(macro, "TP") == 0) {
            item = ++items;
            tag = 1;
            continue;
        }
        if (strcmp(macro, "TQ") == 0) {
            tag = 1;
            continue;
        }
        if (is_one_of(macro, ends))
            item = tag = 0;
        if (is_one_of(macro, joined) || is_one_of(macro, spaced)) {
            add_line(pg, macro_args(args, is_one_of(macro, joined) ? "" : " "),
                     section, item, tag);
            tag = 0;
        }
    }
    free(text);
    return 0;
}

void man_free(man_page_t *pg)
{
    for (size_t i = 0; i < pg->count; i++) {
        free(pg->lines[i].text);
        free(pg->lines[i].section);
    }
    free(pg->lines);
    free(pg->path);
    memset(pg, 0, sizeof(*pg));
}

int man_has_section(const man_page_t *pg, const char *section)
{
    for (size_t i = 0; i < pg->count; i++)
        if (strcmp(pg->lines[i].section, section) == 0)
            return 1;
    return 0;
}

char *man_text(const man_page_t *pg, const char *section, int tags_only)
{
    buf_t b = {NULL, 0, 0};
    buf_put(&b, "", 0);
    for (size_t i = 0; i < pg->count; i++) {
        const man_line_t *l = &pg->lines[i];
        if ((section != NULL && strcmp(l->section, section) != 0) ||
            (tags_only && !l->tag))
            continue;
        buf_put(&b, l->text, strlen(l->text));
        buf_put(&b, "\n", 1);
    }
    return b.s;
}

char *man_item_body(const man_page_t *pg, int item)
{
    buf_t b = {NULL, 0, 0};
    buf_put(&b, "", 0);
    for (size_t i = 0; i < pg->count; i++) {
        if (pg->lines[i].item != item || pg->lines[i].tag)
            continue;
        buf_put(&b, pg->lines[i].text, strlen(pg->lines[i].text));
        buf_put(&b, "\n", 1);
    }
    return b.s;
}

void man_tag_words(const man_page_t *pg, const char *section, strset_t *out)
{
    for (size_t i = 0; i < pg->count; i++) {
        const man_line_t *l = &pg->lines[i];
        if (!l->tag || strcmp(l->section, section) != 0)
            continue;
        const char *w = skip_space(l->text);
        size_t n = strcspn(w, " \t,");
        char *word = xstrndup(w, n), note[32];
        snprintf(note, sizeof(note), "%d", l->item);
        if (n > 0)
            set_add(out, word, note);
        free(word);
    }
}

/* ---- words in text ------------------------------------------------------- */

void words_upper(const char *text, strset_t *out)
{
    for (const char *p = text; (p = strstr(p, "TUTTI_")) != NULL; p++) {
        if (p > text && is_ident(p[-1]))
            continue;
        size_t n = 6;
        while (isupper((unsigned char)p[n]) || isdigit((unsigned char)p[n]) ||
               p[n] == '_')
            n++;
        /* TUTTI_ERR_*, TUTTI_<SECTION>_<NAME>, TUTTI_section: patterns */
        if (p[n] == '*' || p[n] == '<' || islower((unsigned char)p[n])) {
            p += n - 1;
            continue;
        }
        while (n > 6 && p[n - 1] == '_')
            n--;
        if (n > 6) {
            char *name = xstrndup(p, n);
            set_add(out, name, NULL);
            free(name);
        }
        p += n - 1;
    }
}

void words_options(const char *text, strset_t *out)
{
    for (const char *p = text; (p = strstr(p, "--")) != NULL; p += 2) {
        if (p > text && (is_ident(p[-1]) || p[-1] == '-'))
            continue;
        size_t n = 0;
        while (islower((unsigned char)p[2 + n]) ||
               (n > 0 && (isdigit((unsigned char)p[2 + n]) || p[2 + n] == '-')))
            n++;
        while (n > 0 && p[2 + n - 1] == '-')
            n--;
        if (n > 0) {
            char *name = xstrndup(p + 2, n);
            set_add(out, name, NULL);
            free(name);
        }
    }
}

/* Each tutti_ name in @p text for which @p want says yes. */
static void lower_words(const char *text, strset_t *out,
                        int (*want)(const char *end))
{
    for (const char *p = text; (p = strstr(p, "tutti_")) != NULL; p++) {
        if (p > text && is_ident(p[-1]))
            continue;
        const char *e = p;
        while (is_ident(*e))
            e++;
        if (want(e)) {
            char *name = xstrndup(p, (size_t)(e - p));
            set_add(out, name, NULL);
            free(name);
        }
        p = e - 1;
    }
}

/* A call follows: "(" at once, or "()" after blanks. */
static int call_follows(const char *e)
{
    if (*e == '(')
        return 1;
    e = skip_space(e);
    return e[0] == '(' && e[1] == ')';
}

static int type_ends(const char *e)
{
    return e[-1] == 't' && e[-2] == '_';
}

void words_functions(const char *text, strset_t *out)
{
    lower_words(text, out, call_follows);
}

void words_types(const char *text, strset_t *out)
{
    lower_words(text, out, type_ends);
}

int has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = text; (p = strstr(p, word)) != NULL; p++)
        if ((p == text || !is_ident(p[-1])) && !is_ident(p[n]))
            return 1;
    return 0;
}
