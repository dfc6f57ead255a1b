/* Its descriptor symbol is 4 bytes, shorter than the head every
 * descriptor starts with (ABI major, minor, size, kind): the loader may
 * read none of what would follow it. */
#include <stdint.h>

#include <tutti/plugin.h>

TUTTI_MODULE_EXPORT_ const uint32_t TUTTI_MODULE_SYMBOL[1] = {1};
