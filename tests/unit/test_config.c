/* Unit tests for core/config: YAML loading, environment, rule checks, and
 * the settings of the shm and tcp modules read through their rows. */
#include <dirent.h>
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
#include "plugin/registry.h"
#include "select/select.h"

static const char *const env_vars[] = {
    "TUTTI_LOG_LEVEL",       "TUTTI_TIMEOUT",     "TUTTI_MODULE_PATH",
    "TUTTI_TRANSPORTS",      "TUTTI_ALGO",        "TUTTI_SHM_SINGLE_COPY",
    "TUTTI_TCP_IFNAME",      "TUTTI_TCP_FAMILY",  "TUTTI_TCP_PORTS",
    "TUTTI_TCP_CONNECTIONS", "TUTTI_SHM_SLOTS",   "TUTTI_SHM_SLOT_SIZE",
    "TUTTI_MODULES_LOAD"};

typedef struct {
    char dir[64];
    char path[128]; /* the last file written */
    tutti__config_t cfg;
    tutti__registry_t reg; /* the shm and tcp modules, once loaded */
    int reg_loaded;
} fixture_t;

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
        unsetenv(env_vars[i]);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    strcpy(f->dir, "/tmp/tutti-test-config-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    tutti__config_init(&f->cfg);
    clear_env();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    char path[512];

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", f->dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(f->dir);
    tutti__config_free(&f->cfg); /* before the modules its rows are in */
    tutti__registry_free(&f->reg);
    clear_env();
    free(f);
    return 0;
}

/* Write @p text to <dir>/<name> and remember the path in f->path. */
static const char *write_yaml(fixture_t *f, const char *name, const char *text)
{
    FILE *fp;

    snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, name);
    fp = fopen(f->path, "w");
    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
    return f->path;
}

/* Load @p text and expect TUTTI_ERR_CONFIG with "<path>:<where>: " and
 * @p what in the detail. */
static void expect_error(fixture_t *f, const char *text, const char *where,
                         const char *what)
{
    char prefix[256];
    const char *path = write_yaml(f, "bad.yaml", text);

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_ERR_CONFIG);
    snprintf(prefix, sizeof(prefix), "%s:%s: ", path, where);
    if (strstr(tutti_last_error(), prefix) == NULL ||
        strstr(tutti_last_error(), what) == NULL)
        fail_msg("detail '%s' lacks '%s' or '%s'", tutti_last_error(), prefix,
                 what);
    assert_non_null(strstr(tutti_last_error(), "; expected "));
}

/* The build tree's shm and tcp modules declare their settings to f->cfg,
 * as a context does once it loaded them: the file's sections for them and
 * their variables are read now.  Returns what that returned. */
static tutti_status_t take_modules(fixture_t *f)
{
    if (!f->reg_loaded) {
        tutti__strlist_t dirs = {NULL, 0}, all = {NULL, 0};
        assert_int_equal(tutti__strlist_push(&dirs, TUTTI_TEST_BUILDDIR
                                             "/transports/shm"), TUTTI_OK);
        assert_int_equal(tutti__strlist_push(&dirs, TUTTI_TEST_BUILDDIR
                                             "/transports/tcp"), TUTTI_OK);
        assert_int_equal(tutti__registry_load(&f->reg, &dirs, &all),
                         TUTTI_OK);
        tutti__strlist_free(&dirs);
        assert_non_null(tutti__registry_find_tp(&f->reg, "shm"));
        assert_non_null(tutti__registry_find_tp(&f->reg, "tcp"));
        f->reg_loaded = 1;
    }
    return tutti__registry_settings(&f->reg, &f->cfg);
}

/* A setting's value as tutti-info prints it. */
static const char *value_of(fixture_t *f, const char *key)
{
    static char buf[128];
    const char *v = tutti__config_get_text(&f->cfg, key, buf, sizeof(buf));
    if (v == NULL)
        fail_msg("no setting %s", key);
    return v;
}

/* Load @p text, then let the modules take their settings, and expect
 * TUTTI_ERR_CONFIG there with "<path>:<where>: " and @p what. */
