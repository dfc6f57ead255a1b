/*
 * A stalled member is named: three tasks run a collective once, then task
 * 1 stops itself (SIGSTOP: alive, silent) and the others run it again.
 * Those whose part needs rank 1 must fail with TUTTI_ERR_TIMEOUT within
 * the group's 2 s (one at least does), and between them name rank 1 among
 * the ranks they wait for or whose receives their sends wait for.  Every
 * collective over shared memory; broadcast, allreduce and allgather over
 * tcp too, and where the ucx module was built over ucx (UCX's tcp and its
 * shared memory).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"
#include "tutti-build.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define WORKER TUTTI_TEST_BUILDDIR "/tests/mp/coll_worker"

/* Whether the rank list after @p at ("1", "s 0,1,2") holds rank 1. */
static int list_has_rank1(const char *at)
{
    if (*at == 's')
        at++;
    while (*at == ' ')
        at++;
    for (;;) {
        char *end;
        long r = strtol(at, &end, 10);
        if (end == at)
            return 0;
        if (r == 1)
            return 1;
        if (*end != ',')
            return 0;
        at = end + 1;
    }
}

/* Whether a line of @p out names rank 1 as one it waits for. */
static int names_rank1(const char *out)
{
    static const char *const phrases[] = {"waiting for rank",
                                          "its sends to rank"};
    for (size_t i = 0; i < 2; i++)
        for (const char *p = strstr(out, phrases[i]); p;
             p = strstr(p + 1, phrases[i]))
            if (list_has_rank1(p + strlen(phrases[i])))
                return 1;
    return 0;
}

static void stall(const char *coll, const char *env)
{
    test_tmp_t t;
    char cmd[1024], out[16384];
    test_tmp_make(&t, "stall", "unused", NULL);
    snprintf(cmd, sizeof(cmd), "%s %s --timeout 60 -n 3 %s --stall %s %s",
             env, RUN, WORKER, coll, t.dir);
    test_run(cmd, 0, out, sizeof(out)); /* task 1 ends killed: not 0 */
    test_rmtree(t.dir);
    int timeouts = 0;
    for (int task = 0; task < 3; task += 2) {
        char timeout[64], done[64];
        snprintf(timeout, sizeof(timeout), "task %d: stalled: ERR_TIMEOUT",
                 task);
        snprintf(done, sizeof(done), "task %d: stalled: OK", task);
        timeouts += strstr(out, timeout) != NULL;
        if (strstr(out, timeout) == NULL && strstr(out, done) == NULL) {
            test_show(cmd, out);
            fail_msg("task %d neither timed out nor completed", task);
        }
    }
    if (timeouts == 0) {
        test_show(cmd, out);
        fail_msg("%s: nobody timed out", coll);
    }
    if (!names_rank1(out)) {
        test_show(cmd, out);
        fail_msg("%s: no member named the stalled rank 1", coll);
    }
}

#define STALL_TEST(coll)                                                       \
    static void test_##coll(void **state)                                      \
    {                                                                          \
        (void)state;                                                           \
        stall(#coll, "");                                                      \
    }
STALL_TEST(allreduce)
STALL_TEST(broadcast)
STALL_TEST(reduce)
STALL_TEST(allgather)
STALL_TEST(gather)
STALL_TEST(reduce_scatter)
STALL_TEST(alltoall)
STALL_TEST(permute)

#define STALL_TCP_TEST(coll)                                                   \
    static void test_##coll##_tcp(void **state)                                \
    {                                                                          \
        (void)state;                                                           \
        stall(#coll, "TUTTI_TRANSPORTS=tcp");                                  \
    }
STALL_TCP_TEST(broadcast)
STALL_TCP_TEST(allreduce)
STALL_TCP_TEST(allgather)

#if TUTTI_HAVE_UCX
#define STALL_UCX_TEST(coll, tls, name)                                        \
    static void test_##coll##_ucx_##name(void **state)                         \
    {                                                                          \
        (void)state;                                                           \
        stall(#coll, "TUTTI_TRANSPORTS=ucx UCX_TLS=" tls);                     \
    }
STALL_UCX_TEST(broadcast, "tcp", tcp)
STALL_UCX_TEST(allreduce, "tcp", tcp)
STALL_UCX_TEST(allgather, "tcp", tcp)
STALL_UCX_TEST(allreduce, "sm,self", sm)
STALL_UCX_TEST(alltoall, "sm,self", sm)
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),      cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_reduce),         cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_reduce_scatter), cmocka_unit_test(test_alltoall),
        cmocka_unit_test(test_permute),
        cmocka_unit_test(test_broadcast_tcp),
        cmocka_unit_test(test_allreduce_tcp),
        cmocka_unit_test(test_allgather_tcp),
#if TUTTI_HAVE_UCX
        cmocka_unit_test(test_broadcast_ucx_tcp),
        cmocka_unit_test(test_allreduce_ucx_tcp),
        cmocka_unit_test(test_allgather_ucx_tcp),
        cmocka_unit_test(test_allreduce_ucx_sm),
        cmocka_unit_test(test_alltoall_ucx_sm),
#endif
    };
    return cmocka_run_group_tests_name("stall", tests, NULL, NULL);
}
