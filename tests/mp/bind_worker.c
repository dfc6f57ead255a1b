/*
 * One rank of the binding tests (tests/mp/test_run_bind.c), started by
 * tutti-run.  Prints the CPUs it may run on, as the kernel has them after
 * exec, and what TUTTI_BIND says, in one line:
 *
 *   bind_worker: rank R bind B cpus C1,C2,...
 *
 * (B is "unset" without TUTTI_BIND); exits 1 if the set cannot be read.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_*_S */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    const char *rank = getenv("TUTTI_RANK"), *bind = getenv("TUTTI_BIND");
    size_t bits = 1u << 16, size = CPU_ALLOC_SIZE(bits);
    cpu_set_t *set = CPU_ALLOC(bits);
    const char *sep = "";

    if (set == NULL || sched_getaffinity(0, size, set) != 0) {
        printf("bind_worker: rank %s: sched_getaffinity: %s\n",
               rank ? rank : "unset", strerror(errno));
        return 1;
    }
    printf("bind_worker: rank %s bind %s cpus ", rank ? rank : "unset",
           bind ? bind : "unset");
    for (size_t c = 0; c < bits; c++)
        if (CPU_ISSET_S(c, size, set)) {
            printf("%s%zu", sep, c);
            sep = ",";
        }
    printf("\n");
    CPU_FREE(set);
    return 0;
}
