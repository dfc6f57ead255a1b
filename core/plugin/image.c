/* A loaded module's image: its segments as mapped, and the checks that
 * what a descriptor points to lies in them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "plugin/image.h"

typedef struct {
    tutti__image_t *img;
    const char *name; /* the object's l_name */
    uintptr_t bias;
    int found, over;
} phdr_walk_t;

/* dl_iterate_phdr's callback: the readable PT_LOAD segments of the object
 * that has the module's bias and name. */
static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    phdr_walk_t *w = arg;
    tutti__image_t *img = w->img;
    (void)size;
    if (info->dlpi_addr != w->bias || info->dlpi_name == NULL ||
        strcmp(info->dlpi_name, w->name) != 0)
        return 0;
    w->found = 1;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) ||
            ph->p_memsz == 0)
            continue;
        if (img->count == TUTTI__IMAGE_SEGS_MAX) {
            w->over = 1;
            break;
        }
        img->start[img->count] = info->dlpi_addr + ph->p_vaddr;
        img->end[img->count] = img->start[img->count] + ph->p_memsz;
        img->count++;
    }
    return 1;
}

int tutti__image_find(tutti__image_t *img, void *handle, const char *file,
                      char *why, size_t len)
{
    struct link_map *lm = NULL;
    memset(img, 0, sizeof(*img));
    img->file = file;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
        const char *err = dlerror();
        snprintf(why, len, "cannot learn where it was mapped: %s",
                 err ? err : "no link map");
        return 0;
    }
    phdr_walk_t w = {img, lm->l_name, lm->l_addr, 0, 0};
    img->bias = lm->l_addr;
    img->lname = lm->l_name;
    dl_iterate_phdr(collect, &w);
    if (!w.found || img->count == 0) {
        snprintf(why, len, "cannot find its loadable segments among the "
                 "objects mapped");
        return 0;
    }
    if (w.over) {
        snprintf(why, len, "over %d loadable segments", TUTTI__IMAGE_SEGS_MAX);
        return 0;
    }
    return 1;
}

/* The segment holding address @p a, or -1. */
static int seg_of(const tutti__image_t *img, uintptr_t a)
{
    for (int i = 0; i < img->count; i++)
        if (a >= img->start[i] && a < img->end[i])
            return i;
    return -1;
}

__attribute__((no_sanitize_address)) void
tutti__image_copy(void *dst, const void *src, size_t bytes)
{
    const volatile unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < bytes; i++)
        d[i] = s[i];
}

/* Why @p p is in no segment: "in libc.so.6", "between its segments", "in
 * no object mapped" (dladdr reads the link maps, never @p p itself). */
static const char *outside(const tutti__image_t *img, const void *p,
                           char *buf, size_t len)
{
    Dl_info info;
    if (dladdr(p, &info) == 0 || info.dli_fname == NULL)
        return "in no object mapped";
    if (strcmp(info.dli_fname, img->lname) == 0)
        return "between its segments";
    const char *base = strrchr(info.dli_fname, '/');
    snprintf(buf, len, "in %s", base ? base + 1 : info.dli_fname);
    return buf;
}

int tutti__image_span(const tutti__image_t *img, const char *what,
                      const void *p, size_t bytes, char *why, size_t len)
{
    char where[300];
    uintptr_t a = (uintptr_t)p;
    int i = seg_of(img, a);
    if (i < 0) {
        snprintf(why, len, "%s at %p lies outside the module (%s)", what, p,
                 outside(img, p, where, sizeof(where)));
        return 0;
    }
    if (bytes > img->end[i] - a) {
        snprintf(why, len, "%s at %p (%zu bytes) runs %zu bytes past the "
                 "end of its segment", what, p, bytes,
                 bytes - (size_t)(img->end[i] - a));
        return 0;
    }
    return 1;
}

int tutti__image_string(const tutti__image_t *img, const char *what,
                        const char *s, size_t max, int optional, char *why,
                        size_t len)
{
    if (s == NULL) {
        if (!optional)
            snprintf(why, len, "%s is missing (NULL)", what);
        return optional;
    }
    if (!tutti__image_span(img, what, s, 1, why, len))
        return 0;
    size_t room = img->end[seg_of(img, (uintptr_t)s)] - (uintptr_t)s;
    size_t n = strnlen(s, room < max + 1 ? room : max + 1);
    if (n == room) {
        snprintf(why, len, "%s at %p has no NUL before the end of its "
                 "segment (%zu bytes on)", what, (const void *)s, room);
        return 0;
    }
    if (n > max) {
        snprintf(why, len, "%s at %p is over %zu bytes", what,
                 (const void *)s, max);
        return 0;
    }
    return 1;
}

int tutti__image_strings(const tutti__image_t *img, const char *what,
                         const char *const *list, size_t max, size_t str_max,
                         char *why, size_t len)
{
    char item[200];
    for (size_t k = 0; list != NULL; k++) {
        snprintf(item, sizeof(item), "%s, entry %zu", what, k + 1);
        if (!tutti__image_span(img, item, &list[k], sizeof(list[k]), why, len))
            return 0;
        if (list[k] == NULL)
            return 1;
        if (k == max) {
            snprintf(why, len, "%s at %p has over %zu entries, or no NULL "
                     "end", what, (const void *)list, max);
            return 0;
        }
        if (!tutti__image_string(img, item, list[k], str_max, 0, why, len))
            return 0;
    }
    return 1;
}
