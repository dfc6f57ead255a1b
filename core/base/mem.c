/* Registered memory: tutti_mem_alloc, tutti_mem_register and the table the
 * channels look buffers up in (mem.h). */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <tutti/tutti.h>

#include "base/log.h"
#include "base/mem.h"

typedef struct {
    tutti__mem_region_t r;
    int owned; /* 1: tutti_mem_alloc's (unmapped and closed at free) */
} entry_t;

/* Sorted by base, regions never overlap.  A process registers a handful
 * of buffers, so an array moved on insert serves. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *table;
static size_t count, cap;
/* count, readable without the lock: a process that registers nothing pays
 * one load per large message. */
static _Atomic size_t live;
/* Bumped on every change of the table (under the lock).  A thread keeps
 * the last region it found and the generation it found it in: while the
 * table has not changed, a send from the same buffer as before (the
 * usual call) is answered without the lock. */
static _Atomic uint64_t generation = 1;
static __thread uint64_t last_gen;
static __thread tutti__mem_region_t last_found;
static uint64_t next_serial = 1;

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Index of the first entry whose base is above @p addr. */
static size_t upper(uintptr_t addr)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table[mid].r.base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The entry holding [addr, addr + len), or NULL; under the lock. */
static entry_t *holding(uintptr_t addr, size_t len)
{
    size_t i = upper(addr);
    if (i == 0)
        return NULL;
    entry_t *e = &table[i - 1];
    uint64_t end = e->r.base + e->r.size;
    if (addr >= end || len > end - addr)
        return NULL;
    return e;
}

