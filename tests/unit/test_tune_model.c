/*
 * tutti-tune's cost model (tools/tune_model.c) on values worked out by hand
 * from the formulas: every implementation on 4 hosts of 2 members at
 * 64 KiB and 16 MiB, the recursive doubling's fold where the group is not
 * a power of two, one host and one member per host (where the
 * hierarchical forms meet the flat ones), a single member; the ranking at
 * 4 x 2 on 10 Gbit/s with the tool's defaults; the rules printed at the
 * crossovers of a small case, sizes counted as selection does; and
 * tutti-tune --model's lines and its refusals of bad options.
 */
#define _GNU_SOURCE /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/tune_model.h"
#include "test_util.h"

#define TUNE TUTTI_TEST_BUILDDIR "/tools/tutti-tune"
#define KIB64 65536.0
#define MIB16 16777216.0

/* Round numbers to work by hand: shm 1 us and 10 GB/s (10^4 bytes per
 * us), the host link 25 us and 1.25 GB/s (1250 bytes per us). */
#define INTRA {1.0, 10.0}
#define INTER {25.0, 1.25}

static const tune_cluster_t grid = {4, 2, INTRA, INTER}; /* N = 8 */

/* The cost of @p impl on @p cl at @p bytes. */
static double cost(const tune_cluster_t *cl, const char *impl, double bytes)
{
    for (int r = 0; r < tune_model_nrows; r++)
        if (strcmp(tune_model_rows[r].impl, impl) == 0)
            return tune_model_rows[r].cost(cl, bytes);
    fail_msg("no row for %s in the model's table", impl);
    return -1;
}

/* @p impl's prediction is @p want us, to 10^-4 us. */
static void expect_us(const tune_cluster_t *cl, const char *impl,
                      double bytes, double want)
{
    double got = cost(cl, impl, bytes), d = got - want;

    if (d < -1e-4 || d > 1e-4)
        fail_msg("%s at %.0f B on %d x %d: %.6f us, want %.6f us", impl,
                 bytes, cl->hosts, cl->per_host, got, want);
}

/* The name of the fastest implementation of @p coll. */
static const char *best(const tune_cluster_t *cl, tutti_collective_t coll,
                        double bytes)
{
    int r = tune_model_best(cl, coll, bytes);

    assert_true(r >= 0);
    return tune_model_rows[r].impl;
}

/* Every row names a collective the model knows, each name once. */
static void test_table(void **state)
{
    (void)state;
    assert_true(tune_model_nrows >= 10);
    for (int r = 0; r < tune_model_nrows; r++) {
        assert_non_null(tune_model_rows[r].cost);
        for (int q = 0; q < r; q++)
            assert_string_not_equal(tune_model_rows[q].impl,
                                    tune_model_rows[r].impl);
    }
    assert_true(tune_model_knows(TUTTI_COLL_ALLREDUCE));
    assert_true(tune_model_knows(TUTTI_COLL_ALLTOALL));
    assert_false(tune_model_knows(TUTTI_COLL_BROADCAST));
    assert_int_equal(tune_model_best(&grid, TUTTI_COLL_GATHER, 8), -1);
}

/* 4 hosts x 2: allreduce. */
static void test_allreduce_4x2(void **state)
{
    (void)state;
    /* 14 steps of 25 + (S/8)/1250: S/8 = 8192 B, 6.5536 us. */
    expect_us(&grid, "RingAllreduce", KIB64, 14 * 31.5536);
    /* S/8 = 2 MiB: 1677.7216 us a step. */
    expect_us(&grid, "RingAllreduce", MIB16, 14 * 1702.7216);
    /* d = 1 inside: 1 + 6.5536; d = 2, 4 across, 2 members x 64 KiB on
     * the link: 2 x (25 + 104.8576). */
    expect_us(&grid, "RecursiveDoublingAllreduce", KIB64, 267.2688);
    /* 1 + 1677.7216, 2 x (25 + 26843.5456). */
    expect_us(&grid, "RecursiveDoublingAllreduce", MIB16, 55415.8128);
    /* 2 x 1 x (1 + 32 KiB/10^4) + 6 x (25 + 16 KiB/1250):
     * 8.5536 + 228.6432. */
    expect_us(&grid, "HierarchicalAllreduce", KIB64, 237.1968);
    /* 2 x (1 + 838.8608) + 6 x (25 + 3355.4432). */
    expect_us(&grid, "HierarchicalAllreduce", MIB16, 21962.3808);
    /* (1 + 6.5536) + (25 + 3 x 52.4288) + (1 + 6.5536). */
    expect_us(&grid, "HierarchicalLeaderAllreduce", KIB64, 197.3936);
    /* (1 + 1677.7216) x 2 + 25 + 3 x 13421.7728. */
    expect_us(&grid, "HierarchicalLeaderAllreduce", MIB16, 43647.7616);
}

