/* A loaded module's image: its segments as mapped, the checks that what a
 * descriptor points to lies in them, and the objects its symbol table
 * names. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/image.h"

#if __SIZEOF_POINTER__ == 8
#define SYM_TYPE(info) ELF64_ST_TYPE(info)
#else
#define SYM_TYPE(info) ELF32_ST_TYPE(info)
#endif

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

int tutti__image_holds(const tutti__image_t *img, const void *p,
                       size_t bytes)
{
    uintptr_t a = (uintptr_t)p;
    int i = seg_of(img, a);
    return i >= 0 && bytes > 0 && bytes <= img->end[i] - a;
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

/* @p bytes from @p p in one segment; else why (the start outside, or the
 * end past the segment's). */
static int in_segment(const tutti__image_t *img, const char *what,
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

/* @p bytes from @p p within the symbol table's object that holds @p p,
 * where the file names one. */
static int in_object(const tutti__image_t *img, const char *what,
                     const void *p, size_t bytes, char *why, size_t len)
{
    uint64_t avail;
    char name[64];
    if (!tutti__elf_object(img->file, (uint64_t)((uintptr_t)p - img->bias),
                           &avail, name, sizeof(name)) ||
        avail >= bytes)
        return 1;
    snprintf(why, len, "%s at %p (%zu bytes) runs past the end of '%s', "
             "which holds %llu bytes from there", what, p, bytes, name,
             (unsigned long long)avail);
    return 0;
}

int tutti__image_table(const tutti__image_t *img, const char *what,
                       const void *p, size_t bytes, char *why, size_t len)
{
    if (p == NULL || bytes == 0) {
        snprintf(why, len, "%s is missing (NULL or empty)", what);
        return 0;
    }
    return in_segment(img, what, p, bytes, why, len) &&
           in_object(img, what, p, bytes, why, len);
}

int tutti__image_sized(const tutti__image_t *img, const char *what,
                       const void *p, size_t min_size, char *why,
                       size_t len)
{
    size_t size;
    if (p == NULL) {
        snprintf(why, len, "%s is missing (NULL)", what);
        return 0;
    }
    if (!in_segment(img, what, p, sizeof(size), why, len))
        return 0;
    memcpy(&size, p, sizeof(size));
    if (size < min_size) {
        snprintf(why, len, "%s at %p says it is %zu bytes; expected at least "
                 "%zu", what, p, size, min_size);
        return 0;
    }
    return in_segment(img, what, p, size, why, len) &&
           in_object(img, what, p, size, why, len);
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
    if (!in_segment(img, what, s, 1, why, len))
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
        if (!in_segment(img, item, &list[k], sizeof(list[k]), why, len))
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

/* ---- the file's symbol table -------------------------------------------- */

/* Whether @p count bytes from @p off end within @p size (no overflow). */
static int fits(uint64_t off, uint64_t count, uint64_t size)
{
    return off <= size && count <= size - off;
}

static int read_at(int fd, void *buf, size_t bytes, uint64_t off,
                   uint64_t size)
{
    return fits(off, bytes, size) &&
           pread(fd, buf, bytes, (off_t)off) == (ssize_t)bytes;
}

/* Section header @p i of the file into @p sh. */
static int section(int fd, const ElfW(Ehdr) *eh, uint64_t size, unsigned i,
                   ElfW(Shdr) *sh)
{
    return i < eh->e_shnum &&
           read_at(fd, sh, sizeof(*sh), eh->e_shoff + (uint64_t)i * sizeof(*sh),
                   size);
}

/* The symbol table to read: .symtab where the file kept it, else .dynsym;
 * 0 if it has neither (well formed). */
static int symbols(int fd, const ElfW(Ehdr) *eh, uint64_t size,
                   ElfW(Shdr) *sym)
{
    ElfW(Shdr) sh;
    int have = 0;
    for (unsigned i = 0; i < eh->e_shnum && section(fd, eh, size, i, &sh);
         i++) {
        if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !have)) {
            *sym = sh;
            have = 1;
            if (sh.sh_type == SHT_SYMTAB)
                break;
        }
    }
    return have && sym->sh_entsize == sizeof(ElfW(Sym)) &&
           fits(sym->sh_offset, sym->sh_size, size);
}

/* The name of symbol @p s into @p name: printable, cut to fit. */
static void symbol_name(int fd, const ElfW(Ehdr) *eh, uint64_t size,
                        const ElfW(Shdr) *sym, const ElfW(Sym) *s,
                        char *name, size_t name_len)
{
    ElfW(Shdr) str;
    size_t n = 0;
    if (section(fd, eh, size, sym->sh_link, &str) &&
        str.sh_type == SHT_STRTAB && s->st_name < str.sh_size) {
        uint64_t left = str.sh_size - s->st_name;
        n = name_len - 1 < left ? name_len - 1 : (size_t)left;
        if (!read_at(fd, name, n, str.sh_offset + s->st_name, size))
            n = 0;
    }
    name[n] = '\0';
    n = strnlen(name, n);
    for (size_t i = 0; i < n; i++)
        if (name[i] < 0x20 || name[i] > 0x7e)
            name[i] = '?';
    if (n == 0)
        snprintf(name, name_len, "(unnamed)");
}

int tutti__elf_object(const char *file, uint64_t vaddr, uint64_t *avail_out,
                      char *name, size_t name_len)
{
    ElfW(Ehdr) eh;
    ElfW(Shdr) sym;
    ElfW(Sym) buf[128];
    struct stat st;
    int found = 0;
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        !read_at(fd, &eh, sizeof(eh), 0, (uint64_t)st.st_size) ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_shentsize != sizeof(ElfW(Shdr)) ||
        !symbols(fd, &eh, (uint64_t)st.st_size, &sym))
        goto out;
    for (uint64_t off = 0; !found && off < sym.sh_size;) {
        uint64_t left = (sym.sh_size - off) / sizeof(buf[0]);
        size_t n = left < 128 ? (size_t)left : 128;
        if (n == 0 || !read_at(fd, buf, n * sizeof(buf[0]),
                               sym.sh_offset + off, (uint64_t)st.st_size))
            break;
        for (size_t i = 0; i < n; i++) {
            const ElfW(Sym) *s = &buf[i];
            if (SYM_TYPE(s->st_info) != STT_OBJECT || s->st_size == 0 ||
                s->st_shndx == SHN_UNDEF || vaddr < s->st_value ||
                vaddr - s->st_value >= s->st_size)
                continue;
            *avail_out = s->st_size - (vaddr - s->st_value);
            symbol_name(fd, &eh, (uint64_t)st.st_size, &sym, s, name,
                        name_len);
            found = 1;
            break;
        }
        off += n * sizeof(buf[0]);
    }
out:
    close(fd);
    return found;
}