static void expect_module_error(fixture_t *f, const char *text,
                                const char *where, const char *what)
{
    char prefix[256];
    const char *path = write_yaml(f, "bad.yaml", text);

    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(take_modules(f), TUTTI_ERR_CONFIG);
    snprintf(prefix, sizeof(prefix), "%s:%s: ", path, where);
    if (strstr(tutti_last_error(), prefix) == NULL ||
        strstr(tutti_last_error(), what) == NULL)
        fail_msg("detail '%s' lacks '%s' or '%s'", tutti_last_error(), prefix,
                 what);
    assert_non_null(strstr(tutti_last_error(), "; expected "));
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
}

static char *print_config(const tutti__config_t *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);

    assert_non_null(fp);
    tutti__config_print(cfg, fp);
    assert_int_equal(fclose(fp), 0);
    return text;
}

static const tutti__kv_t *param(const tutti__rule_t *r, const char *key)
{
    for (size_t i = 0; i < r->num_params; i++) {
        if (strcmp(r->params[i].key, key) == 0)
            return &r->params[i];
    }
    return NULL;
}

/* ---- defaults and a full file ------------------------------------------- */

static void test_defaults(void **state)
{
    fixture_t *f = *state;
    char *text;

    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_WARN);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_DEFAULT);
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.transports.count, 1);
    assert_string_equal(f->cfg.transports.items[0], "shm");
    assert_int_equal(f->cfg.module_path.count, 0);
    assert_int_equal(f->cfg.num_rules, 0);
    assert_null(f->cfg.path);
    text = print_config(&f->cfg);
    assert_non_null(strstr(text, "timeout = 300 (default)\n"));
    assert_non_null(strstr(text, "transports = [shm] (default)\n"));
    assert_non_null(strstr(text, "log_level = warn (default)\n"));
    free(text);
    /* The modules' defaults, from their rows. */
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "shm.slot_size"), "64K");
    assert_string_equal(value_of(f, "shm.slots"), "16");
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
    "  load: [ring, tree]\n"
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
    "  - { algorithm: Anything, group_size: 3 }\n";

static void test_full_file(void **state)
{
    fixture_t *f = *state;
    const char *path = write_yaml(f, "full.yaml", full_yaml);
    const tutti__rule_t *r;

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_string_equal(f->cfg.path, path);
    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_DEBUG);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_FILE);
    assert_true(f->cfg.timeout == 2.5);
    assert_int_equal(f->cfg.src[TUTTI__SET_TIMEOUT], TUTTI_SRC_FILE);
    assert_int_equal(f->cfg.module_path.count, 2);
    assert_string_equal(f->cfg.module_path.items[1], "/opt/b");
    assert_int_equal(f->cfg.src[TUTTI__SET_MODULE_PATH], TUTTI_SRC_FILE);
    assert_int_equal(f->cfg.module_load.count, 2);
    assert_string_equal(f->cfg.module_load.items[0], "ring");
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
    assert_string_equal(r->algorithm, "FirstImpl");
    assert_int_equal(r->num_params, 2);
    assert_string_equal(param(r, "chunk")->value, "1M");
    assert_string_equal(param(r, "subdivs")->value, "2");
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
    assert_int_equal(r->num_params, 0);

    /* The shm section waited for the module's rows. */
    assert_int_equal(f->cfg.num_pending, 2);
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_int_equal(f->cfg.num_pending, 0);
    assert_string_equal(value_of(f, "shm.slot_size"), "1M");
    assert_string_equal(value_of(f, "shm.slots"), "64");
    char *text = print_config(&f->cfg);
    assert_non_null(strstr(text, "shm.slots = 64 (file)\n"));
    assert_non_null(strstr(text, "shm.single_copy = auto (default)\n"));
    free(text);
}

