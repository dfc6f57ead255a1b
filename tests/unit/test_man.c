/*
 * The man pages against the code, both ways, every list read from the
 * source tree (TUTTI_TEST_SRCDIR) as the test runs:
 *   - tutti.yaml(5): every setting, the core's rows (core/config/keys.c)
 *     and those of the modules loaded from the build tree, is an item of
 *     SETTINGS that names its variable; every rule key (rule_keys[],
 *     core/config/yaml.c) an item of SELECTION RULES; every variable the
 *     library names (core, transports, algorithms) is in the page;
 *   - each installed program (bin_PROGRAMS of Makefile.am and the
 *     fragments it includes): its page man/NAME.1 has an OPTIONS item for
 *     every long option of its sources' `struct option` tables, and names
 *     every variable its sources name (or tutti.yaml(5) does);
 *   - tutti(3): every function of tutti.h and the headers it includes is
 *     in SYNOPSIS and named in DESCRIPTION; every type, macro and
 *     enumerator of its X-macro lists is named;
 *   - and nothing documented is missing from the code: no key, rule key,
 *     option, function, type or TUTTI_ name that the code lacks;
 *   - every page is installed (man/Makefile.inc) and renders without a
 *     warning (groff, man; skipped where neither is installed).
 * Each failure names the thing, the page and where the code has it.
 *
 * A variable is a string literal that is a whole TUTTI_ name and not a
 * public identifier (a message naming TUTTI_ORDER_TOPOLOGY is not one),
 * or a settings row's; names with TEST in them are the test suite's hooks.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "config/setting.h"
#include "context.h"
#include "man_scan.h"
#include "test_util.h"

#define SRC TUTTI_TEST_SRCDIR
#define YAML_PAGE "man/tutti.yaml.5"
#define API_PAGE "man/tutti.3"
#define API_HEADER "include/tutti/tutti.h"

static int problems;

/* One thing wrong, printed at once; the test fails at its end. */
static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    print_error("%s\n", msg);
    problems++;
}

static void no_problems(const char *what)
{
    int n = problems;
    problems = 0;
    if (n > 0)
        fail_msg("%d problem%s with %s, each named above", n, n == 1 ? "" : "s",
                 what);
}

/* ---- what the tree holds ------------------------------------------------- */

typedef struct {
    man_page_t pages[64];
    size_t num_pages;
    strset_t keys;       /* dotted setting keys; note: variable */
    strset_t key_from;   /* key -> where its row is */
    strset_t public_ids; /* TUTTI_ identifiers of include/tutti/ */
    strset_t lib_vars;   /* variables named by the library; note: file */
    strset_t all_vars;   /* every TUTTI_ literal of the sources */
    strset_t fragments;  /* Makefile.am and the fragments it includes */
    strset_t modules;    /* loaded modules with settings */
    strset_t functions;  /* declared in include/tutti/ */
    strset_t types;      /* named in include/tutti/ */
} tree_t;

static tree_t tree;

static const man_page_t *page(const char *name)
{
    for (size_t i = 0; i < tree.num_pages; i++)
        if (strcmp(tree.pages[i].path, name) == 0)
            return &tree.pages[i];
    return NULL;
}

static void read_page(const char *path, void *arg)
{
    (void)arg;
    if (tree.num_pages < sizeof(tree.pages) / sizeof(tree.pages[0]) &&
        man_read(path, path + strlen(SRC) + 1, &tree.pages[tree.num_pages]) ==
            0)
        tree.num_pages++;
}

static void scan_source(const char *path, void *arg)
{
    strset_t *vars = arg;
    char *text = read_text(path);
    if (text == NULL)
        return;
    free(c_scan(text, path + strlen(SRC) + 1, vars));
    free(text);
}

static void scan_header(const char *path, void *arg)
{
    char *text = read_text(path), *code;
    (void)arg;
    if (text == NULL)
        return;
    code = c_scan(text, NULL, NULL);
    c_header_names(code, path + strlen(SRC) + 1, &tree.functions, &tree.types,
                   NULL, &tree.public_ids);
    free(code);
    free(text);
}

