/*
 * The core's clock (internal): monotonic seconds, for time limits and the
 * pace of polling loops.
 */
#ifndef TUTTI_CORE_BASE_CLOCK_H
#define TUTTI_CORE_BASE_CLOCK_H

/** Seconds since an arbitrary point, from CLOCK_MONOTONIC. */
double tutti__now(void);

#endif