static void test_single_values_and_empty(void **state)
{
    fixture_t *f = *state;
    const char *path = write_yaml(f, "one.yaml",
                                  "modules: { path: /only/dir, load: }\n"
                                  "transports: tcp\n"
                                  "selection:\n");

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(f->cfg.module_path.count, 1);
    assert_string_equal(f->cfg.module_path.items[0], "/only/dir");
    assert_int_equal(f->cfg.module_load.count, 0);
    assert_int_equal(f->cfg.transports.count, 1);
    assert_string_equal(f->cfg.transports.items[0], "tcp");
    assert_int_equal(f->cfg.num_rules, 0);
    /* Untouched keys keep their defaults. */
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.src[TUTTI__SET_TIMEOUT], TUTTI_SRC_DEFAULT);

    path = write_yaml(f, "empty.yaml", "# nothing but a comment\n");
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_string_equal(f->cfg.transports.items[0], "tcp");
}

/* ---- shm.single_copy and the tcp section ------------------------------- */

static void test_tcp_keys(void **state)
{
    fixture_t *f = *state;
    const char *path;
    char *text;

    /* Defaults, from the modules' rows. */
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "shm.single_copy"), "auto");
    assert_string_equal(value_of(f, "tcp.interface"), "");
    assert_string_equal(value_of(f, "tcp.family"), "any");
    assert_string_equal(value_of(f, "tcp.ports"), "0");
    assert_string_equal(value_of(f, "tcp.connections"), "2");
    assert_null(tutti__config_module_values(&f->cfg, "nosuchmodule"));
    assert_non_null(tutti__config_module_values(&f->cfg, "tcp"));
    text = print_config(&f->cfg);
    assert_non_null(strstr(text, "shm.single_copy = auto (default)\n"));
    assert_non_null(strstr(text, "tcp.interface = \"\" (default)\n"));
    assert_non_null(strstr(text, "tcp.family = any (default)\n"));
    assert_non_null(strstr(text, "tcp.ports = 0 (default)\n"));
    assert_non_null(strstr(text, "tcp.connections = 2 (default)\n"));
    free(text);

    /* From a file. */
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
    path = write_yaml(f, "tcp.yaml",
                      "shm: { single_copy: off }\n"
                      "tcp:\n  interface: eth1\n  family: ipv6\n"
                      "  ports: 29500-29599\n  connections: 4\n");
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "shm.single_copy"), "off");
    assert_string_equal(value_of(f, "tcp.family"), "ipv6");
    assert_string_equal(value_of(f, "tcp.ports"), "29500-29599");
    assert_string_equal(value_of(f, "tcp.connections"), "4");
    assert_string_equal(value_of(f, "tcp.interface"), "eth1");
    assert_null(tutti__config_get_text(&f->cfg, "tcp.port", (char[8]){0}, 8));
    text = print_config(&f->cfg);
    assert_non_null(strstr(text, "tcp.ports = 29500-29599 (file)\n"));
    assert_non_null(strstr(text, "tcp.interface = \"eth1\" (file)\n"));
    assert_non_null(strstr(text, "tcp.connections = 4 (file)\n"));
    free(text);

    /* The environment over the file. */
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    setenv("TUTTI_SHM_SINGLE_COPY", "auto", 1);
    setenv("TUTTI_TCP_IFNAME", "lo", 1);
    setenv("TUTTI_TCP_FAMILY", "ipv4", 1);
    setenv("TUTTI_TCP_PORTS", "0", 1);
    setenv("TUTTI_TCP_CONNECTIONS", "16", 1);
    setenv("TUTTI_SHM_SLOTS", " 32 ", 1);
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "shm.single_copy"), "auto");
    assert_string_equal(value_of(f, "tcp.interface"), "lo");
    assert_string_equal(value_of(f, "tcp.family"), "ipv4");
    assert_string_equal(value_of(f, "tcp.ports"), "0");
    assert_string_equal(value_of(f, "tcp.connections"), "16");
    assert_string_equal(value_of(f, "shm.slots"), "32");
    text = print_config(&f->cfg);
    assert_non_null(strstr(text, "tcp.family = ipv4 (env)\n"));
    assert_non_null(strstr(text, "tcp.connections = 16 (env)\n"));
    assert_non_null(strstr(text, "shm.slot_size = 64K (default)\n"));
    free(text);

    /* An empty interface in the file means any. */
    clear_env();
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
    path = write_yaml(f, "tcp2.yaml", "tcp: { interface: }\n");
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "tcp.interface"), "");
}

