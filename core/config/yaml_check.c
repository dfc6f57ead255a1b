/*
 * The limits a config file is held to before it becomes a document: the
 * YAML is read once as events, and refused where lists and mappings nest
 * deeper than TUTTI__YAML_DEPTH_MAX, where aliases would make more than
 * TUTTI__YAML_ALIAS_NODES_MAX nodes visible, or where it has more than
 * TUTTI__YAML_ANCHORS_MAX anchors.  libyaml's loader would otherwise build
 * what a few bytes of aliases describe (the tree walk over it is as large as
 * the expansion), recurse once per level, and look anchors up one by one.
 * Syntax errors are said here too, with the key they are in.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/log.h"
#include "base/sbuf.h"
#include "config/config.h"

#define KEY_LEN 64

/* An open list or mapping. */
typedef struct {
    bool map, want_key;   /* a mapping, and its next node is a key */
    size_t anchor;        /* its anchor's index + 1, or 0 */
    size_t nodes;         /* nodes inside, aliases expanded */
    int depth;            /* levels below it, aliases expanded */
    char key[KEY_LEN];    /* a mapping's last key */
} frame_t;

typedef struct {
    char *name;
    size_t nodes; /* the node and all inside it, aliases expanded */
    int depth;    /* 0 for a scalar, 1 for a flat list, ... */
    bool open;    /* a list or mapping not yet ended */
} anchor_t;

typedef struct {
    const char *path;
    frame_t stack[TUTTI__YAML_DEPTH_MAX];
    int top;                   /* frames in use */
    anchor_t *anchors;
    size_t num_anchors;
    tutti__cfg_names_t by_name; /* anchor name -> index */
    size_t alias_nodes;         /* nodes made visible by aliases so far */
} check_t;

void tutti__cfg_yaml_key_path(const char *const *keys, int n, char *buf,
                              size_t len)
{
    tutti__sbuf_t sb = {buf, len, 0};

    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (keys[i] != NULL && keys[i][0] != '\0')
            tutti__sbuf_printf(&sb, "%s%.60s", sb.pos > 0 ? "." : "",
                               keys[i]);
    }
}

/* " in 'a.b'": the keys whose values enclose the current node. */
static void where_key(const check_t *c, char *buf, size_t len)
{
    const char *keys[TUTTI__YAML_DEPTH_MAX];
    char path[256];
    int n = 0;

    for (int i = 0; i < c->top; i++) {
        if (c->stack[i].map && !c->stack[i].want_key)
            keys[n++] = c->stack[i].key;
    }
    tutti__cfg_yaml_key_path(keys, n, path, sizeof(path));
    if (path[0] != '\0')
        snprintf(buf, len, " in the value of '%s'", path);
    else
        snprintf(buf, len, "%s", "");
}

static tutti_status_t limit_error(const check_t *c, const yaml_mark_t *m,
                                  const char *found, const char *expected)
{
    char key[300];

    where_key(c, key, sizeof(key));
    return tutti__error(TUTTI_ERR_CONFIG, "config",
                        "%s:%zu:%zu: %s%s; expected %s", c->path,
                        m->line + 1, m->column + 1, found, key, expected);
}

/* Line and column (1-based) of byte @p offset of @p text. */
static void place_of(const char *text, size_t len, size_t offset,
                     size_t *line, size_t *column)
{
    const char *nl = NULL;

    *line = 1;
    if (offset > len)
        offset = len;
    for (const char *s = text; s < text + offset; s++) {
        if (*s == '\n') {
            (*line)++;
            nl = s;
        }
    }
    *column = (size_t)(text + offset - (nl != NULL ? nl + 1 : text)) + 1;
}

