/* Checks of a module file before it is mapped, of its descriptor before
 * the core reads it, and of the names and text it holds before they are
 * printed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tutti/module.h>
#include <tutti/transport.h>

#include "plugin/check.h"
#include "plugin/image.h"
#include "plugin/registry.h"

/* This machine's e_machine, where the build knows it; 0: not checked. */
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#else
#define HOST_MACHINE 0
#endif

#if __SIZEOF_POINTER__ == 8
#define HOST_CLASS ELFCLASS64
#else
#define HOST_CLASS ELFCLASS32
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

static const char *file_type(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* Whether @p count entries of @p entsize bytes from @p off end within
 * @p size bytes (no overflow). */
static int table_fits(uint64_t off, uint64_t count, uint64_t entsize,
                      uint64_t size)
{
    if (off > size)
        return 0;
    return entsize == 0 || count <= (size - off) / entsize;
}

/* The header's fields: magic, class, byte order, type, machine, and that
 * both header tables lie within the file. */
static int header_ok(const ElfW(Ehdr) *eh, uint64_t size, char *why,
                     size_t len)
{
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
        snprintf(why, len, "not an ELF file: its first bytes are %02x %02x "
                 "%02x %02x, expected 7f 45 4c 46", eh->e_ident[0],
                 eh->e_ident[1], eh->e_ident[2], eh->e_ident[3]);
        return 0;
    }
    if (eh->e_ident[EI_CLASS] != HOST_CLASS ||
        eh->e_ident[EI_DATA] != HOST_DATA) {
        snprintf(why, len, "ELF class %u, byte order %u; this process is "
                 "class %u, byte order %u", eh->e_ident[EI_CLASS],
                 eh->e_ident[EI_DATA], HOST_CLASS, HOST_DATA);
        return 0;
    }
    if (eh->e_type != ET_DYN) {
        snprintf(why, len, "ELF type %u, expected a shared object (%u)",
                 eh->e_type, ET_DYN);
        return 0;
    }
    if (HOST_MACHINE != 0 && eh->e_machine != HOST_MACHINE) {
        snprintf(why, len, "ELF machine %u, this process runs on %u",
                 eh->e_machine, HOST_MACHINE);
        return 0;
    }
    if (eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phnum == 0 ||
        !table_fits(eh->e_phoff, eh->e_phnum, eh->e_phentsize, size)) {
        snprintf(why, len, "truncated or malformed: %u program headers of "
                 "%u bytes at offset %llu, in a file of %llu bytes",
                 eh->e_phnum, eh->e_phentsize,
                 (unsigned long long)eh->e_phoff, (unsigned long long)size);
        return 0;
    }
    if (eh->e_shnum != 0 &&
        (eh->e_shentsize != sizeof(ElfW(Shdr)) ||
         !table_fits(eh->e_shoff, eh->e_shnum, eh->e_shentsize, size))) {
        snprintf(why, len, "truncated or malformed: %u section headers of "
                 "%u bytes at offset %llu, in a file of %llu bytes",
                 eh->e_shnum, eh->e_shentsize,
                 (unsigned long long)eh->e_shoff, (unsigned long long)size);
        return 0;
    }
    return 1;
}

/* Every loadable segment's file bytes lie within the file: dlopen maps
 * them, and a page past the end faults when the dynamic loader reads it. */
static int segments_ok(int fd, const ElfW(Ehdr) *eh, uint64_t size,
                       char *why, size_t len)
{
    size_t bytes = (size_t)eh->e_phnum * sizeof(ElfW(Phdr));
    ElfW(Phdr) *ph = malloc(bytes);
    int ok = ph != NULL;
    if (ph == NULL)
        snprintf(why, len, "no memory to read its program headers");
    else if (pread(fd, ph, bytes, (off_t)eh->e_phoff) != (ssize_t)bytes) {
        snprintf(why, len, "cannot read its program headers: %s",
                 strerror(errno));
        ok = 0;
    }
    for (unsigned i = 0; ok && i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD && ph[i].p_type != PT_DYNAMIC)
            continue;
        if (!table_fits(ph[i].p_offset, 1, ph[i].p_filesz, size)) {
            snprintf(why, len, "truncated: segment %u holds bytes %llu to "
                     "%llu, the file ends at %llu", i,
                     (unsigned long long)ph[i].p_offset,
                     (unsigned long long)ph[i].p_offset +
                         (unsigned long long)ph[i].p_filesz,
                     (unsigned long long)size);
            ok = 0;
        }
    }
    free(ph);
    return ok;
}

