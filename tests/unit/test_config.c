/* Unit tests for core/config: YAML loading, the shipped file, errors with
 * their places, and rule checks (the environment and the modules' sections:
 * test_config_env.c). */
#include <errno.h>
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
#include "base/log.h"
#include "base/size.h"
#include "config/config.h"
#include "select/select.h"
#include "test_util.h"
#include "config_fixture.h"

/* ---- defaults and a full file ------------------------------------------- */

static void test_defaults(void **state)
{
    fixture_t *f = *state;

    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_WARN);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_DEFAULT);
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.transports.count, 2);
    assert_string_equal(f->cfg.transports.items[0], "shm");
    assert_string_equal(f->cfg.transports.items[1], "tcp");
    assert_int_equal(f->cfg.module_path.count, 0);
    assert_int_equal(f->cfg.num_rules, 0);
    assert_null(f->cfg.path);
    expect_printed(f, (const char *const[]){"timeout = 300 (default)\n",
        "transports = [shm, tcp] (default)\n", "log_level = warn (default)\n",
        NULL});
    /* The core's keys by name too: transport.h promises modules of ABI
     * 2.0 "timeout" through config_get. */
    expect_values(f, (const char *const[]){"timeout", "300", "log_level",
        "warn", NULL});
    /* The modules' defaults, from their rows. */
    assert_int_equal(take_modules(f), TUTTI_OK);
    expect_values(f, (const char *const[]){"shm.slot_size", "64K",
        "shm.slots", "16", NULL});
    assert_string_equal(tutti_last_error(), "");
    assert_string_equal(tutti__source_name(TUTTI_SRC_ENV), "env");
    assert_string_equal(tutti__source_name(TUTTI_SRC_FILE), "file");
    tutti__config_free(NULL);
}

static const char full_yaml[] =
    "# every key\n"
    "log_level: debug\n"
    "timeout: 2.5\n"
    "modules:\n"
    "  path: [/opt/a, /opt/b]\n"
    "  load: [tcp, shm]\n"
    "transports: [tcp, shm]\n"
    "shm: { slot_size: 1M, slots: 64 }\n"
    "selection:\n"
    "  - collective: [allreduce, reduce]\n"
    "    device: cuda\n"
    "    dtype: [float32, bfloat16]\n"
    "    size: 1K-16K\n"
    "    group_size: 2-8\n"
    "    num_tasks: 4-\n"
    "    algorithm: FirstImpl\n"
    "    params: { chunk: 1M, subdivs: 2 }\n"
    "  - { collective: broadcast, size: \"-4K\", algorithm: SecondImpl }\n"
    "  - { algorithm: Anything, group_size: 3, hosts: 2- }\n";