/* The modules take their variables when their rows come: a bad one fails
 * there, naming the variable, its value and what was expected. */
static void expect_module_env_error(fixture_t *f, const char *var,
                                    const char *value, const char *what)
{
    char named[256];

    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
    setenv(var, value, 1);
    assert_int_equal(take_modules(f), TUTTI_ERR_CONFIG);
    snprintf(named, sizeof(named), "%s='%s'", var, value);
    if (strstr(tutti_last_error(), named) == NULL ||
        strstr(tutti_last_error(), what) == NULL ||
        strstr(tutti_last_error(), "; expected ") == NULL)
        fail_msg("detail '%s' lacks '%s' or '%s'", tutti_last_error(), named,
                 what);
    unsetenv(var);
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
}

static void test_tcp_bad_values(void **state)
{
    fixture_t *f = *state;

    expect_module_error(f, "shm: { single_copy: on }\n", "1:21",
                        "found 'on' for single_copy; expected auto or off");
    expect_module_error(f, "tcp: { interface: eth0/1 }\n", "1:19",
                        "found 'eth0/1' for interface; expected a network "
                        "interface");
    expect_module_error(f, "tcp: { interface: averyveryverylongname }\n",
                        "1:19", "for interface");
    expect_module_error(f, "tcp: { family: inet }\n", "1:16",
                        "found 'inet' for family; expected one of any, ipv4, "
                        "ipv6");
    expect_module_error(f, "tcp: { ports: 70000 }\n", "1:15",
                        "found '70000' for ports; expected 0 (any free port)");
    expect_module_error(f, "tcp: { ports: 200-100 }\n", "1:15", "for ports");
    expect_module_error(f, "tcp: { ports: 0-100 }\n", "1:15", "for ports");
    expect_module_error(f, "tcp: { ports: 100- }\n", "1:15", "for ports");
    expect_module_error(f, "tcp: { connections: 0 }\n", "1:21",
                        "found '0' for connections; expected a whole number "
                        "from 1 to 16");
    expect_module_error(f, "tcp: { connections: 17 }\n", "1:21",
                        "connections");
    expect_error(f, "tcp: [1]\n", "1:6",
                 "found a list for 'tcp'; expected a mapping of a module's "
                 "settings");
    expect_error(f, "tcp: { ports: [1, 2] }\n", "1:15",
                 "found a list; expected one value");

    expect_module_env_error(f, "TUTTI_SHM_SINGLE_COPY", "yes",
                            "not a valid shm.single_copy");
    expect_module_env_error(f, "TUTTI_TCP_IFNAME", "a b",
                            "not a valid tcp.interface");
    expect_module_env_error(f, "TUTTI_TCP_FAMILY", "ip4",
                            "not a valid tcp.family");
    expect_module_env_error(f, "TUTTI_TCP_PORTS", "1-2-3",
                            "not a valid tcp.ports");
    expect_module_env_error(f, "TUTTI_TCP_PORTS", "x", "not a valid tcp.ports");
    expect_module_env_error(f, "TUTTI_TCP_CONNECTIONS", "99",
                            "expected a whole number from 1 to 16");
    expect_module_env_error(f, "TUTTI_SHM_SLOT_SIZE", "48K",
                            "expected a power of two from 4K to 16M");
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
    assert_int_equal(f->cfg.transports.count, 1);
    assert_string_equal(f->cfg.transports.items[0], "shm");
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_string_equal(value_of(f, "shm.slot_size"), "64K");
    assert_string_equal(value_of(f, "shm.slots"), "16");
    assert_string_equal(value_of(f, "shm.single_copy"), "off");
    assert_string_equal(value_of(f, "tcp.interface"), "");
    assert_string_equal(value_of(f, "tcp.family"), "any");
    assert_string_equal(value_of(f, "tcp.ports"), "0");
    assert_string_equal(value_of(f, "tcp.connections"), "2");
    char *text = print_config(&f->cfg);
    assert_non_null(strstr(text, "shm.single_copy = off (file)\n"));
    assert_non_null(strstr(text, "tcp.connections = 2 (file)\n"));
    free(text);
    assert_int_equal(f->cfg.num_rules, 11);
    r = f->cfg.rules;
    /* Every collective has a rule for any size, so selection never fails
     * for a call the build can run. */
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        int catch_all = 0;
        for (size_t i = 0; i < f->cfg.num_rules; i++)
            catch_all |= (r[i].collectives & TUTTI_COLL_BIT(c)) &&
                         r[i].size_min == 0 && r[i].size_max == UINT64_MAX;
        if (!catch_all)
            fail_msg("no rule for %s of any size",
                     tutti_collective_name((tutti_collective_t)c));
    }
    assert_string_equal(r[4].algorithm, "BruckAllgather");
    assert_int_equal(r[4].size_max, 4096);
    assert_int_equal(r[4].group_min, 6);
    assert_string_equal(r[5].algorithm, "RingAllgather");
    assert_string_equal(r[9].algorithm, "TreeReduce");
    assert_string_equal(param(&r[9], "chunk")->value, "256K");
    assert_string_equal(r[0].algorithm, "RecursiveDoublingAllreduce");
    assert_int_equal(r[0].size_min, 0);
    assert_int_equal(r[0].size_max, 4096);
    assert_string_equal(r[1].algorithm, "RecursiveDoublingAllreduce");
    assert_int_equal(r[1].size_max, 65536);
    assert_int_equal(r[1].group_min, 3);
    assert_string_equal(r[2].algorithm, "RingAllreduce");
    assert_int_equal(r[2].collectives, TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE));
    assert_int_equal(r[2].num_params, 0);
    assert_string_equal(r[3].algorithm, "HierarchicalTreeBroadcast");
    assert_int_equal(r[3].collectives, TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST));
    assert_string_equal(param(&r[3], "fanout")->value, "2");
    assert_string_equal(param(&r[3], "chunk")->value, "256K");
}

