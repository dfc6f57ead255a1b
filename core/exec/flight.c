/* Flight recorder (see flight.h). */
#include <stdio.h>
#include <time.h>

#include "exec/flight.h"
#include "base/log.h"

/* Hang diagnosis needs milliseconds, not nanoseconds: the coarse clock
 * reads a word the kernel keeps (a few ns; the precise one cost ~40 ns a
 * read here, a third of a small allreduce). */
static double coarse_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static tutti__flight_entry_t *slot(tutti__flight_t *f, uint64_t seq)
{
    tutti__flight_entry_t *e = &f->e[seq % TUTTI_FLIGHT_ENTRIES];
    return e->seq == seq ? e : NULL; /* NULL: overwritten since */
}

uint64_t tutti__flight_issue(tutti__flight_t *f, uint64_t instance_key,
                             uint64_t step, const char *algorithm,
                             uint64_t bytes)
{
    uint64_t seq = ++f->next_seq;
    tutti__flight_entry_t *e = &f->e[seq % TUTTI_FLIGHT_ENTRIES];
    *e = (tutti__flight_entry_t){seq, instance_key, step, algorithm, bytes,
                                 TUTTI_FLIGHT_WAITING, TUTTI_INPROGRESS,
                                 coarse_now(), 0, 0};
    return seq;
}

void tutti__flight_launch(tutti__flight_t *f, uint64_t seq)
{
    tutti__flight_entry_t *e = slot(f, seq);
    if (e != NULL) {
        e->state = TUTTI_FLIGHT_RUNNING;
        e->launched = coarse_now();
    }
}

void tutti__flight_finish(tutti__flight_t *f, uint64_t seq,
                          tutti_status_t status)
{
    tutti__flight_entry_t *e = slot(f, seq);
    if (e != NULL) {
        e->state = status == TUTTI_OK ? TUTTI_FLIGHT_DONE : TUTTI_FLIGHT_FAILED;
        e->status = status;
        e->finished = coarse_now();
    }
}

static const char *state_name(const tutti__flight_entry_t *e)
{
    static const char *const names[] = {"waiting", "running", "done",
                                        "failed"};
    return names[e->state];
}

void tutti__flight_dump(const tutti__flight_t *f, const char *who,
                        const char *why, const char *peers)
{
    double now = coarse_now();
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