static void test_full_file(void **state)
{
    fixture_t *f = *state;
    const char *path = load_yaml(f, "full.yaml", full_yaml);
    const tutti__rule_t *r;

    assert_string_equal(f->cfg.path, path);
    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_DEBUG);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_FILE);
    assert_true(f->cfg.timeout == 2.5);
    assert_int_equal(f->cfg.src[TUTTI__SET_TIMEOUT], TUTTI_SRC_FILE);
    assert_string_equal(value_of(f, "timeout"), "2.5");
    assert_int_equal(f->cfg.module_path.count, 2);
    assert_string_equal(f->cfg.module_path.items[1], "/opt/b");
    assert_int_equal(f->cfg.src[TUTTI__SET_MODULE_PATH], TUTTI_SRC_FILE);
    assert_int_equal(f->cfg.module_load.count, 2);
    assert_string_equal(f->cfg.module_load.items[0], "tcp");
    assert_int_equal(f->cfg.src[TUTTI__SET_MODULE_LOAD], TUTTI_SRC_FILE);
    assert_int_equal(f->cfg.transports.count, 2);
    assert_string_equal(f->cfg.transports.items[0], "tcp");
    assert_int_equal(f->cfg.src[TUTTI__SET_TRANSPORTS], TUTTI_SRC_FILE);
    assert_int_equal(f->cfg.num_rules, 3);

    r = &f->cfg.rules[0];
    assert_int_equal(r->collectives, TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE) |
                                         TUTTI_COLL_BIT(TUTTI_COLL_REDUCE));
    assert_int_equal(r->device_types, TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA));
    assert_int_equal(r->dtypes, (1u << TUTTI_FLOAT32) | (1u << TUTTI_BFLOAT16));
    assert_int_equal(r->size_min, 1024);
    assert_int_equal(r->size_max, 16384);
    assert_int_equal(r->group_min, 2);
    assert_int_equal(r->group_max, 8);
    assert_int_equal(r->tasks_min, 4);
    assert_int_equal(r->tasks_max, INT32_MAX);
    assert_int_equal(r->hosts_min, 0); /* not given: any */
    assert_int_equal(r->hosts_max, INT32_MAX);
    assert_string_equal(r->algorithm, "FirstImpl");
    assert_int_equal(r->num_params, 2);
    assert_string_equal(param(r, "chunk")->value, "1M");
    assert_string_equal(param(r, "subdivs")->value, "2");
    assert_int_equal(param(r, "chunk")->size, 1u << 20); /* parsed once */
    assert_int_equal(param(r, "subdivs")->size, 2);
    assert_string_equal(r->file, path);
    assert_int_equal(r->line, 10);
    assert_int_equal(r->column, 5);
    assert_false(r->skipped);

    r = &f->cfg.rules[1];
    assert_int_equal(r->collectives, TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST));
    assert_int_equal(r->device_types, 0);
    assert_int_equal(r->size_min, 0);
    assert_int_equal(r->size_max, 4096);
    assert_int_equal(r->group_max, INT32_MAX);
    assert_int_equal(r->line, 18);
    assert_int_equal(r->column, 5);

    r = &f->cfg.rules[2];
    assert_int_equal(r->collectives, 0);
    assert_int_equal(r->size_max, UINT64_MAX);
    assert_int_equal(r->group_min, 3);
    assert_int_equal(r->group_max, 3);
    assert_int_equal(r->hosts_min, 2);
    assert_int_equal(r->hosts_max, INT32_MAX);
    assert_int_equal(r->num_params, 0);

    /* The shm section waited for the module's rows: its own entry (its
     * place) and its two values. */
    assert_int_equal(f->cfg.num_pending, 3);
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_int_equal(f->cfg.num_pending, 0);
    expect_values(f, (const char *const[]){"shm.slot_size", "1M",
        "shm.slots", "64", NULL});
    expect_printed(f, (const char *const[]){"shm.slots = 64 (file)\n",
        "shm.slot_size = 1M (file)\n", "shm.single_copy = auto (default)\n",
        " size=1K-16K group_size=2-8 num_tasks=4- -> FirstImpl {",
        " group_size=3 hosts=2- -> Anything\n", NULL});
}

static void test_single_values_and_empty(void **state)
{
    fixture_t *f = *state;

    load_yaml(f, "one.yaml",
              "modules: { path: /only/dir, load: }\n"
              "transports: tcp\n"
              "selection:\n");
    assert_int_equal(f->cfg.module_path.count, 1);
    assert_string_equal(f->cfg.module_path.items[0], "/only/dir");
    assert_int_equal(f->cfg.module_load.count, 0);
    assert_int_equal(f->cfg.transports.count, 1);
    assert_string_equal(f->cfg.transports.items[0], "tcp");
    assert_int_equal(f->cfg.num_rules, 0);
    /* Untouched keys keep their defaults. */
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.src[TUTTI__SET_TIMEOUT], TUTTI_SRC_DEFAULT);

    load_yaml(f, "empty.yaml", "# nothing but a comment\n");
    assert_string_equal(f->cfg.transports.items[0], "tcp");
}