/* The settings rows: the core's (keys.c) and the loaded modules'. */
static int read_settings(void)
{
    tutti_context_params_t p;
    tutti_context_t *ctx;
    char env[128], key[128];

    unsetenv("TUTTI_MODULES_LOAD");
    test_one_task_params(&p, "", NULL, "off");
    if (tutti_context_create(&p, &ctx) != TUTTI_OK) {
        print_error("context: %s\n", tutti_last_error());
        return -1;
    }
    for (int i = 0; i < TUTTI__CORE_SETTINGS; i++) {
        const tutti_setting_t *row = &tutti__core_settings[i];
        set_add(&tree.keys, row->name,
                tutti__setting_env(row, NULL, env, sizeof(env)));
        set_add(&tree.key_from, row->name, "core/config/keys.c");
    }
    for (size_t m = 0; m < ctx->cfg.num_modules; m++) {
        const tutti__module_settings_t *ms = &ctx->cfg.modules[m];
        char from[128];
        snprintf(from, sizeof(from), "module %s", ms->section);
        set_add(&tree.modules, ms->section, NULL);
        for (size_t r = 0; r < ms->num_rows; r++) {
            snprintf(key, sizeof(key), "%s.%s", ms->section, ms->rows[r].name);
            set_add(&tree.keys, key,
                    tutti__setting_env(&ms->rows[r], ms->section, env,
                                       sizeof(env)));
            set_add(&tree.key_from, key, from);
        }
    }
    tutti_context_destroy(ctx);
    return 0;
}

static int setup(void **state)
{
    static const char *const pages[] = {".1", ".2", ".3", ".4", ".5",
                                        ".6", ".7", ".8", NULL};
    static const char *const c_files[] = {".c", ".h", NULL};
    static const char *const headers[] = {".h", NULL};
    static const char *const lib_dirs[] = {"core", "transports", "algorithms",
                                           NULL};
    char dir[4096];
    (void)state;

    walk_files(SRC "/man", pages, read_page, NULL);
    walk_files(SRC "/include/tutti", headers, scan_header, NULL);
    for (int i = 0; lib_dirs[i] != NULL; i++) {
        snprintf(dir, sizeof(dir), "%s/%s", SRC, lib_dirs[i]);
        walk_files(dir, c_files, scan_source, &tree.all_vars);
    }
    for (size_t i = 0; i < tree.all_vars.count; i++) {
        const char *v = tree.all_vars.items[i];
        if (!set_has(&tree.public_ids, v) && strstr(v, "TEST") == NULL)
            set_add(&tree.lib_vars, v, tree.all_vars.notes[i]);
    }
    walk_files(SRC "/tools", c_files, scan_source, &tree.all_vars);
    mk_fragments(SRC, "Makefile.am", &tree.fragments);
    return read_settings();
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < tree.num_pages; i++)
        man_free(&tree.pages[i]);
    set_free(&tree.keys);
    set_free(&tree.key_from);
    set_free(&tree.public_ids);
    set_free(&tree.lib_vars);
    set_free(&tree.all_vars);
    set_free(&tree.fragments);
    set_free(&tree.modules);
    set_free(&tree.functions);
    set_free(&tree.types);
    return 0;
}

/* The page @p name, or a problem naming it. */
static const man_page_t *need_page(const char *name, const char *why)
{
    const man_page_t *pg = page(name);
    if (pg == NULL)
        problem("%s is missing (%s)", name, why);
    return pg;
}

/* ---- tutti.yaml(5) ------------------------------------------------------- */

/* Key @p key's module is not built here, though its sources are in the
 * tree (nccl without NCCL): its keys cannot be checked. */
static int module_not_built(const char *key)
{
    static const char *const dirs[] = {"algorithms", "transports", NULL};
    const char *dot = strchr(key, '.');
    char section[128], path[4096];

    if (dot == NULL)
        return 0;
    snprintf(section, sizeof(section), "%.*s", (int)(dot - key), key);
    if (set_has(&tree.modules, section))
        return 0;
    for (int i = 0; dirs[i] != NULL; i++) {
        snprintf(path, sizeof(path), "%s/%s/%s", SRC, dirs[i], section);
        if (access(path, F_OK) == 0)
            return 1;
    }
    return 0;
}

