/*
 * A memory file for fuzz targets that hand their input to a reader of
 * paths (the config loader, the module file check): written afresh for
 * each input, named by /proc/self/fd/N.
 */
#ifndef TUTTI_FUZZ_MEMFILE_H
#define TUTTI_FUZZ_MEMFILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    int fd;
    char path[64];
} fuzz_memfile_t;

/* Makes @p f (abort() on failure: a fuzz target cannot run without). */
static inline void fuzz_memfile_open(fuzz_memfile_t *f, const char *name)
{
    f->fd = memfd_create(name, 0);
    if (f->fd < 0)
        abort();
    snprintf(f->path, sizeof(f->path), "/proc/self/fd/%d", f->fd);
}

/* The file's content becomes the @p size bytes of @p data. */
static inline void fuzz_memfile_set(const fuzz_memfile_t *f,
                                    const uint8_t *data, size_t size)
{
    if (ftruncate(f->fd, 0) != 0 ||
        pwrite(f->fd, data, size, 0) != (ssize_t)size)
        abort();
}

#endif
