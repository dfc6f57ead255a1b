/*
 * Waits on a host with more members than processors, through the real
 * launcher: tutti-run started under one CPU of this test's set (as taskset
 * would) runs its ranks unpinned there, so the group sleeps once a wait
 * has been idle for a millisecond and peers wake it through the shm
 * transport's doorbells.  A member waiting 400 ms for a late peer takes
 * little processor time (yielding alone on its CPU it took all of it);
 * many allreduces with late members stay exact (no wake-up lost, or the
 * run would take a millisecond per lost one and more); a stalled peer
 * still fails the waiting members at the group's time limit.
 */
#define _GNU_SOURCE /* sched_getaffinity */

#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/idle_worker"

/* Runs idle_worker MODE ARG as @p n ranks on one CPU of this test's set. */
static int run(int n, const char *mode, int arg, char *out, size_t len)
{
    cpu_set_t set;
    int cpu = 0;
    assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
    while (!CPU_ISSET(cpu, &set))
        cpu++;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "TUTTI_TRANSPORTS=shm TUTTI_TIMEOUT=60 "
             "taskset -c %d %s --timeout 120 -n %d %s %s %d", cpu, RUN, n,
             WORKER, mode, arg);
    return test_run(cmd, 1, out, len);
}

/* The member that waits for a late peer sleeps: its processor time is a
 * small part of the wait. */
static void test_late_peer_costs_no_cpu(void **state)
{
    char out[8192];
    (void)state;
    int rc = run(2, "late", 400, out, sizeof(out));
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    const char *line = strstr(out, "idle_worker: rank 0: waited ");
    double waited, cpu;
    if (line == NULL ||
        sscanf(line, "idle_worker: rank 0: waited %lf ms, cpu %lf ms",
               &waited, &cpu) != 2)
        fail_msg("no wait line of rank 0 in:\n%s", out);
    if (waited < 300)
        fail_msg("rank 0 waited %.0f ms for a peer 400 ms late:\n%s", waited,
                 out);
    if (cpu > 0.2 * waited)
        fail_msg("rank 0 took %.0f ms of processor time in a %.0f ms wait "
                 "(a sleeping wait takes a few):\n%s", cpu, waited, out);
}

/* Allreduces with a member often late by 2 ms, three members on one CPU:
 * every element exact on every member. */
static void test_late_members_exact(void **state)
{
    char out[8192];
    (void)state;
    int rc = run(3, "mixed", 300, out, sizeof(out));
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    for (int r = 0; r < 3; r++) {
        char want[64];
        snprintf(want, sizeof(want), "rank %d: exact: 300", r);
        if (strstr(out, want) == NULL)
            fail_msg("no '%s' in:\n%s", want, out);
    }
}

/* A peer that never comes: the sleeping members still fail at the group's
 * time limit (500 ms), not later. */
static void test_stalled_peer_times_out(void **state)
{
    char out[8192];
    (void)state;
    int rc = run(2, "stall", 500, out, sizeof(out));
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    const char *line = strstr(out, "idle_worker: rank 0: failed after ");
    double after;
    if (line == NULL ||
        sscanf(line, "idle_worker: rank 0: failed after %lf ms", &after) != 1)
        fail_msg("no failure line of rank 0 in:\n%s", out);
    if (strstr(line, "ERR_TIMEOUT") == NULL || after < 450 || after > 1500)
        fail_msg("rank 0 should time out after about 500 ms:\n%s", out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_peer_costs_no_cpu),
        cmocka_unit_test(test_late_members_exact),
        cmocka_unit_test(test_stalled_peer_times_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
