/* A text buffer that messages are appended to (sbuf.h). */
#include <stdarg.h>
#include <stdio.h>

#include "base/sbuf.h"

void tutti__sbuf_printf(tutti__sbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (sb->buf == NULL || sb->pos + 1 >= sb->len)
        return;
    va_start(ap, fmt);
    n = vsnprintf(sb->buf + sb->pos, sb->len - sb->pos, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb->pos = sb->pos + (size_t)n < sb->len ? sb->pos + (size_t)n
                                                : sb->len - 1;
}