tutti_status_t tutti__cfg_yaml_syntax_error(const yaml_parser_t *ps,
                                            const char *path,
                                            const char *text, size_t len,
                                            const char *key)
{
    const char *problem = ps->problem != NULL ? ps->problem : "unreadable";
    char in[300] = "";
    size_t line, column;

    if (ps->error == YAML_MEMORY_ERROR)
        return tutti__cfg_oom();
    if (key != NULL && key[0] != '\0')
        snprintf(in, sizeof(in), " in the value of '%s'", key);
    if (ps->error == YAML_READER_ERROR) {
        place_of(text, len, ps->problem_offset, &line, &column);
        return tutti__error(TUTTI_ERR_CONFIG, "config",
                            "%s:%zu:%zu: %s (byte %zu)%s; expected UTF-8 "
                            "text", path, line, column, problem,
                            ps->problem_offset, in);
    }
    if (ps->context != NULL &&
        (ps->context_mark.line != ps->problem_mark.line ||
         ps->context_mark.column != ps->problem_mark.column))
        return tutti__error(TUTTI_ERR_CONFIG, "config",
                            "%s:%zu:%zu: %s (%s started at line %zu, "
                            "column %zu)%s; expected well-formed YAML",
                            path, ps->problem_mark.line + 1,
                            ps->problem_mark.column + 1, problem, ps->context,
                            ps->context_mark.line + 1,
                            ps->context_mark.column + 1, in);
    return tutti__error(TUTTI_ERR_CONFIG, "config",
                        "%s:%zu:%zu: %s%s; expected well-formed YAML", path,
                        ps->problem_mark.line + 1, ps->problem_mark.column + 1,
                        problem, in);
}

/* A node of @p nodes nodes and @p depth levels ends; it belongs to the
 * innermost open list or mapping, as a key or a value. */
static void add_node(check_t *c, size_t nodes, int depth, const char *scalar)
{
    frame_t *f;

    if (c->top == 0)
        return;
    f = &c->stack[c->top - 1];
    f->nodes += nodes;
    if (depth > f->depth)
        f->depth = depth;
    if (f->map && f->want_key)
        snprintf(f->key, sizeof(f->key), "%s", scalar != NULL ? scalar : "");
    if (f->map)
        f->want_key = !f->want_key;
}

static tutti_status_t add_anchor(check_t *c, const yaml_mark_t *m,
                                 const char *name, size_t *index_out)
{
    char found[160];
    anchor_t *a;

    if (tutti__cfg_names_find(&c->by_name, name) != NULL) {
        snprintf(found, sizeof(found), "anchor '&%.60s' defined twice", name);
        return limit_error(c, m, found, "each anchor once");
    }
    if (c->num_anchors == TUTTI__YAML_ANCHORS_MAX) {
        snprintf(found, sizeof(found), "anchor '&%.60s' is one more than %d",
                 name, TUTTI__YAML_ANCHORS_MAX);
        return limit_error(c, m, found, "at most "
                           TUTTI__STR(TUTTI__YAML_ANCHORS_MAX) " anchors");
    }
    a = &c->anchors[c->num_anchors];
    a->name = strdup(name);
    if (a->name == NULL)
        return tutti__cfg_oom();
    a->nodes = 1;
    a->depth = 0;
    a->open = false;
    tutti__cfg_names_add(&c->by_name, a->name, c->num_anchors);
    *index_out = ++c->num_anchors;
    return TUTTI_OK;
}

static tutti_status_t on_alias(check_t *c, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const size_t *i = tutti__cfg_names_find(&c->by_name, name);
    const anchor_t *a;
    char found[200];

    if (i == NULL) {
        snprintf(found, sizeof(found), "alias '*%.60s' names no anchor "
                 "before it", name);
        return limit_error(c, &ev->start_mark, found, "an alias to an "
                           "anchor defined earlier, e.g. &a 4 then *a");
    }
    a = &c->anchors[*i];
    if (a->open) {
        snprintf(found, sizeof(found), "alias '*%.60s' is inside its own "
                 "anchor", name);
        return limit_error(c, &ev->start_mark, found, "an alias to a value "
                           "that does not contain it");
    }
    if (a->nodes > TUTTI__YAML_ALIAS_NODES_MAX - c->alias_nodes) {
        snprintf(found, sizeof(found), "alias '*%.60s' (%zu nodes) makes "
                 "more than %d nodes visible through aliases", name,
                 a->nodes, TUTTI__YAML_ALIAS_NODES_MAX);
        return limit_error(c, &ev->start_mark, found, "at most "
                           TUTTI__STR(TUTTI__YAML_ALIAS_NODES_MAX) " nodes "
                           "through aliases (write the values out instead)");
    }
    if (c->top + a->depth > TUTTI__YAML_DEPTH_MAX) {
        snprintf(found, sizeof(found), "alias '*%.60s' nests lists and "
                 "mappings %d deep", name, c->top + a->depth);
        return limit_error(c, &ev->start_mark, found, "at most "
                           TUTTI__STR(TUTTI__YAML_DEPTH_MAX) " levels of "
                           "lists and mappings, aliases expanded");
    }
    c->alias_nodes += a->nodes;
    add_node(c, a->nodes, a->depth, NULL);
    return TUTTI_OK;
}

