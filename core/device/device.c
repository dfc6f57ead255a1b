/*
 * The CUDA operations table (device.h): loaded once from libtutti_cuda
 * with libltdl, or a test's double in its place; and the PCI bus ids of
 * GPUs as numbers for the coordinator's frames.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <ltdl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti-build.h"

#include "base/log.h"
#include "base/paths.h"
#include "device/device.h"

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static const tutti__cuda_ops_t *cuda_ops;   /* loaded or a test's */
static int cuda_tried;                      /* the library was tried */
static char cuda_why[2048];                 /* why it could not be */

#if TUTTI_HAVE_CUDA
/* Appends "; " (unless cuda_why ends in a space) and the formatted text
 * to cuda_why, cut at its end. */
static void why_add(const char *fmt, ...)
{
    size_t n = strlen(cuda_why);
    va_list ap;
    if (n + 3 >= sizeof(cuda_why))
        return;
    if (n > 0 && cuda_why[n - 1] != ' ') {
        memcpy(cuda_why + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(cuda_why + n, sizeof(cuda_why) - n, fmt, ap);
    va_end(ap);
}

/* Opens @p path (with lt_dlopenext unless @p exact) and checks its
 * table; NULL with the path and the reason added to cuda_why. */
static const tutti__cuda_ops_t *cuda_try(const char *path, int exact)
{
    lt_dlhandle h = exact ? lt_dlopen(path) : lt_dlopenext(path);
    if (h == NULL) {
        why_add("%s: %s", path, lt_dlerror());
        return NULL;
    }
    const tutti__cuda_ops_t *ops = lt_dlsym(h, TUTTI__CUDA_OPS_SYMBOL);
    if (ops == NULL || ops->size < sizeof(*ops) ||
        ops->version != TUTTI__CUDA_OPS_VERSION) {
        why_add("%s: no table '%s' of version %d and size %zu (another "
                "build's library?)", path, TUTTI__CUDA_OPS_SYMBOL,
                TUTTI__CUDA_OPS_VERSION, sizeof(*ops));
        lt_dlclose(h);
        return NULL;
    }
    /* Kept open for the process's life: CUDA's runtime does not unload
     * cleanly, and streams or events may outlive a context. */
    return ops;
}

/* The directory of the file that holds libtutti's code (libtutti.so, or
 * the program it is linked into) into @p dir; 0 if unknown. */
static int core_dir(char *dir, size_t len)
{
    Dl_info info;
    if (dladdr((void *)&tutti__cuda_get, &info) == 0 ||
        info.dli_fname == NULL || strchr(info.dli_fname, '/') == NULL)
        return 0;
    snprintf(dir, len, "%s", info.dli_fname);
    *strrchr(dir, '/') = '\0';
    return 1;
}
#endif

/* Loads the library and checks its table; the paths tried and why each
 * failed into cuda_why.  TUTTI_CUDA_LIB, a path, is the only one tried
 * when set.  Else, in order: beside libtutti as the build tree lays it
 * out (core/.libs -> core/device) and as an install does (libdir ->
 * pkglibdir/device), so that a build or install moved to another place
 * or machine finds its own; then the path compiled in. */
static const tutti__cuda_ops_t *cuda_load(void)
{
#if TUTTI_HAVE_CUDA
    const char *env = getenv("TUTTI_CUDA_LIB");
    const char *built = tutti__running_from_build_tree()
                            ? TUTTI_BUILD_CUDA_LIB
                            : TUTTI_INSTALL_CUDA_LIB;
    size_t libdir_len = strlen(TUTTI_INSTALL_LIBDIR);
    const tutti__cuda_ops_t *ops = NULL;
    char dir[PATH_MAX], path[PATH_MAX + 64];

    snprintf(cuda_why, sizeof(cuda_why), "cannot load libtutti_cuda "
             "(TUTTI_CUDA_LIB may name it), tried: ");
    if (lt_dlinit() != 0) {
        snprintf(cuda_why, sizeof(cuda_why), "libltdl did not start: %s",
                 lt_dlerror());
        return NULL;
    }
    if (env != NULL && env[0] != '\0') {
        ops = cuda_try(env, 1);
        if (ops == NULL)
            why_add("the path of TUTTI_CUDA_LIB, set, is the only one "
                    "tried");
        goto done;
    }
    if (core_dir(dir, sizeof(dir))) {
        snprintf(path, sizeof(path), "%s/../device/libtutti_cuda", dir);
        if ((ops = cuda_try(path, 0)) != NULL)
            goto done;
        /* The install's layout: the library's place below libdir. */
        if (strncmp(TUTTI_INSTALL_CUDA_LIB, TUTTI_INSTALL_LIBDIR,
                    libdir_len) == 0 &&
            TUTTI_INSTALL_CUDA_LIB[libdir_len] == '/') {
            snprintf(path, sizeof(path), "%s%s", dir,
                     TUTTI_INSTALL_CUDA_LIB + libdir_len);
            if ((ops = cuda_try(path, 0)) != NULL)
                goto done;
        }
    }
    ops = cuda_try(built, 0);
done:
    if (ops == NULL)
        lt_dlexit();
    return ops;
#else
    snprintf(cuda_why, sizeof(cuda_why), "this build has no CUDA "
             "(configure --with-cuda)");
    return NULL;
#endif
}

tutti_status_t tutti__cuda_get(const tutti__cuda_ops_t **ops_out)
{
    pthread_mutex_lock(&cuda_lock);
    if (cuda_ops == NULL && !cuda_tried) {
        cuda_ops = cuda_load();
        cuda_tried = 1;
    }
    const tutti__cuda_ops_t *ops = cuda_ops;
    pthread_mutex_unlock(&cuda_lock);
    if (ops == NULL)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "cuda", "%s", cuda_why);
    *ops_out = ops;
    return TUTTI_OK;
}

const tutti__cuda_ops_t *tutti__cuda_loaded(void)
{
    pthread_mutex_lock(&cuda_lock);
    const tutti__cuda_ops_t *ops = cuda_ops;
    pthread_mutex_unlock(&cuda_lock);
    return ops;
}

void tutti__cuda_use(const tutti__cuda_ops_t *ops)
{
    pthread_mutex_lock(&cuda_lock);
    cuda_ops = ops;
    cuda_tried = ops != NULL;
    pthread_mutex_unlock(&cuda_lock);
}

tutti_status_t tutti__cuda_error(tutti_status_t status, int err,
                                 const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    const tutti__cuda_ops_t *ops = tutti__cuda_loaded();
    return tutti__error(status, "cuda", "%s: %s", what,
                        ops ? ops->error_string(err) : "CUDA error");
}

uint32_t tutti__pci_code(const char *bus_id)
{
    unsigned domain, bus, dev, fn;
    if (bus_id == NULL ||
        sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4 ||
        domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
        return 0;
    return domain << 16 | bus << 8 | dev << 3 | fn;
}

void tutti__pci_text(uint32_t code, char *buf)
{
    if (code == 0) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, TUTTI__PCI_BUS_ID_LEN, "%04x:%02x:%02x.%x", code >> 16,
             (code >> 8) & 0xff, (code >> 3) & 0x1f, code & 7);
}
