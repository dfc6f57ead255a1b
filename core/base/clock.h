/*
 * The core's clock (internal): monotonic seconds, for time limits and the
 * pace of polling loops.
 */
#ifndef TUTTI_CORE_BASE_CLOCK_H
#define TUTTI_CORE_BASE_CLOCK_H

/** Seconds since an arbitrary point, from CLOCK_MONOTONIC. */
double tutti__now(void);

struct timespec;
/** CLOCK_REALTIME now plus @p seconds, for pthread_cond_timedwait(): safe
 *  for any double (NaN and negative ones are now, infinite and huge ones
 *  about 30 years ahead), where a cast to time_t would overflow. */
void tutti__deadline(struct timespec *ts, double seconds);

#endif