static void test_settings(void **state)
{
    const man_page_t *pg = need_page(YAML_PAGE, "the configuration file");
    strset_t documented = {0};
    (void)state;

    if (pg == NULL) {
        no_problems(YAML_PAGE);
        return;
    }
    if (!man_has_section(pg, "SETTINGS"))
        problem("%s has no SETTINGS section", pg->path);
    man_tag_words(pg, "SETTINGS", &documented);
    for (size_t i = 0; i < tree.keys.count; i++) {
        const char *key = tree.keys.items[i], *var = tree.keys.notes[i];
        if (!set_has(&documented, key)) {
            problem("%s: setting %s (%s) is not documented: no item of "
                    "SETTINGS names it",
                    pg->path, key, set_note(&tree.key_from, key));
            continue;
        }
        char *body = man_item_body(pg, atoi(set_note(&documented, key)));
        if (!has_word(body, var))
            problem("%s: the item of setting %s does not name its variable "
                    "%s (%s)",
                    pg->path, key, var, set_note(&tree.key_from, key));
        free(body);
    }
    for (size_t i = 0; i < documented.count; i++) {
        const char *key = documented.items[i];
        if (set_has(&tree.keys, key))
            continue;
        if (module_not_built(key))
            print_message("%s: %s not checked: its module is not built\n",
                          pg->path, key);
        else
            problem("%s: SETTINGS documents %s, which no settings row "
                    "declares (core/config/keys.c, or a loaded module's)",
                    pg->path, key);
    }
    print_message("%zu settings (%d of the core, the rest of %zu loaded "
                  "modules) against %s\n",
                  tree.keys.count, TUTTI__CORE_SETTINGS, tree.modules.count,
                  pg->path);
    set_free(&documented);
    no_problems("the settings in " YAML_PAGE);
}

static void test_rule_keys(void **state)
{
    const man_page_t *pg = need_page(YAML_PAGE, "the configuration file");
    char *yaml = read_text(SRC "/core/config/yaml.c"), *code;
    strset_t keys = {0}, documented = {0};
    (void)state;

    assert_non_null(yaml);
    code = c_scan(yaml, NULL, NULL);
    if (!c_table_names(code, "rule_keys", &keys))
        problem("core/config/yaml.c has no table rule_keys[] of the keys of "
                "a selection rule: this test reads them there");
    if (pg != NULL) {
        man_tag_words(pg, "SELECTION RULES", &documented);
        for (size_t i = 0; i < keys.count; i++)
            if (!set_has(&documented, keys.items[i]))
                problem("%s: rule key %s (core/config/yaml.c, rule_keys) "
                        "is not documented: no item of SELECTION RULES "
                        "names it",
                        pg->path, keys.items[i]);
        for (size_t i = 0; i < documented.count; i++)
            if (!set_has(&keys, documented.items[i]))
                problem("%s: SELECTION RULES documents %s, which is not a "
                        "rule key (core/config/yaml.c, rule_keys)",
                        pg->path, documented.items[i]);
    }
    print_message("%zu rule keys\n", keys.count);
    set_free(&keys);
    set_free(&documented);
    free(code);
    free(yaml);
    no_problems("the selection rules in " YAML_PAGE);
}

/* ---- variables ----------------------------------------------------------- */

static void test_variables(void **state)
{
    const man_page_t *pg = need_page(YAML_PAGE, "the configuration file");
    (void)state;

    if (pg != NULL) {
        char *text = man_text(pg, NULL, 0);
        for (size_t i = 0; i < tree.lib_vars.count; i++)
            if (!has_word(text, tree.lib_vars.items[i]))
                problem("%s: variable %s (%s) is not documented", pg->path,
                        tree.lib_vars.items[i], tree.lib_vars.notes[i]);
        for (size_t i = 0; i < tree.keys.count; i++)
            if (!has_word(text, tree.keys.notes[i]))
                problem("%s: variable %s of setting %s is not documented",
                        pg->path, tree.keys.notes[i], tree.keys.items[i]);
        free(text);
    }
    print_message("%zu variables named by the library, %zu by settings "
                  "rows; %zu pages\n",
                  tree.lib_vars.count, tree.keys.count, tree.num_pages);
    /* Every TUTTI_ name any page gives exists. */
    for (size_t p = 0; p < tree.num_pages; p++) {
        char *text = man_text(&tree.pages[p], NULL, 0);
        strset_t names = {0};
        words_upper(text, &names);
        for (size_t i = 0; i < names.count; i++) {
            const char *n = names.items[i];
            int is_var = 0;
            for (size_t k = 0; k < tree.keys.count && !is_var; k++)
                is_var = strcmp(tree.keys.notes[k], n) == 0;
            if (!is_var && !set_has(&tree.all_vars, n) &&
                !set_has(&tree.public_ids, n))
                problem("%s names %s, which is neither a variable the "
                        "sources name (core, transports, algorithms, tools) "
                        "nor an identifier of include/tutti/",
                        tree.pages[p].path, n);
        }
        set_free(&names);
        free(text);
    }
    no_problems("the variables in the man pages");
}

