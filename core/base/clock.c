/* The core's clock: monotonic seconds (clock.h). */
#include <time.h>

#include "base/clock.h"

double tutti__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
