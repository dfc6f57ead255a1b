/* Sizes, whole numbers, ranges and seconds as the config writes them
 * (size.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/strlist.h"
#include "base/size.h"

/* Digits, then an optional K/M/G/T and an optional B, any case. */
bool tutti__size_value(const char *s, uint64_t *out)
{
    static const char units[] = "KMGT";
    const char *p = s, *unit;
    uint64_t v = 0;
    unsigned shift = 0;

    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (p == s)
        return false;
    if (*p != '\0' && (unit = strchr(units, toupper((unsigned char)*p)))) {
        shift = 10u * (unsigned)(unit - units + 1);
        p++;
    }
    if (*p == 'b' || *p == 'B')
        p++;
    if (*p != '\0' || (shift > 0 && v > (UINT64_MAX >> shift)))
        return false;
    *out = v << shift;
    return true;
}

bool tutti__uint_value(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (!isdigit((unsigned char)*s))
        return false;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (*s != '\0')
        return false;
    *out = v;
    return true;
}

/* "LO-HI", "LO-", "-HI" or "N"; bounds are sizes or plain integers <= max.
 * An open upper bound is @p max. */
int tutti__range_value(const char *s, bool sizes, uint64_t max,
                       uint64_t *lo, uint64_t *hi)
{
    char buf[64], *a, *b, *dash;

    if (strlen(s) >= sizeof(buf))
        return TUTTI__RANGE_MALFORMED;
    strcpy(buf, s);
    dash = strchr(buf, '-');
    if (dash != NULL)
        *dash = '\0';
    a = tutti__trim(buf);
    b = dash != NULL ? tutti__trim(dash + 1) : a;
    *lo = 0;
    *hi = max;
    if ((*a == '\0' && *b == '\0') || strchr(b, '-') != NULL)
        return TUTTI__RANGE_MALFORMED;
    if (*a != '\0' && !(sizes ? tutti__size_value(a, lo)
                              : tutti__uint_value(a, max, lo)))
        return TUTTI__RANGE_MALFORMED;
    if (*b != '\0' && !(sizes ? tutti__size_value(b, hi)
                              : tutti__uint_value(b, max, hi)))
        return TUTTI__RANGE_MALFORMED;
    return *lo <= *hi ? TUTTI__RANGE_OK : TUTTI__RANGE_INVERTED;
}

tutti_status_t tutti__parse_size_range(const char *s, uint64_t *lo_out,
                                       uint64_t *hi_out)
{
    uint64_t lo, hi;
    int r;

    if (s == NULL || lo_out == NULL || hi_out == NULL)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "no size range given");
    r = tutti__range_value(s, true, UINT64_MAX, &lo, &hi);
    if (r == TUTTI__RANGE_MALFORMED)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG,
                                  "size range '%s' is not valid; expected %s",
                                  s, TUTTI__SIZE_RANGE_EXPECTED);
    if (r == TUTTI__RANGE_INVERTED)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG,
                                  "size range '%s' has its lower bound above "
                                  "its upper; expected %s",
                                  s, TUTTI__RANGE_ORDER_EXPECTED);
    *lo_out = lo;
    *hi_out = hi;
    return TUTTI_OK;
}

bool tutti__seconds_value(const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v <= 0)
        return false;
    *out = v;
    return true;
}

/* "64K" where exact, else the number of bytes. */
void tutti__size_format(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;

    while (u < 3 && v != 0 && (v & 1023) == 0) {
        v >>= 10;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%" PRIu64, v);
    else
        snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
}

/* "LO-HI", "LO-" (open), or "N"; @p human writes sizes with suffixes. */
void tutti__range_format(uint64_t lo, uint64_t hi, uint64_t open,
                         bool human, char *buf, size_t len)
{
    char a[32], b[32];

    if (human) {
        tutti__size_format(lo, a, sizeof(a));
        tutti__size_format(hi, b, sizeof(b));
    } else {
        snprintf(a, sizeof(a), "%" PRIu64, lo);
        snprintf(b, sizeof(b), "%" PRIu64, hi);
    }
    if (lo == hi)
        snprintf(buf, len, "%s", a);
    else if (hi == open)
        snprintf(buf, len, "%s-", a);
    else
        snprintf(buf, len, "%s-%s", a, b);
}
