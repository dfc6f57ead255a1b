/*
 * Where the installed or freshly built modules and default config are.
 * A libtutti that runs from the build tree (the shared library there, or a
 * test or benchmark under it that links the core statically) uses the
 * build tree's modules and the source tree's conf/tutti.yaml, so tools and
 * tests run without an install; an installed libtutti or tool never looks
 * into a build tree.  An install moved after it was made (a copied
 * prefix, a DESTDIR install, a wheel that bundles one) is found from where
 * its libtutti (or a program that links the core statically) now lies:
 * the prefix is that directory less libdir's (bindir's) place below the
 * prefix configured, or TUTTI_PREFIX; the module directory and the config
 * below the configured prefix move with it.  The files written for the
 * user (log_file, timeline) are opened here too, never through a symbolic
 * link.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/paths.h"

static pthread_once_t paths_once = PTHREAD_ONCE_INIT;
static int from_build_tree;
static char build_config[PATH_MAX];
/* The install's module directory and config, moved with it where it was
 * moved. */
static char install_modules[PATH_MAX + 256] = TUTTI_INSTALL_MODULE_DIR;
static char install_config[PATH_MAX + 256] = TUTTI_INSTALL_CONFIG;

/* Whether the resolved path @p file lies below directory @p dir. */
static int is_below(const char *file, const char *dir)
{
    char real[PATH_MAX];

    if (realpath(dir, real) == NULL)
        return 0;
    size_t n = strlen(real);
    return strncmp(file, real, n) == 0 && file[n] == '/';
}

/* The part of @p path below the configured prefix ("/lib"), or NULL
 * where it does not lie below it. */
static const char *below_prefix(const char *path)
{
    size_t n = strlen(TUTTI_INSTALL_PREFIX);
    if (strncmp(path, TUTTI_INSTALL_PREFIX, n) != 0 || path[n] != '/')
        return NULL;
    return path + n;
}

/* The install's paths for a core in directory @p dir, installed in
 * @p installed (libdir, or bindir for a program with the core inside):
 * moved along where TUTTI_PREFIX says, or where @p dir is not @p installed
 * but ends as it does below the prefix. */
static void relocate(const char *dir, const char *installed)
{
    const char *env = getenv("TUTTI_PREFIX");
    char real[PATH_MAX], prefix[PATH_MAX];
    const char *tail = below_prefix(installed);
    if (env != NULL && env[0] != '\0') {
        snprintf(prefix, sizeof(prefix), "%s", env);
    } else if (tail == NULL ||
               (realpath(installed, real) != NULL &&
                strcmp(real, dir) == 0)) {
        return; /* where it was installed, or nothing to go by */
    } else {
        size_t dl = strlen(dir), tl = strlen(tail);
        if (dl <= tl || strcmp(dir + dl - tl, tail) != 0)
            return;
        snprintf(prefix, sizeof(prefix), "%.*s", (int)(dl - tl), dir);
    }
    const char *m = below_prefix(TUTTI_INSTALL_MODULE_DIR);
    const char *c = below_prefix(TUTTI_INSTALL_CONFIG);
    if (m != NULL)
        snprintf(install_modules, sizeof(install_modules), "%s%s", prefix, m);
    if (c != NULL)
        snprintf(install_config, sizeof(install_config), "%s%s", prefix, c);
}

static void find_paths(void)
{
    Dl_info info;
    struct link_map *map = NULL;
    char file[PATH_MAX];

    if (realpath(TUTTI_BUILD_CONFIG, build_config) == NULL)
        snprintf(build_config, sizeof(build_config), "%s", TUTTI_BUILD_CONFIG);
    if (dladdr1((void *)&tutti__running_from_build_tree, &info, (void **)&map,
                RTLD_DL_LINKMAP) == 0 ||
        info.dli_fname == NULL || map == NULL)
        return;
    /* The core is in libtutti.so or, linked statically, in the program.
     * glibc names the program by its argv[0], which may be relative or
     * found in PATH: its file is /proc/self/exe. */
    const char *self = map->l_name[0] == '\0' ? "/proc/self/exe"
                                              : info.dli_fname;
    if (realpath(self, file) == NULL)
        return;
    /* An install prefix may lie inside the build tree: what is installed
     * there is still not the build tree's. */
    from_build_tree = is_below(file, TUTTI_BUILD_DIR) &&
                      !is_below(file, TUTTI_INSTALL_LIBDIR) &&
                      !is_below(file, TUTTI_INSTALL_BINDIR);
    if (!from_build_tree) {
        *strrchr(file, '/') = '\0';
        relocate(file, map->l_name[0] == '\0' ? TUTTI_INSTALL_BINDIR
                                              : TUTTI_INSTALL_LIBDIR);
    }
}

int tutti__running_from_build_tree(void)
{
    pthread_once(&paths_once, find_paths);
    return from_build_tree;
}

const char *tutti__default_module_path(void)
{
    return tutti__running_from_build_tree() ? TUTTI_BUILD_MODULE_PATH
                                            : install_modules;
}

const char *tutti__default_config_path(void)
{
    return tutti__running_from_build_tree() ? build_config
                                            : install_config;
}

void tutti__task_path(const char *pattern, int task, const char *ext,
                      char *buf, size_t len)
{
    size_t n = 0, plen = strlen(pattern), elen = ext ? strlen(ext) : 0;
    if (strstr(pattern, "%t") == NULL) {
        int keep = elen > 0 && plen >= elen &&
                   strcmp(pattern + plen - elen, ext) == 0;
        snprintf(buf, len, "%.*s.%d%s", (int)(keep ? plen - elen : plen),
                 pattern, task, keep ? ext : "");
        return;
    }
    for (const char *p = pattern; *p && n + 1 < len; p++) {
        if (p[0] == '%' && p[1] == 't') {
            int w = snprintf(buf + n, len - n, "%d", task);
            n = w < 0 || (size_t)w >= len - n ? len - 1 : n + (size_t)w;
            p++;
        } else {
            buf[n++] = *p;
        }
    }
    buf[n] = '\0';
}

FILE *tutti__task_file_open(const char *path, int append, char *why,
                            size_t len)
{
    /* Where anyone else may write into the directory (/tmp), a link
     * planted at the name would have the user write the file it names. */
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW |
                (append ? O_APPEND : O_TRUNC);
    struct stat st;
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            snprintf(why, len, "a symbolic link is refused");
        else
            snprintf(why, len, "%s", strerror(err));
        errno = err;
        return NULL;
    }
    FILE *f = fdopen(fd, append ? "a" : "w");
    if (f == NULL) {
        int err = errno;
        snprintf(why, len, "%s", strerror(err));
        close(fd);
        errno = err;
    }
    return f;
}