static tutti_status_t on_start(check_t *c, const yaml_event_t *ev, bool map,
                               const char *anchor)
{
    frame_t *f;
    size_t index = 0;
    tutti_status_t st;

    if (c->top == TUTTI__YAML_DEPTH_MAX)
        return limit_error(c, &ev->start_mark, map ? "a mapping nested "
                           "more than " TUTTI__STR(TUTTI__YAML_DEPTH_MAX)
                           " deep" : "a list nested more than "
                           TUTTI__STR(TUTTI__YAML_DEPTH_MAX) " deep",
                           "at most " TUTTI__STR(TUTTI__YAML_DEPTH_MAX)
                           " levels of lists and mappings");
    if (anchor != NULL) {
        st = add_anchor(c, &ev->start_mark, anchor, &index);
        if (st != TUTTI_OK)
            return st;
        c->anchors[index - 1].open = true;
    }
    f = &c->stack[c->top++];
    memset(f, 0, sizeof(*f));
    f->map = map;
    f->want_key = map;
    f->anchor = index;
    return TUTTI_OK;
}

static void on_end(check_t *c)
{
    frame_t f = c->stack[--c->top];
    size_t nodes = f.nodes + 1;
    int depth = f.depth + 1;

    if (f.anchor != 0) {
        anchor_t *a = &c->anchors[f.anchor - 1];
        a->nodes = nodes;
        a->depth = depth;
        a->open = false;
    }
    add_node(c, nodes, depth, NULL);
}

static tutti_status_t on_event(check_t *c, const yaml_event_t *ev)
{
    const char *anchor;
    size_t index;
    tutti_status_t st;

    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        anchor = (const char *)ev->data.scalar.anchor;
        if (anchor != NULL) {
            st = add_anchor(c, &ev->start_mark, anchor, &index);
            if (st != TUTTI_OK)
                return st;
        }
        add_node(c, 1, 0, (const char *)ev->data.scalar.value);
        return TUTTI_OK;
    case YAML_ALIAS_EVENT:
        return on_alias(c, ev);
    case YAML_SEQUENCE_START_EVENT:
        return on_start(c, ev, false,
                        (const char *)ev->data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
        return on_start(c, ev, true,
                        (const char *)ev->data.mapping_start.anchor);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        on_end(c);
        return TUTTI_OK;
    default:
        return TUTTI_OK;
    }
}

/* A syntax error said with the keys it is in. */
static tutti_status_t check_syntax_error(const check_t *c,
                                         const yaml_parser_t *ps,
                                         const char *text, size_t len)
{
    const char *keys[TUTTI__YAML_DEPTH_MAX];
    char path[256];
    int n = 0;

    for (int i = 0; i < c->top; i++) {
        if (c->stack[i].map && !c->stack[i].want_key)
            keys[n++] = c->stack[i].key;
    }
    tutti__cfg_yaml_key_path(keys, n, path, sizeof(path));
    return tutti__cfg_yaml_syntax_error(ps, c->path, text, len, path);
}

tutti_status_t tutti__cfg_yaml_check(const char *path, const char *text,
                                     size_t len)
{
    check_t *c = calloc(1, sizeof(*c));
    yaml_parser_t parser;
    yaml_event_t ev;
    tutti_status_t st = TUTTI_OK;
    bool done = false;

    if (c == NULL)
        return tutti__cfg_oom();
    c->path = path;
    c->anchors = calloc(TUTTI__YAML_ANCHORS_MAX, sizeof(*c->anchors));
    if (c->anchors == NULL ||
        tutti__cfg_names_init(&c->by_name, TUTTI__YAML_ANCHORS_MAX) !=
            TUTTI_OK) {
        free(c->anchors);
        free(c);
        return tutti__cfg_oom();
    }
    if (!yaml_parser_initialize(&parser)) {
        st = tutti__cfg_oom();
        goto out_check;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (st == TUTTI_OK && !done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            st = check_syntax_error(c, &parser, text, len);
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        st = on_event(c, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
out_check:
    for (size_t i = 0; i < c->num_anchors; i++)
        free(c->anchors[i].name);
    free(c->anchors);
    tutti__cfg_names_free(&c->by_name);
    free(c);
    return st;
}
