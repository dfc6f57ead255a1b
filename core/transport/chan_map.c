/* The receiver's mappings of a peer's registered regions (chan.h: "Mapped
 * descriptors"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/chan.h"

tutti__chan_maps_t *tutti__chan_maps_create(void)
{
    return calloc(1, sizeof(tutti__chan_maps_t));
}

void tutti__chan_maps_destroy(tutti__chan_maps_t *maps)
{
    if (maps == NULL)
        return;
    for (int i = 0; i < TUTTI_CHAN_MAPS; i++) {
        if (maps->m[i].addr != NULL)
            munmap(maps->m[i].addr, maps->m[i].len);
    }
    free(maps);
}

/* Maps region @p r of process @p pid read-only; NULL with @p err_out
 * (errno) if it cannot. */
static char *map_region(int pid, const tutti__mem_region_t *r, int *err_out)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, (int)r->fd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *err_out = errno;
        return NULL;
    }
    struct stat st;
    char *addr = NULL;
    if (fstat(fd, &st) != 0) {
        *err_out = errno;
    } else if ((uint64_t)st.st_size < r->file_off ||
               (uint64_t)st.st_size - r->file_off < r->size) {
        *err_out = ERANGE; /* not the file the descriptor names */
    } else {
        void *p = mmap(NULL, (size_t)r->size, PROT_READ, MAP_SHARED, fd,
                       (off_t)r->file_off);
        if (p == MAP_FAILED)
            *err_out = errno;
        else
            addr = p;
    }
    close(fd);
    return addr;
}

const char *tutti__chan_map_get(tutti__chan_maps_t *maps, int pid,
                                const tutti__mem_region_t *r, int *err_out)
{
    tutti__chan_map_t *victim = &maps->m[0];
    maps->clock++;
    for (int i = 0; i < TUTTI_CHAN_MAPS; i++) {
        tutti__chan_map_t *m = &maps->m[i];
        if (m->addr != NULL && m->serial == r->serial && m->len == r->size) {
            m->used = maps->clock;
            return m->addr;
        }
        if (m->used < victim->used)
            victim = m;
    }
    char *addr = map_region(pid, r, err_out);
    if (addr == NULL)
        return NULL;
    if (victim->addr != NULL)
        munmap(victim->addr, victim->len);
    victim->addr = addr;
    victim->len = (size_t)r->size;
    victim->serial = r->serial;
    victim->used = maps->clock;
    maps->mapped++;
    return addr;
}
