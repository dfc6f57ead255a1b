/* Checks of a module file before it is mapped, and of the names and text
 * its descriptor holds before they are printed. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tutti/plugin.h>

#include "plugin/check.h"

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
