/*
 * What test_man reads, read from the files themselves: C sources (string
 * literals, option tables, declarations of the public headers), automake
 * fragments (programs, their sources, man pages) and man pages (sections,
 * items and their tags, as the text a reader sees).  Nothing here knows
 * a name of Tutti's: the lists all come from the files.
 */
#ifndef TUTTI_TEST_MAN_SCAN_H
#define TUTTI_TEST_MAN_SCAN_H

#include <stddef.h>

/* ---- sets of strings ----------------------------------------------------- */

/** Distinct strings in the order first added, each with a note (where it
 *  was found); the set owns both. */
typedef struct {
    char **items;
    char **notes;
    size_t count, cap;
} strset_t;

/** Adds @p s (noting @p note, which may be NULL) unless present. */
void set_add(strset_t *set, const char *s, const char *note);
int set_has(const strset_t *set, const char *s);
/** The note of @p s, or "" if it has none or is absent. */
const char *set_note(const strset_t *set, const char *s);
void set_free(strset_t *set);

/* ---- files --------------------------------------------------------------- */

/** The whole file, NUL-terminated, or NULL (errno set). */
char *read_text(const char *path);
/** Calls @p fn on every regular file below @p dir (sorted, recursively)
 *  whose name ends in one of @p exts (NULL-terminated), with its path. */
void walk_files(const char *dir, const char *const *exts,
                void (*fn)(const char *path, void *arg), void *arg);

/* ---- C ------------------------------------------------------------------- */

/** @p text with comments made blanks (strings kept), and every string
 *  literal that is a whole TUTTI_ name added to @p names (noting @p path).
 *  Returns a copy the caller frees. */
char *c_scan(const char *text, const char *path, strset_t *names);
/** Long option names of every `struct option` table in @p code. */
void c_options(const char *code, strset_t *out);
/** Functions (tutti_*() declared or defined outside braces), type names
 *  (tutti_*_t), macros (#define TUTTI_*, not include guards or helpers
 *  ending in _) and every TUTTI_ identifier, the X-macro lists' enumerators
 *  included, of a header's @p code (comments blanked).  Any out may be
 *  NULL.  @p what notes where. */
void c_header_names(const char *code, const char *what, strset_t *functions,
                    strset_t *types, strset_t *macros, strset_t *idents);
/** The X-macro list @p list's enumerators (TUTTI_STATUS_LIST: TUTTI_OK, ...)
 *  in @p code. */
void c_xlist_names(const char *code, const char *list, strset_t *out);
/** The names in the `{"name", ...}` rows of the table @p table in @p code;
 *  0 if no such table. */
int c_table_names(const char *code, const char *table, strset_t *out);

/* ---- automake ------------------------------------------------------------ */

/** Every word assigned (= or +=) to @p var in @p text, variables ($(...))
 *  left out. */
void mk_words(const char *text, const char *var, strset_t *out);
/** @p makefile_am and the fragments it includes, in order, below @p srcdir
 *  (paths relative to it). */
void mk_fragments(const char *srcdir, const char *makefile_am, strset_t *out);

/* ---- man pages ----------------------------------------------------------- */

/** One line of text as a reader sees it (font changes, escapes and macro
 *  names gone), where it stands: section (.SH), item (.TP, counted from 1
 *  in the page; 0 outside items) and whether it is the item's tag. */
typedef struct {
    char *text;
    char *section;
    int item;
    int tag;
} man_line_t;

typedef struct {
    char *path; /* as named in messages: man/tutti.3 */
    man_line_t *lines;
    size_t count;
} man_page_t;

/** Reads @p file (named @p name in messages); 0, or -1 if unreadable. */
int man_read(const char *file, const char *name, man_page_t *page);
void man_free(man_page_t *page);
/** 1 if @p page has a section named @p section. */
int man_has_section(const man_page_t *page, const char *section);
/** The text of @p section (NULL: the whole page), lines joined by '\n';
 *  with @p tags_only, the tags of its items alone.  Caller frees. */
char *man_text(const man_page_t *page, const char *section, int tags_only);
/** The text of item @p item without its tag.  Caller frees. */
char *man_item_body(const man_page_t *page, int item);
/** The first word of each tag in @p section, with its item noted as a
 *  number. */
void man_tag_words(const man_page_t *page, const char *section, strset_t *out);

/* ---- words in text ------------------------------------------------------- */

/** TUTTI_ names in @p text (not prefixes such as TUTTI_ERR_*). */
void words_upper(const char *text, strset_t *out);
/** Long options (--name) in @p text. */
void words_options(const char *text, strset_t *out);
/** Functions named in @p text: tutti_x( or tutti_x (). */
void words_functions(const char *text, strset_t *out);
/** Type names tutti_*_t in @p text. */
void words_types(const char *text, strset_t *out);
/** 1 if @p word occurs in @p text, not as part of a longer name. */
int has_word(const char *text, const char *word);

#endif
