/* Flight recorder (see flight.h): its dump; the updates are inline
 * there. */
#include <stdio.h>

#include "exec/flight.h"
#include "base/log.h"

static const char *state_name(const tutti__flight_entry_t *e)
{
    static const char *const names[] = {"waiting", "running", "done",
                                        "failed"};
    return names[e->state];
}

void tutti__flight_dump(const tutti__flight_t *f, const char *who,
                        const char *why, const char *peers)
{
    double now = tutti__now_coarse();
    uint64_t first = f->next_seq > TUTTI_FLIGHT_ENTRIES
                         ? f->next_seq - TUTTI_FLIGHT_ENTRIES + 1
                         : 1;
    tutti__log(TUTTI_LOG_ERROR, "flight", "%s: %s", who, why);
    if (peers != NULL && peers[0] != '\0')
        tutti__log(TUTTI_LOG_ERROR, "flight", "%s: %s", who, peers);
    tutti__log(TUTTI_LOG_ERROR, "flight", "%s: last %llu executions, oldest "
               "first (seconds before now: issued / launched / finished):",
               who, (unsigned long long)(f->next_seq - first + 1));
    for (uint64_t s = first; s <= f->next_seq; s++) {
        const tutti__flight_entry_t *e = &f->e[s % TUTTI_FLIGHT_ENTRIES];
        if (e->seq != s)
            continue;
        char launched[32] = "-", finished[32] = "-";
        if (e->launched > 0)
            snprintf(launched, sizeof(launched), "%.6f", now - e->launched);
        if (e->finished > 0)
            snprintf(finished, sizeof(finished), "%.6f", now - e->finished);
        tutti__log(TUTTI_LOG_ERROR, "flight", "%s:   #%llu instance 0x%llx "
                   "step %llu %s %llu bytes %s%s%s  %.6f / %s / %s", who,
                   (unsigned long long)e->seq,
                   (unsigned long long)e->instance_key,
                   (unsigned long long)e->step,
                   e->algorithm && e->algorithm[0] ? e->algorithm
                                                   : "(unresolved)",
                   (unsigned long long)e->bytes, state_name(e),
                   e->state == TUTTI_FLIGHT_FAILED ? " " : "",
                   e->state == TUTTI_FLIGHT_FAILED
                       ? tutti_status_name(e->status) : "",
                   now - e->issued, launched, finished);
    }
}
