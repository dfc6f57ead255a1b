/* Unit tests for rule selection (tutti__select): first match wins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* By path: the build directory's autoconf config.h shadows "config.h". */
#include "config/config.h"
#include "select/select.h"
#include "base/log.h"
#include "test_util.h"

typedef struct {
    char dir[64];
    char path[128];
    tutti__config_t cfg;
    char explain[4096];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));

    if (f == NULL || test_tmpdir(f->dir, sizeof(f->dir), "test-select") != 0) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/rules.yaml", f->dir);
    tutti__config_init(&f->cfg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;

    test_rmtree(f->dir);
    tutti__config_free(&f->cfg);
    free(f);
    return 0;
}

/* Load "selection:" followed by @p rules (one YAML list item per line). */
static void load_rules(fixture_t *f, const char *rules)
{
    char text[2048];

    snprintf(text, sizeof(text), "selection:\n%s", rules);
    test_write_file(f->path, text);
    if (tutti__config_load_file(&f->cfg, f->path) != TUTTI_OK)
        fail_msg("loading rules failed: %s", tutti_last_error());
}

static tutti_select_query_t query(tutti_collective_t coll, size_t bytes)
{
    tutti_select_query_t q = {coll, TUTTI_DEVICE_CPU, TUTTI_FLOAT32, bytes, 4,
                              1, 0, 0};
    return q;
}

/* Algorithm picked for @p q, or "-" when no rule matches. */
static const char *pick(fixture_t *f, const tutti_select_query_t *q)
{
    const tutti__rule_t *r =
        tutti__select(&f->cfg, q, NULL, NULL, f->explain,
                             sizeof(f->explain));

    return r != NULL ? r->algorithm : "-";
}

static const char *pick_size(fixture_t *f, size_t bytes)
{
    tutti_select_query_t q = query(TUTTI_COLL_ALLREDUCE, bytes);

    return pick(f, &q);
}

static void test_first_match_by_collective(void **state)
{
    fixture_t *f = *state;
    tutti_select_query_t q;

    load_rules(f, "  - { collective: broadcast, algorithm: Bcast }\n"
                  "  - { collective: allreduce, algorithm: First }\n"
                  "  - { collective: [allreduce, allgather],\n"
                  "      algorithm: Second }\n");
    q = query(TUTTI_COLL_ALLREDUCE, 100);
    assert_string_equal(pick(f, &q), "First");
    q = query(TUTTI_COLL_BROADCAST, 100);
    assert_string_equal(pick(f, &q), "Bcast");
    q = query(TUTTI_COLL_ALLGATHER, 100);
    assert_string_equal(pick(f, &q), "Second");
    q = query(TUTTI_COLL_ALLTOALL, 100);
    assert_string_equal(pick(f, &q), "-");
}

static void test_size_bounds_inclusive(void **state)
{
    fixture_t *f = *state;

    load_rules(f, "  - { size: 0-16K, algorithm: Small }\n"
                  "  - { size: \"64K\", algorithm: Exact }\n"
                  "  - { size: 1M-, algorithm: Large }\n"
                  "  - { size: -1M, algorithm: Middle }\n");
    assert_string_equal(pick_size(f, 0), "Small");
    assert_string_equal(pick_size(f, 16384), "Small");
    assert_string_equal(pick_size(f, 16385), "Middle");
    assert_string_equal(pick_size(f, 65535), "Middle");
    assert_string_equal(pick_size(f, 65536), "Exact");
    assert_string_equal(pick_size(f, 65537), "Middle");
    assert_string_equal(pick_size(f, 1048575), "Middle");
    assert_string_equal(pick_size(f, 1048576), "Large");
    assert_string_equal(pick_size(f, SIZE_MAX), "Large");
}

