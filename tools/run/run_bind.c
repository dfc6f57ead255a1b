/*
 * tutti-run's binding of ranks to CPUs (--bind-to, --report-bindings):
 * the CPUs tutti-run may run on, read once at start, the policy settled
 * from them, the report, and the pinning each rank does to itself before
 * it execs.
 *
 * Unpinned, the scheduler moves ranks that spin on shared memory between
 * cores and now and then stacks two on one: the same 64 B allreduce took
 * 0.26 us in one run and 12.5 us in the next.  Pinned one per CPU it is
 * steady, so core binding is the default wherever every rank gets a CPU
 * of its own (Open MPI's rule too).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_*_S */

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* The largest CPU set asked of the kernel: 2^20 CPUs */
#define MAX_CPU_SET_BITS (1u << 20)

static int *cpus;             /* the CPUs tutti-run may run on, ascending */
static int ncpus;
static char *cpu_list;        /* cpus as "0-3,8" */

/* The calling thread's CPU set, grown until the kernel's mask fits.
 * Returns 0, or -1 with errno set. */
static int read_cpus(void)
{
    for (size_t bits = 1024; bits <= MAX_CPU_SET_BITS; bits *= 2) {
        cpu_set_t *set = CPU_ALLOC(bits);
        size_t size = CPU_ALLOC_SIZE(bits);
        int n = 0;

        if (set == NULL)
            return -1;
        if (sched_getaffinity(0, size, set) != 0) {
            int err = errno;

            CPU_FREE(set);
            if (err == EINVAL)
                continue; /* the kernel's mask is larger */
            errno = err;
            return -1;
        }
        cpus = malloc((size_t)CPU_COUNT_S(size, set) * sizeof *cpus);
        if (cpus == NULL) {
            CPU_FREE(set);
            return -1;
        }
        for (size_t c = 0; c < bits; c++)
            if (CPU_ISSET_S(c, size, set))
                cpus[n++] = (int)c;
        ncpus = n;
        CPU_FREE(set);
        return 0;
    }
    errno = EINVAL;
    return -1;
}

/* cpus as ranges, "0-3,8", into a string of its own; -1 if out of memory. */
static int make_cpu_list(void)
{
    /* at most 7 digits, a separator and a '-' per CPU */
    size_t size = (size_t)ncpus * 16 + 1, len = 0;

    cpu_list = malloc(size);
    if (cpu_list == NULL)
        return -1;
    cpu_list[0] = '\0';
    for (int i = 0; i < ncpus; i++) {
        int j = i;

        while (j + 1 < ncpus && cpus[j + 1] == cpus[j] + 1)
            j++;
        len += (size_t)snprintf(cpu_list + len, size - len,
                                j == i ? "%s%d" : "%s%d-%d", i ? "," : "",
                                cpus[i], cpus[j]);
        i = j;
    }
    return 0;
}

/* Reads the CPUs and settles opt->bind_to.  Returns -1 to go on, or
 * EXIT_LAUNCHER after saying why on stderr. */
int bind_init(struct options *opt)
{
    if (read_cpus() != 0 || make_cpu_list() != 0) {
        fprintf(stderr, "tutti-run: cannot read the CPUs it may run on "
                "(sched_getaffinity): %s\n", strerror(errno));
        return EXIT_LAUNCHER;
    }
    if (opt->bind_to == BIND_DEFAULT)
        opt->bind_to = opt->np <= ncpus ? BIND_CORE : BIND_NONE;
    if (opt->bind_to == BIND_CORE && opt->np > ncpus) {
        fprintf(stderr, "tutti-run: --bind-to core gives each rank a CPU of "
                "its own, but %d ranks were asked for and tutti-run may run "
                "on %d CPU%s (%s); start at most %d, or use --bind-to none\n",
                opt->np, ncpus, ncpus == 1 ? "" : "s", cpu_list, ncpus);
        return EXIT_LAUNCHER;
    }
    return -1;
}

void bind_report(const struct options *opt)
{
    for (int i = 0; i < opt->np; i++) {
        if (opt->bind_to == BIND_CORE)
            fprintf(stderr, "tutti-run: rank %d bound to cpu %d\n", i,
                    cpus[i]);
        else
            fprintf(stderr, "tutti-run: rank %d not bound (cpus %s)\n", i,
                    cpu_list);
    }
}

/* In the child of rank @rank, before exec: what it and everything it
 * starts inherit. */
int bind_rank(const struct options *opt, int rank)
{
    cpu_set_t *set;
    size_t size;
    int rc;

    setenv("TUTTI_BIND", opt->bind_to == BIND_CORE ? "core" : "none", 1);
    if (opt->bind_to != BIND_CORE)
        return 0;
    set = CPU_ALLOC((size_t)cpus[rank] + 1);
    if (set == NULL) {
        fprintf(stderr, "tutti-run: cannot bind rank %d to cpu %d: out of "
                "memory\n", rank, cpus[rank]);
        return -1;
    }
    size = CPU_ALLOC_SIZE((size_t)cpus[rank] + 1);
    CPU_ZERO_S(size, set);
    CPU_SET_S((size_t)cpus[rank], size, set);
    rc = sched_setaffinity(0, size, set);
    CPU_FREE(set);
    if (rc != 0) {
        fprintf(stderr, "tutti-run: cannot bind rank %d to cpu %d "
                "(sched_setaffinity): %s\n", rank, cpus[rank],
                strerror(errno));
        return -1;
    }
    return 0;
}

void bind_fini(void)
{
    free(cpu_list);
    free(cpus);
    cpu_list = NULL;
    cpus = NULL;
}