/* ---- the tools ----------------------------------------------------------- */

/* Every word given to @p var in the automake fragments. */
static void fragment_words(const char *var, strset_t *out)
{
    char path[4096];
    for (size_t i = 0; i < tree.fragments.count; i++) {
        snprintf(path, sizeof(path), "%s/%s", SRC, tree.fragments.items[i]);
        char *text = read_text(path);
        if (text != NULL)
            mk_words(text, var, out);
        free(text);
    }
}

/* Program @p prog's long options and the variables its sources name. */
static void program_sources(const char *prog, strset_t *options, strset_t *vars)
{
    char var[256], path[4096];
    strset_t sources = {0};
    size_t n = (size_t)snprintf(var, sizeof(var), "%s", prog);
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)var[i]))
            var[i] = '_';
    snprintf(var + n, sizeof(var) - n, "_SOURCES");
    fragment_words(var, &sources);
    if (sources.count == 0)
        problem("%s: no %s in the automake fragments: this test reads a "
                "program's options from its sources",
                prog, var);
    for (size_t i = 0; i < sources.count; i++) {
        const char *f = sources.items[i];
        size_t len = strlen(f);
        if (len < 2 || strcmp(f + len - 2, ".c") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", SRC, f);
        char *text = read_text(path);
        if (text == NULL) {
            problem("%s: source %s cannot be read", prog, f);
            continue;
        }
        char *code = c_scan(text, f, vars);
        c_options(code, options);
        free(code);
        free(text);
    }
    set_free(&sources);
}

static void check_program(const char *prog)
{
    const char *stem = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    const man_page_t *yaml = page(YAML_PAGE);
    strset_t options = {0}, vars = {0}, tagged = {0}, synopsis = {0};
    char name[512];

    snprintf(name, sizeof(name), "man/%s.1", stem);
    const man_page_t *pg = page(name);
    if (pg == NULL) {
        problem("program %s has no man page %s", prog, name);
        return;
    }
    program_sources(prog, &options, &vars);
    char *tags = man_text(pg, "OPTIONS", 1), *syn = man_text(pg, "SYNOPSIS", 0);
    char *text = man_text(pg, NULL, 0);
    char *yaml_text = yaml ? man_text(yaml, NULL, 0) : calloc(1, 1);
    words_options(tags, &tagged);
    words_options(syn, &synopsis);
    print_message("%s: %zu long options, %zu TUTTI_ names in its sources, "
                  "against %s\n",
                  prog, options.count, vars.count, pg->path);
    for (size_t i = 0; i < options.count; i++)
        if (!set_has(&tagged, options.items[i]))
            problem("%s: option --%s of %s is not documented: no item of "
                    "OPTIONS names it",
                    pg->path, options.items[i], prog);
    for (size_t i = 0; i < tagged.count; i++)
        if (!set_has(&options, tagged.items[i]))
            problem("%s: OPTIONS documents --%s, which %s does not take",
                    pg->path, tagged.items[i], prog);
    for (size_t i = 0; i < synopsis.count; i++)
        if (!set_has(&options, synopsis.items[i]))
            problem("%s: SYNOPSIS shows --%s, which %s does not take", pg->path,
                    synopsis.items[i], prog);
    for (size_t i = 0; i < vars.count; i++) {
        const char *v = vars.items[i];
        if (set_has(&tree.public_ids, v) || strstr(v, "TEST") != NULL ||
            has_word(text, v) || has_word(yaml_text, v))
            continue;
        problem("%s: variable %s (%s) is documented neither here nor in %s",
                pg->path, v, vars.notes[i], YAML_PAGE);
    }
    free(tags);
    free(syn);
    free(text);
    free(yaml_text);
    set_free(&options);
    set_free(&vars);
    set_free(&tagged);
    set_free(&synopsis);
}