/* 4 hosts x 2: allgather, reduce_scatter (the same schedules mirrored),
 * alltoall; c = S/8. */
static void test_blocks_4x2(void **state)
{
    (void)state;
    /* 7 x (25 + 8192/1250). */
    expect_us(&grid, "RingAllgather", KIB64, 220.8752);
    expect_us(&grid, "RingReduceScatter", KIB64, 220.8752);
    /* 7 x (25 + 1677.7216). */
    expect_us(&grid, "RingAllgather", MIB16, 11919.0512);
    /* 3 x (25 + 2c/1250) + 1 x (1 + 4c/10^4): 114.3216 + 4.2768. */
    expect_us(&grid, "HierarchicalAllgather", KIB64, 118.5984);
    expect_us(&grid, "HierarchicalReduceScatter", KIB64, 118.5984);
    /* 3 x (25 + 3355.4432) + (1 + 838.8608). */
    expect_us(&grid, "HierarchicalAllgather", MIB16, 10981.1904);
    expect_us(&grid, "HierarchicalReduceScatter", MIB16, 10981.1904);
    /* 7 x 25 + 2 x 6 x c/1250. */
    expect_us(&grid, "PairwiseAlltoall", KIB64, 175 + 78.6432);
    expect_us(&grid, "PairwiseAlltoall", MIB16, 175 + 20132.6592);
    /* gather 1 + 7c/10^4, inter ceil(3/2) x 25 + 12c/1250, scatter
     * 1 + 6c/10^4: 6.7344 + 128.6432 + 5.9152. */
    expect_us(&grid, "HierarchicalAlltoall", KIB64, 141.2928);
    /* 1469.0064 + 20182.6592 + 1259.2912. */
    expect_us(&grid, "HierarchicalAlltoall", MIB16, 22910.9568);
}

/* N = 6, not a power of two: two exchanges among 4 (d = 1 inside, d = 2
 * across) and the two hand-overs at distance 1, inside. */
static void test_recursive_doubling_fold(void **state)
{
    const tune_cluster_t six = {3, 2, INTRA, INTER};

    (void)state;
    expect_us(&six, "RecursiveDoublingAllreduce", KIB64,
              3 * 7.5536 + 129.8576);
}

/* One host of 8: the shm class alone; the hierarchical forms are the flat
 * ones, the leader's pays its 7 buffers. */
static void test_one_host(void **state)
{
    const tune_cluster_t one = {1, 8, INTRA, INTER};

    (void)state;
    /* 14 x (1 + 8192/10^4). */
    expect_us(&one, "RingAllreduce", KIB64, 25.4688);
    expect_us(&one, "HierarchicalAllreduce", KIB64, 25.4688);
    /* 3 x (1 + 6.5536). */
    expect_us(&one, "RecursiveDoublingAllreduce", KIB64, 22.6608);
    /* 2 x (1 + 7 x 6.5536): the 7 buffers in, the result out. */
    expect_us(&one, "HierarchicalLeaderAllreduce", KIB64, 93.7504);
    /* 7 x (1 + 0.8192). */
    expect_us(&one, "RingAllgather", KIB64, 12.7344);
    expect_us(&one, "HierarchicalAllgather", KIB64, 12.7344);
    expect_us(&one, "PairwiseAlltoall", KIB64, 12.7344);
    expect_us(&one, "HierarchicalAlltoall", KIB64, 12.7344);
}

