/* Unit tests for core/config: YAML loading, environment, rule checks, and
 * the settings of the shm and tcp modules read through their rows. */
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
#include "test_util.h"

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

    if (f == NULL || test_tmpdir(f->dir, sizeof(f->dir), "test-config") != 0) {
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

    test_rmtree(f->dir);
    tutti__config_free(&f->cfg); /* before the modules its rows are in */
    tutti__registry_free(&f->reg);
    clear_env();
    free(f);
    return 0;
}

/* Write @p text to <dir>/<name> and remember the path in f->path. */
static const char *write_yaml(fixture_t *f, const char *name, const char *text)
{
    test_tmpfile(f->path, sizeof(f->path), f->dir, name, text);
    return f->path;
}

/* Write @p text to <dir>/<name> and load it into f->cfg, which must
 * succeed; the path. */
static const char *load_yaml(fixture_t *f, const char *name, const char *text)
{
    const char *path = write_yaml(f, name, text);

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    return path;
}

/* A fresh config, as a context starts with. */
static void reset_config(fixture_t *f)
{
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
}

/* The last error names @p named and @p what, then says what was
 * expected. */
static void expect_detail(const char *named, const char *what)
{
    if (strstr(tutti_last_error(), named) == NULL ||
        strstr(tutti_last_error(), what) == NULL)
        fail_msg("detail '%s' lacks '%s' or '%s'", tutti_last_error(), named,
                 what);
    assert_non_null(strstr(tutti_last_error(), "; expected "));
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
    expect_detail(prefix, what);
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

    reset_config(f);
    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    assert_int_equal(take_modules(f), TUTTI_ERR_CONFIG);
    snprintf(prefix, sizeof(prefix), "%s:%s: ", path, where);
    expect_detail(prefix, what);
    reset_config(f);
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

/* Every key of @p kv (key, value, ..., NULL) has its value, as tutti-info
 * prints it. */
static void expect_values(fixture_t *f, const char *const *kv)
{
    for (; kv[0] != NULL; kv += 2)
        assert_string_equal(value_of(f, kv[0]), kv[1]);
}

/* The config as tutti-info prints it holds every line of @p lines (up to
 * NULL); a failure shows what was printed and the line missing. */
static void expect_printed(fixture_t *f, const char *const *lines)
{
    char *text = print_config(&f->cfg);

    for (; *lines != NULL; lines++) {
        if (strstr(text, *lines) == NULL) {
            test_show("printed:", text);
            fail_msg("no '%s' printed", *lines);
        }
    }
    free(text);
}

static const tutti__kv_t *param(const tutti__rule_t *r, const char *key)
{
    for (size_t i = 0; i < r->num_params; i++) {
        if (strcmp(r->params[i].key, key) == 0)
            return &r->params[i];
    }
    return NULL;
}

/* ---- files and variables that are refused ------------------------------- */

/* Which test loads a bad file. */
enum { BAD_YAML, BAD_KEY, BAD_VALUE, BAD_MODULE };

/* A file that does not load, or (@c module) that loads but whose sections
 * the shm and tcp modules refuse when they take them: the detail says
 * "<path>:<where>: " and @c what, and what was expected. */
typedef struct {
    int topic, module;
    const char *text, *where, *what;
} bad_file_t;

static const bad_file_t bad_files[] = {
    /* The flow list opened on line 2 is not closed before line 3's ':'. */
    {BAD_YAML, 0, "log_level: warn\ntimeout: [1, 2\nshm: {}\n", "3:4",
     "line 2, column 10"},
    {BAD_YAML, 0, "log_level: warn\ntimeout: @x\n", "2:10",
     "cannot start any token"},
    {BAD_YAML, 0, "log_level: warn\n  timeout: 3\n", "2:10",
     "mapping values are not allowed"},
    {BAD_YAML, 0, "timeout: 1\n---\ntimeout: 2\n", "3:1",
     "second YAML document"},
    {BAD_KEY, 0, "log_level: warn\n\ncolour: red\n", "3:1",
     "unknown key 'colour' at top level; expected one of "
     "log_level, timeout, modules, transports, selection, or a "
     "module's section"},
    {BAD_KEY, 0, "selection:\n  - collective: allreduce\n"
     "    algorithm: RingReduce\n"
     "  - { algorithm: X, colective: broadcast }\n", "4:21",
     "unknown key 'colective' in selection rule; expected one "
     "of collective, device, dtype, size, group_size, num_tasks, "
     "algorithm, params"},
    {BAD_KEY, 0, "modules:\n  paths: [/x]\n", "2:3",
     "unknown key 'paths' in modules"},
    {BAD_KEY, 1, "shm:\n  slot_size: 64K\n  slot: 4\n", "3:3",
     "unknown key 'slot' in shm"},
    {BAD_KEY, 1, "tcp:\n  port: 0\n", "2:3",
     "unknown key 'port' in tcp; expected one of "
     "interface, family, ports, connections"},
    /* A section no loaded module takes is an unknown key, at its name's
     * place, an empty one too. */
    {BAD_KEY, 1, "log_level: warn\nshmm: { slots: 4 }\n", "2:1",
     "unknown key 'shmm' at top level; expected one of "
     "log_level, timeout, modules, transports, selection, "
     "or the section of a loaded module with settings (shm, tcp)"},
    {BAD_KEY, 1, "shm: { slots: 4 }\nshmm:\n", "2:1",
     "unknown key 'shmm' at top level"},
    {BAD_KEY, 1, "tcpp: ~\n", "1:1", "unknown key 'tcpp' at top level"},
    {BAD_KEY, 1, "log_level: warn\n  \nshmm: {}\n", "3:1",
     "unknown key 'shmm' at top level"},
    {BAD_VALUE, 0, "timeout: 0\n", "1:10", "found '0' for timeout"},
    {BAD_VALUE, 0, "timeout: soon\n", "1:10", "found 'soon' for timeout"},
    {BAD_VALUE, 0, "timeout: [1]\n", "1:10", "found a list"},
    {BAD_VALUE, 0, "log_level: loud\n", "1:12",
     "found 'loud' for log_level; expected one of error"},
    {BAD_VALUE, 1, "shm: { slot_size: 48K }\n", "1:19",
     "found '48K' for slot_size; expected a power of two"},
    {BAD_VALUE, 1, "shm: { slot_size: 32M }\n", "1:19", "slot_size"},
    {BAD_VALUE, 1, "shm: { slot_size: 2K }\n", "1:19", "slot_size"},
    {BAD_VALUE, 1, "shm: { slots: 1 }\n", "1:15", "found '1' for slots"},
    {BAD_VALUE, 1, "shm: { slots: 1025 }\n", "1:15", "found '1025'"},
    {BAD_VALUE, 0, "shm: [1]\n", "1:6", "found a list for 'shm'"},
    {BAD_VALUE, 0, "modules: [1]\n", "1:10", "expected a mapping with keys "
     "path, load"},
    {BAD_VALUE, 0, "[1, 2]\n", "1:1", "found a list"},
    {BAD_VALUE, 0, "timeout: 1\ntimeout: 2\n", "2:1",
     "duplicate key 'timeout' (first at line 1)"},
    {BAD_VALUE, 0, "transports: [shm, 'has space']\n", "1:19", "has space"},
    {BAD_VALUE, 0, "selection:\n  - { collective: allreduce }\n", "2:5",
     "selection rule without 'algorithm'"},
    {BAD_VALUE, 0, "selection:\n  - { collective: allreduc, algorithm: X }\n",
     "2:19", "found 'allreduc' for collective; expected one of "
     "allreduce, broadcast"},
    {BAD_VALUE, 0, "selection:\n  - { device: gpu, algorithm: X }\n", "2:15",
     "found 'gpu' for device"},
    {BAD_VALUE, 0,
     "selection:\n  - { dtype: [float32, half], algorithm: X }\n", "2:24",
     "found 'half' for dtype"},
    {BAD_VALUE, 0, "selection:\n  - { collective: [], algorithm: X }\n",
     "2:19", "found an empty list"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: [A, B] }\n", "2:18",
     "found a list"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: \"\" }\n", "2:18",
     "found '' for algorithm"},
    {BAD_VALUE, 0, "selection:\n  - algorithm: "
     "A234567890123456789012345678901234567890123456789012345678901234\n",
     "2:16", "for algorithm; expected a name of 1 to 63"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, params: [1] }\n", "2:29",
     "expected a mapping of parameter names"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, params: { a: [1] } }\n",
     "2:34", "found a list"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, group_size: 2-x }\n",
     "2:33", "group_size range '2-x' is not valid"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, num_tasks: 8-2 }\n",
     "2:32", "num_tasks range '8-2' has its lower bound above"},
    {BAD_VALUE, 0, "selection: { algorithm: X }\n", "1:12",
     "found a mapping; expected a list of selection rules"},
    {BAD_MODULE, 1, "shm: { single_copy: on }\n", "1:21",
     "found 'on' for single_copy; expected auto or off"},
    {BAD_MODULE, 1, "tcp: { interface: eth0/1 }\n", "1:19",
     "found 'eth0/1' for interface; expected a network interface"},
    {BAD_MODULE, 1, "tcp: { interface: averyveryverylongname }\n", "1:19",
     "for interface"},
    {BAD_MODULE, 1, "tcp: { family: inet }\n", "1:16",
     "found 'inet' for family; expected one of any, ipv4, ipv6"},
    {BAD_MODULE, 1, "tcp: { ports: 70000 }\n", "1:15",
     "found '70000' for ports; expected 0 (any free port)"},
    {BAD_MODULE, 1, "tcp: { ports: 200-100 }\n", "1:15", "for ports"},
    {BAD_MODULE, 1, "tcp: { ports: 0-100 }\n", "1:15", "for ports"},
    {BAD_MODULE, 1, "tcp: { ports: 100- }\n", "1:15", "for ports"},
    {BAD_MODULE, 1, "tcp: { connections: 0 }\n", "1:21",
     "found '0' for connections; expected a whole number from 1 to 16"},
    {BAD_MODULE, 1, "tcp: { connections: 17 }\n", "1:21", "connections"},
    {BAD_MODULE, 0, "tcp: [1]\n", "1:6",
     "found a list for 'tcp'; expected a mapping of a module's settings"},
    {BAD_MODULE, 0, "tcp: { ports: [1, 2] }\n", "1:15",
     "found a list; expected one value"},
};