static void test_programs(void **state)
{
    strset_t programs = {0};
    (void)state;

    fragment_words("bin_PROGRAMS", &programs);
    if (programs.count == 0)
        problem("no bin_PROGRAMS in Makefile.am or its fragments");
    for (size_t i = 0; i < programs.count; i++)
        check_program(programs.items[i]);
    /* Every page of section 1 is a program's. */
    for (size_t p = 0; p < tree.num_pages; p++) {
        const char *path = tree.pages[p].path;
        size_t n = strlen(path);
        int found = 0;
        if (n < 2 || strcmp(path + n - 2, ".1") != 0)
            continue;
        for (size_t i = 0; i < programs.count && !found; i++) {
            const char *stem = strrchr(programs.items[i], '/');
            stem = stem ? stem + 1 : programs.items[i];
            found =
                strlen(stem) == n - 6 && strncmp(path + 4, stem, n - 6) == 0;
        }
        if (!found)
            problem("%s documents no program of bin_PROGRAMS", path);
    }
    set_free(&programs);
    no_problems("the programs' man pages");
}

/* ---- tutti(3) ------------------------------------------------------------ */

/* What tutti.h and the headers it includes declare. */
static void api_names(strset_t *functions, strset_t *types, strset_t *macros,
                      strset_t *enums)
{
    strset_t headers = {0};
    char path[4096];

    set_add(&headers, API_HEADER, NULL);
    for (size_t h = 0; h < headers.count; h++) {
        snprintf(path, sizeof(path), "%s/%s", SRC, headers.items[h]);
        char *text = read_text(path);
        if (text == NULL) {
            problem("%s cannot be read", headers.items[h]);
            continue;
        }
        char *code = c_scan(text, NULL, NULL);
        c_header_names(code, headers.items[h], functions, types, macros, NULL);
        for (const char *p = code; (p = strstr(p, "#include <tutti/"));) {
            p += strlen("#include <");
            char inc[256];
            snprintf(inc, sizeof(inc), "include/%.*s", (int)strcspn(p, ">"), p);
            set_add(&headers, inc, NULL);
        }
        /* The X-macro lists' enumerators. */
        for (size_t i = 0; i < macros->count; i++) {
            size_t n = strlen(macros->items[i]);
            if (n > 5 && strcmp(macros->items[i] + n - 5, "_LIST") == 0)
                c_xlist_names(code, macros->items[i], enums);
        }
        free(code);
        free(text);
    }
    set_free(&headers);
}

/* Every name of @p names is in @p text, else a problem. */
static void all_named(const char *text, const strset_t *names, const char *what)
{
    for (size_t i = 0; i < names->count; i++)
        if (!has_word(text, names->items[i]))
            problem("%s: %s %s (%s) is not documented", API_PAGE, what,
                    names->items[i], names->notes[i]);
}