static void test_shipped_config(void **state)
{
    fixture_t *f = *state;
    const char *path = TUTTI_TEST_SRCDIR "/conf/tutti.yaml";
    const tutti__rule_t *r;

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_WARN);
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.module_path.count, 0);
    assert_int_equal(f->cfg.module_load.count, 0);
    assert_int_equal(f->cfg.transports.count, 2);
    assert_string_equal(f->cfg.transports.items[0], "shm");
    assert_string_equal(f->cfg.transports.items[1], "tcp");
    assert_int_equal(take_modules(f), TUTTI_OK);
    expect_values(f, (const char *const[]){"shm.slot_size", "64K",
        "shm.slots", "16", "shm.single_copy", "auto",
        "shm.single_copy_min", "64K", "shm.single_copy_max", "1G",
        "shm.registered", "auto", "shm.registered_min", "4K",
        "tcp.interface", "",
        "tcp.family", "any", "tcp.ports", "0", "tcp.connections", "2", NULL});
    expect_printed(f, (const char *const[]){"shm.single_copy = auto (file)\n",
        "shm.registered_min = 4K (file)\n",
        "tcp.connections = 2 (file)\n", NULL});
    assert_int_equal(f->cfg.num_rules, 39);
    r = f->cfg.rules;
    /* CUDA groups try NCCL first, one rule per collective it runs. */
    for (int i = 0; i < TUTTI_COLL_COUNT; i++) {
        assert_int_equal(r[i].device_types,
                         TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA));
        assert_int_equal(strncmp(tutti__config_rule_algo(&r[i]), "Nccl", 4),
                         0);
    }
    r += TUTTI_COLL_COUNT;
    /* Then groups over several hosts: 17 rules, each for 2 hosts or more,
     * the first recursive doubling up to 16K on 2-7 hosts. */
    assert_string_equal(r[0].algorithm, "RecursiveDoublingAllreduce");
    assert_int_equal(r[0].hosts_min, 2);
    assert_int_equal(r[0].hosts_max, 7);
    assert_int_equal(r[0].size_max, 16384);
    assert_string_equal(r[1].algorithm, "HierarchicalAllreduce");
    for (int i = 0; i < 17; i++)
        assert_true(r[i].hosts_min >= 2);
    r += 17; /* then the host's, for any device */
    assert_true(r[0].hosts_min <= 1);
    /* Every collective has a rule for any size, so selection never fails
     * for a call the build can run. */
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        int catch_all = 0;
        for (size_t i = 0; i < f->cfg.num_rules - TUTTI_COLL_COUNT - 17;
             i++)
            catch_all |= (r[i].collectives & TUTTI_COLL_BIT(c)) &&
                         r[i].device_types == 0 && r[i].size_min == 0 &&
                         r[i].size_max == UINT64_MAX;
        if (!catch_all)
            fail_msg("no rule for %s of any size",
                     tutti_collective_name((tutti_collective_t)c));
    }
    assert_string_equal(r[5].algorithm, "BruckAllgather");
    assert_int_equal(r[5].size_max, 1024);
    assert_int_equal(r[5].group_min, 4);
    assert_string_equal(r[6].algorithm, "RingAllgather");
    assert_string_equal(r[7].algorithm, "RecursiveHalvingReduceScatter");
    assert_int_equal(r[7].size_max, 4096);
    assert_int_equal(r[7].group_min, 6);
    assert_string_equal(r[9].algorithm, "BruckAlltoall");
    assert_int_equal(r[9].size_max, 512);
    assert_int_equal(r[9].group_min, 6);
    assert_string_equal(r[12].algorithm, "TreeReduce");
    assert_string_equal(param(&r[12], "chunk")->value, "256K");
    assert_string_equal(r[0].algorithm, "RecursiveDoublingAllreduce");
    assert_int_equal(r[0].size_min, 0);
    assert_int_equal(r[0].size_max, 4096);
    assert_string_equal(r[1].algorithm, "RecursiveDoublingAllreduce");
    assert_int_equal(r[1].size_max, 8192);
    assert_int_equal(r[1].group_min, 3);
    assert_string_equal(r[2].algorithm, "RecursiveDoublingAllreduce");
    assert_int_equal(r[2].size_max, 16384);
    assert_int_equal(r[2].group_min, 8);
    assert_string_equal(r[3].algorithm, "RingAllreduce");
    assert_int_equal(r[3].collectives, TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE));
    assert_int_equal(r[3].num_params, 0);
    assert_string_equal(r[4].algorithm, "HierarchicalTreeBroadcast");
    assert_int_equal(r[4].collectives, TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST));
    assert_string_equal(param(&r[4], "fanout")->value, "2");
    assert_string_equal(param(&r[4], "chunk")->value, "256K");
}

