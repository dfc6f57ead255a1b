/*
 * What the loader reads of a module lies in that module: every table and
 * string a descriptor points to is checked against the module's own loaded
 * segments before the core reads through the pointer.  The modules of
 * tests/modules/stray (a short implementation table, pointers into libc,
 * to a stack-like address and past the module, a parameter name without
 * its NUL before its segment ends, an ops table larger than its segment,
 * a per-group table in libc;
 * a transport's ops pointer into libc, a short settings table, a setting's
 * doc at a stack-like address) are each refused with the field named,
 * while the good modules beside them load and run.  Before, the short
 * table killed the process at load (SIGSEGV).
 *
 * And the ABI growth rule for rule parameters: a module that sets no
 * params field (tests/modules/undeclared: a source written before ABI
 * 1.5, rebuilt against today's headers) declares nothing, so its rule
 * parameters reach it as before, and the lint warns; an empty list
 * declares that it reads none.  Before, its configuration was refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tutti/module.h>
#include <tutti/transport.h>
#include <tutti/tutti.h>

#include "members.h"
#include "test_util.h"

#define MODULES TUTTI_TEST_BUILDDIR "/tests/modules"
#define STRAY_DIR MODULES "/stray"
#define UNDECLARED_DIR MODULES "/undeclared"

/* A context of one task on @p config (NULL: built-in defaults) and the
 * modules of @p dirs; its status, and the context in @p ctx_out. */
static tutti_status_t open_ctx(const char *config, const char *dirs,
                               tutti_context_t **ctx_out)
{
    tutti_context_params_t p;
    test_one_task_params(&p, config ? config : "", dirs, "off");
    *ctx_out = NULL;
    return tutti_context_create(&p, ctx_out);
}

/* The module loaded from file stem.so; fails the test if there is none. */
static tutti_module_info_t module_by_stem(tutti_context_t *ctx,
                                          const char *stem)
{
    tutti_module_info_t m;
    char want[96];
    snprintf(want, sizeof(want), "/%s.so", stem);
    for (size_t i = 0; tutti_info_module(ctx, i, &m) == TUTTI_OK; i++) {
        size_t n = strlen(m.path), w = strlen(want);
        if (n >= w && strcmp(m.path + n - w, want) == 0)
            return m;
    }
    fail_msg("module %s not seen by the loader", stem);
    return m;
}

/* Refused, the reason holding each of @p parts (NULL-ended) in order. */
static void assert_refused_for(tutti_context_t *ctx, const char *stem,
                               const char *const *parts)
{
    tutti_module_info_t m = module_by_stem(ctx, stem);
    if (m.reason == NULL)
        fail_msg("%s was loaded", stem);
    const char *at = m.reason;
    for (size_t i = 0; parts[i] != NULL; i++) {
        const char *found = strstr(at, parts[i]);
        if (found == NULL)
            fail_msg("%s refused for '%s'; expected '%s' there", stem,
                     m.reason, parts[i]);
        at = found + strlen(parts[i]);
    }
}

#define REFUSED(ctx, stem, ...)                                                \
    assert_refused_for((ctx), (stem), (const char *const[]){__VA_ARGS__, NULL})

/* Implementation @p name is registered. */
static int registered(tutti_context_t *ctx, const char *name)
{
    tutti_impl_info_t im;
    for (size_t i = 0; tutti_info_impl(ctx, i, &im) == TUTTI_OK; i++)
        if (strcmp(im.name, name) == 0)
            return 1;
    return 0;
}

/* One allreduce of a group of one by implementation @p impl: the input
 * must come back. */
static void assert_copy_runs(tutti_context_t *ctx, const char *impl)
{
    tutti_group_t *g;
    tutti_instance_params_t ip;
    int64_t in[3] = {5, -6, 7}, out[3] = {0, 0, 0};
    assert_int_equal(test_join(ctx, 31, 1, 0, 10, &g), TUTTI_OK);
    test_params(&ip, 1, TUTTI_COLL_ALLREDUCE, TUTTI_INT64, 3);
    ip.algorithm = impl;
    if (test_exec_wait(g, &ip, in, out) != TUTTI_OK)
        fail_msg("%s: %s", impl, tutti_last_error());
    assert_memory_equal(out, in, sizeof(in));
    tutti_group_leave(g);
}

