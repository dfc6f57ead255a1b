/*
 * A loaded module's image (internal): the address ranges its loadable
 * segments occupy once mapped, and checks that a table or a string a
 * descriptor points to lies inside one of them before the core reads
 * through it (plugin/check.h adds the file's symbol table: a table must
 * also lie within its variable).  A pointer to another object (libc), to
 * a stack or to unmapped memory, a table longer than its segment and a
 * string whose NUL never comes before its segment ends are all refused,
 * with why.
 */
#ifndef TUTTI_CORE_PLUGIN_IMAGE_H
#define TUTTI_CORE_PLUGIN_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/** Most loadable segments a module may have (linkers make 2 to 5). */
#define TUTTI__IMAGE_SEGS_MAX 32

typedef struct {
    const char *file;      /* the shared object mapped (borrowed) */
    const char *lname;     /* its name among the objects mapped (the
                              dynamic loader's, borrowed) */
    uintptr_t bias;        /* its load bias: address = bias + vaddr */
    int count;             /* readable loadable segments */
    uintptr_t start[TUTTI__IMAGE_SEGS_MAX];
    uintptr_t end[TUTTI__IMAGE_SEGS_MAX]; /* one past the last byte */
} tutti__image_t;

/** The readable loadable segments of the object dlopen() gave as
 *  @p handle, mapped from @p file (named in messages). */
int tutti__image_find(tutti__image_t *img, void *handle, const char *file,
                      char *why, size_t len);

/** Copies @p bytes from @p src, which the image holds, to @p dst: module
 *  memory known to be mapped but not known to lie in one C object (the
 *  rows of a stripped module's table that runs past its variable), so it
 *  is read byte by byte, without the address sanitizer's object checks. */
void tutti__image_copy(void *dst, const void *src, size_t bytes);

/** The @p bytes (at least one) from @p p lie in one segment: else why,
 *  naming @p what and where @p p points ("lies outside the module (in
 *  libc.so.6)", "runs 12 bytes past the end of its segment"). */
int tutti__image_span(const tutti__image_t *img, const char *what,
                      const void *p, size_t bytes, char *why, size_t len);

/** A string: it starts in a segment, and its NUL comes before the
 *  segment ends and within @p max bytes, so it can be read (what it may
 *  hold is for the caller to check).  NULL passes when @p optional. */
int tutti__image_string(const tutti__image_t *img, const char *what,
                        const char *s, size_t max, int optional, char *why,
                        size_t len);

/** A NULL-terminated list of at most @p max pointers (aliases, parameter
 *  names, choices): each slot up to the NULL lies in a segment, and each
 *  entry is a string as tutti__image_string() checks it (at most
 *  @p str_max bytes).  NULL (no list) passes. */
int tutti__image_strings(const tutti__image_t *img, const char *what,
                         const char *const *list, size_t max, size_t str_max,
                         char *why, size_t len);

#endif
