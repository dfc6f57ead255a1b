/*
 * The fixture of the config tests (test_config.c, test_config_env.c): a
 * directory of the test's own, a fresh config, the build's shm and tcp
 * modules to declare their settings, and the files and variables that are
 * refused.
 */
#ifndef TUTTI_TEST_CONFIG_FIXTURE_H
#define TUTTI_TEST_CONFIG_FIXTURE_H

#include <stddef.h>

#include "config/config.h"
#include "plugin/registry.h"

typedef struct {
    char dir[64];
    char path[128]; /* the last file written */
    tutti__config_t cfg;
    tutti__registry_t reg; /* the shm and tcp modules, once loaded */
    int reg_loaded;
} fixture_t;

/* Which test loads a bad file. */
enum { BAD_YAML, BAD_KEY, BAD_VALUE, BAD_MODULE };

/* A file that does not load, or (@c module) that loads but whose sections
 * the shm and tcp modules refuse when they take them: the detail says
 * "<path>:<where>: " and @c what, and what was expected. */
typedef struct {
    int topic, module;
    const char *text, *where, *what;
} bad_file_t;

extern const bad_file_t bad_files[];

/* A variable the core refuses when it applies the environment, or
 * (@c module) that the shm and tcp modules refuse when they take their
 * settings: the detail names VAR='value', @c what and what was
 * expected. */
typedef struct {
    int module;
    const char *var, *value, *what;
} bad_env_t;

extern const bad_env_t bad_envs[];
extern const size_t num_bad_envs;

/* Unsets every TUTTI_* variable the tests set. */
void clear_env(void);

/* A directory of the test's own, a fresh config, no TUTTI_* set; and
 * what teardown frees and removes. */
int setup(void **state);
int teardown(void **state);

/* Write @p text to <dir>/<name> and remember the path in f->path. */
const char *write_yaml(fixture_t *f, const char *name, const char *text);

/* Write @p text to <dir>/<name> and load it into f->cfg, which must
 * succeed; the path. */
const char *load_yaml(fixture_t *f, const char *name, const char *text);

/* A fresh config, as a context starts with. */
void reset_config(fixture_t *f);

/* The last error names @p named and @p what, then says what was
 * expected. */
void expect_detail(const char *named, const char *what);

/* Load @p text and expect TUTTI_ERR_CONFIG with "<path>:<where>: " and
 * @p what in the detail. */
void expect_error(fixture_t *f, const char *text, const char *where,
                  const char *what);

/* The build tree's shm and tcp modules declare their settings to f->cfg,
 * as a context does once it loaded them: the file's sections for them and
 * their variables are read now.  Returns what that returned. */
tutti_status_t take_modules(fixture_t *f);

/* A setting's value as tutti-info prints it. */
const char *value_of(fixture_t *f, const char *key);

/* Load @p text, then let the modules take their settings, and expect
 * TUTTI_ERR_CONFIG there with "<path>:<where>: " and @p what. */
void expect_module_error(fixture_t *f, const char *text, const char *where,
                         const char *what);

/* @p cfg as tutti-info prints it, in a string the caller frees. */
char *print_config(const tutti__config_t *cfg);

/* Every key of @p kv (key, value, ..., NULL) has its value, as tutti-info
 * prints it. */
void expect_values(fixture_t *f, const char *const *kv);

/* The config as tutti-info prints it holds every line of @p lines (up to
 * NULL); a failure shows what was printed and the line missing. */
void expect_printed(fixture_t *f, const char *const *lines);

/* Rule @p r's parameter @p key, or NULL. */
const tutti__kv_t *param(const tutti__rule_t *r, const char *key);

/* Loads, in order, every file of bad_files that @p topic's test loads. */
void expect_bad_files(fixture_t *f, int topic);

/* Sets @p e's variable and expects it refused; then unsets it.  The
 * modules take their variables when their rows come, on a fresh config. */
void expect_env_error(fixture_t *f, const bad_env_t *e);

/* A test on the fixture: a directory, a fresh config, no TUTTI_* set. */
#define FIXTURE_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

#endif