int tutti__elf_check(const char *path, char *why, size_t len)
{
    ElfW(Ehdr) eh;
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, len, "cannot read: %s", strerror(errno));
        return 0;
    }
    int ok = 0;
    if (fstat(fd, &st) != 0)
        snprintf(why, len, "cannot stat: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, len, "%s, expected a shared object file",
                 file_type(st.st_mode));
    else if ((uint64_t)st.st_size < sizeof(eh))
        snprintf(why, len, "truncated: %llu bytes, shorter than an ELF "
                 "header (%zu)", (unsigned long long)st.st_size, sizeof(eh));
    else if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
        snprintf(why, len, "cannot read its ELF header: %s", strerror(errno));
    else
        ok = header_ok(&eh, (uint64_t)st.st_size, why, len) &&
             segments_ok(fd, &eh, (uint64_t)st.st_size, why, len);
    close(fd);
    return ok;
}

static int name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

int tutti__name_check(const char *what, const char *name, char *why,
                      size_t len)
{
    if (name == NULL || name[0] == '\0') {
        snprintf(why, len, "%s is %s; expected 1 to %d of [A-Za-z0-9_.-]",
                 what, name == NULL ? "missing" : "empty", TUTTI_NAME_MAX - 1);
        return 0;
    }
    size_t n = strnlen(name, TUTTI_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        if (!name_char((unsigned char)name[i])) {
            snprintf(why, len, "%s: byte %zu is 0x%02x; expected 1 to %d of "
                     "[A-Za-z0-9_.-]", what, i + 1,
                     (unsigned char)name[i], TUTTI_NAME_MAX - 1);
            return 0;
        }
    }
    if (n == TUTTI_NAME_MAX) {
        snprintf(why, len, "%s is over %d characters; expected 1 to %d of "
                 "[A-Za-z0-9_.-]", what, TUTTI_NAME_MAX - 1,
                 TUTTI_NAME_MAX - 1);
        return 0;
    }
    return 1;
}

int tutti__text_check(const char *what, const char *text, size_t max,
                      int optional, char *why, size_t len)
{
    if (text == NULL) {
        if (!optional)
            snprintf(why, len, "%s is missing", what);
        return optional;
    }
    size_t n = strnlen(text, max + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c > 0x7e) {
            snprintf(why, len, "%s: byte %zu is 0x%02x; expected printable "
                     "ASCII", what, i + 1, c);
            return 0;
        }
    }
    if (n > max) {
        snprintf(why, len, "%s is over %zu bytes", what, max);
        return 0;
    }
    return 1;
}

/* A transport descriptor of ABI 2.0 ends before its settings. */
#define TP_DESC_2_0_SIZE offsetof(tutti_tp_module_desc_t, settings)

/* Checks a descriptor's ABI version against the core's (@p what: "module"
 * or "transport"); writes why not. */
int tutti__abi_ok(const char *what, unsigned major, unsigned minor,
                  unsigned core_major, unsigned core_minor, char *why,
                  size_t len)
{
    if (major != core_major) {
        snprintf(why, len, "%s ABI %u.%u, core %sABI %u.%u: major versions "
                 "differ", what, major, minor,
                 strcmp(what, "module") == 0 ? "" : "transport ", core_major,
                 core_minor);
        return 0;
    }
    if (minor > core_minor) {
        snprintf(why, len, "%s ABI %u.%u is newer than the core's %u.%u",
                 what, major, minor, core_major, core_minor);
        return 0;
    }
    return 1;
}

#define VERSION_MAX 63

/* The module's name and version, which listings and logs print. */
int tutti__head_text_ok(const char *name, const char *version, char *why,
                        size_t len)
{
    return tutti__name_check("malformed descriptor: module name", name, why,
                             len) &&
           tutti__text_check("malformed descriptor: version", version,
                             VERSION_MAX, 0, why, len);
}

