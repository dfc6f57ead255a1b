/*
 * A caller's text buffer that messages are appended to (internal), for
 * explanations built line by line.
 */
#ifndef TUTTI_CORE_BASE_SBUF_H
#define TUTTI_CORE_BASE_SBUF_H

#include <stddef.h>

typedef struct {
    char *buf; /* NULL: discard everything */
    size_t len;
    size_t pos;
} tutti__sbuf_t;

/** Appends to @p sb; stops quietly (truncating) when it is full. */
void tutti__sbuf_printf(tutti__sbuf_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
