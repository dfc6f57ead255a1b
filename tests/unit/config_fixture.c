/* The config tests' fixture and their refused files and variables (see
 * config_fixture.h). */
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

#include "config_fixture.h"

static const char *const env_vars[] = {
    "TUTTI_LOG_LEVEL",       "TUTTI_TIMEOUT",     "TUTTI_MODULE_PATH",
    "TUTTI_TRANSPORTS",      "TUTTI_ALGO",        "TUTTI_SHM_SINGLE_COPY",
    "TUTTI_TCP_IFNAME",      "TUTTI_TCP_FAMILY",  "TUTTI_TCP_PORTS",
    "TUTTI_TCP_CONNECTIONS", "TUTTI_SHM_SLOTS",   "TUTTI_SHM_SLOT_SIZE",
    "TUTTI_MODULES_LOAD"};

void clear_env(void)
{
    for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
        unsetenv(env_vars[i]);
}

int setup(void **state)
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

int teardown(void **state)
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
const char *write_yaml(fixture_t *f, const char *name, const char *text)
{
    test_tmpfile(f->path, sizeof(f->path), f->dir, name, text);
    return f->path;
}

/* Write @p text to <dir>/<name> and load it into f->cfg, which must
 * succeed; the path. */
const char *load_yaml(fixture_t *f, const char *name, const char *text)
{
    const char *path = write_yaml(f, name, text);

    assert_int_equal(tutti__config_load_file(&f->cfg, path), TUTTI_OK);
    return path;
}

/* A fresh config, as a context starts with. */
void reset_config(fixture_t *f)
{
    tutti__config_free(&f->cfg);
    tutti__config_init(&f->cfg);
}

/* The last error names @p named and @p what, then says what was
 * expected. */
void expect_detail(const char *named, const char *what)
{
    if (strstr(tutti_last_error(), named) == NULL ||
        strstr(tutti_last_error(), what) == NULL)
        fail_msg("detail '%s' lacks '%s' or '%s'", tutti_last_error(), named,
                 what);
    assert_non_null(strstr(tutti_last_error(), "; expected "));
}

/* Load @p text and expect TUTTI_ERR_CONFIG with "<path>:<where>: " and
 * @p what in the detail. */
void expect_error(fixture_t *f, const char *text, const char *where,
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
tutti_status_t take_modules(fixture_t *f)
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
const char *value_of(fixture_t *f, const char *key)
{
    static char buf[128];
    const char *v = tutti__config_get_text(&f->cfg, key, buf, sizeof(buf));
    if (v == NULL)
        fail_msg("no setting %s", key);
    return v;
}

/* Load @p text, then let the modules take their settings, and expect
 * TUTTI_ERR_CONFIG there with "<path>:<where>: " and @p what. */
void expect_module_error(fixture_t *f, const char *text, const char *where,
                         const char *what)
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

char *print_config(const tutti__config_t *cfg)
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
void expect_values(fixture_t *f, const char *const *kv)
{
    for (; kv[0] != NULL; kv += 2)
        assert_string_equal(value_of(f, kv[0]), kv[1]);
}

/* The config as tutti-info prints it holds every line of @p lines (up to
 * NULL); a failure shows what was printed and the line missing. */
void expect_printed(fixture_t *f, const char *const *lines)
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

const tutti__kv_t *param(const tutti__rule_t *r, const char *key)
{
    for (size_t i = 0; i < r->num_params; i++) {
        if (strcmp(r->params[i].key, key) == 0)
            return &r->params[i];
    }
    return NULL;
}

/* ---- files and variables that are refused ------------------------------- */

const bad_file_t bad_files[] = {
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
     "log_level, timeout, modules, transports, verify, log_subsystems, "
     "log_file, timeline, cuda, selection, or a module's section"},
    {BAD_KEY, 0, "selection:\n  - collective: allreduce\n"
     "    algorithm: RingReduce\n"
     "  - { algorithm: X, colective: broadcast }\n", "4:21",
     "unknown key 'colective' in selection rule; expected one "
     "of collective, device, dtype, size, group_size, num_tasks, hosts, "
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
     "log_level, timeout, modules, transports, verify, log_subsystems, "
     "log_file, timeline, cuda, selection, "
     "or the section of a loaded module with settings (shm, tcp)"},
    {BAD_KEY, 1, "shm: { slots: 4 }\nshmm:\n", "2:1",
     "unknown key 'shmm' at top level"},
    {BAD_KEY, 1, "tcpp: ~\n", "1:1", "unknown key 'tcpp' at top level"},
    {BAD_KEY, 1, "log_level: warn\n  \nshmm: {}\n", "3:1",
     "unknown key 'shmm' at top level"},
    {BAD_VALUE, 0, "timeout: 0\n", "1:10", "found '0' for 'timeout'"},
    {BAD_VALUE, 0, "timeout: soon\n", "1:10", "found 'soon' for 'timeout'"},
    {BAD_VALUE, 0, "timeout: [1]\n", "1:10", "found a list for 'timeout'"},
    {BAD_VALUE, 0, "log_level: loud\n", "1:12",
     "found 'loud' for 'log_level'; expected one of error"},
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
     "2:19", "found 'allreduc' for 'selection.collective'; expected one of "
     "allreduce, broadcast"},
    {BAD_VALUE, 0, "selection:\n  - { device: gpu, algorithm: X }\n", "2:15",
     "found 'gpu' for 'selection.device'"},
    {BAD_VALUE, 0,
     "selection:\n  - { dtype: [float32, half], algorithm: X }\n", "2:24",
     "found 'half' for 'selection.dtype'"},
    {BAD_VALUE, 0, "selection:\n  - { collective: [], algorithm: X }\n",
     "2:19", "found an empty list"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: [A, B] }\n", "2:18",
     "found a list"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: \"\" }\n", "2:18",
     "found '' for 'selection.algorithm'"},
    {BAD_VALUE, 0, "selection:\n  - algorithm: "
     "A234567890123456789012345678901234567890123456789012345678901234\n",
     "2:16", "for 'selection.algorithm'; expected a name of 1 to 63"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, params: [1] }\n", "2:29",
     "expected a mapping of parameter names"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, params: { a: [1] } }\n",
     "2:34", "found a list"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, group_size: 2-x }\n",
     "2:33", "group_size range '2-x' is not valid"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, num_tasks: 8-2 }\n",
     "2:32", "num_tasks range '8-2' has its lower bound above"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X,\n      hosts: two }\n",
     "3:14", "hosts range 'two' is not valid; expected a whole number or a "
     "range LO-HI, LO- or -HI, inclusive, e.g. 4, 2-8, 4-"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, hosts: 4-2 }\n",
     "2:28", "hosts range '4-2' has its lower bound above"},
    {BAD_VALUE, 0, "selection:\n  - { algorithm: X, hosts: [1, 2] }\n",
     "2:28", "found a list"},
    {BAD_VALUE, 0, "selection: { algorithm: X }\n", "1:12",
     "found a mapping for 'selection'; expected a list of selection rules"},
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
     "found a list for 'tcp.ports'; expected one value"},
};

/* Loads, in order, every file of bad_files that @p topic's test loads. */
void expect_bad_files(fixture_t *f, int topic)
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

const bad_env_t bad_envs[] = {
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
const size_t num_bad_envs = sizeof(bad_envs) / sizeof(bad_envs[0]);

/* Sets @p e's variable and expects it refused; then unsets it.  The
 * modules take their variables when their rows come, on a fresh config. */
void expect_env_error(fixture_t *f, const bad_env_t *e)
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
