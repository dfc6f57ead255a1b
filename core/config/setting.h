/*
 * One setting's row at work (internal): text to typed value, checked
 * against the row's bounds (the one place a range is checked), value back
 * to text, and what a valid value looks like.  The rows are the core's
 * own (keys.c) and those modules declare (tutti_setting_t, plugin.h); the
 * core's lists use two more types of its own.
 */
#ifndef TUTTI_CORE_CONFIG_SETTING_H
#define TUTTI_CORE_CONFIG_SETTING_H

#include <stdbool.h>
#include <stddef.h>

#include <tutti/plugin.h>
#include <tutti/status.h>

/* The core's list types (value: tutti__strlist_t).  In YAML a list or one
 * item; in the environment a list with these separators. */
#define TUTTI__SETTING_PATHS 100 /* directories; env: colon list that goes
                                    before the file's */
#define TUTTI__SETTING_NAMES 101 /* names; env: comma list that replaces */

/** Whether @p row is well formed for a settings struct of @p size bytes
 *  (name, type, place, bounds, choices, default); why not in @p why. */
bool tutti__setting_row_ok(const tutti_setting_t *row, size_t size, char *why,
                           size_t len);

/** The most seconds a SECONDS setting holds (11.6 days): a larger value
 *  is taken as this, with a warning naming the setting and the value. */
#define TUTTI__SECONDS_MAX 1e6

/** Sets @p row's value in @p values from @p text (a list type: the whole
 *  list, split as the environment writes it).  TUTTI_ERR_CONFIG, with
 *  nothing recorded and nothing changed, if @p text is not a valid value:
 *  the caller says where it came from; TUTTI_ERR_NO_MEMORY likewise. */
tutti_status_t tutti__setting_set(const tutti_setting_t *row,
                                  const char *text, void *values);
/** A list type: appends one item @p text, as tutti__setting_set(). */
tutti_status_t tutti__setting_add_item(const tutti_setting_t *row,
                                       const char *text, void *values);
/** A list type: empties the list, freeing what it owned (a file's list
 *  replaces the default); other types own nothing. */
void tutti__setting_clear(const tutti_setting_t *row, void *values);
/** Writes the value as a user would (sizes with suffixes, lists as
 *  [a, b], strings as they are). */
void tutti__setting_print(const tutti_setting_t *row, const void *values,
                          char *buf, size_t len);
/** What a valid value looks like: the row's own text, or one said from its
 *  type and bounds ("a whole number from 1 to 16"). */
const char *tutti__setting_expected(const tutti_setting_t *row, char *buf,
                                    size_t len);
/** The row's environment variable: its own, or TUTTI_<SECTION>_<NAME>. */
const char *tutti__setting_env(const tutti_setting_t *row,
                               const char *section, char *buf, size_t len);

/** Copies @p row's value from @p src into @p dst (deep for lists). */
tutti_status_t tutti__setting_copy(const tutti_setting_t *row, void *dst,
                                   const void *src);

#endif