/* Loads, in order, every file of bad_files that @p topic's test loads. */
static void expect_bad_files(fixture_t *f, int topic)
{
    for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
        const bad_file_t *b = &bad_files[i];
        if (b->topic != topic)
            continue;
        if (b->module)
            expect_module_error(f, b->text, b->where, b->what);
        else
            expect_error(f, b->text, b->where, b->what);
    }
}

/* A variable the core refuses when it applies the environment, or
 * (@c module) that the shm and tcp modules refuse when they take their
 * settings: the detail names VAR='value', @c what and what was
 * expected. */
typedef struct {
    int module;
    const char *var, *value, *what;
} bad_env_t;

static const bad_env_t bad_envs[] = {
    {1, "TUTTI_SHM_SINGLE_COPY", "yes", "not a valid shm.single_copy"},
    {1, "TUTTI_TCP_IFNAME", "a b", "not a valid tcp.interface"},
    {1, "TUTTI_TCP_FAMILY", "ip4", "not a valid tcp.family"},
    {1, "TUTTI_TCP_PORTS", "1-2-3", "not a valid tcp.ports"},
    {1, "TUTTI_TCP_PORTS", "x", "not a valid tcp.ports"},
    {1, "TUTTI_TCP_CONNECTIONS", "99", "expected a whole number from 1 to 16"},
    {1, "TUTTI_SHM_SLOT_SIZE", "48K",
     "expected a power of two from 4K to 16M"},
    {0, "TUTTI_LOG_LEVEL", "loud", "not a valid log_level; "
     "expected one of error, warn, info, debug, trace, off"},
    {0, "TUTTI_TIMEOUT", "abc", "not a valid timeout"},
    {0, "TUTTI_TIMEOUT", "-1", "not a valid timeout"},
    {0, "TUTTI_TRANSPORTS", "shm,,tcp",
     "not a valid transports; expected a list of transport"},
    {0, "TUTTI_MODULES_LOAD", "ring, a b", "not a valid modules.load"},
    {0, "TUTTI_ALGO", "allreduce", "'allreduce' is not"},
    {0, "TUTTI_ALGO", "allreduce:RingReduce,bcast:X",
     "unknown collective 'bcast'"},
    {0, "TUTTI_ALGO", "allreduce:", "is not collective:name"},
};
#define NUM_BAD_ENVS (sizeof(bad_envs) / sizeof(bad_envs[0]))

