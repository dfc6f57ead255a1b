/*
 * Lint of a file's selection rules (select/lint.h).  Each rule is checked
 * against the implementations loaded; then, one collective at a time, the
 * calls a rule could match are a box (device types, dtypes, size,
 * group_size, num_tasks, hosts) and the rules are taken in order: what is
 * left of a rule's box once the earlier rules' boxes are cut out is where
 * it is chosen, and what is left of all calls once every box is cut out is
 * where no rule is.  Boxes cut into at most 2 per dimension each time; a
 * file of a few dozen rules stays far below BOXES_MAX.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sbuf.h"
#include "base/size.h"
#include "select/lint.h"

#define ALL_COLLS ((1u << TUTTI_COLL_COUNT) - 1)
#define ALL_DEVICES ((1u << TUTTI_DEVICE_COUNT) - 1)
#define ALL_DTYPES ((1u << TUTTI_DTYPE_COUNT) - 1)
/* The collectives that take per-rank counts (exec/coll.c refuses them for
 * the others).  Such a call selects as the largest size (select.c), so in
 * a box the size UINT64_MAX stands for it; no call has that many bytes. */
#define PER_RANK_COLLS                                                         \
    (TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER) |                                    \
     TUTTI_COLL_BIT(TUTTI_COLL_REDUCE_SCATTER) |                               \
     TUTTI_COLL_BIT(TUTTI_COLL_ALLTOALL))
#define SIZE_PER_RANK UINT64_MAX
#define BOXES_MAX 8192
#define GAPS_SHOWN 8  /* per collective; the rest in one more line */
#define RULES_NAMED 6 /* earlier rules named in one line */

/* ---- boxes of calls ------------------------------------------------------ */

enum { SET_DEVICE, SET_DTYPE, SETS };
enum { RANGE_SIZE, RANGE_GROUP, RANGE_TASKS, RANGE_HOSTS, RANGES };

typedef struct {
    uint32_t set[SETS];              /* masks */
    uint64_t lo[RANGES], hi[RANGES]; /* inclusive */
} box_t;

static bool box_empty(const box_t *b)
{
    for (int d = 0; d < SETS; d++)
        if (b->set[d] == 0)
            return true;
    for (int d = 0; d < RANGES; d++)
        if (b->lo[d] > b->hi[d])
            return true;
    /* A task holds at least one member and runs on one host: no call has
     * more tasks than members, nor more hosts than tasks. */
    return b->lo[RANGE_TASKS] > b->hi[RANGE_GROUP] ||
           b->lo[RANGE_HOSTS] > b->hi[RANGE_TASKS] ||
           b->lo[RANGE_HOSTS] > b->hi[RANGE_GROUP];
}

static bool box_meets(const box_t *a, const box_t *b)
{
    box_t m;
    for (int d = 0; d < SETS; d++)
        m.set[d] = a->set[d] & b->set[d];
    for (int d = 0; d < RANGES; d++) {
        m.lo[d] = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
        m.hi[d] = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
    }
    return !box_empty(&m);
}

/* Disjoint boxes: a set of calls. */
typedef struct {
    box_t *b; /* grown by tutti__cfg_grow() */
    size_t n;
    bool over; /* more than BOXES_MAX were needed */
    bool oom;
} boxes_t;

static void boxes_push(boxes_t *s, const box_t *b)
{
    if (box_empty(b) || s->over || s->oom)
        return;
    if (s->n == BOXES_MAX) {
        s->over = true;
        return;
    }
    box_t *slot = tutti__cfg_grow(&s->b, s->n, sizeof(*slot));
    if (slot == NULL) {
        s->oom = true;
        return;
    }
    *slot = *b;
    s->n++;
}

/* @p from less @p cut, pushed onto @p out as disjoint boxes: what lies
 * outside @p cut in one dimension, the others narrowed to @p cut's so far. */
static void box_minus(const box_t *from, const box_t *cut, boxes_t *out)
{
    box_t cur = *from, piece;

    for (int d = 0; d < SETS; d++) {
        piece = cur;
        piece.set[d] = cur.set[d] & ~cut->set[d];
        boxes_push(out, &piece);
        cur.set[d] &= cut->set[d];
    }
    for (int d = 0; d < RANGES; d++) {
        if (cur.lo[d] < cut->lo[d]) {
            piece = cur;
            piece.hi[d] = cut->lo[d] - 1;
            boxes_push(out, &piece);
            cur.lo[d] = cut->lo[d];
        }
        if (cur.hi[d] > cut->hi[d]) {
            piece = cur;
            piece.lo[d] = cut->hi[d] + 1;
            boxes_push(out, &piece);
            cur.hi[d] = cut->hi[d];
        }
    }
}

