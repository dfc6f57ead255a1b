/*
 * The CUDA operations table (device.h): loaded once from libtutti_cuda
 * with libltdl, or a test's double in its place; and the PCI bus ids of
 * GPUs as numbers for the coordinator's frames.
 */
#include <ltdl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tutti-build.h"

#include "base/log.h"
#include "base/paths.h"
#include "device/device.h"

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static const tutti__cuda_ops_t *cuda_ops;   /* loaded or a test's */
static int cuda_tried;                      /* the library was tried */
static char cuda_why[512];                  /* why it could not be */

/* Loads the library and checks its table; the reason into cuda_why. */
static const tutti__cuda_ops_t *cuda_load(void)
{
#if TUTTI_HAVE_CUDA
    const char *path = tutti__running_from_build_tree()
                           ? TUTTI_BUILD_CUDA_LIB
                           : TUTTI_INSTALL_CUDA_LIB;
    if (lt_dlinit() != 0) {
        snprintf(cuda_why, sizeof(cuda_why), "libltdl did not start: %s",
                 lt_dlerror());
        return NULL;
    }
    lt_dlhandle h = lt_dlopenext(path);
    if (h == NULL) {
        snprintf(cuda_why, sizeof(cuda_why), "cannot load %s: %s", path,
                 lt_dlerror());
        lt_dlexit();
        return NULL;
    }
    const tutti__cuda_ops_t *ops = lt_dlsym(h, TUTTI__CUDA_OPS_SYMBOL);
    if (ops == NULL || ops->size < sizeof(*ops) ||
        ops->version != TUTTI__CUDA_OPS_VERSION) {
        snprintf(cuda_why, sizeof(cuda_why), "%s: no table '%s' of version "
                 "%d and size %zu (another build's library?)", path,
                 TUTTI__CUDA_OPS_SYMBOL, TUTTI__CUDA_OPS_VERSION,
                 sizeof(*ops));
        lt_dlclose(h);
        lt_dlexit();
        return NULL;
    }
    /* Kept open for the process's life: CUDA's runtime does not unload
     * cleanly, and streams or events may outlive a context. */
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
