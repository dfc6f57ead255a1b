/*
 * Small helpers the tools share (header-only: each tool links its own
 * sources and libtutti's public API, which has none of these): the
 * monotonic clock, and strict parsing of counts and seconds.
 */
#ifndef TUTTI_TOOL_UTIL_H
#define TUTTI_TOOL_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds of CLOCK_MONOTONIC. */
static inline double tool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A whole number of 1 to @p max written with digits only (strtol would
 * also take signs and blanks). */
static inline bool tool_parse_count(const char *s, long max, int *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 9 || strspn(s, "0123456789") != n)
        return false;
    long v = strtol(s, NULL, 10);
    if (v < 1 || v > max)
        return false;
    *out = (int)v;
    return true;
}

/* Seconds above 0 and at most @p max, plain decimal only (strtod would
 * also take hex, exponents, "inf"). */
static inline bool tool_parse_seconds(const char *s, double max, double *out)
{
    size_t n = strlen(s);
    char *end;
    if (n == 0 || strspn(s, "0123456789.") != n)
        return false;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v > 0) || v > max)
        return false;
    *out = v;
    return true;
}

#endif
