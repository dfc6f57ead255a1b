/*
 * The core's clock (internal): monotonic seconds, for time limits and the
 * pace of polling loops.
 */
#ifndef TUTTI_CORE_BASE_CLOCK_H
#define TUTTI_CORE_BASE_CLOCK_H

#include <time.h>

/** Seconds since an arbitrary point, from CLOCK_MONOTONIC. */
double tutti__now(void);

/** The same from CLOCK_MONOTONIC_COARSE: a word the kernel keeps, read in
 *  a few ns (the precise clock cost ~40 ns a read here), with the
 *  resolution of the kernel's tick (a few ms).  Inline: the flight
 *  recorder reads it on every execution. */
static inline double tutti__now_coarse(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/** CLOCK_REALTIME now plus @p seconds, for pthread_cond_timedwait(): safe
 *  for any double (NaN and negative ones are now, infinite and huge ones
 *  about 30 years ahead), where a cast to time_t would overflow. */
void tutti__deadline(struct timespec *ts, double seconds);

#endif
