/* Unit tests for core/config: the shm and tcp modules' sections read
 * through their rows, and the environment over the file. */
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

/* ---- shm.single_copy and the tcp section -------------------------------- */

static void test_tcp_keys(void **state)
{
    fixture_t *f = *state;
    const char *path;

    /* Defaults, from the modules' rows. */
    assert_int_equal(take_modules(f), TUTTI_OK);
    expect_values(f, (const char *const[]){"shm.single_copy", "auto",
        "tcp.interface", "", "tcp.family", "any", "tcp.ports", "0",
        "tcp.connections", "2", NULL});
    assert_null(tutti__config_module_values(&f->cfg, "nosuchmodule"));
    assert_non_null(tutti__config_module_values(&f->cfg, "tcp"));
    expect_printed(f, (const char *const[]){
        "shm.single_copy = auto (default)\n",
        "tcp.interface = \"\" (default)\n", "tcp.family = any (default)\n",
        "tcp.ports = 0 (default)\n", "tcp.connections = 2 (default)\n", NULL});

    /* From a file. */
    reset_config(f);
    path = load_yaml(f, "tcp.yaml",
                     "shm: { single_copy: off }\n"
                     "tcp:\n  interface: eth1\n  family: ipv6\n"
                     "  ports: 29500-29599\n  connections: 4\n");
    assert_int_equal(take_modules(f), TUTTI_OK);
    expect_values(f, (const char *const[]){"shm.single_copy", "off",
        "tcp.family", "ipv6", "tcp.ports", "29500-29599",
        "tcp.connections", "4", "tcp.interface", "eth1", NULL});
    assert_null(tutti__config_get_text(&f->cfg, "tcp.port", (char[8]){0}, 8));
    expect_printed(f, (const char *const[]){"tcp.ports = 29500-29599 (file)\n",
        "tcp.interface = \"eth1\" (file)\n", "tcp.connections = 4 (file)\n",
        "shm.single_copy = off (file)\n", NULL});

    /* The environment over the file. */
    reset_config(f);
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    setenv("TUTTI_SHM_SINGLE_COPY", "auto", 1);
    setenv("TUTTI_TCP_IFNAME", "lo", 1);
    setenv("TUTTI_TCP_FAMILY", "ipv4", 1);
    setenv("TUTTI_TCP_PORTS", "0", 1);
    setenv("TUTTI_TCP_CONNECTIONS", "16", 1);
    setenv("TUTTI_SHM_SLOTS", " 32 ", 1);
    assert_int_equal(take_modules(f), TUTTI_OK);
    expect_values(f, (const char *const[]){"shm.single_copy", "auto",
        "tcp.interface", "lo", "tcp.family", "ipv4", "tcp.ports", "0",
        "tcp.connections", "16", "shm.slots", "32", NULL});
    expect_printed(f, (const char *const[]){"tcp.family = ipv4 (env)\n",
        "tcp.connections = 16 (env)\n", "shm.slot_size = 64K (default)\n",
        "shm.single_copy = auto (env)\n", "tcp.ports = 0 (env)\n", NULL});

    /* An empty interface in the file means any, over a file that named
     * one: the file's value, not the default left in place. */
    clear_env();
    reset_config(f);
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    load_yaml(f, "tcp2.yaml", "tcp: { interface: }\n");
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "tcp.interface"), "");
    expect_printed(f, (const char *const[]){
        "tcp.interface = \"\" (file)\n", NULL});
}

static void test_tcp_bad_values(void **state)
{
    fixture_t *f = *state;

    expect_bad_files(f, BAD_MODULE);
    for (size_t i = 0; i < num_bad_envs; i++)
        if (bad_envs[i].module)
            expect_env_error(f, &bad_envs[i]);
}

/* A module whose section or variables are refused leaves the config as it
 * was: none of its values, its section of the file still waiting. */
static void test_module_error_leaves_config_unchanged(void **state)
{
    fixture_t *f = *state;
    char buf[64];
    size_t waiting = 0;

    load_yaml(f, "late.yaml", "tcp: { connections: 3, ports: 70000 }\n");
    assert_int_equal(take_modules(f), TUTTI_ERR_CONFIG);
    assert_null(tutti__config_get_text(&f->cfg, "tcp.connections", buf,
                                       sizeof(buf)));
    for (size_t i = 0; i < f->cfg.num_pending; i++)
        waiting += strcmp(f->cfg.pending[i].section, "tcp") == 0;
    assert_int_equal(waiting, 3); /* the section's place and two values */

    reset_config(f);
    setenv("TUTTI_TCP_IFNAME", "lo", 1);
    setenv("TUTTI_TCP_PORTS", "x", 1);
    assert_int_equal(take_modules(f), TUTTI_ERR_CONFIG);
    assert_null(tutti__config_get_text(&f->cfg, "tcp.interface", buf,
                                       sizeof(buf)));
    /* shm, declared before, keeps its values. */
    assert_string_equal(value_of(f, "shm.slots"), "16");
}

/* ---- environment -------------------------------------------------------- */