#if __SIZEOF_POINTER__ == 8
#define SYM_TYPE(info) ELF64_ST_TYPE(info)
#else
#define SYM_TYPE(info) ELF32_ST_TYPE(info)
#endif

/* ---- the file's symbol table -------------------------------------------- */

static int read_at(int fd, void *buf, size_t bytes, uint64_t off,
                   uint64_t size)
{
    return table_fits(off, 1, bytes, size) &&
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
           table_fits(sym->sh_offset, 1, sym->sh_size, size);
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

int tutti__table_ok(const tutti__image_t *img, const char *what,
                    const void *p, size_t bytes, char *why, size_t len)
{
    if (p == NULL || bytes == 0) {
        snprintf(why, len, "%s is missing (NULL or empty)", what);
        return 0;
    }
    return tutti__image_span(img, what, p, bytes, why, len) &&
           in_object(img, what, p, bytes, why, len);
}

int tutti__ops_table_ok(const tutti__image_t *img, const char *what,
                        const void *p, size_t min_size, char *why,
                        size_t len)
{
    size_t size;
    if (p == NULL) {
        snprintf(why, len, "%s is missing (NULL)", what);
        return 0;
    }
    if (!tutti__image_span(img, what, p, sizeof(size), why, len))
        return 0;
    memcpy(&size, p, sizeof(size));
    if (size < min_size) {
        snprintf(why, len, "%s at %p says it is %zu bytes; expected at least "
                 "%zu", what, p, size, min_size);
        return 0;
    }
    return tutti__image_span(img, what, p, size, why, len) &&
           in_object(img, what, p, size, why, len);
}

/* Bytes of any text a module hands the core, its NUL not counted: the
 * image checks read no further, and each kind of text then says what it
 * allows (names 63, descriptions 1023). */
#define TEXT_MAX 4095

int tutti__head_ok(const tutti__image_t *img, const char *name,
                   const char *version, char *why, size_t len)
{
    return tutti__image_string(img, "malformed descriptor: module name", name,
                               TEXT_MAX, 1, why, len) &&
           tutti__image_string(img, "malformed descriptor: version", version,
                               TEXT_MAX, 1, why, len) &&
           tutti__head_text_ok(name, version, why, len);
}

int tutti__impls_in_image(const tutti__image_t *img,
                          const tutti_module_desc_t *d, char *why, size_t len)
{
    char what[96];
    if (d->impls == NULL || d->num_impls == 0 ||
        d->num_impls > TUTTI__IMPLS_MAX) {
        snprintf(why, len, "malformed table: %u implementations at %p "
                 "(expected 1..%d)", d->num_impls, (const void *)d->impls,
                 TUTTI__IMPLS_MAX);
        return 0;
    }
    snprintf(what, sizeof(what), "malformed table: the table of %u "
             "implementations", d->num_impls);
    return tutti__table_ok(img, what, d->impls,
                              d->num_impls * tutti__row_size(d->abi_minor),
                              why, len);
}

/* The parameters implementation @p impl reads (ABI 1.5), from its list
 * (in the image): names, each once. */
static int params_ok(const tutti_alg_impl_t *impl, const char *who,
                     char *why, size_t len)
{
    char what[200];
    for (int k = 0; impl->params != NULL && impl->params[k] != NULL; k++) {
        snprintf(what, sizeof(what), "malformed table: parameter %d of %s",
                 k + 1, who);
        if (!tutti__name_check(what, impl->params[k], why, len))
            return 0;
        for (int m = 0; m < k; m++) {
            if (strcmp(impl->params[m], impl->params[k]) == 0) {
                snprintf(why, len, "malformed table: %s lists parameter '%s' "
                         "twice", who, impl->params[k]);
                return 0;
            }
        }
    }
    return 1;
}

/* Checks one implementation entry, every pointer in it first; writes why
 * it is malformed. */
int tutti__impl_ok(const tutti__image_t *img, const tutti_alg_impl_t *impl,
                   uint32_t index, char *why, size_t len)
{
    const uint32_t all_colls = (1u << TUTTI_COLL_COUNT) - 1;
    const uint32_t all_devs = (1u << TUTTI_DEVICE_COUNT) - 1;
    const tutti_alg_ops_t *ops = impl->ops;
    char what[200], who[120];

    snprintf(what, sizeof(what), "malformed table: implementation %u's name",
             index + 1);
    if (!tutti__image_string(img, what, impl->name, TEXT_MAX, 1, why, len) ||
        !tutti__name_check(what, impl->name, why, len))
        return 0;
    snprintf(who, sizeof(who), "implementation %u ('%s')", index + 1,
             impl->name);
    snprintf(what, sizeof(what), "malformed table: description of %s", who);
    if (!tutti__image_string(img, what, impl->description, TEXT_MAX, 1, why,
                             len) ||
        !tutti__text_check(what, impl->description, TUTTI__DESCRIPTION_MAX, 1,
                           why, len))
        return 0;
    if (impl->collectives == 0 || (impl->collectives & ~all_colls) != 0 ||
        (impl->per_rank_collectives & ~impl->collectives) != 0 ||
        impl->device_types == 0 || (impl->device_types & ~all_devs) != 0) {
        snprintf(why, len, "malformed table: %s has collectives 0x%x "
                 "(per-rank 0x%x) / device types 0x%x outside the known sets",
                 who, impl->collectives, impl->per_rank_collectives,
                 impl->device_types);
        return 0;
    }
    /* Aliases (ABI 1.2) and parameters (ABI 1.5): lists of names; what
     * the aliases may be is name_taken()'s (registry.c). */
    snprintf(what, sizeof(what), "malformed table: alias list of %s", who);
    if (!tutti__image_strings(img, what, impl->aliases, TUTTI_ALIASES_MAX,
                              TEXT_MAX, why, len))
        return 0;
    snprintf(what, sizeof(what), "malformed table: parameter list of %s",
             who);
    if (!tutti__image_strings(img, what, impl->params, TUTTI_PARAMS_MAX,
                              TEXT_MAX, why, len) ||
        !params_ok(impl, who, why, len))
        return 0;
    /* supports (ABI 1.3) is optional: a table may end before it. */
    snprintf(what, sizeof(what), "malformed table: ops table of %s", who);
    if (!tutti__ops_table_ok(img, what, ops,
                            offsetof(tutti_alg_ops_t, supports), why, len))
        return 0;
    if (ops->init_context == NULL || ops->run == NULL ||
        ops->progress == NULL || ops->fini_context == NULL) {
        snprintf(why, len, "malformed table: %s lacks an ops table with "
                 "init_context, run, progress and fini_context", who);
        return 0;
    }
    return 1;
}

/* The per-group table of descriptor @p d (ABI 1.3), or NULL. */
const tutti_alg_group_ops_t *
tutti__desc_group_ops(const tutti_module_desc_t *d)
{
    return d->abi_minor >= 3 && d->size >= sizeof(*d) ? d->group_ops : NULL;
}

int tutti__group_ops_ok(const tutti__image_t *img,
                        const tutti_module_desc_t *d, char *why, size_t len)
{
    const tutti_alg_group_ops_t *g = tutti__desc_group_ops(d);
    if (g == NULL)
        return 1;
    if (!tutti__ops_table_ok(img, "malformed group table", g, sizeof(*g), why,
                            len))
        return 0;
    if ((g->init_group == NULL) != (g->fini_group == NULL)) {
        snprintf(why, len, "malformed group table: init_group and fini_group "
                 "come together");
        return 0;
    }
    return 1;
}

int tutti__tp_ops_ok(const tutti__image_t *img,
                     const tutti_tp_module_desc_t *d, char *why, size_t len)
{
    const tutti_tp_ops_t *ops = d->ops;
    if (!tutti__ops_table_ok(img, "malformed transport table", ops,
                            offsetof(tutti_tp_ops_t, peer_alive), why, len))
        return 0;
    if (ops->connect == NULL || ops->send == NULL || ops->recv == NULL ||
        ops->progress == NULL || ops->disconnect == NULL) {
        snprintf(why, len, "malformed transport table: it needs a name and "
                 "connect, send, recv, progress and disconnect");
        return 0;
    }
    return tutti__image_string(img, "malformed transport table: transport "
                               "name", ops->name, TEXT_MAX, 1, why, len) &&
           tutti__name_check("malformed transport table: transport name",
                             ops->name, why, len);
}

int tutti__setting_in_image(const tutti__image_t *img,
                            const tutti_setting_t *row, uint32_t index,
                            char *why, size_t len)
{
    static const char *const fields[] = {"name", "env", "default_value",
                                         "doc", "expected"};
    const char *text[] = {row->name, row->env, row->default_value, row->doc,
                          row->expected};
    char what[160];
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
        snprintf(what, sizeof(what), "malformed settings: row %u's %s",
                 index + 1, fields[f]);
        if (!tutti__image_string(img, what, text[f], TEXT_MAX, 1, why, len) ||
            !tutti__text_check(what, text[f], TEXT_MAX, 1, why, len))
            return 0;
    }
    snprintf(what, sizeof(what), "malformed settings: row %u's choices",
             index + 1);
    return tutti__image_strings(img, what, row->choices, TUTTI__CHOICES_MAX,
                                TEXT_MAX, why, len);
}