static void test_group_size_and_tasks(void **state)
{
    fixture_t *f = *state;
    /* A group size, a number of tasks, and what they pick, in turn. */
    static const struct {
        int group_size, num_tasks;
        const char *want;
    } picks[] = {{2, 1, "Local"},    {8, 1, "Local"},    {1, 1, "Single"},
                 {9, 1, "-"},        {16, 1, "Big"},     {9, 2, "FewTasks"},
                 {9, 4, "FewTasks"}, {9, 5, "-"},        {4, 2, "FewTasks"}};
    tutti_select_query_t q = query(TUTTI_COLL_ALLREDUCE, 8);

    load_rules(f, "  - { group_size: 2-8, num_tasks: 1, algorithm: Local }\n"
                  "  - { group_size: 16-, algorithm: Big }\n"
                  "  - { num_tasks: 2-4, algorithm: FewTasks }\n"
                  "  - { group_size: 1, algorithm: Single }\n");
    for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++) {
        q.group_size = picks[i].group_size;
        q.num_tasks = picks[i].num_tasks;
        assert_string_equal(pick(f, &q), picks[i].want);
    }
    assert_non_null(strstr(f->explain, "Local: no (num_tasks 2 outside 1)"));
}

/* hosts: the distinct hosts of the group; a query that leaves num_hosts 0
 * (as query() does) is on one host. */
static void test_hosts(void **state)
{
    fixture_t *f = *state;
    static const struct {
        int num_tasks, num_hosts;
        const char *want;
    } picks[] = {{4, 0, "OneHost"}, {4, 1, "OneHost"}, {4, 2, "Spread"},
                 {4, 4, "Spread"},  {6, 2, "Few"},     {6, 3, "Few"},
                 {6, 4, "Many"},    {8, 8, "Many"},    {8, 9, "-"}};
    tutti_select_query_t q = query(TUTTI_COLL_ALLREDUCE, 8);
    char line[512];

    load_rules(f, "  - { hosts: 2-, num_tasks: 4, algorithm: Spread }\n"
                  "  - { hosts: 1, algorithm: OneHost }\n"
                  "  - { hosts: 2-3, algorithm: Few }\n"
                  "  - { hosts: 4-8, algorithm: Many }\n");
    q.group_size = 8;
    for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++) {
        q.num_tasks = picks[i].num_tasks;
        q.num_hosts = picks[i].num_hosts;
        if (strcmp(pick(f, &q), picks[i].want) != 0)
            fail_msg("%d tasks on %d hosts picked %s, expected %s:\n%s",
                     q.num_tasks, q.num_hosts, pick(f, &q), picks[i].want,
                     f->explain);
    }
    /* The reason names the key, the hosts seen (0 read as 1) and the
     * range. */
    q.num_tasks = 4;
    q.num_hosts = 0;
    assert_string_equal(pick(f, &q), "OneHost");
    snprintf(line, sizeof(line), "%s:2: Spread: no (hosts 1 outside 2-)\n",
             f->path);
    assert_non_null(strstr(f->explain, line));
    q.num_tasks = 6;
    q.num_hosts = 2;
    assert_string_equal(pick(f, &q), "Few");
    assert_non_null(strstr(f->explain, "Spread: no (num_tasks 6 outside 4)"));
    assert_non_null(strstr(f->explain, "OneHost: no (hosts 2 outside 1)"));
}

static void test_device_and_dtype(void **state)
{
    fixture_t *f = *state;
    tutti_select_query_t q = query(TUTTI_COLL_ALLREDUCE, 1024);

    load_rules(f, "  - { device: cuda, dtype: [float16, bfloat16], "
                  "algorithm: CudaHalf }\n"
                  "  - { device: cuda, algorithm: CudaAny }\n"
                  "  - { dtype: [int32, int64], algorithm: CpuInt }\n"
                  "  - { device: [cpu, cuda], algorithm: Fallback }\n");
    q.device_type = TUTTI_DEVICE_CUDA;
    q.dtype = TUTTI_BFLOAT16;
    assert_string_equal(pick(f, &q), "CudaHalf");
    q.dtype = TUTTI_FLOAT32;
    assert_string_equal(pick(f, &q), "CudaAny");
    q.device_type = TUTTI_DEVICE_CPU;
    q.dtype = TUTTI_INT64;
    assert_string_equal(pick(f, &q), "CpuInt");
    q.dtype = TUTTI_FLOAT16;
    assert_string_equal(pick(f, &q), "Fallback");
    assert_non_null(
        strstr(f->explain, "CudaHalf: no (device cpu not in cuda)"));
    assert_non_null(
        strstr(f->explain, "CpuInt: no (dtype float16 not in int32,int64)"));
}

