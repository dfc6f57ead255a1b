/* An implementation whose parameter name runs to the very end of the
 * module's writable segment without a NUL: the last 8 bytes of the
 * segment, set to 'n' by a constructor when the module is mapped (its
 * .bss array `tail` is the last object there).  The page goes on with
 * zeros, so a reader that trusted the string found a NUL after it;
 * refused because the NUL is not within the module.  Should the linker
 * place something after `tail`, the name stays "fill" and the module
 * loads, which the test reports. */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>

#include "mod_common.h"

static char tail[4096];
static const char *params[] = {"fill", NULL};

/* The end of the loadable segment that holds `tail`. */
static int segment_end(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t a = (uintptr_t)tail, *end = arg;
    (void)size;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= start && a < start + ph->p_memsz) {
            *end = start + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

__attribute__((constructor)) static void fill_tail(void)
{
    uintptr_t end = 0;
    dl_iterate_phdr(segment_end, &end);
    if (end >= (uintptr_t)tail + 8 && end <= (uintptr_t)tail + sizeof(tail)) {
        char *name = (char *)end - 8;
        memset(name, 'n', 8);
        params[0] = name;
    }
}

static tutti_alg_impl_t impls[] = {
    {.name = "TestNoNul", .description = "test: a parameter without its NUL",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &copy_ops,
     .params = params},
};

TUTTI_MODULE_DEFINE("testnonul", "1.0", impls);