int tutti__mem_find(const void *ptr, size_t len, tutti__mem_region_t *out)
{
    int found = 0;
    if (atomic_load_explicit(&live, memory_order_relaxed) == 0)
        return 0;
    uintptr_t addr = (uintptr_t)ptr;
    if (last_gen == atomic_load_explicit(&generation, memory_order_acquire) &&
        addr >= last_found.base &&
        addr - last_found.base < last_found.size &&
        len <= last_found.size - (addr - last_found.base)) {
        *out = last_found;
        return 1;
    }
    pthread_mutex_lock(&lock);
    if (count > 0) {
        entry_t *e = holding(addr, len);
        if (e != NULL) {
            *out = e->r;
            last_found = e->r;
            last_gen = atomic_load_explicit(&generation,
                                            memory_order_relaxed);
            found = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

size_t tutti__mem_count(void)
{
    pthread_mutex_lock(&lock);
    size_t n = count;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Adds a region of [base, base + size); the caller holds the lock and
 * checked that it overlaps none. */
static tutti_status_t insert(uintptr_t base, size_t size, uint64_t file_off,
                             int fd, int owned)
{
    if (count == cap) {
        size_t ncap = cap ? cap * 2 : 16;
        entry_t *t = realloc(table, ncap * sizeof(*t));
        if (t == NULL)
            return tutti__error(TUTTI_ERR_NO_MEMORY, "mem", "no memory for "
                                "a table of %zu registered regions", ncap);
        table = t;
        cap = ncap;
    }
    size_t i = upper(base);
    memmove(&table[i + 1], &table[i], (count - i) * sizeof(*table));
    table[i] = (entry_t){
        .r = {.serial = next_serial++, .base = base, .size = size,
              .file_off = file_off, .fd = fd},
        .owned = owned};
    count++;
    atomic_store_explicit(&live, count, memory_order_relaxed);
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
    return TUTTI_OK;
}

/* Whether [base, base + size) overlaps a region; under the lock. */
static int overlaps(uintptr_t base, size_t size)
{
    size_t i = upper(base + size - 1);
    if (i == 0)
        return 0;
    const entry_t *e = &table[i - 1];
    return e->r.base + e->r.size > base;
}

static void remove_at(size_t i)
{
    memmove(&table[i], &table[i + 1], (count - i - 1) * sizeof(*table));
    count--;
    atomic_store_explicit(&live, count, memory_order_relaxed);
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
}

tutti_status_t tutti_mem_alloc(size_t size, void **ptr_out)
{
    if (ptr_out == NULL || size == 0)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem", "tutti_mem_alloc: "
                            "%s", ptr_out == NULL ? "ptr_out is NULL"
                                                  : "size is 0");
    size_t pg = page_size();
    if (size > SIZE_MAX - pg)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem", "tutti_mem_alloc: "
                            "%zu bytes cannot be mapped", size);
    size_t bytes = (size + pg - 1) / pg * pg;
    int fd = memfd_create("tutti-mem", MFD_CLOEXEC);
    if (fd < 0)
        return tutti__error(TUTTI_ERR_IO, "mem", "tutti_mem_alloc: "
                            "memfd_create: %s", strerror(errno));
    tutti_status_t st;
    if (ftruncate(fd, (off_t)bytes) != 0) {
        st = tutti__error(errno == ENOMEM || errno == EFBIG
                              ? TUTTI_ERR_NO_MEMORY : TUTTI_ERR_IO,
                          "mem", "tutti_mem_alloc: sizing a shared file to "
                          "%zu bytes: %s", bytes, strerror(errno));
        goto err_close;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        st = tutti__error(TUTTI_ERR_NO_MEMORY, "mem", "tutti_mem_alloc: "
                          "mapping %zu bytes: %s", bytes, strerror(errno));
        goto err_close;
    }
    pthread_mutex_lock(&lock);
    st = insert((uintptr_t)p, bytes, 0, fd, 1);
    pthread_mutex_unlock(&lock);
    if (st != TUTTI_OK)
        goto err_unmap;
    *ptr_out = p;
    return TUTTI_OK;

err_unmap:
    munmap(p, bytes);
err_close:
    close(fd);
    return st;
}

tutti_status_t tutti_mem_free(void *ptr)
{
    if (ptr == NULL)
        return TUTTI_OK;
    pthread_mutex_lock(&lock);
    entry_t *e = count > 0 ? holding((uintptr_t)ptr, 1) : NULL;
    if (e == NULL || !e->owned || e->r.base != (uintptr_t)ptr) {
        pthread_mutex_unlock(&lock);
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem", "tutti_mem_free: "
                            "%p is not a buffer tutti_mem_alloc returned "
                            "(or it was freed already)", ptr);
    }
    entry_t gone = *e;
    remove_at((size_t)(e - table));
    pthread_mutex_unlock(&lock);
    munmap((void *)(uintptr_t)gone.r.base, gone.r.size);
    close(gone.r.fd);
    return TUTTI_OK;
}

/* The line of /proc/self/maps holding @p addr: its range, offset, device
 * and inode (a file is both: inode numbers repeat across filesystems),
 * whether it is shared, and its path ("" for none).  0 if found. */
typedef struct {
    uintptr_t start, end;
    uint64_t off, inode;
    dev_t dev;
    int shared;
    char path[512];
} mapping_t;

static int find_mapping(uintptr_t addr, mapping_t *m)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (f == NULL)
        return errno;
    char line[1024];
    int rc = ENOENT;
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long start, end;
        unsigned long long off, inode;
        unsigned int maj, min;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %llx %x:%x %llu %n", &start, &end,
                   perms, &off, &maj, &min, &inode, &path_at) < 7)
            continue;
        if (addr < start || addr >= end)
            continue;
        m->start = start;
        m->end = end;
        m->off = off;
        m->inode = inode;
        m->dev = makedev(maj, min);
        m->shared = perms[3] == 's';
        snprintf(m->path, sizeof(m->path), "%s", line + path_at);
        m->path[strcspn(m->path, "\n")] = '\0';
        rc = 0;
        break;
    }
    fclose(f);
    return rc;
}

static int same_file(const struct stat *st, const mapping_t *m)
{
    return (uint64_t)st->st_ino == m->inode && st->st_dev == m->dev;
}

/* A descriptor of the file behind @p m: an open one of this process with
 * that inode (a memfd has no path), else the path opened.  -1 if none. */