/* One member on each of 8 hosts: the host link alone. */
static void test_one_per_host(void **state)
{
    const tune_cluster_t flat = {8, 1, INTRA, INTER};

    (void)state;
    expect_us(&flat, "RingAllreduce", KIB64, 441.7504);
    expect_us(&flat, "HierarchicalAllreduce", KIB64, 441.7504);
    /* 3 x (25 + 52.4288). */
    expect_us(&flat, "RecursiveDoublingAllreduce", KIB64, 232.2864);
    /* 25 + 7 x 52.4288. */
    expect_us(&flat, "HierarchicalLeaderAllreduce", KIB64, 392.0016);
    /* 7 x (25 + 6.5536). */
    expect_us(&flat, "RingAllgather", KIB64, 220.8752);
    expect_us(&flat, "HierarchicalAllgather", KIB64, 220.8752);
    expect_us(&flat, "PairwiseAlltoall", KIB64, 220.8752);
    expect_us(&flat, "HierarchicalAlltoall", KIB64, 220.8752);
}

/* A single member: nothing to do. */
static void test_single_member(void **state)
{
    const tune_cluster_t solo = {1, 1, INTRA, INTER};

    (void)state;
    for (int r = 0; r < tune_model_nrows; r++)
        assert_true(tune_model_rows[r].cost(&solo, MIB16) == 0.0);
}

/* 4 x 2 on 10 Gbit/s with the tool's shm defaults: the hierarchical
 * allreduce ahead of the ring at 64 KiB and at 16 MiB (23638.70 against
 * 23838.10 us), the leader's at 8 B. */
static void test_ranking_4x2(void **state)
{
    const tune_cluster_t cl = {
        4, 2, {TUNE_MODEL_INTRA_US, TUNE_MODEL_INTRA_GBPS},
        {TUNE_MODEL_INTER_US, TUNE_MODEL_INTER_GBPS}};

    (void)state;
    assert_true(cost(&cl, "HierarchicalAllreduce", MIB16) <
                cost(&cl, "RingAllreduce", MIB16));
    assert_true(cost(&cl, "HierarchicalAllreduce", KIB64) <
                cost(&cl, "RingAllreduce", KIB64));
    expect_us(&cl, "HierarchicalAllreduce", MIB16, 23638.7024);
    expect_us(&cl, "RingAllreduce", MIB16, 23838.1024);
    assert_string_equal(best(&cl, TUTTI_COLL_ALLREDUCE, MIB16),
                        "HierarchicalAllreduce");
    assert_string_equal(best(&cl, TUTTI_COLL_ALLREDUCE, 8),
                        "HierarchicalLeaderAllreduce");
}

/* What @p fn writes. */
static char *capture(void (*fn)(FILE *f))
{
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    fn(f);
    assert_int_equal(fclose(f), 0);
    return text;
}

/* 2 hosts x 2: allreduce costs 26 + 0.0017 S (doubling), 27 + 0.001 S
 * (leader), 52 + 0.0009 S (hierarchical), 150 + 0.0012 S (ring): the
 * leader passes the doubling above 1428 B, the hierarchical the leader
 * above 250000 B; of the sizes scanned, 1K and 2K, 128K and 256K. */
static void allreduce_rules(FILE *f)
{
    const tune_cluster_t cl = {2, 2, INTRA, INTER};

    tune_model_rules(f, &cl, TUTTI_COLL_ALLREDUCE, "2", 8, 1u << 30);
}

/* Alltoall on the same, per block c: 27 + 0.0037 c (hierarchical) and
 * 75 + 0.0032 c (pairwise) cross at c = 96000 B (S = 384000): the rule
 * counts blocks, 64K and 128K. */
static void alltoall_rules(FILE *f)
{
    const tune_cluster_t cl = {2, 2, INTRA, INTER};

    tune_model_rules(f, &cl, TUTTI_COLL_ALLTOALL, "2-", 8, 1u << 30);
}

