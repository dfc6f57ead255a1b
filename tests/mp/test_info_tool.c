/*
 * tutti-info --explain C --resolve over several processes, as a user runs
 * it: every collective on 2 tasks at the default size, groups of 3 and 4
 * spread over 2 tasks, the per-rank-counts call and the refusals.  Each
 * rank's line must name its task and device, the implementation, and the
 * exact number of elements checked, none wrong; nothing may be left in
 * /dev/shm.  And the listing without --explain: implementations' former
 * names, and the rules written with them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tutti-build.h"
#include "test_util.h"

#define INFO TUTTI_TEST_BUILDDIR "/tools/tutti-info"

#define MAX_RANKS 4
enum { SEC_OUT, SEC_IN, SEC_PER_RANK, SECS };
static const char *const sec_title[SECS] = {
    "out of place (instance 1):", "in place (instance 2):",
    "per-rank counts (instance 3, "};

/* One run and what its lines must say. */
typedef struct {
    const char *name;
    const char *args;                  /* after --explain */
    int nranks, ntasks;
    const char *impl, *per_rank_impl;  /* per_rank_impl NULL: no such call */
    long checked[SECS][MAX_RANKS];     /* elements each rank checks */
    const char *want[2];               /* more text the output must hold */
} info_case_t;


/* The job's shared-memory prefix, from "..., job info-123:". */
static void job_prefix(const char *out, char *prefix, size_t len)
{
    const char *j = strstr(out, ", job info-");
    long pid = j ? strtol(j + strlen(", job info-"), NULL, 10) : 0;
    snprintf(prefix, len, "tutti-info-%ld-", pid);
}

/* Checks every rank line of section @p s (which starts at @p l). */
static void check_section(const info_case_t *c, int s, char *l,
                          const char *out)
{
    int per_task = c->nranks / c->ntasks, extra = c->nranks % c->ntasks;
    for (int r = 0; r < c->nranks; r++) {
        char host[64], impl[64];
        int rank, task, dev, numa;
        unsigned long long step;
        long checked, wrong;
        l = strtok(NULL, "\n");
        if (l == NULL || sscanf(l, "  rank %d: task %d cpu:%d, host %63[^,], "
                                "NUMA node %d: ran %63s (step %llu): %ld "
                                "checked, %ld wrong", &rank, &task, &dev,
                                host, &numa, impl, &step, &checked,
                                &wrong) != 9) {
            test_show(c->args, out);
            fail_msg("%s: %s: rank %d: not a rank line: '%s'", c->name,
                     sec_title[s], r, l ? l : "(end)");
        }
        /* Ranks by task, then device: the first tasks hold one more. */
        int t = 0, first = 0;
        while (first + per_task + (t < extra) <= r)
            first += per_task + (t++ < extra);
        assert_int_equal(rank, r);
        assert_int_equal(task, t);
        assert_int_equal(dev, r - first);
        assert_string_equal(impl, s == SEC_PER_RANK ? c->per_rank_impl
                                                    : c->impl);
        assert_int_equal(step, 0);
        assert_int_equal(wrong, 0);
        assert_int_equal(checked, c->checked[s][r]);
    }
}

static void run_case(void **state)
{
    const info_case_t *c = *state;
    char cmd[512], out[32768], copy[32768], prefix[64];
    int seen[SECS] = {0};
    long total = 0;

    snprintf(cmd, sizeof(cmd), INFO " --explain %s --resolve", c->args);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 0) {
        test_show(cmd, out);
        fail_msg("%s: tutti-info exited %d (its output is above)", c->name,
                 rc);
    }
    memcpy(copy, out, sizeof(out));
    for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
        for (int s = 0; s < SECS; s++) {
            if (strncmp(l, sec_title[s], strlen(sec_title[s])) == 0) {
                seen[s]++;
                check_section(c, s, l, out);
                for (int r = 0; r < c->nranks; r++)
                    total += c->checked[s][r];
            }
        }
    }
    assert_int_equal(seen[SEC_OUT], 1);
    assert_int_equal(seen[SEC_IN], 1);
    assert_int_equal(seen[SEC_PER_RANK], c->per_rank_impl != NULL);
    snprintf(cmd, sizeof(cmd), "checked %ld elements in %d executions "
             "(ranks x calls): 0 wrong, 0 failed\n", total,
             c->nranks * (c->per_rank_impl ? 3 : 2));
    for (int i = 0; i < 3; i++) {
        const char *w = i < 2 ? c->want[i] : cmd;
        if (w != NULL && strstr(out, w) == NULL) {
            test_show(c->args, out);
            fail_msg("%s: the output lacks '%s'", c->name, w);
        }
    }
    job_prefix(out, prefix, sizeof(prefix));
    assert_int_equal(test_shm_names_with(prefix), 0);
}