/* Bytes of one implementation row as a module of ABI minor @p minor laid
 * it out: each minor grew the row at its end. */
size_t tutti__row_size(uint32_t minor)
{
    if (minor == 0)
        return offsetof(tutti_alg_impl_t, per_rank_collectives);
    if (minor == 1)
        return offsetof(tutti_alg_impl_t, aliases);
    if (minor == 2)
        return offsetof(tutti_alg_impl_t, flags);
    if (minor <= 4)
        return offsetof(tutti_alg_impl_t, params);
    return sizeof(tutti_alg_impl_t);
}

/* Bytes of the descriptor a module of ABI minor @p minor has: 1.3 added
 * group_ops at its end. */
size_t tutti__desc_size(uint32_t minor)
{
    return minor < 3 ? offsetof(tutti_module_desc_t, group_ops)
                     : sizeof(tutti_module_desc_t);
}

/* The shared object a .la names, tried in libtool's loader's order: the
 * uninstalled one in .libs/ beside it, the installed one in its libdir,
 * the one beside it.  1 with the file in @p file, else 0 and why. */
static int la_target(const char *la, char *file, size_t flen, char *why,
                     size_t len)
{
    char line[PATH_MAX + 32], dlname[256] = "", libdir[PATH_MAX] = "";
    int n = 0;
    int installed = 0;
    FILE *f = fopen(la, "r");
    if (f == NULL) {
        snprintf(why, len, "cannot read its .la: %s", strerror(errno));
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "dlname='%255[^']'", dlname) == 1 ||
            sscanf(line, "libdir='%4095[^']'", libdir) == 1)
            continue;
        if (strncmp(line, "installed=yes", 13) == 0)
            installed = 1;
    }
    fclose(f);
    if (dlname[0] == '\0' || strchr(dlname, '/') != NULL) {
        snprintf(why, len, "its .la names no shared object (dlname)");
        return 0;
    }
    const char *slash = strrchr(la, '/');
    int dir_len = slash ? (int)(slash - la) : 1;
    const char *dir = slash ? la : ".";
    for (int i = 0; i < 3; i++) {
        if (i == 0 && !installed)
            n = snprintf(file, flen, "%.*s/.libs/%s", dir_len, dir, dlname);
        else if (i == 1 && installed && libdir[0] != '\0')
            n = snprintf(file, flen, "%s/%s", libdir, dlname);
        else if (i == 2)
            n = snprintf(file, flen, "%.*s/%s", dir_len, dir, dlname);
        else
            continue;
        if (n > 0 && (size_t)n < flen && access(file, F_OK) == 0)
            return 1;
    }
    snprintf(why, len, "cannot open: its .la names %.200s, found neither in "
             ".libs/ nor beside it%s", dlname,
             installed ? " nor in its libdir" : "");
    return 0;
}

