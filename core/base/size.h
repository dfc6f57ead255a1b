/*
 * Sizes, whole numbers, ranges and seconds as the config and the tools
 * write them (internal): "64K", "0-16K", "1M-", "0.5".
 */
#ifndef TUTTI_CORE_BASE_SIZE_H
#define TUTTI_CORE_BASE_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tutti/status.h>

#define TUTTI__SECONDS_EXPECTED "a number of seconds above 0, e.g. 300 or 0.5"
#define TUTTI__SIZE_RANGE_EXPECTED                                             \
    "LO-HI, LO- or -HI in bytes, inclusive, or one size, with optional K, "   \
    "M, G, T suffixes, e.g. 0-16K, 1M-, -4K, 64"
#define TUTTI__RANGE_ORDER_EXPECTED                                            \
    "the lower bound not above the upper, e.g. 1K-16K"

/** Digits, then an optional K/M/G/T and an optional B, any case; false on
 *  anything else or overflow. */
bool tutti__size_value(const char *s, uint64_t *out);

/** A plain whole number not above @p max. */
bool tutti__uint_value(const char *s, uint64_t max, uint64_t *out);

/** What tutti__range_value() found. */
enum {
    TUTTI__RANGE_OK,
    TUTTI__RANGE_MALFORMED,
    TUTTI__RANGE_INVERTED
};

/** "LO-HI", "LO-", "-HI" or "N"; bounds are sizes (@p sizes) or plain
 *  integers <= @p max, an open upper bound is @p max.  Returns a
 *  TUTTI__RANGE_* value. */
int tutti__range_value(const char *s, bool sizes, uint64_t max, uint64_t *lo,
                       uint64_t *hi);

/** A finite number of seconds above 0. */
bool tutti__seconds_value(const char *s, double *out);

/** "0-16K", "1M-" (open), "-4K", "64" (exact) -> inclusive bounds. */
tutti_status_t tutti__parse_size_range(const char *s, uint64_t *lo_out,
                                       uint64_t *hi_out);

/** "64K" where exact, else the number of bytes. */
void tutti__size_format(uint64_t v, char *buf, size_t len);
/** "LO-HI", "LO-" (@p hi is @p open), or "N"; @p human writes sizes with
 *  suffixes. */
void tutti__range_format(uint64_t lo, uint64_t hi, uint64_t open, bool human,
                         char *buf, size_t len);

#endif
