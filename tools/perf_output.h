/*
 * What tutti-perf writes: its rows as the nccl-tests-like table (the
 * default), as CSV (--csv) or as one JSON document (--json), on rank 0's
 * stdout; and, when stderr is a terminal, a progress line there during a
 * long sweep.  The same column names in all three formats.
 */
#ifndef TUTTI_TOOLS_PERF_OUTPUT_H
#define TUTTI_TOOLS_PERF_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    PERF_FORMAT_TABLE,
    PERF_FORMAT_CSV,
    PERF_FORMAT_JSON
} perf_format_t;

/** What every row of a sweep shares.  The strings are borrowed for as long
 *  as the writer that holds this is used. */
typedef struct {
    const char *coll, *dtype;
    const char *redop;       /**< "none" unless a reduction */
    int root;                /**< -1 unless rooted */
    int ranks;
    int inplace;
    int iters, warmups;
    const char *device;      /**< "cpu" or "cuda" */
    int blocks;              /**< the size holds n blocks */
    const char *size_doc;    /**< what the size is: "each rank's buffer" */
    const char *bus_formula; /**< "2(n-1)/n", "(n-1)/n" or "1" */
    double bus_factor;
    const char *const *gpus; /**< cuda: each rank's PCI bus id; else NULL */
} perf_run_t;

/** One size's measurement. */
typedef struct {
    size_t bytes, count;
    double time_us, algbw, busbw;
    unsigned long long wrong;
    const char *impl;
} perf_row_t;

/** A writer: where, in which format, what it has written so far. */
typedef struct {
    FILE *f;
    perf_format_t format;
    const perf_run_t *run;
    int rows;
} perf_out_t;

/** Starts the output: the table's comment lines, the CSV header line, or
 *  the JSON document up to its array of rows. */
void perf_out_begin(perf_out_t *o, FILE *f, perf_format_t format,
                    const perf_run_t *run);

/** One row, flushed at once so that a long sweep shows as it goes. */
void perf_out_row(perf_out_t *o, const perf_row_t *row);

/**
 * Ends the output.  JSON closes its array and object, with "error": @p
 * error when the sweep stopped before its last size (NULL: it did not);
 * the table and CSV write nothing here, the error having gone to stderr.
 */
void perf_out_end(perf_out_t *o, const char *error);

/** @p s as a JSON string, quotes included (control characters, quotes and
 *  backslashes escaped). */
void perf_json_string(FILE *f, const char *s);

/** @p s as a CSV field: as it is, or quoted (quotes doubled) where it holds
 *  a comma, a quote or a line break. */
void perf_csv_field(FILE *f, const char *s);

/** The progress line on stderr: shown only when stderr is a terminal, and
 *  only once the sweep has run PERF_PROGRESS_AFTER_S seconds. */
#define PERF_PROGRESS_AFTER_S 1.0
typedef struct {
    int tty;        /* stderr is a terminal */
    int shown;      /* the line is on the screen now */
    int total;      /* sizes in the sweep */
    double start;   /* when the sweep began, seconds */
} perf_progress_t;

/** Starts the clock of a sweep of @p total sizes; the line may show only
 *  where @p on (rank 0) and stderr is a terminal (looked at once, here). */
void perf_progress_init(perf_progress_t *p, int total, int on);

/** Says that @p done sizes are finished and the next is @p bytes, if the
 *  line is due; otherwise writes nothing. */
void perf_progress_show(perf_progress_t *p, int done, size_t bytes);

/** Erases the line if it is shown (before a row goes to the same screen,
 *  and at the end). */
void perf_progress_clear(perf_progress_t *p);

#endif
