/*
 * Where the installed or freshly built modules and default config are.
 * A libtutti loaded from the build tree uses the build tree's modules and
 * the source tree's conf/tutti.yaml, so tools and tests run without an
 * install; an installed libtutti never looks into a build tree.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

int tutti__running_from_build_tree(void)
{
    static int cached = -1;
    Dl_info info;
    char lib[PATH_MAX], build[PATH_MAX];

    if (cached >= 0)
        return cached;
    cached = 0;
    if (dladdr((void *)&tutti__running_from_build_tree, &info) == 0 ||
        info.dli_fname == NULL)
        return cached;
    if (realpath(info.dli_fname, lib) == NULL ||
        realpath(TUTTI_BUILD_LIBDIR, build) == NULL)
        return cached;
    size_t n = strlen(build);
    cached = strncmp(lib, build, n) == 0 && lib[n] == '/';
    return cached;
}

const char *tutti__default_module_path(void)
{
    return tutti__running_from_build_tree() ? TUTTI_BUILD_MODULE_PATH
                                            : TUTTI_INSTALL_MODULE_DIR;
}

const char *tutti__default_config_path(void)
{
    return tutti__running_from_build_tree() ? TUTTI_BUILD_CONFIG
                                            : TUTTI_INSTALL_CONFIG;
}