static void test_api(void **state)
{
    const man_page_t *pg = need_page(API_PAGE, "the host API");
    strset_t functions = {0}, types = {0}, macros = {0}, enums = {0};
    (void)state;

    api_names(&functions, &types, &macros, &enums);
    print_message("%s and its includes: %zu functions, %zu types, %zu "
                  "macros, %zu constants of X-macro lists\n",
                  API_HEADER, functions.count, types.count, macros.count,
                  enums.count);
    /* The scan found the tree: both-ways checks over empty sets pass. */
    assert_true(functions.count >= 40 && types.count >= 10 &&
                enums.count >= 20);
    assert_true(tree.num_pages >= 7);
    if (pg != NULL) {
        char *syn = man_text(pg, "SYNOPSIS", 0);
        char *desc = man_text(pg, "DESCRIPTION", 0);
        char *text = man_text(pg, NULL, 0);
        strset_t in_syn = {0}, in_desc = {0};
        words_functions(syn, &in_syn);
        words_functions(desc, &in_desc);
        for (size_t i = 0; i < functions.count; i++) {
            if (!set_has(&in_syn, functions.items[i]))
                problem("%s: function %s (%s) is not in SYNOPSIS", API_PAGE,
                        functions.items[i], functions.notes[i]);
            if (!set_has(&in_desc, functions.items[i]))
                problem("%s: function %s (%s) is not described: DESCRIPTION "
                        "never names %s()",
                        API_PAGE, functions.items[i], functions.notes[i],
                        functions.items[i]);
        }
        all_named(text, &types, "type");
        all_named(text, &macros, "macro");
        all_named(text, &enums, "constant");
        set_free(&in_syn);
        set_free(&in_desc);
        free(syn);
        free(desc);
        free(text);
    }
    /* The functions and types any page names are in include/tutti/. */
    for (size_t p = 0; p < tree.num_pages; p++) {
        char *text = man_text(&tree.pages[p], NULL, 0);
        strset_t named = {0};
        words_functions(text, &named);
        for (size_t i = 0; i < named.count; i++)
            if (!set_has(&tree.functions, named.items[i]))
                problem("%s names function %s(), which no header of "
                        "include/tutti/ declares",
                        tree.pages[p].path, named.items[i]);
        set_free(&named);
        words_types(text, &named);
        for (size_t i = 0; i < named.count; i++)
            if (!set_has(&tree.types, named.items[i]))
                problem("%s names type %s, which no header of include/tutti/ "
                        "declares",
                        tree.pages[p].path, named.items[i]);
        set_free(&named);
        free(text);
    }
    set_free(&functions);
    set_free(&types);
    set_free(&macros);
    set_free(&enums);
    no_problems("the API in the man pages");
}

/* ---- installed, and rendered without a warning --------------------------- */

static void test_installed(void **state)
{
    char *text = read_text(SRC "/man/Makefile.inc");
    strset_t listed = {0};
    (void)state;

    assert_non_null(text);
    mk_words(text, "dist_man_MANS", &listed);
    for (size_t p = 0; p < tree.num_pages; p++)
        if (!set_has(&listed, tree.pages[p].path))
            problem("%s is not installed: man/Makefile.inc does not list it "
                    "in dist_man_MANS",
                    tree.pages[p].path);
    for (size_t i = 0; i < listed.count; i++)
        if (page(listed.items[i]) == NULL)
            problem("man/Makefile.inc lists %s, which is not a page of man/",
                    listed.items[i]);
    set_free(&listed);
    free(text);
    no_problems("man/Makefile.inc");
}

/* @p cmd printed nothing (on stdout: the command says where its stderr
 * goes), else a problem with what it printed. */
static void quiet(const char *cmd, const char *what)
{
    char out[16384];
    int rc = test_run(cmd, 0, out, sizeof(out));
    if (rc != 0 || out[0] != '\0')
        problem("%s: %s (status %d):\n%s", what, cmd, rc, out);
}

static void test_render(void **state)
{
    char cmd[8192], out[256];
    int groff = test_run("command -v groff", 0, out, sizeof(out)) == 0;
    int man = test_run("command -v man", 0, out, sizeof(out)) == 0;
    (void)state;

    if (!groff && !man) {
        test_skip("neither groff nor man is installed: not rendered\n");
    }
    for (size_t p = 0; p < tree.num_pages; p++) {
        const char *path = tree.pages[p].path;
        if (groff) {
            snprintf(cmd, sizeof(cmd),
                     "groff -man -ww -z -t -Tutf8 '%s/%s' 2>&1", SRC, path);
            quiet(cmd, path);
        }
        if (man) {
            snprintf(cmd, sizeof(cmd),
                     "LC_ALL=C.UTF-8 MANWIDTH=80 man "
                     "--warnings -l '%s/%s' 2>&1 >/dev/null",
                     SRC, path);
            quiet(cmd, path);
        }
    }
    no_problems("rendering the man pages");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings),  cmocka_unit_test(test_rule_keys),
        cmocka_unit_test(test_variables), cmocka_unit_test(test_programs),
        cmocka_unit_test(test_api),       cmocka_unit_test(test_installed),
        cmocka_unit_test(test_render),
    };
    return test_exit(cmocka_run_group_tests(tests, setup, teardown));
}
