/*
 * Where the installed or freshly built modules and default config are.
 * A libtutti loaded from the build tree uses the build tree's modules and
 * the source tree's conf/tutti.yaml, so tools and tests run without an
 * install; an installed libtutti never looks into a build tree.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/paths.h"

static pthread_once_t paths_once = PTHREAD_ONCE_INIT;
static int from_build_tree;
static char build_config[PATH_MAX];

static void find_paths(void)
{
    Dl_info info;
    char lib[PATH_MAX], build[PATH_MAX];

    if (realpath(TUTTI_BUILD_CONFIG, build_config) == NULL)
        snprintf(build_config, sizeof(build_config), "%s", TUTTI_BUILD_CONFIG);
    if (dladdr((void *)&tutti__running_from_build_tree, &info) == 0 ||
        info.dli_fname == NULL)
        return;
    if (realpath(info.dli_fname, lib) == NULL ||
        realpath(TUTTI_BUILD_LIBDIR, build) == NULL)
        return;
    size_t n = strlen(build);
    from_build_tree = strncmp(lib, build, n) == 0 && lib[n] == '/';
}

int tutti__running_from_build_tree(void)
{
    pthread_once(&paths_once, find_paths);
    return from_build_tree;
}

const char *tutti__default_module_path(void)
{
    return tutti__running_from_build_tree() ? TUTTI_BUILD_MODULE_PATH
                                            : TUTTI_INSTALL_MODULE_DIR;
}

const char *tutti__default_config_path(void)
{
    return tutti__running_from_build_tree() ? build_config
                                            : TUTTI_INSTALL_CONFIG;
}