/* ---- errors ------------------------------------------------------------- */

static void test_malformed_yaml(void **state)
{
    fixture_t *f = *state;

    /* The flow list opened on line 2 is not closed before line 3's ':'. */
    expect_error(f, "log_level: warn\ntimeout: [1, 2\nshm: {}\n", "3:4",
                 "line 2, column 10");
    expect_error(f, "log_level: warn\ntimeout: @x\n", "2:10",
                 "cannot start any token");
    expect_error(f, "log_level: warn\n  timeout: 3\n", "2:10",
                 "mapping values are not allowed");
    expect_error(f, "timeout: 1\n---\ntimeout: 2\n", "3:1",
                 "second YAML document");
}

static void test_unknown_keys(void **state)
{
    fixture_t *f = *state;

    expect_error(f, "log_level: warn\n\ncolour: red\n", "3:1",
                 "unknown key 'colour' at top level; expected one of "
                 "log_level, timeout, modules, transports, selection, or a "
                 "module's section");
    expect_error(f,
                 "selection:\n"
                 "  - collective: allreduce\n"
                 "    algorithm: RingReduce\n"
                 "  - { algorithm: X, colective: broadcast }\n",
                 "4:21",
                 "unknown key 'colective' in selection rule; expected one "
                 "of collective, device, dtype, size, group_size, num_tasks, "
                 "algorithm, params");
    expect_error(f, "modules:\n  paths: [/x]\n", "2:3",
                 "unknown key 'paths' in modules");
    expect_module_error(f, "shm:\n  slot_size: 64K\n  slot: 4\n", "3:9",
                        "unknown key 'slot' in shm");
    expect_module_error(f, "tcp:\n  port: 0\n", "2:9",
                        "unknown key 'port' in tcp; expected one of "
                        "interface, family, ports, connections");
    /* A section no loaded module takes is an unknown key. */
    expect_module_error(f, "log_level: warn\nshmm: { slots: 4 }\n", "2:16",
                        "unknown key 'shmm' at top level; expected one of "
                        "log_level, timeout, modules, transports, selection, "
                        "or the section of a loaded module with settings "
                        "(shm, tcp)");
}