/* 1M of float32: 262144 elements per rank, half of it 131072. */
#define C 262144L
#define H 131072L

static const info_case_t cases[] = {
    /* Every collective, 2 tasks of one member each, default size. */
    {"allreduce", "allreduce --num-tasks 2", 2, 2, "RingAllreduce", NULL,
     {{C, C}, {C, C}}, {"(float32, sum, 1048576 bytes: 262144 elements per "
                        "rank) in a group of 2 members over 2 tasks (1 "
                        "member each), job info-", NULL}},
    {"broadcast", "broadcast --num-tasks 2", 2, 2,
     "HierarchicalTreeBroadcast", NULL, {{C, C}, {C, C}},
     {"(float32, root 0, 1048576 bytes", NULL}},
    {"reduce", "reduce --num-tasks 2", 2, 2, "TreeReduce", NULL,
     {{C, 0}, {C, 0}}, {"(float32, sum, root 0, 1048576 bytes", NULL}},
    /* Per-rank counts: rank r gives (r mod 3) x H: 0 and H. */
    {"allgather", "allgather --num-tasks 2", 2, 2, "RingAllgather", "RingAllgather",
     {{2 * C, 2 * C}, {2 * C, 2 * C}, {H, H}},
     {"per-rank counts (instance 3, count = TUTTI_COUNT_PER_RANK; rank r "
      "gives (r mod 3) x 131072 elements):", NULL}},
    {"gather", "gather --num-tasks 2", 2, 2, "TreeGather", NULL,
     {{2 * C, 0}, {2 * C, 0}}, {NULL, NULL}},
    {"reduce_scatter", "reduce_scatter --num-tasks 2", 2, 2,
     "RingReduceScatter", "RingReduceScatter", {{C, C}, {C, C}, {0, H}},
     {"rank r's block holds (r mod 3) x 131072 elements", NULL}},
    /* Rank s sends rank d ((s + d) mod 3) x H: rank 0 gets 0 + H, rank 1
     * H + 2H. */
    {"alltoall", "alltoall --num-tasks 2", 2, 2, "PairwiseAlltoall", "PairwiseAlltoall",
     {{2 * C, 2 * C}, {2 * C, 2 * C}, {H, 3 * H}},
     {"rank s sends rank d ((s + d) mod 3) x 131072 elements", NULL}},
    {"permute", "permute --num-tasks 2", 2, 2, "DirectPermute", NULL,
     {{C, C}, {C, C}}, {NULL, NULL}},
    /* 4 members over 2 tasks, 4K of float32: 1024 elements, half 512. */
    {"allreduce 4 over 2", "allreduce --group-size 4 --num-tasks 2 --size 4K",
     4, 2, "RecursiveDoublingAllreduce", NULL,
     {{1024, 1024, 1024, 1024}, {1024, 1024, 1024, 1024}},
     {"in a group of 4 members over 2 tasks (2 members each)", NULL}},
    /* Rank d gets sum over s of ((s + d) mod 3) x 512: 3, 4, 5, 3 x 512. */
    {"alltoall 4 over 2", "alltoall --group-size 4 --num-tasks 2 --size 4K",
     4, 2, "PairwiseAlltoall", "PairwiseAlltoall",
     {{4096, 4096, 4096, 4096}, {4096, 4096, 4096, 4096},
      {1536, 2048, 2560, 1536}}, {NULL, NULL}},
    /* 3 members over 2 tasks (2 and 1); 4099 bytes round to 1024
     * elements, with a note. */
    {"reduce_scatter 3 over 2, odd size",
     "reduce_scatter --group-size 3 --num-tasks 2 --size 4099", 3, 2,
     "RingReduceScatter", "RingReduceScatter",
     {{1024, 1024, 1024}, {1024, 1024, 1024}, {0, 512, 1024}},
     {"note: --size 4099 is not a whole number of float32 elements (4 bytes "
      "each): resolving 1024 elements, 4096 bytes",
      "in a group of 3 members over 2 tasks (2 or 1 members each)"}},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* Values that do not fit are refused with exit status 2, naming them. */
static void test_refusals(void **state)
{
    static const struct {
        const char *args, *want;
    } r[] = {
        {"--explain allreduce --resolve --num-tasks 3 --group-size 2",
         "tutti-info: --num-tasks 3 does not fit --group-size 2: each task "
         "holds at least one member (expected 1 to 2 tasks)"},
        {"--explain allreduce --num-tasks 5 --group-size 4",
         "--num-tasks 5 does not fit --group-size 4"},
        {"--explain allgather --resolve --size 3",
         "tutti-info: --size 3 is less than one float32 element (4 bytes): "
         "expected 0 or at least 4"},
        {"--explain allreduce --resolve --group-size 26 --dtype int8",
         "26 members reach 130, more than int8 holds exactly (127)"},
        {"--explain allreduce --resolve --num-tasks 0",
         "tutti-info: --num-tasks '0': invalid value"},
        {"--explain allgather --per-rank --resolve",
         "tutti-info: --per-rank goes with --explain alone"},
        {"--settings --explain allreduce",
         "tutti-info: --settings and --explain go apart"},
    };
    char cmd[512], out[8192];
    (void)state;
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
        snprintf(cmd, sizeof(cmd), INFO " %s", r[i].args);
        int rc = test_run(cmd, 1, out, sizeof(out));
        if (rc != 2 || strstr(out, r[i].want) == NULL) {
            test_show(cmd, out);
            fail_msg("'%s' exited %d; expected 2 and '%s'", r[i].args, rc,
                     r[i].want);
        }
        /* Refused before any group runs. */
        assert_null(strstr(out, "resolving "));
    }
}