/* The file to map for module @p stem: what stem.la names, else stem.so. */
int tutti__module_file(const char *stem, char *file, size_t flen, char *why,
                       size_t len)
{
    char la[PATH_MAX + 8];
    int n = snprintf(la, sizeof(la), "%s.la", stem);
    if (n > 0 && (size_t)n < sizeof(la) && access(la, F_OK) == 0)
        return la_target(la, file, flen, why, len);
    n = snprintf(file, flen, "%s.so", stem);
    if (n < 0 || (size_t)n >= flen) {
        snprintf(why, len, "path too long");
        return 0;
    }
    return 1;
}

/* What every descriptor starts with (plugin.h). */
typedef struct {
    uint32_t abi_major, abi_minor, size, kind;
} desc_head_t;

/* Bytes a transport descriptor of ABI minor @p minor has: 2.1 added the
 * settings at its end. */
static size_t tp_desc_size(uint32_t minor)
{
    return minor == 0 ? TP_DESC_2_0_SIZE : sizeof(tutti_tp_module_desc_t);
}

/* Reads the descriptor @p sym within the size it declares (and, where the
 * dynamic symbol table says, within its symbol): its head first, then as
 * much of the rest as its kind's minor needs.  Returns a zeroed copy the
 * size of this core's descriptor, or NULL with why. */
