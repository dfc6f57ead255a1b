/*
 * tutti-perf's output: the table, CSV and JSON writers over one list of
 * column names, and the progress line a terminal gets on stderr.  The
 * machine formats print times and bandwidths with 6 significant digits,
 * not the table's fixed decimals, so a small size's bandwidth does not
 * read 0 (a log scale cannot draw it).
 */
#include "perf_output.h"
#include "tool_util.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The columns of a row, in order, as every format names them. */
enum {
    COL_SIZE, COL_COUNT, COL_TYPE, COL_REDOP, COL_ROOT, COL_TIME, COL_ALGBW,
    COL_BUSBW, COL_WRONG, COL_IMPL, COL_COLL, NCOLS
};
static const char *const col_names[NCOLS] = {
    "size", "count", "type", "redop", "root", "time_us", "algbw_GBps",
    "busbw_GBps", "#wrong", "impl", "coll"};

/* What CSV adds to each line: the run's settings no column shows. */
static const char csv_run_cols[] = "ranks,inplace,iters,warmup,device";

void perf_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void perf_csv_field(FILE *f, const char *s)
{
    if (s[strcspn(s, ",\"\r\n")] == '\0') {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A JSON number: JSON has no infinity or NaN, so those are null. */
static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* A member of an object: @p sep (what comes before it), then "key": and
 * the value, a string, an integer or a number. */
static void json_key(FILE *f, const char *sep, const char *key)
{
    fputs(sep, f);
    perf_json_string(f, key);
    fputs(": ", f);
}

static void json_str(FILE *f, const char *sep, const char *key,
                     const char *v)
{
    json_key(f, sep, key);
    perf_json_string(f, v);
}

static void json_int(FILE *f, const char *sep, const char *key, long long v)
{
    json_key(f, sep, key);
    fprintf(f, "%lld", v);
}

static void json_num(FILE *f, const char *sep, const char *key, double v)
{
    json_key(f, sep, key);
    json_number(f, v);
}

static void table_begin(FILE *f, const perf_run_t *r)
{
    char op[32] = "", root[32] = "";

    if (strcmp(r->redop, "none") != 0)
        snprintf(op, sizeof(op), ", %s", r->redop);
    if (r->root >= 0)
        snprintf(root, sizeof(root), ", root %d", r->root);
    fprintf(f, "# tutti-perf: %s, %d ranks, %s%s%s, %s, %d iterations "
            "(+%d warm-up)\n", r->coll, r->ranks, r->dtype, op, root,
            r->inplace ? "in place" : "out of place", r->iters, r->warmups);
    fprintf(f, "# size = %scount x %s (%s); busbw = algbw x %s = %.4g\n",
            r->blocks ? "n x " : "", r->dtype, r->size_doc, r->bus_formula,
            r->bus_factor);
    for (int i = 0; r->gpus != NULL && i < r->ranks; i++)
        fprintf(f, "# rank %d: cuda, GPU %s\n", i, r->gpus[i]);
    fprintf(f, "#%11s %12s %9s %6s %5s %11s %11s %11s %7s  %s  %s\n",
            col_names[0], col_names[1], col_names[2], col_names[3],
            col_names[4], col_names[5], col_names[6], col_names[7],
            col_names[8], col_names[9], col_names[10]);
}

static void json_begin(FILE *f, const perf_run_t *r)
{
    static const char *const nl = ",\n  ";
    char conv[128];

    snprintf(conv, sizeof(conv), "%scount x %s: %s", r->blocks ? "n x " : "",
             r->dtype, r->size_doc);
    json_str(f, "{\n  ", "tool", "tutti-perf");
    json_str(f, nl, "collective", r->coll);
    json_str(f, nl, "dtype", r->dtype);
    json_str(f, nl, "redop", r->redop);
    json_int(f, nl, "root", r->root);
    json_int(f, nl, "ranks", r->ranks);
    json_key(f, nl, "inplace");
    fputs(r->inplace ? "true" : "false", f);
    json_int(f, nl, "iters", r->iters);
    json_int(f, nl, "warmup", r->warmups);
    json_str(f, nl, "device", r->device);
    json_str(f, nl, "size_convention", conv);
    json_str(f, nl, "bus_formula", r->bus_formula);
    json_num(f, nl, "bus_factor", r->bus_factor);
    if (r->gpus != NULL) {
        json_key(f, nl, "gpus");
        fputc('[', f);
        for (int i = 0; i < r->ranks; i++) {
            fputs(i ? ", " : "", f);
            perf_json_string(f, r->gpus[i]);
        }
        fputc(']', f);
    }
    json_key(f, nl, "rows");
    fputc('[', f);
}

void perf_out_begin(perf_out_t *o, FILE *f, perf_format_t format,
                    const perf_run_t *run)
{
    *o = (perf_out_t){f, format, run, 0};
    switch (format) {
    case PERF_FORMAT_TABLE:
        table_begin(f, run);
        break;
    case PERF_FORMAT_CSV:
        for (int i = 0; i < NCOLS; i++)
            fprintf(f, "%s,", col_names[i]);
        fprintf(f, "%s\n", csv_run_cols);
        break;
    case PERF_FORMAT_JSON:
        json_begin(f, run);
        break;
    }
    fflush(f);
}

static void csv_row(FILE *f, const perf_run_t *r, const perf_row_t *w)
{
    fprintf(f, "%zu,%zu,", w->bytes, w->count);
    perf_csv_field(f, r->dtype);
    fputc(',', f);
    perf_csv_field(f, r->redop);
    fprintf(f, ",%d,%.6g,%.6g,%.6g,%llu,", r->root, w->time_us, w->algbw,
            w->busbw, w->wrong);
    perf_csv_field(f, w->impl);
    fputc(',', f);
    perf_csv_field(f, r->coll);
    fprintf(f, ",%d,%d,%d,%d,", r->ranks, r->inplace, r->iters, r->warmups);
    perf_csv_field(f, r->device);
    fputc('\n', f);
}

static void json_row(FILE *f, const perf_run_t *r, const perf_row_t *w,
                     int first)
{
    const char *const *k = col_names;

    fputs(first ? "\n    {" : ",\n    {", f);
    json_int(f, "", k[COL_SIZE], (long long)w->bytes);
    json_int(f, ", ", k[COL_COUNT], (long long)w->count);
    json_str(f, ", ", k[COL_TYPE], r->dtype);
    json_str(f, ", ", k[COL_REDOP], r->redop);
    json_int(f, ", ", k[COL_ROOT], r->root);
    json_num(f, ", ", k[COL_TIME], w->time_us);
    json_num(f, ", ", k[COL_ALGBW], w->algbw);
    json_num(f, ", ", k[COL_BUSBW], w->busbw);
    json_int(f, ", ", k[COL_WRONG], (long long)w->wrong);
    json_str(f, ", ", k[COL_IMPL], w->impl);
    json_str(f, ", ", k[COL_COLL], r->coll);
    fputc('}', f);
}

void perf_out_row(perf_out_t *o, const perf_row_t *w)
{
    const perf_run_t *r = o->run;

    switch (o->format) {
    case PERF_FORMAT_TABLE:
        fprintf(o->f, "%12zu %12zu %9s %6s %5d %11.2f %11.3f %11.3f %7llu  "
                "%s  %s\n", w->bytes, w->count, r->dtype, r->redop, r->root,
                w->time_us, w->algbw, w->busbw, w->wrong, w->impl, r->coll);
        break;
    case PERF_FORMAT_CSV:
        csv_row(o->f, r, w);
        break;
    case PERF_FORMAT_JSON:
        json_row(o->f, r, w, o->rows == 0);
        break;
    }
    o->rows++;
    fflush(o->f);
}

void perf_out_end(perf_out_t *o, const char *error)
{
    if (o->format != PERF_FORMAT_JSON)
        return;
    fputs(o->rows > 0 ? "\n  ]" : "]", o->f);
    if (error != NULL)
        json_str(o->f, ",\n  ", "error", error);
    fputs("\n}\n", o->f);
    fflush(o->f);
}

/* ---- the progress line ------------------------------------------------- */

void perf_progress_init(perf_progress_t *p, int total, int on)
{
    *p = (perf_progress_t){on && isatty(STDERR_FILENO), 0, total, tool_now()};
}

void perf_progress_show(perf_progress_t *p, int done, size_t bytes)
{
    double t;

    if (!p->tty || (t = tool_now() - p->start) < PERF_PROGRESS_AFTER_S)
        return;
    /* Back to the line's start and clear it: the line is redrawn in
     * place, never scrolled. */
    fprintf(stderr, "\r\033[Ktutti-perf: %d of %d sizes done, now %zu "
            "bytes, %.0f s", done, p->total, bytes, t);
    fflush(stderr);
    p->shown = 1;
}

void perf_progress_clear(perf_progress_t *p)
{
    if (!p->shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
}