/* --help names --resolve's calls and the exit statuses. */
static void test_help(void **state)
{
    char out[8192];
    (void)state;
    assert_int_equal(test_run(INFO " --help", 1, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "--num-tasks T      processes in the group, "
                                "1 to N (default N)"));
    assert_non_null(strstr(out, "count TUTTI_COUNT_PER_RANK and uneven "
                                "counts"));
    assert_non_null(strstr(out, "failed or an element was wrong; 2 on bad "
                                "options"));
}

/* --per-rank: a rule whose implementation takes equal counts only is
 * passed over, saying why; the header says "per-rank counts". */
static void test_explain_per_rank(void **state)
{
    char cmd[512], out[8192];
    (void)state;
    snprintf(cmd, sizeof(cmd), "TUTTI_ALGO=allgather:BruckAllgather " INFO
             " --explain allgather --per-rank --group-size 6");
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 0) {
        test_show(cmd, out);
        fail_msg("exited %d", rc);
    }
    assert_non_null(strstr(out, "allgather on cpu, float32, per-rank "
                                "counts, group of 6 over 6 tasks:"));
    assert_non_null(strstr(out, "TUTTI_ALGO: BruckAllgather: no "
                                "(BruckAllgather (module tree) runs "
                                "allgather with equal counts only, not "
                                "per-rank counts)"));
    assert_non_null(strstr(out, "=> RingAllgather"));
    assert_null(strstr(out, "18446744073709551615"));
}

/* --hosts: the explain names the hosts, and under a rule naming a
 * hierarchical implementation says how its steps fall inside hosts and
 * between them; hosts that cannot hold the group evenly are said so. */
static void test_explain_hosts(void **state)
{
    char cmd[512], out[8192];
    (void)state;
    snprintf(cmd, sizeof(cmd), "TUTTI_ALGO=allreduce:HierarchicalAllreduce "
             INFO " --explain allreduce --size 65536 --group-size 8 "
             "--num-tasks 8 --hosts 4");
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 0) {
        test_show(cmd, out);
        fail_msg("exited %d", rc);
    }
    assert_non_null(strstr(out, "group of 8 over 8 tasks on 4 hosts:"));
    assert_non_null(strstr(out, "=> HierarchicalAllreduce"));
    assert_non_null(strstr(out, "hosts: 4 x 2 members, in host order"));
    assert_non_null(strstr(out, "steps: HierarchicalAllreduce: 2 inside "
                                "hosts, 6 between hosts;"));
    snprintf(cmd, sizeof(cmd), INFO " --explain allreduce --size 65536 "
             "--group-size 6 --num-tasks 6 --hosts 4");
    rc = test_run(cmd, 1, out, sizeof(out));
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "hosts: 6 members on 4 hosts: not the "
                                "same number on every host"));
}

/* The listing gives an implementation's former names (module ABI 1.2
 * aliases), and a rule that names one shows the implementation it selects
 * and the name it was written with. */
static void test_listing_names_former_names(void **state)
{
    char out[32768];
    const char *cmd = "TUTTI_ALGO=allreduce:RingReduce " INFO;
    const char *const want[] = {
        "  RingAllreduce              module ring   collectives allreduce "
        "devices cpu formerly RingReduce",
        "  1. TUTTI_ALGO: collective=allreduce -> RingAllreduce (written "
        "RingReduce)"};
    (void)state;
    test_run_ok(cmd, 0, out, sizeof(out));
    for (size_t i = 0; i < 2; i++) {
        if (!test_has_lines(out, want[i])) {
            test_show(cmd, out);
            fail_msg("the output lacks the line '%s'", want[i]);
        }
    }
}

