/* Calls a function nothing defines: bound lazily, it would load and the
 * process would exit 127 on the first call; bound at load (RTLD_NOW) it
 * is refused with the symbol named. */
#include "mod_common.h"

void tutti_test_undefined_symbol(void);

static tutti_status_t undef_run(void *state, tutti_alg_exec_t *x)
{
    (void)state;
    (void)x;
    tutti_test_undefined_symbol();
    return TUTTI_OK;
}

static const tutti_alg_ops_t undef_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = copy_init,
    .run = undef_run, .progress = copy_progress, .fini_context = copy_fini};

static const tutti_alg_impl_t impls[] = {
    {"TestUndef", "test: calls an undefined function",
     TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE), TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     &undef_ops, 0, NULL, 0, NULL},
};

TUTTI_MODULE_DEFINE("testundef", "1.0.0", impls);
