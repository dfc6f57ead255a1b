/*
 * Fuzz target: the parsers of sizes, ranges and seconds (core/base/size.c),
 * which read every size-valued setting, rule range and environment value.
 * Besides not crashing, a parsed size written back by tutti__size_format
 * must parse to the same value, and a parsed range must not be inverted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/types.h>

#include "base/size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[256], back[64];
    uint64_t v = 0, again = 0, lo = 0, hi = 0;
    double secs;
    if (size >= sizeof(text))
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (tutti_size_parse(text, &v) == TUTTI_OK) {
        tutti__size_format(v, back, sizeof(back));
        if (tutti_size_parse(back, &again) != TUTTI_OK || again != v)
            abort(); /* what is written must read back */
    }
    if (tutti__parse_size_range(text, &lo, &hi) == TUTTI_OK && lo > hi)
        abort();
    for (int sizes = 0; sizes < 2; sizes++)
        if (tutti__range_value(text, sizes, 1000, &lo, &hi) ==
                TUTTI__RANGE_OK &&
            (lo > hi || hi > (sizes ? UINT64_MAX : 1000)))
            abort();
    if (tutti__seconds_value(text, &secs) && !(secs > 0.0))
        abort();
    return 0;
}