static void test_bad_values(void **state)
{
    fixture_t *f = *state;

    expect_error(f, "timeout: 0\n", "1:10", "found '0' for timeout");
    expect_error(f, "timeout: soon\n", "1:10", "found 'soon' for timeout");
    expect_error(f, "timeout: [1]\n", "1:10", "found a list");
    expect_error(f, "log_level: loud\n", "1:12",
                 "found 'loud' for log_level; expected one of error");
    expect_module_error(f, "shm: { slot_size: 48K }\n", "1:19",
                        "found '48K' for slot_size; expected a power of two");
    expect_module_error(f, "shm: { slot_size: 32M }\n", "1:19", "slot_size");
    expect_module_error(f, "shm: { slot_size: 2K }\n", "1:19", "slot_size");
    expect_module_error(f, "shm: { slots: 1 }\n", "1:15",
                        "found '1' for slots");
    expect_module_error(f, "shm: { slots: 1025 }\n", "1:15", "found '1025'");
    expect_error(f, "shm: [1]\n", "1:6", "found a list for 'shm'");
    expect_error(f, "modules: [1]\n", "1:10", "expected a mapping with keys "
                                              "path, load");
    expect_error(f, "[1, 2]\n", "1:1", "found a list");
    expect_error(f, "timeout: 1\ntimeout: 2\n", "2:1",
                 "duplicate key 'timeout' (first at line 1)");
    expect_error(f, "transports: [shm, 'has space']\n", "1:19", "has space");
    expect_error(f, "selection:\n  - { collective: allreduce }\n", "2:5",
                 "selection rule without 'algorithm'");
    expect_error(f, "selection:\n  - { collective: allreduc, algorithm: X }\n",
                 "2:19", "found 'allreduc' for collective; expected one of "
                         "allreduce, broadcast");
    expect_error(f, "selection:\n  - { device: gpu, algorithm: X }\n", "2:15",
                 "found 'gpu' for device");
    expect_error(f,
                 "selection:\n  - { dtype: [float32, half], algorithm: X }\n",
                 "2:24", "found 'half' for dtype");
    expect_error(f, "selection:\n  - { collective: [], algorithm: X }\n",
                 "2:19", "found an empty list");
    expect_error(f, "selection:\n  - { algorithm: [A, B] }\n", "2:18",
                 "found a list");
    expect_error(f, "selection:\n  - { algorithm: \"\" }\n", "2:18",
                 "found '' for algorithm");
    expect_error(f,
                 "selection:\n  - algorithm: "
                 "A23456789012345678901234567890"
                 "1234567890123456789012345678901234\n",
                 "2:16", "for algorithm; expected a name of 1 to 63");
    expect_error(f, "selection:\n  - { algorithm: X, params: [1] }\n", "2:29",
                 "expected a mapping of parameter names");
    expect_error(f, "selection:\n  - { algorithm: X, params: { a: [1] } }\n",
                 "2:34", "found a list");
    expect_error(f, "selection:\n  - { algorithm: X, group_size: 2-x }\n",
                 "2:33", "group_size range '2-x' is not valid");
    expect_error(f, "selection:\n  - { algorithm: X, num_tasks: 8-2 }\n",
                 "2:32", "num_tasks range '8-2' has its lower bound above");
    expect_error(f, "selection: { algorithm: X }\n", "1:12",
                 "found a mapping; expected a list of selection rules");
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
    const char *path = write_yaml(f, "good.yaml", full_yaml);

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
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
        assert_int_equal(tutti__parse_size(good[i].text, &v), TUTTI_OK);
        assert_int_equal(v, good[i].value);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(tutti__parse_size(bad[i], &v), TUTTI_ERR_INVALID_ARG);
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
    const char *path = write_yaml(
        f, "rules.yaml",
        "selection:\n"
        "  - { collective: allreduce, algorithm: NcclReduce }\n"
        "  - { collective: [allreduce, broadcast], algorithm: RingReduce }\n"
        "  - { collective: allreduce, algorithm: RingReduce }\n"
        "  - { collective: broadcast,\n"
        "      algorithm: HierarchicalTreeBroadcast }\n");
    tutti_select_query_t q = {TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CPU,
                              TUTTI_FLOAT32, 4096, 4, 1, 0};
    const tutti__rule_t *r;
    char explain[2048], *text;
    int calls = 0;

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
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

    text = print_config(&f->cfg);
    assert_non_null(strstr(text, "rules.yaml:2:5: collective=allreduce -> "
                                 "NcclReduce [skipped: rule names"));
    assert_non_null(strstr(text, "rules.yaml:4:5: collective=allreduce -> "
                                 "RingReduce\n"));
    free(text);
}

