/* The core's clock: monotonic seconds (clock.h). */
#include <time.h>

#include "base/clock.h"

double tutti__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 30 years: beyond any wait, and far inside a 64-bit time_t. */
#define DEADLINE_MAX 1e9

void tutti__deadline(struct timespec *ts, double seconds)
{
    double whole;

    clock_gettime(CLOCK_REALTIME, ts);
    if (!(seconds > 0)) /* NaN too */
        return;
    if (seconds > DEADLINE_MAX)
        seconds = DEADLINE_MAX;
    whole = (double)(time_t)seconds;
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}