/* A module whose descriptor counts 2 implementations while its table
 * holds 1 (and the other modules of tests/modules/stray, whose pointers
 * lie outside them), on TUTTI_MODULE_PATH: tutti-info lists each as
 * refused, naming the file and why, and a job of two processes warns of
 * them and runs on the shipped modules, every element exact.  Before,
 * tutti-info and every job died of SIGSEGV at load. */
static void test_stray_modules_on_path(void **state)
{
    char out[32768];
    const char *path = "TUTTI_MODULE_PATH=" TUTTI_TEST_BUILDDIR
                       "/tests/modules/stray ";
    const char *info = "TUTTI_MODULE_PATH=" TUTTI_TEST_BUILDDIR
                       "/tests/modules/stray " INFO;
    (void)state;
    test_run_ok(info, 1, out, sizeof(out));
    const char *const want[] = {
        "/tests/modules/stray/.libs/mod_shorttable.so: malformed table: the "
        "table of 2 implementations at ",
        "/tests/modules/stray/.libs/tp_shortset.so: malformed settings: the "
        "table of 3 rows at ",
        "/tests/modules/stray/.libs/mod_libcptr.so: malformed table: "
        "description of implementation 1 ('TestLibcPtr') at ",
        "  RingAllreduce "};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (strstr(out, want[i]) == NULL) {
            test_show(info, out);
            fail_msg("tutti-info's listing lacks '%s'", want[i]);
        }
    }
    static const char *const stray[] = {
        "mod_shorttable", "mod_libcptr", "mod_stackptr", "mod_nonul",
        "mod_opspast", "mod_opssize", "mod_groupptr", "tp_libcops",
        "tp_shortset", "tp_docptr"};
    for (size_t i = 0; i < sizeof(stray) / sizeof(stray[0]); i++) {
        char line[1024];
        snprintf(line, sizeof(line), "  refused  " TUTTI_TEST_BUILDDIR
                 "/tests/modules/stray/.libs/%s.so: malformed ", stray[i]);
        if (strstr(out, line) == NULL) {
            test_show(info, out);
            fail_msg("tutti-info does not list %s as refused", stray[i]);
        }
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%sTUTTI_LOG_LEVEL=warn " TUTTI_TEST_BUILDDIR
             "/tools/tutti-run -n 2 " TUTTI_TEST_BUILDDIR "/tools/tutti-perf "
             "-c allreduce -b 8 -e 256K -f 8 -n 2 -w 1", path);
    test_run_ok(cmd, 1, out, sizeof(out));
    if (strstr(out, "warn registry: module " TUTTI_TEST_BUILDDIR
                    "/tests/modules/stray/.libs/mod_shorttable.so refused: "
                    "malformed table: the table of 2 implementations") ==
            NULL ||
        test_count_of(out, "       0  ") < 6) {
        test_show(cmd, out);
        fail_msg("the job did not warn of the short table and run its 6 "
                 "sizes exactly");
    }
}

/* A call on CUDA devices, asked on this machine: where the nccl module is
 * built and no GPU can be used it declines with the CUDA runtime's reason,
 * and selection falls through to the host's ring (staged); in a build
 * without NCCL its rule is skipped, naming the implementation. */
static void test_explain_cuda_falls_through(void **state)
{
    char out[16384];
    const char *cmd = INFO " --explain allreduce --device cuda --size 1M";
    (void)state;
    test_run_ok(cmd, 1, out, sizeof(out));
    assert_non_null(strstr(out, "allreduce on cuda, float32, 1048576 bytes"));
#if TUTTI_HAVE_NCCL
    const char *no_gpu = "NcclAllreduce: no (NcclAllreduce (module nccl) "
                         "declines: ";
    if (strstr(out, "cudaError") != NULL || strstr(out, "no CUDA device"))
        assert_non_null(strstr(out, no_gpu));
    else /* a machine with a usable GPU: NCCL is chosen */
        assert_non_null(strstr(out, "=> NcclAllreduce"));
    if (strstr(out, no_gpu) != NULL)
        assert_non_null(strstr(out, "=> RingAllreduce"));
#else
    assert_non_null(strstr(out, "NcclAllreduce: skipped (rule names "
                                "implementation 'NcclAllreduce' that no "
                                "loaded module provides)"));
    assert_non_null(strstr(out, "=> RingAllreduce"));
#endif
}

int main(void)
{
    struct CMUnitTest tests[NCASES + 7];
    size_t k = 0;
    for (; k < NCASES; k++)
        tests[k] = (struct CMUnitTest){cases[k].name, run_case, NULL, NULL,
                                       (void *)&cases[k]};
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(test_refusals);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(test_help);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(test_explain_per_rank);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(test_explain_hosts);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(test_listing_names_former_names);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(test_explain_cuda_falls_through);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(test_stray_modules_on_path);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