/* ---- environment -------------------------------------------------------- */

static void test_env_overrides_file(void **state)
{
    fixture_t *f = *state;
    const char *path = write_yaml(f, "env.yaml",
                                  "log_level: info\ntimeout: 10\n"
                                  "modules: { path: [/file/dir] }\n"
                                  "transports: [shm]\n");
    char *text;

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
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
    text = print_config(&f->cfg);
    assert_non_null(strstr(text, "timeout = 0.25 (env)\n"));
    assert_non_null(strstr(text, "log_level = trace (env)\n"));
    free(text);
}

static void test_env_algo_rules_first(void **state)
{
    fixture_t *f = *state;
    const char *path = write_yaml(
        f, "algo.yaml",
        "selection:\n"
        "  - { collective: allreduce, algorithm: RingReduce }\n"
        "  - { collective: broadcast,\n"
        "      algorithm: HierarchicalTreeBroadcast }\n");
    tutti_select_query_t q = {TUTTI_COLL_BROADCAST, TUTTI_DEVICE_CPU,
                              TUTTI_INT32, 64, 2, 1, 0};
    const tutti__rule_t *r;

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
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

static void expect_env_error(fixture_t *f, const char *var, const char *value,
                             const char *what)
{
    char named[256];

    setenv(var, value, 1);
    assert_int_equal(tutti__config_apply_env(&f->cfg), TUTTI_ERR_CONFIG);
    snprintf(named, sizeof(named), "%s='%s'", var, value);
    if (strstr(tutti_last_error(), named) == NULL ||
        strstr(tutti_last_error(), what) == NULL ||
        strstr(tutti_last_error(), "; expected ") == NULL)
        fail_msg("detail '%s' lacks '%s' or '%s'", tutti_last_error(), named,
                 what);
    unsetenv(var);
}

static void test_env_errors_leave_config_unchanged(void **state)
{
    fixture_t *f = *state;

    expect_env_error(f, "TUTTI_LOG_LEVEL", "loud", "not a valid log_level; "
                     "expected one of error, warn, info, debug, trace, off");
    /* Applied to the copy first (it is read first), then thrown away. */
    setenv("TUTTI_LOG_LEVEL", "debug", 1);
    expect_env_error(f, "TUTTI_TIMEOUT", "abc", "not a valid timeout");
    expect_env_error(f, "TUTTI_TIMEOUT", "-1", "not a valid timeout");
    expect_env_error(f, "TUTTI_TRANSPORTS", "shm,,tcp",
                     "not a valid transports; expected a list of transport");
    expect_env_error(f, "TUTTI_MODULES_LOAD", "ring, a b",
                     "not a valid modules.load");
    expect_env_error(f, "TUTTI_ALGO", "allreduce", "'allreduce' is not");
    expect_env_error(f, "TUTTI_ALGO", "allreduce:RingReduce,bcast:X",
                     "unknown collective 'bcast'");
    expect_env_error(f, "TUTTI_ALGO", "allreduce:", "is not collective:name");
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.src[TUTTI__SET_TIMEOUT], TUTTI_SRC_DEFAULT);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_DEFAULT);
    assert_int_equal(f->cfg.num_rules, 0);
    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_WARN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_values_and_empty, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shipped_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_yaml, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_size_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_leaves_config_unchanged,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test_setup_teardown(test_check_rules_skips_missing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tcp_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tcp_bad_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_overrides_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_env_algo_rules_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_env_errors_leave_config_unchanged,
                                        setup, teardown),
    };

    /* Errors are expected here; keep the log quiet. */
    tutti__log_set_level(TUTTI_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