static void test_stray_modules_refused(void **state)
{
    tutti_context_t *ctx;
    char row_bytes[80], set_bytes[80];
    (void)state;
    snprintf(row_bytes, sizeof(row_bytes), "(%zu bytes) runs past the end of "
             "'impls', which holds %zu bytes from there",
             2 * sizeof(tutti_alg_impl_t), sizeof(tutti_alg_impl_t));
    snprintf(set_bytes, sizeof(set_bytes), "(%zu bytes) runs past the end of "
             "'rows', which holds %zu bytes from there",
             3 * sizeof(tutti_setting_t), sizeof(tutti_setting_t));
    if (open_ctx(NULL, MODULES "/good:" STRAY_DIR, &ctx) != TUTTI_OK)
        fail_msg("context: %s", tutti_last_error());
    REFUSED(ctx, "mod_shorttable",
            "malformed table: the table of 2 implementations at ", row_bytes);
    REFUSED(ctx, "mod_libcptr", "malformed table: description of "
            "implementation 1 ('TestLibcPtr') at ", " lies outside the "
            "module (in lib"); /* libc.so.6, or the sanitizer's puts */
    REFUSED(ctx, "mod_stackptr", "malformed table: alias list of "
            "implementation 1 ('TestStackPtr'), entry 2 at 0x7ffffffde000 "
            "lies outside the module");
    REFUSED(ctx, "mod_nonul", "malformed table: parameter list of "
            "implementation 1 ('TestNoNul'), entry 1 at ", " has no NUL "
            "before the end of its segment (8 bytes on)");
    REFUSED(ctx, "mod_opspast", "malformed table: ops table of "
            "implementation 1 ('TestOpsPast') at ", " lies outside the "
            "module");
    REFUSED(ctx, "mod_opssize", "malformed table: ops table of "
            "implementation 1 ('TestOpsSize') at ", " (1048576 bytes) runs ",
            " bytes past the end of its segment");
    REFUSED(ctx, "mod_groupptr", "malformed group table at ", " lies outside "
            "the module (in lib");
    REFUSED(ctx, "tp_libcops", "malformed transport table at ", " lies "
            "outside the module (in lib");
    REFUSED(ctx, "tp_shortset", "malformed settings: the table of 3 rows at ",
            set_bytes);
    REFUSED(ctx, "tp_docptr", "malformed settings: row 2's doc at "
            "0x7ffffffde000 lies outside the module");
    /* Their names, read once they were known to lie in the module. */
    assert_string_equal(module_by_stem(ctx, "mod_shorttable").name,
                        "testshorttable");
    assert_string_equal(module_by_stem(ctx, "tp_docptr").name, "testdocptr");
    static const char *const theirs[] = {
        "TestShortTable", "TestLibcPtr", "TestStackPtr", "TestNoNul",
        "TestOpsPast", "TestOpsSize", "TestGroupPtr"};
    for (size_t i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++)
        if (registered(ctx, theirs[i]))
            fail_msg("%s of a refused module is registered", theirs[i]);
    /* The others load and run. */
    assert_null(module_by_stem(ctx, "mod_good").reason);
    assert_null(module_by_stem(ctx, "tp_shm").reason);
    assert_copy_runs(ctx, "TestCopy");
    tutti_context_destroy(ctx);
}

/* Without its symbol table the short table's second row is read from
 * what follows the table, inside the module: every pointer in it is
 * checked before use, so it is refused for what it holds, never
 * followed. */
static void test_short_table_stripped(void **state)
{
    test_tmp_t *t = *state;
    tutti_context_t *ctx;
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof(cmd), "cp %s/.libs/mod_shorttable.so %s/ && strip "
             "--strip-all %s/mod_shorttable.so && (readelf -S "
             "%s/mod_shorttable.so | grep -c '\\.symtab' || true)", STRAY_DIR,
             t->dir, t->dir, t->dir);
    if (test_run("command -v strip && command -v readelf", 0, out,
                 sizeof(out)) != 0) {
        test_skip("skipped: strip or readelf (binutils) not found");
        return;
    }
    test_run_ok(cmd, 0, out, sizeof(out));
    assert_string_equal(out, "0\n"); /* no .symtab left */
    if (open_ctx(NULL, t->dir, &ctx) != TUTTI_OK)
        fail_msg("context: %s", tutti_last_error());
    REFUSED(ctx, "mod_shorttable", "malformed table: ", "implementation 2");
    assert_false(registered(ctx, "TestShortTable"));
    assert_copy_runs(ctx, "RingAllreduce");
    tutti_context_destroy(ctx);
}

