/*
 * Lists of strings (internal): module directories, modules to load,
 * transport names.  Each list owns copies of its strings.  And trimming a
 * string of its blanks, and growing an array by one.
 */
#ifndef TUTTI_CORE_BASE_STRLIST_H
#define TUTTI_CORE_BASE_STRLIST_H

#include <stddef.h>

#include <tutti/status.h>

typedef struct {
    char **items;
    size_t count;
} tutti__strlist_t;

/** Append a copy of @p s; TUTTI_ERR_NO_MEMORY (nothing recorded) when
 *  memory runs out, leaving @p l as it was. */
tutti_status_t tutti__strlist_push(tutti__strlist_t *l, const char *s);
/** Append a copy of each of @p src's items. */
tutti_status_t tutti__strlist_append(tutti__strlist_t *dst,
                                     const tutti__strlist_t *src);
/** Append each non-empty entry of the @p sep separated list @p s, blanks
 *  around entries kept as they are. */
tutti_status_t tutti__strlist_split(tutti__strlist_t *l, const char *s,
                                    char sep);
/** Whether @p s is one of the items. */
int tutti__strlist_has(const tutti__strlist_t *l, const char *s);
/** Free the items and leave @p l empty. */
void tutti__strlist_free(tutti__strlist_t *l);

/** @p s without the blanks around it: the start moves, the end is cut in
 *  place. */
char *tutti__trim(char *s);

/** Room for one more element at the end of the array at *@p array, of
 *  @p count elements of @p size bytes: the new slot, zeroed (the caller
 *  counts it), or NULL when memory runs out, the array as it was. */
void *tutti__grow(void *array, size_t count, size_t size);

#endif