/* Sets @p e's variable and expects it refused; then unsets it.  The
 * modules take their variables when their rows come, on a fresh config. */
static void expect_env_error(fixture_t *f, const bad_env_t *e)
{
    char named[256];

    if (e->module)
        reset_config(f);
    setenv(e->var, e->value, 1);
    assert_int_equal(e->module ? take_modules(f)
                               : tutti__config_apply_env(&f->cfg),
                     TUTTI_ERR_CONFIG);
    snprintf(named, sizeof(named), "%s='%s'", e->var, e->value);
    expect_detail(named, e->what);
    unsetenv(e->var);
    if (e->module)
        reset_config(f);
}

/* ---- defaults and a full file ------------------------------------------- */

static void test_defaults(void **state)
{
    fixture_t *f = *state;

    assert_int_equal(tutti__config_log_level(&f->cfg), TUTTI_LOG_WARN);
    assert_int_equal(f->cfg.src[TUTTI__SET_LOG_LEVEL], TUTTI_SRC_DEFAULT);
    assert_true(f->cfg.timeout == 300.0);
    assert_int_equal(f->cfg.transports.count, 1);
    assert_string_equal(f->cfg.transports.items[0], "shm");
    assert_int_equal(f->cfg.module_path.count, 0);
    assert_int_equal(f->cfg.num_rules, 0);
    assert_null(f->cfg.path);
    expect_printed(f, (const char *const[]){"timeout = 300 (default)\n",
        "transports = [shm] (default)\n", "log_level = warn (default)\n",
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

    /* The shm section waited for the module's rows: its own entry (its
     * place) and its two values. */
    assert_int_equal(f->cfg.num_pending, 3);
    assert_int_equal(take_modules(f), TUTTI_OK);
    assert_int_equal(f->cfg.num_pending, 0);
    expect_values(f, (const char *const[]){"shm.slot_size", "1M",
        "shm.slots", "64", NULL});
    expect_printed(f, (const char *const[]){"shm.slots = 64 (file)\n",
        "shm.slot_size = 1M (file)\n", "shm.single_copy = auto (default)\n",
        NULL});
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
    for (size_t i = 0; i < NUM_BAD_ENVS; i++)
        if (bad_envs[i].module)
            expect_env_error(f, &bad_envs[i]);
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
    expect_values(f, (const char *const[]){"shm.slot_size", "64K",
        "shm.slots", "16", "shm.single_copy", "off", "tcp.interface", "",
        "tcp.family", "any", "tcp.ports", "0", "tcp.connections", "2", NULL});
    expect_printed(f, (const char *const[]){"shm.single_copy = off (file)\n",
        "tcp.connections = 2 (file)\n", NULL});
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
    tutti_select_query_t q = {TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CPU,
                              TUTTI_FLOAT32, 4096, 4, 1, 0};
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
                              TUTTI_INT32, 64, 2, 1, 0};
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

    for (size_t i = 0; i < NUM_BAD_ENVS; i++) {
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

/* A test on the fixture: a directory, a fresh config, no TUTTI_* set. */
#define FIXTURE_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

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
        FIXTURE_TEST(test_tcp_keys),
        FIXTURE_TEST(test_tcp_bad_values),
        FIXTURE_TEST(test_env_overrides_file),
        FIXTURE_TEST(test_env_algo_rules_first),
        FIXTURE_TEST(test_env_errors_leave_config_unchanged),
    };

    /* Errors are expected here; keep the log quiet. */
    tutti__log_set_level(TUTTI_LOG_OFF);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
