/* An implementation whose description points into libc (at puts): a
 * pointer to another object, refused naming the implementation, the field
 * and where it points, before anything reads through it. */
#include <stdio.h>

#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {
    {.name = "TestLibcPtr", .description = (const char *)(const void *)&puts,
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &copy_ops},
};

TUTTI_MODULE_DEFINE("testlibcptr", "1.0", impls);
