/* An ABI 1.0 descriptor that declares 4 bytes, where 1.0 needs every
 * field up to its implementation table: the loader reads its head only
 * and refuses it, naming both sizes. */
#include <stdint.h>

#include <tutti/plugin.h>

TUTTI_MODULE_EXPORT_ const struct {
    uint32_t abi_major, abi_minor, size, kind;
} TUTTI_MODULE_SYMBOL = {1, 0, 4, TUTTI_MODULE_KIND_ALG};