/* ---- errors ------------------------------------------------------------- */

static void test_malformed_yaml(void **state)
{
    expect_bad_files(*state, BAD_YAML);
}

static void test_unknown_keys(void **state)
{
    expect_bad_files(*state, BAD_KEY);
}

static void test_bad_values(void **state)
{
    expect_bad_files(*state, BAD_VALUE);
}

static void test_bad_size_ranges(void **state)
{
    fixture_t *f = *state;
    static const char *const bad[] = {"x-16K", "1-2-3", "-", "16Q", "1.5K",
                                      "K-", "16K-1M-", "99999999999999999999"};
    char text[128], what[64];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text),
                 "selection:\n  - { algorithm: X, size: \"%s\" }\n", bad[i]);
        snprintf(what, sizeof(what), "size range '%s' is not valid", bad[i]);
        expect_error(f, text, "2:27", what);
        assert_non_null(strstr(tutti_last_error(), "expected LO-HI"));
    }
    expect_error(f, "selection:\n  - { algorithm: X, size: 16K-1K }\n", "2:27",
                 "size range '16K-1K' has its lower bound above its upper");
}

static void test_failure_leaves_config_unchanged(void **state)
{
    fixture_t *f = *state;
    const char *path = load_yaml(f, "good.yaml", full_yaml);

    path = write_yaml(f, "late-error.yaml",
                      "timeout: 9\n"
                      "transports: [x]\n"
                      "selection:\n  - { algorithm: Y }\n"
                      "shm: { slots: 8 }\n"
                      "log_level: loud\n");
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_ERR_CONFIG);
    assert_true(f->cfg.timeout == 2.5);
    assert_string_equal(f->cfg.transports.items[0], "tcp");
    assert_int_equal(f->cfg.num_rules, 3);
    assert_string_equal(f->cfg.rules[0].algorithm, "FirstImpl");
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "shm.slots"), "64");
    assert_non_null(strstr(f->cfg.path, "/good.yaml"));
}

static void test_missing_file(void **state)
{
    fixture_t *f = *state;
    char path[256];

    snprintf(path, sizeof(path), "%s/absent.yaml", f->dir);
    assert_int_equal(tutti__config_load_file(&f->cfg, path),
                     TUTTI_ERR_NOT_FOUND);
    assert_non_null(strstr(tutti_last_error(), path));
    assert_non_null(strstr(tutti_last_error(), strerror(ENOENT)));
    assert_int_equal(tutti__config_load_file(&f->cfg, f->dir), TUTTI_ERR_IO);
    assert_null(f->cfg.path);
}

static void test_parse_size(void **state)
{
    static const struct {
        const char *text;
        uint64_t value;
    } good[] = {{"0", 0},         {"64", 64},
                {"64B", 64},      {"64K", 65536},
                {"64kb", 65536},  {"1M", 1 << 20},
                {"3g", UINT64_C(3) << 30},
                {"2T", UINT64_C(2) << 40},
                {"16777216", 16777216}};
    static const char *const bad[] = {"",    "K",   "1.5K", "-1",
                                      "1 K", "1KK", "1X",   "16777216T"};
    uint64_t v, lo, hi;

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_int_equal(tutti_size_parse(good[i].text, &v), TUTTI_OK);
        assert_int_equal(v, good[i].value);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(tutti_size_parse(bad[i], &v), TUTTI_ERR_INVALID_ARG);
    assert_non_null(strstr(tutti_last_error(), "16777216T"));

    assert_int_equal(tutti__parse_size_range("0-16K", &lo, &hi), TUTTI_OK);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 16384);
    assert_int_equal(tutti__parse_size_range("1M-", &lo, &hi), TUTTI_OK);
    assert_int_equal(lo, 1 << 20);
    assert_true(hi == UINT64_MAX);
    assert_int_equal(tutti__parse_size_range("-4K", &lo, &hi), TUTTI_OK);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 4096);
    assert_int_equal(tutti__parse_size_range("64", &lo, &hi), TUTTI_OK);
    assert_int_equal(lo, 64);
    assert_int_equal(hi, 64);
    assert_int_equal(tutti__parse_size_range("16K-1K", &lo, &hi),
                     TUTTI_ERR_INVALID_ARG);
    assert_non_null(strstr(tutti_last_error(), "'16K-1K'"));
    assert_int_equal(tutti__parse_size_range("x-16K", &lo, &hi),
                     TUTTI_ERR_INVALID_ARG);
    assert_non_null(strstr(tutti_last_error(), "'x-16K' is not valid"));
}

