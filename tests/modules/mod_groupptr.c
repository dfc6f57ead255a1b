/* A module whose per-group table (ABI 1.3) points into libc (at puts):
 * refused naming the group table and where it points, before its size
 * field is read. */
#include <stdio.h>

#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {TEST_IMPL("TestGroupPtr")};

TUTTI_MODULE_DEFINE_WITH_GROUP(
    "testgroupptr", "1.0", impls,
    (const tutti_alg_group_ops_t *)(const void *)&puts);