static void test_rules_at_crossovers(void **state)
{
    char *text = capture(allreduce_rules);

    (void)state;
    assert_string_equal(text,
        "  - { collective: allreduce, hosts: \"2\", size: \"0-1K\", "
        "algorithm: RecursiveDoublingAllreduce }\n"
        "  - { collective: allreduce, hosts: \"2\", size: \"1025-128K\", "
        "algorithm: HierarchicalLeaderAllreduce }\n"
        "  - { collective: allreduce, hosts: \"2\", size: \"131073-\", "
        "algorithm: HierarchicalAllreduce }\n");
    free(text);
    text = capture(alltoall_rules);
    assert_string_equal(text,
        "  - { collective: alltoall, hosts: \"2-\", size: \"0-64K\", "
        "algorithm: HierarchicalAlltoall }\n"
        "  - { collective: alltoall, hosts: \"2-\", size: \"65537-\", "
        "algorithm: PairwiseAlltoall }\n");
    free(text);
}

/* tutti-tune --model: a line per implementation in table order, then the
 * best, for each size. */
static void test_model_lines(void **state)
{
    char out[8192];

    (void)state;
    test_run_ok(TUNE " --model --hosts 4 --per-host 2 --intra 1,10 "
                "-c allreduce -b 64K -e 64K", 0, out, sizeof(out));
    if (!test_has_lines(out,
                        "model allreduce 65536 RingAllreduce 441.75\n"
                        "model allreduce 65536 RecursiveDoublingAllreduce "
                        "267.27\n"
                        "model allreduce 65536 HierarchicalAllreduce "
                        "237.20\n"
                        "model allreduce 65536 HierarchicalLeaderAllreduce "
                        "197.39\n"
                        "best allreduce 65536 HierarchicalLeaderAllreduce")) {
        test_show("tutti-tune --model", out);
        fail_msg("tutti-tune --model: lines above, not those expected");
    }
}

/* Each bad option: exit 2 and a message naming it and what it expects. */
static void test_bad_options(void **state)
{
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"--model --hosts 0 --per-host 2",
         "tutti-tune: --hosts '0': invalid value: expected hosts from 1 to "
         "1024"},
        {"--model --hosts 2 --per-host 1025",
         "tutti-tune: --per-host '1025': invalid value: expected members "
         "per host from 1 to 1024"},
        {"--model --hosts 2 --per-host 2 --intra 1",
         "tutti-tune: --intra '1': invalid value: expected LAT_US,GBPS"},
        {"--model --hosts 2 --per-host 2 --inter 25,0",
         "tutti-tune: --inter '25,0': invalid value: expected LAT_US,GBPS"},
        {"--model --hosts 2 --per-host 2 --inter -1,1",
         "tutti-tune: --inter '-1,1': invalid value"},
        {"--model --hosts 2 --per-host 2 -c broadcast",
         "tutti-tune: -c 'broadcast': invalid value: expected allreduce, "
         "allgather, reduce_scatter or alltoall"},
        {"--model --hosts 2", "--model needs --hosts H and --per-host L"},
        {"--model --hosts 2 --per-host 2 -n 4",
         "tutti-tune: -n is not taken with --model"},
        {"--extrapolate --hosts 2",
         "tutti-tune: --hosts is not taken with --extrapolate"},
        {"--extrapolate -b 8", "tutti-tune: -b is not taken with "
                               "--extrapolate"},
        {"--model --extrapolate", "--model and --extrapolate: expected one"},
        {"-n 2 --hosts 2", "tutti-tune: --hosts is taken only with --model"},
    };
    char cmd[512], out[8192];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(cmd, sizeof(cmd), TUNE " %s", bad[i].args);
        int rc = test_run(cmd, 1, out, sizeof(out));
        if (rc != 2 || strstr(out, bad[i].message) == NULL) {
            test_show(cmd, out);
            fail_msg("'%s' exited %d, want 2 and '%s'", bad[i].args, rc,
                     bad[i].message);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_allreduce_4x2),
        cmocka_unit_test(test_blocks_4x2),
        cmocka_unit_test(test_recursive_doubling_fold),
        cmocka_unit_test(test_one_host),
        cmocka_unit_test(test_one_per_host),
        cmocka_unit_test(test_single_member),
        cmocka_unit_test(test_ranking_4x2),
        cmocka_unit_test(test_rules_at_crossovers),
        cmocka_unit_test(test_model_lines),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