/* ---- rules naming missing implementations ------------------------------- */

/* Knows RingReduce (allreduce) and HierarchicalTreeBroadcast (broadcast). */
static int fake_lookup(void *arg, const char *name, uint32_t *collectives_out)
{
    int *calls = arg;

    (*calls)++;
    if (strcmp(name, "RingReduce") == 0) {
        *collectives_out = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE);
        return 1;
    }
    if (strcmp(name, "HierarchicalTreeBroadcast") == 0) {
        *collectives_out = TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST);
        return 1;
    }
    return 0;
}

static void test_check_rules_skips_missing(void **state)
{
    fixture_t *f = *state;
    tutti_select_query_t q = {TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CPU,
                              TUTTI_FLOAT32, 4096, 4, 1, 0, 0};
    const tutti__rule_t *r;
    char explain[2048];
    int calls = 0;

    load_yaml(
        f, "rules.yaml",
        "selection:\n"
        "  - { collective: allreduce, algorithm: NcclReduce }\n"
        "  - { collective: [allreduce, broadcast], algorithm: RingReduce }\n"
        "  - { collective: allreduce, algorithm: RingReduce }\n"
        "  - { collective: broadcast,\n"
        "      algorithm: HierarchicalTreeBroadcast }\n");
    tutti__select_check_rules(&f->cfg, fake_lookup, &calls, TUTTI_LOG_WARN);
    assert_int_equal(calls, 4);
    assert_true(f->cfg.rules[0].skipped);
    assert_non_null(strstr(f->cfg.rules[0].skip_reason,
                           "rule names implementation 'NcclReduce' that no "
                           "loaded module provides"));
    assert_true(f->cfg.rules[1].skipped);
    assert_non_null(strstr(f->cfg.rules[1].skip_reason,
                           "'RingReduce' does not support broadcast"));
    assert_false(f->cfg.rules[2].skipped);
    assert_null(f->cfg.rules[2].skip_reason);
    assert_false(f->cfg.rules[3].skipped);

    r = tutti__select(&f->cfg, &q, NULL, NULL, explain, sizeof(explain));
    assert_ptr_equal(r, &f->cfg.rules[2]);
    assert_non_null(strstr(explain, ":2: NcclReduce: skipped (rule names "));
    assert_non_null(strstr(explain, ":4: RingReduce: matches"));

    expect_printed(f, (const char *const[]){
        "rules.yaml:2:5: collective=allreduce -> "
        "NcclReduce [skipped: rule names",
        "rules.yaml:4:5: collective=allreduce -> "
        "RingReduce\n", NULL});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_defaults),
        FIXTURE_TEST(test_full_file),
        FIXTURE_TEST(test_single_values_and_empty),
        FIXTURE_TEST(test_shipped_config),
        FIXTURE_TEST(test_malformed_yaml),
        FIXTURE_TEST(test_unknown_keys),
        FIXTURE_TEST(test_bad_values),
        FIXTURE_TEST(test_bad_size_ranges),
        FIXTURE_TEST(test_failure_leaves_config_unchanged),
        FIXTURE_TEST(test_missing_file),
        cmocka_unit_test(test_parse_size),
        FIXTURE_TEST(test_check_rules_skips_missing),
    };

    /* Errors are expected here; keep the log quiet. */
    tutti__log_set_level(TUTTI_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
