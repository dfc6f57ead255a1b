/* Lists of strings (strlist.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/strlist.h"

tutti_status_t tutti__strlist_push(tutti__strlist_t *l, const char *s)
{
    char *copy = strdup(s);
    char **items = copy != NULL
                       ? realloc(l->items, (l->count + 1) * sizeof(*items))
                       : NULL;
    if (items == NULL) {
        free(copy);
        return TUTTI_ERR_NO_MEMORY;
    }
    l->items = items;
    items[l->count++] = copy;
    return TUTTI_OK;
}

tutti_status_t tutti__strlist_append(tutti__strlist_t *dst,
                                     const tutti__strlist_t *src)
{
    tutti_status_t st = TUTTI_OK;
    for (size_t i = 0; i < src->count && st == TUTTI_OK; i++)
        st = tutti__strlist_push(dst, src->items[i]);
    return st;
}

tutti_status_t tutti__strlist_split(tutti__strlist_t *l, const char *s,
                                    char sep)
{
    tutti_status_t st = TUTTI_OK;
    while (st == TUTTI_OK && *s != '\0') {
        const char *end = strchr(s, sep);
        size_t n = end != NULL ? (size_t)(end - s) : strlen(s);
        if (n > 0) {
            char *item = strndup(s, n);
            st = item != NULL ? tutti__strlist_push(l, item)
                              : TUTTI_ERR_NO_MEMORY;
            free(item);
        }
        s += n + (end != NULL);
    }
    return st;
}

int tutti__strlist_has(const tutti__strlist_t *l, const char *s)
{
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i], s) == 0)
            return 1;
    return 0;
}

void tutti__strlist_free(tutti__strlist_t *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

char *tutti__trim(char *s)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

void *tutti__grow(void *array, size_t count, size_t size)
{
    void **at = array;
    char *grown = realloc(*at, (count + 1) * size);
    if (grown == NULL)
        return NULL;
    *at = grown;
    memset(grown + count * size, 0, size);
    return grown + count * size;
}
