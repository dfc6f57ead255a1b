/*
 * Point-to-point (tutti_isend, tutti_irecv, tutti_send, tutti_recv) between
 * real processes and threads: tests/mp/p2p_worker's cases (ring at 0, 1,
 * odd and large sizes, tags received out of order, order within a tag, a
 * receive posted late, a receive pending across an allreduce, the calls
 * refused, a timeout naming the peer, a length mismatch naming both
 * lengths) over every transport that serves a pair: shm (3 tasks), tcp
 * (2 tasks), the local transport (3 devices in one task), and local and
 * shm together (2 tasks x 2 devices).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/p2p_worker"

/* Runs the worker on @p tasks x @p devices under @p env; every member
 * must report the same number of checks and no failure. */
static void run_worker(const char *env, int tasks, int devices)
{
    char cmd[512], out[16384];
    snprintf(cmd, sizeof(cmd), "%s %s --timeout 300 --job-id p2p%d-%d-%ld "
             "-n %d %s --devices %d", env, RUN, tasks, devices,
             (long)getpid(), tasks, WORKER, devices);
    test_run_ok(cmd, 1, out, sizeof(out));
    int first = -1;
    for (int r = 0; r < tasks * devices; r++) {
        char want[64];
        int checks = -1, failures = -1;
        snprintf(want, sizeof(want), "p2p_worker: rank %d: ", r);
        const char *line = strstr(out, want);
        if (line == NULL)
            fail_msg("no line for rank %d in:\n%s", r, out);
        assert_int_equal(sscanf(line + strlen(want), "%d checks, %d "
                                "failures", &checks, &failures), 2);
        if (failures != 0)
            fail_msg("rank %d: %d failures:\n%s", r, failures, out);
        assert_true(checks >= 20);
        if (first < 0)
            first = checks;
    }
    print_message("p2p over %s, %d tasks x %d devices: %d checks on rank "
                  "0, none failed\n", env, tasks, devices, first);
}

static void test_p2p_shm(void **state)
{
    (void)state;
    run_worker("TUTTI_TRANSPORTS=shm", 3, 1);
}

static void test_p2p_tcp(void **state)
{
    (void)state;
    run_worker("TUTTI_TRANSPORTS=tcp", 2, 1);
}

static void test_p2p_local(void **state)
{
    (void)state;
    run_worker("TUTTI_TRANSPORTS=shm", 1, 3);
}

static void test_p2p_local_and_shm(void **state)
{
    (void)state;
    run_worker("TUTTI_TRANSPORTS=shm", 2, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p2p_shm),
        cmocka_unit_test(test_p2p_tcp),
        cmocka_unit_test(test_p2p_local),
        cmocka_unit_test(test_p2p_local_and_shm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