/* A context on the rules @p yaml (after "selection:\n") with the
 * undeclared module; its status, and why it failed in @p why. */
static tutti_status_t marker_ctx(test_tmp_t *t, const char *rules,
                                 tutti_context_t **ctx_out, char *why,
                                 size_t len)
{
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "selection:\n%s", rules);
    test_tmpfile(t->path, sizeof(t->path), t->dir, "t.yaml", yaml);
    tutti_status_t st = open_ctx(t->path, UNDECLARED_DIR, ctx_out);
    snprintf(why, len, "%s", st == TUTTI_OK ? "" : tutti_last_error());
    return st;
}

/* One int32 allreduce of a group of one through the rules. */
static tutti_status_t allreduce_one(tutti_context_t *ctx, int32_t *out)
{
    tutti_group_t *g;
    int32_t in = 11;
    assert_int_equal(test_join(ctx, 32, 1, 0, 10, &g), TUTTI_OK);
    tutti_status_t st =
        tutti_allreduce(g, &in, out, 1, TUTTI_INT32, TUTTI_OP_SUM);
    tutti_group_leave(g);
    return st;
}

static void test_undeclared_params_reach_module(void **state)
{
    test_tmp_t *t = *state;
    tutti_context_t *ctx;
    char why[1024];
    int32_t out = 0;
    const char *rule = "  - { collective: allreduce, algorithm: TestMarker, "
                       "params: { marker: %d } }\n";
    char rules[256];

    /* The value reaches init_params: 42 runs, anything else is refused
     * there, by the module, naming it. */
    snprintf(rules, sizeof(rules), rule, 42);
    if (marker_ctx(t, rules, &ctx, why, sizeof(why)) != TUTTI_OK)
        fail_msg("a rule parameter of a module that declares none: %s", why);
    assert_int_equal(allreduce_one(ctx, &out), TUTTI_OK);
    assert_int_equal(out, 11);
    /* The lint says it went unchecked, without counting a finding. */
    char *text = NULL;
    size_t text_len = 0, findings = 99;
    FILE *mem = open_memstream(&text, &text_len);
    assert_non_null(mem);
    assert_int_equal(tutti_info_lint(ctx, mem, &findings), TUTTI_OK);
    fclose(mem);
    assert_int_equal(findings, 0);
    if (strstr(text, "t.yaml:2:5: warning: implementation 'TestMarker' "
                     "(module testmarker) declares no params: not checked "
                     "(marker)") == NULL)
        fail_msg("the lint said: '%s'", text);
    free(text);
    tutti_context_destroy(ctx);

    snprintf(rules, sizeof(rules), rule, 7);
    assert_int_equal(marker_ctx(t, rules, &ctx, why, sizeof(why)), TUTTI_OK);
    assert_int_not_equal(allreduce_one(ctx, &out), TUTTI_OK);
    assert_non_null(strstr(tutti_last_error(), "TestMarker: rule parameter "
                                               "'marker' is 7; expected 42"));
    tutti_context_destroy(ctx);

    /* An empty list: it reads none, and a rule that gives it one is
     * refused when the file loads. */
    assert_int_equal(marker_ctx(t, "  - { algorithm: TestNoParams, params: "
                                   "{ marker: 42 } }\n", &ctx, why,
                                sizeof(why)),
                     TUTTI_ERR_CONFIG);
    if (strstr(why, "t.yaml:2:42: unknown parameter 'marker' for "
                    "implementation 'TestNoParams'; expected none: it reads "
                    "no parameter") == NULL)
        fail_msg("a parameter for an implementation that reads none: '%s'",
                 why);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stray_modules_refused),
        cmocka_unit_test_setup_teardown(test_short_table_stripped,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test_setup_teardown(test_undeclared_params_reach_module,
                                        test_tmp_setup, test_tmp_teardown),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return test_exit(cmocka_run_group_tests_name("module_image", tests, NULL,
                                                 NULL));
}