static int file_of(const mapping_t *m)
{
    struct stat want;
    int fd = -1;
    if (m->path[0] == '/' && strstr(m->path, " (deleted)") == NULL) {
        fd = open(m->path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &want) == 0 && same_file(&want, m))
            return fd;
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    for (int i = 0; i < 4096; i++) {
        struct stat st;
        if (fstat(i, &st) == 0 && same_file(&st, m) &&
            S_ISREG(st.st_mode))
            return fcntl(i, F_DUPFD_CLOEXEC, 0);
    }
    return fd;
}

tutti_status_t tutti_mem_register(void *ptr, size_t size)
{
    if (ptr == NULL || size == 0)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem",
                            "tutti_mem_register: %s",
                            ptr == NULL ? "ptr is NULL" : "size is 0");
    uintptr_t addr = (uintptr_t)ptr;
    size_t pg = page_size();
    if (size > UINTPTR_MAX - addr - pg)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem",
                            "tutti_mem_register: %p + %zu bytes wraps the "
                            "address space", ptr, size);
    uintptr_t base = addr / pg * pg;
    uintptr_t end = (addr + size + pg - 1) / pg * pg;
    pthread_mutex_lock(&lock);
    entry_t *in = count > 0 ? holding(addr, size) : NULL;
    int clash = in == NULL && count > 0 && overlaps(base, end - base);
    pthread_mutex_unlock(&lock);
    if (in != NULL)
        return TUTTI_OK; /* tutti_mem_alloc's, or registered already */
    if (clash)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem",
                            "tutti_mem_register: %p (%zu bytes) overlaps a "
                            "registered region without lying inside it",
                            ptr, size);
    mapping_t m;
    int rc = find_mapping(addr, &m);
    if (rc != 0)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem",
                            "tutti_mem_register: %p is not mapped memory of "
                            "this process (/proc/self/maps: %s)", ptr,
                            strerror(rc));
    if (!m.shared || m.inode == 0)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "mem",
                            "tutti_mem_register: %p (%zu bytes) lies in "
                            "private memory (%s): another process cannot "
                            "map it; allocate it with tutti_mem_alloc, or "
                            "map a file MAP_SHARED", ptr, size,
                            m.path[0] ? m.path : "anonymous");
    if (end > m.end)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "mem",
                            "tutti_mem_register: %p (%zu bytes) runs past "
                            "its mapping of %s (which ends at %p): one "
                            "registration covers one mapping", ptr, size,
                            m.path, (void *)m.end);
    int fd = file_of(&m);
    if (fd < 0)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "mem",
                            "tutti_mem_register: the file behind %p (%s) "
                            "is neither open in this process nor at its "
                            "path: peers could not map it", ptr, m.path);
    pthread_mutex_lock(&lock);
    tutti_status_t st = overlaps(base, end - base)
        ? tutti__error(TUTTI_ERR_INVALID_ARG, "mem", "tutti_mem_register: "
                       "%p (%zu bytes) was registered by another thread "
                       "meanwhile", ptr, size)
        : insert(base, end - base, m.off + (base - m.start), fd, 0);
    pthread_mutex_unlock(&lock);
    if (st != TUTTI_OK)
        close(fd);
    return st;
}

tutti_status_t tutti_mem_deregister(void *ptr)
{
    if (ptr == NULL)
        return TUTTI_OK;
    pthread_mutex_lock(&lock);
    entry_t *e = count > 0 ? holding((uintptr_t)ptr, 1) : NULL;
    if (e == NULL || e->owned) {
        int owned = e != NULL;
        pthread_mutex_unlock(&lock);
        return tutti__error(TUTTI_ERR_INVALID_ARG, "mem",
                            "tutti_mem_deregister: %p %s", ptr,
                            owned ? "is tutti_mem_alloc's: free it with "
                                    "tutti_mem_free"
                                  : "lies in no registered region");
    }
    int fd = e->r.fd;
    remove_at((size_t)(e - table));
    pthread_mutex_unlock(&lock);
    close(fd);
    return TUTTI_OK;
}

int tutti_mem_registered(const void *ptr, size_t size)
{
    tutti__mem_region_t r;
    return ptr != NULL && tutti__mem_find(ptr, size ? size : 1, &r);
}
