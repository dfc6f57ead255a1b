/* A description holding a terminal escape sequence (clear the screen). */
#include "mod_common.h"

static const tutti_alg_impl_t impls[] = {
    {"TestBadDesc", "test: \033[2J", TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), &copy_ops, 0, NULL, 0, NULL}};

TUTTI_MODULE_DEFINE("testbaddesc", "1.0.0", impls);
