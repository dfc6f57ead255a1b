/*
 * The context (internal): the front door's object.  It owns the
 * configuration, the loaded modules and the job; the rooms below take what
 * they need of it as arguments, so none of them includes this header.
 */
#ifndef TUTTI_CORE_CONTEXT_H
#define TUTTI_CORE_CONTEXT_H

#include <tutti/tutti.h>

#include "base/strlist.h"
#include "config/config.h"
#include "exec/timeline.h"
#include "job/job.h"
#include "job/store.h"
#include "plugin/registry.h"

struct tutti_context {
    tutti__config_t cfg;
    tutti__registry_t reg;
    tutti__strlist_t module_dirs;   /* searched, in order */
    tutti__job_t job;
    int job_ready;                  /* tutti__job_init() ran */
    tutti__store_t store;           /* met through, where params had one */
    tutti__timeline_file_t *timeline; /* this task's, or NULL */
};

/** Control frames this task sent to others, for tests and benchmarks of
 *  the resolution's cost. */
uint64_t tutti__context_frames_sent(const tutti_context_t *ctx);

#endif