static void test_no_match(void **state)
{
    fixture_t *f = *state;
    tutti_select_query_t q = query(TUTTI_COLL_REDUCE_SCATTER, 100);
    char line[512];

    load_rules(f, "  - { collective: allreduce, algorithm: A }\n"
                  "  - { collective: broadcast, algorithm: B }\n");
    assert_null(tutti__select(&f->cfg, &q, NULL, NULL, f->explain,
                                     sizeof(f->explain)));
    snprintf(line, sizeof(line),
             "%s:2: A: no (collective reduce_scatter not in allreduce)\n",
             f->path);
    assert_non_null(strstr(f->explain, line));
    assert_non_null(strstr(f->explain, ":3: B: no (collective reduce_scatter"));
    assert_non_null(strstr(f->explain, "no rule matches"));

    /* No rules at all. */
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
    assert_null(tutti__select(&f->cfg, &q, NULL, NULL, NULL, 0));
}

static void test_explain_names_choice(void **state)
{
    fixture_t *f = *state;
    char expected[1024];

    load_rules(f,
               "  - { collective: allreduce, size: 0-1024, algorithm: Small }\n"
               "  - { collective: allreduce, algorithm: RingReduce }\n"
               "  - { collective: allreduce, algorithm: NeverReached }\n");
    assert_string_equal(pick_size(f, 2048), "RingReduce");
    snprintf(expected, sizeof(expected),
             "%s:2: Small: no (size 2048 outside 0-1024)\n"
             "%s:3: RingReduce: matches\n"
             "chosen: RingReduce (%s:3)\n",
             f->path, f->path, f->path);
    assert_string_equal(f->explain, expected);
    /* Rules after the chosen one are not considered. */
    assert_null(strstr(f->explain, "NeverReached"));
}

static int lookup_none(void *arg, const char *name, uint32_t *collectives_out)
{
    (void)arg;
    *collectives_out = ~0u;
    return strcmp(name, "Missing") != 0;
}

static void test_skipped_rule_not_selected(void **state)
{
    fixture_t *f = *state;

    load_rules(f, "  - { collective: allreduce, algorithm: Missing }\n"
                  "  - { collective: allreduce, algorithm: Present }\n");
    tutti__select_check_rules(&f->cfg, lookup_none, NULL, TUTTI_LOG_WARN);
    assert_string_equal(pick_size(f, 64), "Present");
    assert_non_null(strstr(f->explain, ":2: Missing: skipped (rule names "
                                       "implementation 'Missing'"));
}

static void test_explain_truncates_safely(void **state)
{
    fixture_t *f = *state;
    tutti_select_query_t q = query(TUTTI_COLL_ALLREDUCE, 1 << 20);
    char small[24];
    const tutti__rule_t *r;

    memset(small, 'x', sizeof(small));
    load_rules(f, "  - { size: 0-1K, algorithm: Small }\n"
                  "  - { algorithm: Any }\n");
    r = tutti__select(&f->cfg, &q, NULL, NULL, small, sizeof(small));
    assert_non_null(r);
    assert_string_equal(r->algorithm, "Any");
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_memory_equal(small, f->path, sizeof(small) - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_match_by_collective, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_size_bounds_inclusive, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_group_size_and_tasks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hosts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_and_dtype, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explain_names_choice, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_skipped_rule_not_selected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_explain_truncates_safely, setup,
                                        teardown),
    };

    tutti__log_set_level(TUTTI_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