static void test_env_overrides_file(void **state)
{
    fixture_t *f = *state;

    load_yaml(f, "env.yaml",
              "log_level: info\ntimeout: 10\n"
              "modules: { path: [/file/dir] }\n"
              "transports: [shm]\n");
    setenv("TUTTI_LOG_LEVEL", "trace", 1);
    setenv("TUTTI_TIMEOUT", "0.25", 1);
    setenv("TUTTI_MODULE_PATH", "/env/a::/env/b", 1);
    setenv("TUTTI_TRANSPORTS", "tcp, shm", 1);
    assert_int_equal(tutti__config_apply_env(&f->cfg), TUTTI_OK);
    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_TRACE);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_ENV);
    assert_true(f->cfg.timeout == 0.25);
    assert_int_equal(f->cfg.src[TUTTI__SET_TIMEOUT], TUTTI_SRC_ENV);
    assert_int_equal(f->cfg.module_path.count, 3);
    assert_string_equal(f->cfg.module_path.items[0], "/env/a");
    assert_string_equal(f->cfg.module_path.items[1], "/env/b");
    assert_string_equal(f->cfg.module_path.items[2], "/file/dir");
    assert_int_equal(f->cfg.src[TUTTI__SET_MODULE_PATH], TUTTI_SRC_ENV);
    assert_int_equal(f->cfg.transports.count, 2);
    assert_string_equal(f->cfg.transports.items[0], "tcp");
    assert_string_equal(f->cfg.transports.items[1], "shm");
    assert_int_equal(f->cfg.src[TUTTI__SET_TRANSPORTS], TUTTI_SRC_ENV);
    /* Values the environment does not name keep their source. */
    assert_int_equal(f->cfg.src[TUTTI__SET_MODULE_LOAD], TUTTI_SRC_DEFAULT);
    expect_printed(f, (const char *const[]){"timeout = 0.25 (env)\n",
        "log_level = trace (env)\n", NULL});
}

static void test_env_algo_rules_first(void **state)
{
    fixture_t *f = *state;
    tutti_select_query_t q = {TUTTI_COLL_BROADCAST, TUTTI_DEVICE_CPU,
                              TUTTI_INT32, 64, 2, 1, 0, 0};
    const tutti__rule_t *r;
    const char *path = load_yaml(
        f, "algo.yaml",
        "selection:\n"
        "  - { collective: allreduce, algorithm: RingReduce }\n"
        "  - { collective: broadcast,\n"
        "      algorithm: HierarchicalTreeBroadcast }\n");

    setenv("TUTTI_ALGO", "broadcast:EnvTree, allreduce:EnvRing", 1);
    assert_int_equal(tutti__config_apply_env(&f->cfg), TUTTI_OK);
    /* Applying twice replaces the rules rather than adding them again. */
    assert_int_equal(tutti__config_apply_env(&f->cfg), TUTTI_OK);
    assert_int_equal(f->cfg.num_rules, 4);
    r = f->cfg.rules;
    assert_string_equal(r[0].algorithm, "EnvTree");
    assert_int_equal(r[0].collectives, TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST));
    assert_string_equal(r[0].file, "TUTTI_ALGO");
    assert_int_equal(r[0].line, 0);
    assert_int_equal(r[0].size_max, UINT64_MAX);
    assert_string_equal(r[1].algorithm, "EnvRing");
    assert_int_equal(r[1].collectives, TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE));
    assert_string_equal(r[2].algorithm, "RingReduce");
    assert_int_equal(r[2].line, 2);
    assert_string_equal(r[3].algorithm, "HierarchicalTreeBroadcast");

    r = tutti__select(&f->cfg, &q, NULL, NULL, NULL, 0);
    assert_non_null(r);
    assert_string_equal(r->algorithm, "EnvTree");

    /* A file loaded afterwards keeps the environment's rules in front. */
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(f->cfg.num_rules, 4);
    assert_string_equal(f->cfg.rules[0].algorithm, "EnvTree");
    assert_string_equal(f->cfg.rules[2].algorithm, "RingReduce");
}

static void test_env_errors_leave_config_unchanged(void **state)
{
    fixture_t *f = *state;
    int first = 1;

    for (size_t i = 0; i < num_bad_envs; i++) {
        if (bad_envs[i].module)
            continue;
        expect_env_error(f, &bad_envs[i]);
        /* A good log level beside the bad ones that follow the first: it
         * is applied to the copy first (it is read first), then thrown
         * away. */
        if (first)
            setenv("TUTTI_LOG_LEVEL", "debug", 1);
        first = 0;
    }
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.src[TUTTI__SET_TIMEOUT], TUTTI_SRC_DEFAULT);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_DEFAULT);
    assert_int_equal(f->cfg.num_rules, 0);
    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_WARN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_tcp_keys),
        FIXTURE_TEST(test_tcp_bad_values),
        FIXTURE_TEST(test_module_error_leaves_config_unchanged),
        FIXTURE_TEST(test_env_overrides_file),
        FIXTURE_TEST(test_env_algo_rules_first),
        FIXTURE_TEST(test_env_errors_leave_config_unchanged),
    };

    /* Errors are expected here; keep the log quiet. */
    tutti__log_set_level(TUTTI_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
