/* A shared object without the descriptor symbol: refused. */
#include <tutti/module.h>

TUTTI_MODULE_EXPORT_ int tutti_test_not_a_descriptor(void);

int tutti_test_not_a_descriptor(void)
{
    return 42;
}
