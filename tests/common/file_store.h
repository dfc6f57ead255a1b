/*
 * A key-value store of files (tutti_store_t) for the tests: the user
 * pointer names a directory every task sees; set writes a file and
 * renames it into place, get polls for it every millisecond.  Key
 * "tutti/host/0" is file DIR/tutti_host_0.
 */
#ifndef TUTTI_TESTS_FILE_STORE_H
#define TUTTI_TESTS_FILE_STORE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tutti/tutti.h>

static inline void file_store_path(const char *dir, const char *key,
                                   char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/", dir);
    for (const char *k = key; *k && (size_t)n + 1 < len; k++)
        buf[n++] = *k == '/' ? '_' : *k;
    buf[n] = '\0';
}

static inline int file_store_set(void *user, const char *key,
                                 const void *value, size_t len)
{
    char path[512], tmp[600];
    file_store_path(user, key, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f == NULL)
        return -1;
    size_t w = fwrite(value, 1, len, f);
    if (fclose(f) != 0 || w != len)
        return -1;
    return rename(tmp, path) == 0 ? 0 : -1;
}

static inline int file_store_get(void *user, const char *key, void *buf,
                                 size_t cap, size_t *len_out, double timeout)
{
    char path[512];
    struct timespec nap = {0, 1000000}, t0, t;
    file_store_path(user, key, path, sizeof(path));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            size_t n = fread(buf, 1, cap, f);
            long whole = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
            fclose(f);
            *len_out = whole > 0 ? (size_t)whole : n;
            return 0;
        }
        if (errno != ENOENT)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) +
                (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 >=
            timeout)
            return 1;
        nanosleep(&nap, NULL);
    }
}

#endif