void *tutti__read_desc(tutti__module_t *m, const tutti__image_t *img,
                       const void *sym, char *why, size_t len)
{
    desc_head_t h;
    Dl_info info;
    const ElfW(Sym) *es = NULL;
    size_t sym_size = 0; /* 0: not known */
    if (dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) != 0 && es != NULL)
        sym_size = es->st_size;
    if (sym_size != 0 && sym_size < sizeof(h)) {
        snprintf(why, len, "descriptor symbol '%s' is %zu bytes, shorter than "
                 "the %zu-byte head every descriptor starts with (ABI major, "
                 "minor, size, kind)", TUTTI_MODULE_SYMBOL_NAME, sym_size,
                 sizeof(h));
        return NULL;
    }
    if (!tutti__image_span(img, "descriptor", sym, sizeof(h), why, len))
        return NULL;
    memcpy(&h, sym, sizeof(h));
    m->abi_major = h.abi_major;
    m->abi_minor = h.abi_minor;
    m->kind = h.kind;
    int tp = h.kind == TUTTI_MODULE_KIND_TP;
    if (h.kind != TUTTI_MODULE_KIND_ALG && !tp) {
        snprintf(why, len, "malformed descriptor: kind %u, expected %d "
                 "(algorithm) or %d (transport)", h.kind,
                 TUTTI_MODULE_KIND_ALG, TUTTI_MODULE_KIND_TP);
        return NULL;
    }
    if (tp ? !tutti__abi_ok("transport", h.abi_major, h.abi_minor,
                     TUTTI_TP_ABI_MAJOR, TUTTI_TP_ABI_MINOR, why, len)
           : !tutti__abi_ok("module", h.abi_major, h.abi_minor,
                     TUTTI_MODULE_ABI_MAJOR, TUTTI_MODULE_ABI_MINOR, why,
                     len))
        return NULL;
    size_t need = tp ? tp_desc_size(h.abi_minor) : tutti__desc_size(h.abi_minor);
    if (h.size < need) {
        snprintf(why, len, "malformed descriptor: %u bytes; %s ABI %u.%u "
                 "needs %zu", h.size, tp ? "transport" : "module",
                 h.abi_major, h.abi_minor, need);
        return NULL;
    }
    if (sym_size != 0 && h.size > sym_size) {
        snprintf(why, len, "malformed descriptor: it declares %u bytes, its "
                 "symbol '%s' holds %zu", h.size, TUTTI_MODULE_SYMBOL_NAME,
                 sym_size);
        return NULL;
    }
    if (!tutti__table_ok(img, "descriptor", sym, h.size, why, len))
        return NULL;
    size_t have = tp ? sizeof(tutti_tp_module_desc_t)
                     : sizeof(tutti_module_desc_t);
    void *copy = calloc(1, have);
    if (copy == NULL) {
        snprintf(why, len, "no memory to read its descriptor");
        return NULL;
    }
    memcpy(copy, sym, h.size < have ? h.size : have);
    return copy;
}