/* *@p s less @p cut; true when some of it lay in @p cut. */
static bool boxes_minus(boxes_t *s, const box_t *cut)
{
    boxes_t out = {NULL, 0, s->over, s->oom};
    bool met = false;

    for (size_t i = 0; i < s->n; i++) {
        if (box_meets(&s->b[i], cut)) {
            met = true;
            box_minus(&s->b[i], cut, &out);
        } else {
            boxes_push(&out, &s->b[i]);
        }
    }
    free(s->b);
    *s = out;
    return met;
}

/* Every call of collective @p c. */
static box_t all_calls(int c)
{
    bool per_rank = (PER_RANK_COLLS & TUTTI_COLL_BIT(c)) != 0;
    return (box_t){{ALL_DEVICES, ALL_DTYPES},
                   {0, 1, 1, 1},
                   {per_rank ? SIZE_PER_RANK : SIZE_PER_RANK - 1, INT32_MAX,
                    INT32_MAX, INT32_MAX}};
}

/* ---- the lint's state ---------------------------------------------------- */

typedef struct {
    const tutti__rule_t *r;
    const tutti__lint_impl_t *impl; /* NULL: no loaded module provides it */
    uint32_t colls;    /* collectives it can be chosen for; 0: none */
    uint32_t devices;  /* device types likewise */
    uint32_t shadowed; /* collectives whose calls earlier rules all take */
} lrule_t;

typedef struct {
    int line;
    size_t seq;
    char *text;
} finding_t;

typedef struct {
    const tutti__lint_impl_t *impls;
    size_t num_impls;
    uint32_t native;    /* device types some loaded implementation runs on */
    lrule_t *rules;     /* the file's, in order */
    size_t n;
    unsigned char *by;  /* n x n: by[j * n + i], rule i takes calls of the
                           never-matching rule j */
    finding_t *out;     /* grown by tutti__cfg_grow() */
    size_t num_out, findings;
    bool oom;
} lint_t;

/* What a line is: a finding (counted), or a note or a warning (not
 * counted: something the lint skipped, or could not check). */
typedef enum { FINDING, NOTE, WARNING } line_kind_t;

