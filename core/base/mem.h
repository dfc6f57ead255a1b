/*
 * Registered memory (internal): the process's table of buffers that the
 * other processes of its host can map (tutti_mem_alloc, tutti_mem_register;
 * tutti.h).  Each region is a whole number of pages of a shared file (a
 * memfd for tutti_mem_alloc, the file a caller mapped MAP_SHARED for
 * tutti_mem_register) held open by the table, so a peer maps it through
 * /proc/<pid>/fd/<fd> once and then reads the owner's buffers in place.
 * The channels (transport/chan.c) look a send's buffer up here; a serial
 * number, never reused within the process, tells a peer's cache of
 * mappings that a region is new even where its address and descriptor
 * number repeat an old one's.
 */
#ifndef TUTTI_CORE_BASE_MEM_H
#define TUTTI_CORE_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>

/** What a peer needs to map a region and find a buffer in it. */
typedef struct {
    uint64_t serial;   /* unique within the process, from 1 */
    uint64_t base;     /* the region's first byte, in the owner */
    uint64_t size;     /* bytes, a whole number of pages */
    uint64_t file_off; /* where the region starts in its file */
    int32_t fd;        /* the owner's descriptor of that file */
    int32_t pad;
} tutti__mem_region_t;

/** Whether [@p ptr, @p ptr + @p len) lies inside one registered region;
 *  if so, copies the region to @p out.  Safe from any thread; cheap
 *  enough for every large message: an atomic load while nothing is
 *  registered, a comparison when the thread's last region still holds
 *  it and the table has not changed since, else a lock and a binary
 *  search. */
int tutti__mem_find(const void *ptr, size_t len, tutti__mem_region_t *out);

/** Regions registered now (tests). */
size_t tutti__mem_count(void);

#endif