static void say(lint_t *l, const tutti__rule_t *r, line_kind_t kind,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* One line at rule @p r's place. */
static void say(lint_t *l, const tutti__rule_t *r, line_kind_t kind,
                const char *fmt, ...)
{
    static const char *const label[] = {"", "note: ", "warning: "};
    char text[2048];
    va_list ap;
    int k = snprintf(text, sizeof(text), "%s:%d:%d: %s", r->file, r->line,
                     r->column, label[kind]);

    if (k < 0 || (size_t)k >= sizeof(text))
        k = 0; /* a path past 2K: the message alone */
    va_start(ap, fmt);
    vsnprintf(text + k, sizeof(text) - (size_t)k, fmt, ap);
    va_end(ap);
    finding_t *slot = tutti__cfg_grow(&l->out, l->num_out, sizeof(*slot));
    char *copy = slot != NULL ? strdup(text) : NULL;
    if (copy == NULL) {
        l->oom = true;
        return;
    }
    *slot = (finding_t){r->line, l->num_out, copy};
    l->num_out++;
    l->findings += kind == FINDING;
}

static int by_line(const void *a, const void *b)
{
    const finding_t *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void names(const tutti__cfg_name_kind_t *kind, uint32_t mask,
                  char *buf, size_t len)
{
    tutti__cfg_mask_names(kind, mask, ",", buf, len);
}

/* ---- each rule against the implementations ------------------------------- */

static const tutti__lint_impl_t *find_impl(const lint_t *l, const char *name)
{
    for (size_t i = 0; name != NULL && i < l->num_impls; i++)
        if (strcmp(l->impls[i].name, name) == 0)
            return &l->impls[i];
    return NULL;
}

/* "one that runs allreduce: A, B", the loaded implementations that run
 * every collective of @p colls (all: any name). */
static void expected_impls(const lint_t *l, uint32_t colls, char *buf,
                           size_t len)
{
    tutti__sbuf_t sb = {buf, len, 0};
    char what[200];
    size_t found = 0;

    if (colls == 0 || colls == ALL_COLLS) {
        tutti__sbuf_printf(&sb, "the name of a loaded implementation "
                           "(tutti-info lists them)");
        return;
    }
    names(&tutti__cfg_coll_kind, colls, what, sizeof(what));
    tutti__sbuf_printf(&sb, "one that runs %s", what);
    for (size_t i = 0; i < l->num_impls; i++) {
        if ((l->impls[i].collectives & colls) == colls)
            tutti__sbuf_printf(&sb, "%s%s", found++ ? ", " : ": ",
                               l->impls[i].name);
    }
    if (found == 0)
        tutti__sbuf_printf(&sb, " (no loaded implementation runs them all: "
                           "a rule for each)");
}

static void check_missing(lint_t *l, lrule_t *lr)
{
    const tutti__rule_t *r = lr->r;
    char devs[64], want[1024];

    /* A rule for accelerators only names an optional module (nccl, built
     * where its library is found): where nothing loaded runs there, its
     * absence says nothing about the file. */
    if (r->device_types != 0 && (r->device_types & l->native) == 0) {
        names(&tutti__cfg_device_kind, r->device_types, devs, sizeof(devs));
        say(l, r, NOTE, "implementation '%s' not checked: no loaded module "
            "runs on %s, the only device of this rule, which is skipped "
            "here", tutti__config_rule_algo(r), devs);
        return;
    }
    expected_impls(l, r->collectives, want, sizeof(want));
    say(l, r, FINDING, "implementation '%s' is not provided by any loaded "
        "module; expected %s", tutti__config_rule_algo(r), want);
}

/* Sets lr's implementation, collectives and device types, saying what
 * does not fit. */
static void check_impl(lint_t *l, lrule_t *lr)
{
    const tutti__rule_t *r = lr->r;
    const tutti__lint_impl_t *im = find_impl(l, r->algorithm);
    uint32_t missing;
    char miss[200], has[200], want[1024];

    lr->impl = im;
    if (im == NULL) {
        check_missing(l, lr);
        return;
    }
    if (r->num_params > 0 && !im->declares_params) {
        /* ABI 1.4 and older, or a row that sets none: loading took them. */
        tutti__sbuf_t sb = {want, sizeof(want), 0};
        for (size_t k = 0; k < r->num_params; k++)
            tutti__sbuf_printf(&sb, "%s%s", k ? ", " : "", r->params[k].key);
        say(l, r, WARNING, "implementation '%s' (module %s) declares no "
            "params: not checked (%s); expected its module to list the ones "
            "it reads", im->name, im->module, want);
    }
    missing = r->collectives & ~im->collectives;
    if (missing != 0) {
        /* As selection does (select.c): the whole rule is skipped. */
        names(&tutti__cfg_coll_kind, missing, miss, sizeof(miss));
        names(&tutti__cfg_coll_kind, im->collectives, has, sizeof(has));
        expected_impls(l, r->collectives, want, sizeof(want));
        say(l, r, FINDING, "implementation '%s' (module %s) does not run %s "
            "(it runs %s), so the rule is skipped; expected %s", im->name,
            im->module, miss, has, want);
        return;
    }
    lr->colls = (r->collectives ? r->collectives : ALL_COLLS) &
                im->collectives;
    missing = r->device_types & ~im->devices;
    if (missing != 0) {
        /* Calls on those devices pass the rule by (registry.c). */
        names(&tutti__cfg_device_kind, missing, miss, sizeof(miss));
        names(&tutti__cfg_device_kind, im->devices, has, sizeof(has));
        say(l, r, FINDING, "implementation '%s' (module %s) does not run on "
            "%s (it runs on %s); expected device: %s, or an implementation "
            "that runs on %s", im->name, im->module, miss, has, has, miss);
    }
    lr->devices = (r->device_types ? r->device_types : ALL_DEVICES) &
                  im->devices;
    if (lr->devices == 0)
        lr->colls = 0;
}

/* The calls of collective @p c rule @p lr is chosen for if no earlier
 * rule takes them. */
static box_t rule_box(const lrule_t *lr, int c)
{
    const tutti__rule_t *r = lr->r;
    box_t b = {{lr->devices, r->dtypes ? r->dtypes : ALL_DTYPES},
               {r->size_min, (uint64_t)(r->group_min > 1 ? r->group_min : 1),
                (uint64_t)(r->tasks_min > 1 ? r->tasks_min : 1),
                (uint64_t)(r->hosts_min > 1 ? r->hosts_min : 1)},
               {r->size_max, (uint64_t)r->group_max, (uint64_t)r->tasks_max,
                (uint64_t)r->hosts_max}};
    bool per_rank = (PER_RANK_COLLS & TUTTI_COLL_BIT(c)) &&
                    (lr->impl->per_rank_collectives & TUTTI_COLL_BIT(c));
    if (b.hi[RANGE_SIZE] == SIZE_PER_RANK && !per_rank)
        b.hi[RANGE_SIZE] = SIZE_PER_RANK - 1;
    return b;
}

/* A rule whose group_size, num_tasks and hosts leave no call never
 * matches. */
static void check_counts(lint_t *l, lrule_t *lr)
{
    const tutti__rule_t *r = lr->r;
    char g[64], t[64], h[64];

    if (lr->colls == 0)
        return;
    tutti__range_format((uint64_t)r->group_min, (uint64_t)r->group_max,
                        INT32_MAX, false, g, sizeof(g));
    tutti__range_format((uint64_t)r->tasks_min, (uint64_t)r->tasks_max,
                        INT32_MAX, false, t, sizeof(t));
    tutti__range_format((uint64_t)r->hosts_min, (uint64_t)r->hosts_max,
                        INT32_MAX, false, h, sizeof(h));
    if (r->group_max < 1 || r->tasks_max < 1 || r->hosts_max < 1) {
        bool group = r->group_max < 1, tasks = !group && r->tasks_max < 1;
        say(l, r, FINDING, "rule (%s) never matches: %s %s: a group has at "
            "least one member, one task and one host; expected 1 or more",
            tutti__config_rule_algo(r),
            group ? "group_size" : tasks ? "num_tasks" : "hosts",
            group ? g : tasks ? t : h);
        lr->colls = 0;
    } else if (r->tasks_min > r->group_max) {
        say(l, r, FINDING, "rule (%s) never matches: num_tasks %s is more "
            "than group_size %s allows, as each task holds at least one "
            "member; expected num_tasks up to %d", tutti__config_rule_algo(r),
            t, g, r->group_max);
        lr->colls = 0;
    } else if (r->hosts_min > r->tasks_max || r->hosts_min > r->group_max) {
        /* The tighter bound: a task runs on one host, a host holds a
         * member. */
        bool tasks = r->tasks_max <= r->group_max;
        say(l, r, FINDING, "rule (%s) never matches: hosts %s is more than "
            "%s %s allows, as each %s; expected hosts up to %d",
            tutti__config_rule_algo(r), h, tasks ? "num_tasks" : "group_size",
            tasks ? t : g, tasks ? "task runs on one host"
                                 : "host holds at least one member",
            tasks ? r->tasks_max : r->group_max);
        lr->colls = 0;
    }
}

/* ---- one collective: shadowed rules and gaps ----------------------------- */

/* " with size 4097-8191, device cuda": which calls of collective @p c
 * @p b holds, in the rules' keys; "" for all of them. */
static void describe(const box_t *b, int c, char *buf, size_t len)
{
    const box_t all = all_calls(c);
    tutti__sbuf_t sb = {buf, len, 0};
    const char *sep = " with ";
    char text[200];
    uint64_t lo = b->lo[RANGE_SIZE], hi = b->hi[RANGE_SIZE];
    uint64_t tasks_hi = b->hi[RANGE_TASKS] < b->hi[RANGE_GROUP]
                            ? b->hi[RANGE_TASKS]
                            : b->hi[RANGE_GROUP];
    uint64_t hosts_hi = b->hi[RANGE_HOSTS] < tasks_hi ? b->hi[RANGE_HOSTS]
                                                      : tasks_hi;

    buf[0] = '\0';
    if (lo == SIZE_PER_RANK) {
        tutti__sbuf_printf(&sb, "%sper-rank counts", sep);
        sep = ", ";
    } else if (lo == 0 && hi == SIZE_PER_RANK - 1 &&
               hi != all.hi[RANGE_SIZE]) {
        tutti__sbuf_printf(&sb, "%sequal counts", sep);
        sep = ", ";
    } else if (lo != 0 || hi != all.hi[RANGE_SIZE]) {
        tutti__range_format(lo, hi < SIZE_PER_RANK ? hi : SIZE_PER_RANK - 1,
                            SIZE_PER_RANK - 1, true, text, sizeof(text));
        tutti__sbuf_printf(&sb, "%ssize %s%s", sep, text,
                           hi == SIZE_PER_RANK ? " or per-rank counts" : "");
        sep = ", ";
    }
    if (b->set[SET_DEVICE] != ALL_DEVICES) {
        names(&tutti__cfg_device_kind, b->set[SET_DEVICE], text,
              sizeof(text));
        tutti__sbuf_printf(&sb, "%sdevice %s", sep, text);
        sep = ", ";
    }
    if (b->set[SET_DTYPE] != ALL_DTYPES) {
        names(&tutti__cfg_dtype_kind, b->set[SET_DTYPE], text, sizeof(text));
        tutti__sbuf_printf(&sb, "%sdtype %s", sep, text);
        sep = ", ";
    }
    if (b->lo[RANGE_GROUP] != 1 || b->hi[RANGE_GROUP] != INT32_MAX) {
        tutti__range_format(b->lo[RANGE_GROUP], b->hi[RANGE_GROUP],
                            INT32_MAX, false, text, sizeof(text));
        tutti__sbuf_printf(&sb, "%sgroup_size %s", sep, text);
        sep = ", ";
    }
    /* num_tasks up to group_size is no news: a task holds a member. */
    if (b->lo[RANGE_TASKS] != 1 || tasks_hi < b->hi[RANGE_GROUP]) {
        tutti__range_format(b->lo[RANGE_TASKS], tasks_hi, INT32_MAX, false,
                            text, sizeof(text));
        tutti__sbuf_printf(&sb, "%snum_tasks %s", sep, text);
        sep = ", ";
    }
    /* hosts up to num_tasks likewise: a task runs on one host. */
    if (b->lo[RANGE_HOSTS] != 1 || hosts_hi < tasks_hi) {
        tutti__range_format(b->lo[RANGE_HOSTS], hosts_hi, INT32_MAX, false,
                            text, sizeof(text));
        tutti__sbuf_printf(&sb, "%shosts %s", sep, text);
    }
}

/* The rule a gap @p b of collective @p c is reported at: the last rule of
 * @p c whose size range ends right below it, else the last rule of @p c
 * (one that names c, or names no collective and runs c). */
static const tutti__rule_t *gap_place(const lint_t *l, int c, const box_t *b)
{
    const tutti__rule_t *last = NULL, *below = NULL;

    for (size_t j = 0; j < l->n; j++) {
        const tutti__rule_t *r = l->rules[j].r;
        if (!((r->collectives | l->rules[j].colls) & TUTTI_COLL_BIT(c)))
            continue;
        last = r;
        if (r->size_max < SIZE_PER_RANK - 1 &&
            r->size_max + 1 == b->lo[RANGE_SIZE])
            below = r;
    }
    return below != NULL ? below : last;
}

static void report_gaps(lint_t *l, int c, const boxes_t *gaps)
{
    const char *coll = tutti_collective_name((tutti_collective_t)c);
    char what[512];

    for (size_t g = 0; g < gaps->n && g < GAPS_SHOWN; g++) {
        const tutti__rule_t *at = gap_place(l, c, &gaps->b[g]);
        describe(&gaps->b[g], c, what, sizeof(what));
        say(l, at, FINDING, "no rule matches %s calls%s; expected a rule that "
            "does, or one for %s without size, group_size, num_tasks and "
            "hosts after the others", coll, what, coll);
    }
    if (gaps->n > GAPS_SHOWN)
        say(l, gap_place(l, c, &gaps->b[GAPS_SHOWN]), FINDING,
            "no rule matches %zu more sets of %s calls (not listed); "
            "expected a rule for %s without size, group_size, num_tasks "
            "and hosts after the others", gaps->n - GAPS_SHOWN, coll, coll);
}

/* The rules' boxes of collective @p c in order: each less those before it
 * that take their calls (cover), then all calls less every cover. */
static void analyse(lint_t *l, int c)
{
    box_t *cover = calloc(l->n + 1, sizeof(*cover));
    size_t *from = calloc(l->n + 1, sizeof(*from));
    unsigned char *met = calloc(l->n + 1, 1);
    size_t num_cover = 0;
    bool has_rule = false;
    boxes_t rest = {0};

    if (cover == NULL || from == NULL || met == NULL) {
        l->oom = true;
        goto out;
    }
    for (size_t j = 0; j < l->n && !rest.over && !rest.oom; j++) {
        lrule_t *lr = &l->rules[j];
        /* A rule names c, or names no collective and runs c. */
        if ((lr->r->collectives | lr->colls) & TUTTI_COLL_BIT(c))
            has_rule = true;
        if (!(lr->colls & TUTTI_COLL_BIT(c)))
            continue;
        box_t b = rule_box(lr, c);
        rest = (boxes_t){0};
        boxes_push(&rest, &b);
        for (size_t k = 0; k < num_cover; k++)
            met[k] = boxes_minus(&rest, &cover[k]);
        if (rest.n == 0 && !rest.over && !rest.oom) {
            lr->shadowed |= TUTTI_COLL_BIT(c);
            for (size_t k = 0; k < num_cover; k++)
                l->by[j * l->n + from[k]] |= met[k];
        } else if (!lr->impl->may_decline) {
            from[num_cover] = j;
            cover[num_cover++] = b;
        }
        free(rest.b);
        rest.b = NULL;
        rest.n = 0;
    }
    if (!rest.over && !rest.oom && has_rule) {
        box_t all = all_calls(c);
        rest = (boxes_t){0};
        boxes_push(&rest, &all);
        for (size_t k = 0; k < num_cover; k++)
            boxes_minus(&rest, &cover[k]);
        if (!rest.over && !rest.oom)
            report_gaps(l, c, &rest);
        free(rest.b);
    }
    if (rest.oom)
        l->oom = true;
    else if (rest.over && l->n > 0)
        say(l, l->rules[0].r, NOTE, "%s not analysed: its rules cut the "
            "calls into more than %d sets",
            tutti_collective_name((tutti_collective_t)c),
            BOXES_MAX);
out:
    free(cover);
    free(from);
    free(met);
}

/* "FILE:12 (A), FILE:14 (B)": the rules i with by[j][i]. */
static size_t rules_by(const lint_t *l, size_t j, char *buf, size_t len)
{
    tutti__sbuf_t sb = {buf, len, 0};
    size_t count = 0;

    for (size_t i = 0; i < j; i++) {
        const tutti__rule_t *r = l->rules[i].r;
        if (!l->by[j * l->n + i])
            continue;
        if (count < RULES_NAMED)
            tutti__sbuf_printf(&sb, "%s%s:%d (%s)", count ? ", " : "",
                               r->file, r->line, tutti__config_rule_algo(r));
        count++;
    }
    if (count > RULES_NAMED)
        tutti__sbuf_printf(&sb, " and %zu more", count - RULES_NAMED);
    return count;
}

static void report_shadowed(lint_t *l, size_t j)
{
    const lrule_t *lr = &l->rules[j];
    const tutti__rule_t *r = lr->r;
    char by[1024], which[200] = "";
    size_t count;

    if (lr->shadowed == 0)
        return;
    if (lr->shadowed != lr->colls) {
        /* A rule for any collective that serves some is a catch-all. */
        if (r->collectives == 0)
            return;
        which[0] = ' ';
        names(&tutti__cfg_coll_kind, lr->shadowed, which + 1,
              sizeof(which) - 1);
    }
    count = rules_by(l, j, by, sizeof(by));
    say(l, r, FINDING, "rule (%s) never matches%s: %s %s take%s every call it "
        "could match; expected it removed, or moved before %s",
        tutti__config_rule_algo(r), which,
        count == 1 ? "the earlier rule" : "the earlier rules", by,
        count == 1 ? "s" : "", count == 1 ? "it" : "them");
}

/* Rule j has a size range that overlaps the one of an earlier rule alike
 * in every other key: that rule takes the calls of the overlap. */
static void report_overlaps(lint_t *l, size_t j)
{
    const lrule_t *b = &l->rules[j];
    const tutti__rule_t *rb = b->r;
    char mine[64], theirs[64], common[64], colls[200];

    if (rb->size_min == 0 && rb->size_max == SIZE_PER_RANK)
        return; /* no size: the catch-all after the ranges */
    for (size_t i = 0; i < j; i++) {
        const lrule_t *a = &l->rules[i];
        const tutti__rule_t *ra = a->r;
        uint32_t both = a->colls & b->colls & ~a->shadowed & ~b->shadowed;
        if (both == 0 || a->impl->may_decline ||
            (a->devices & b->devices) == 0 ||
            ra->device_types != rb->device_types ||
            ra->dtypes != rb->dtypes || ra->group_min != rb->group_min ||
            ra->group_max != rb->group_max ||
            ra->tasks_min != rb->tasks_min || ra->tasks_max != rb->tasks_max ||
            ra->hosts_min != rb->hosts_min || ra->hosts_max != rb->hosts_max)
            continue;
        uint64_t lo = ra->size_min > rb->size_min ? ra->size_min
                                                  : rb->size_min;
        uint64_t hi = ra->size_max < rb->size_max ? ra->size_max
                                                  : rb->size_max;
        if (lo > hi)
            continue;
        tutti__range_format(rb->size_min, rb->size_max, SIZE_PER_RANK, true,
                            mine, sizeof(mine));
        tutti__range_format(ra->size_min, ra->size_max, SIZE_PER_RANK, true,
                            theirs, sizeof(theirs));
        tutti__range_format(lo, hi, SIZE_PER_RANK, true, common,
                            sizeof(common));
        names(&tutti__cfg_coll_kind, both, colls, sizeof(colls));
        say(l, rb, FINDING, "size %s overlaps size %s of the earlier rule "
            "%s:%d (%s), alike in every other key: %s calls of %s go to "
            "that rule; expected size ranges that do not overlap", mine,
            theirs, ra->file, ra->line, tutti__config_rule_algo(ra), colls,
            common);
    }
}

/* ---- the whole file ------------------------------------------------------ */

static tutti_status_t lint_init(lint_t *l, const tutti__config_t *cfg,
                                const tutti__lint_impl_t *impls,
                                size_t num_impls)
{
    memset(l, 0, sizeof(*l));
    l->impls = impls;
    l->num_impls = num_impls;
    for (size_t i = 0; i < num_impls; i++)
        l->native |= impls[i].native_devices;
    l->rules = calloc(cfg->num_rules + 1, sizeof(*l->rules));
    if (l->rules == NULL)
        return TUTTI_ERR_NO_MEMORY;
    /* TUTTI_ALGO's rules (line 0) are not the file's. */
    for (size_t i = 0; i < cfg->num_rules; i++)
        if (cfg->rules[i].line > 0 && cfg->rules[i].file != NULL)
            l->rules[l->n++].r = &cfg->rules[i];
    l->by = calloc(l->n * l->n + 1, 1);
    return l->by != NULL ? TUTTI_OK : TUTTI_ERR_NO_MEMORY;
}

static void lint_free(lint_t *l)
{
    for (size_t i = 0; i < l->num_out; i++)
        free(l->out[i].text);
    free(l->out);
    free(l->rules);
    free(l->by);
}

tutti_status_t tutti__select_lint(const tutti__config_t *cfg,
                                  const tutti__lint_impl_t *impls,
                                  size_t num_impls, FILE *out,
                                  size_t *findings_out)
{
    lint_t l;
    tutti_status_t st = lint_init(&l, cfg, impls, num_impls);

    for (size_t j = 0; st == TUTTI_OK && j < l.n; j++) {
        check_impl(&l, &l.rules[j]);
        check_counts(&l, &l.rules[j]);
    }
    for (int c = 0; st == TUTTI_OK && c < TUTTI_COLL_COUNT; c++)
        analyse(&l, c);
    for (size_t j = 0; st == TUTTI_OK && j < l.n; j++) {
        report_shadowed(&l, j);
        if (l.rules[j].colls != 0)
            report_overlaps(&l, j);
    }
    if (st == TUTTI_OK && l.oom)
        st = TUTTI_ERR_NO_MEMORY;
    if (st == TUTTI_OK) {
        if (l.num_out > 1) /* no qsort of NULL */
            qsort(l.out, l.num_out, sizeof(*l.out), by_line);
        for (size_t i = 0; i < l.num_out; i++)
            fprintf(out, "%s\n", l.out[i].text);
        *findings_out = l.findings;
    }
    lint_free(&l);
    return st;
}
