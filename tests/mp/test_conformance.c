/*
 * tutti-conformance as a module author runs it, on real .so files: the
 * shipped ring, tree and hier modules and the module template pass it
 * (every implementation they declare: the matrix in groups of 1 to 5
 * members, a peer that stops, an abort), the shipped modules also with
 * registered memory (--memory registered) and with registered and heap
 * members mixed; a planted broken module (tests/modules/
 * mod_tail.c: an allreduce that never reduces the last bytes % 8 bytes)
 * fails it, and each failure the kit prints names a case the bug really
 * breaks, with the command that reproduces it; a module the loader refuses
 * fails with the loader's reason; bad usage exits 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "tutti-build.h"
#include "test_util.h"
#include "../tool_util.h" /* tools/, via tools/conformance */

#define B TUTTI_TEST_BUILDDIR
#define KIT B "/tools/tutti-conformance"
#define OUT_MAX (512u << 10)

static char *out;

static int setup(void **state)
{
    (void)state;
    out = malloc(OUT_MAX);
    return out == NULL;
}

static int teardown(void **state)
{
    (void)state;
    free(out);
    return 0;
}

/* Whether @p out has the line @p line (the whole line). */
static int has_line(const char *line)
{
    return test_has_lines(out, line);
}

/* Runs the kit on @p module with @p args; the exit status must be @p want. */
static void run_kit(const char *args, const char *module, int want)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), KIT " %s %s", args, module);
    int rc = test_run(cmd, 1, out, OUT_MAX);
    if (rc != want) {
        test_show(cmd, out);
        fail_msg("%s exited %d, expected %d (its output is above)", cmd, rc,
                 want);
    }
}

/* Checks that each CPU implementation of module @p name (loaded by a
 * default context) has passed every test of the kit's run in out. */
static void expect_module_passed(const char *name, const char *what)
{
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    tutti_impl_info_t ii;
    char line[512];
    int impls = 0, tests = 0;
    tutti_context_params_init(&cp);
    assert_int_equal(tutti_context_create(&cp, &ctx), TUTTI_OK);
    for (size_t i = 0; tutti_info_impl(ctx, i, &ii) == TUTTI_OK; i++) {
        if (strcmp(ii.module, name) != 0)
            continue;
        impls++;
        const char *fmt[] = {"[       OK ] %s: matrix, 1 member",
                             "[       OK ] %s: matrix, 2 members",
                             "[       OK ] %s: matrix, 3 members",
                             "[       OK ] %s: matrix, 4 members",
                             "[       OK ] %s: matrix, 5 members",
                             "[       OK ] %s: a peer stops mid-execution",
                             "[       OK ] %s: abort while waiting"};
        for (size_t k = 0; k < sizeof(fmt) / sizeof(fmt[0]); k++) {
            snprintf(line, sizeof(line), fmt[k], ii.name);
            if (!has_line(line)) {
                test_show(what, out);
                tutti_context_destroy(ctx);
                fail_msg("%s: no line '%s'", what, line);
            }
            tests++;
        }
    }
    tutti_context_destroy(ctx);
    assert_true(impls > 0);
    snprintf(line, sizeof(line), "[  PASSED  ] %d test(s).", tests);
    if (!has_line(line) || strstr(out, "[  FAILED  ]") != NULL) {
        test_show(what, out);
        fail_msg("%s: expected '%s' and no failure", what, line);
    }
}

static void test_ring_passes(void **state)
{
    (void)state;
    run_kit("", B "/algorithms/ring/.libs/alg_ring.so", 0);
    expect_module_passed("ring", "tutti-conformance alg_ring.so");
}

static void test_tree_passes(void **state)
{
    (void)state;
    run_kit("", B "/algorithms/tree/.libs/alg_tree.so", 0);
    expect_module_passed("tree", "tutti-conformance alg_tree.so");
}

static void test_hier_passes(void **state)
{
    (void)state;
    run_kit("", B "/algorithms/hier/.libs/alg_hier.so", 0);
    expect_module_passed("hier", "tutti-conformance alg_hier.so");
}

/* Registered memory (tutti_mem_alloc) for every member's buffers, and
 * mixed (registered on even ranks): each implementation of the shipped
 * modules, every collective, read by peers in place where registered. */
static void modules_with_memory(const char *opt, int members_all)
{
    static const char *const mods[] = {"ring", "tree", "hier"};
    char o[96], path[256], what[128];
    for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
        snprintf(o, sizeof(o), "--memory %s%s", opt,
                 members_all ? "" : " -n 2,3");
        snprintf(path, sizeof(path), B "/algorithms/%s/.libs/alg_%s.so",
                 mods[i], mods[i]);
        snprintf(what, sizeof(what), "tutti-conformance %s alg_%s.so", o,
                 mods[i]);
        run_kit(o, path, 0);
        if (members_all) {
            expect_module_passed(mods[i], what);
        } else if (strstr(out, "[  FAILED  ]") != NULL ||
                   strstr(out, "[  PASSED  ]") == NULL) {
            test_show(what, out);
            fail_msg("%s: expected every test passed", what);
        }
    }
}

static void test_registered_passes(void **state)
{
    (void)state;
    modules_with_memory("registered", 1);
}

static void test_mixed_memory_passes(void **state)
{
    (void)state;
    modules_with_memory("mixed", 0);
}

static void test_template_passes(void **state)
{
    (void)state;
    run_kit("", B "/tests/modules/template/.libs/allreduce_gather_bcast.so",
            0);
    const char *lines[] = {
        "[       OK ] GatherBcastAllreduce: matrix, 1 member",
        "[       OK ] GatherBcastAllreduce: matrix, 5 members",
        "[       OK ] GatherBcastAllreduce: a peer stops mid-execution",
        "[       OK ] GatherBcastAllreduce: abort while waiting",
        "[  PASSED  ] 7 test(s)."};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (!has_line(lines[i])) {
            test_show("tutti-conformance allreduce_gather_bcast.so", out);
            fail_msg("template: no line '%s'", lines[i]);
        }
    }
}

static size_t dtype_bytes(const char *name)
{
    for (int d = 0; d < TUTTI_DTYPE_COUNT; d++)
        if (strcmp(tutti_dtype_name((tutti_dtype_t)d), name) == 0)
            return tutti_dtype_size((tutti_dtype_t)d);
    fail_msg("unknown dtype '%s' in a failure line", name);
    return 0;
}

/* The broken module: groups of one pass (nothing moves), so do the stall
 * and abort tests; every group of several fails, and every failure line
 * names a dtype and count whose bytes are not a multiple of 8. */
static void test_broken_module_fails(void **state)
{
    (void)state;
    const char *mod = B "/tests/modules/kit/.libs/mod_tail.so";
    run_kit("--only TestTailAllreduce -n 1,2,3", mod, 1);
    char want[1024];
    const char *lines[] = {
        "[       OK ] TestTailAllreduce: matrix, 1 member",
        "[  FAILED  ] TestTailAllreduce: matrix, 2 members",
        "[  FAILED  ] TestTailAllreduce: matrix, 3 members",
        "[       OK ] TestTailAllreduce: a peer stops mid-execution",
        "[       OK ] TestTailAllreduce: abort while waiting",
        "[  PASSED  ] 3 test(s)."};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (!has_line(lines[i])) {
            test_show("tutti-conformance --only TestTailAllreduce -n 1,2,3 "
                      "mod_tail.so", out);
            fail_msg("broken module: no line '%s'", lines[i]);
        }
    }
    for (int n = 2; n <= 3; n++) {
        snprintf(want, sizeof(want), "reproduce: tutti-conformance --only "
                 "TestTailAllreduce -n %d %s", n, mod);
        if (strstr(out, want) == NULL) {
            test_show("tutti-conformance --only TestTailAllreduce -n 1,2,3 "
                      "mod_tail.so", out);
            fail_msg("broken module: no '%s'", want);
        }
    }
    int cases = 0;
    for (const char *p = out; (p = strstr(p, "  rank ")) != NULL; p++) {
        int rank;
        char dtype[32], op[32];
        unsigned long count;
        if (sscanf(p, "  rank %d: TestTailAllreduce allreduce %31s %31s "
                   "count %lu", &rank, dtype, op, &count) != 4)
            continue;
        size_t bytes = count * dtype_bytes(dtype);
        if (bytes % 8 == 0)
            fail_msg("the kit blamed a case the bug leaves right: %.200s",
                     p);
        cases++;
    }
    if (cases < 20) {
        test_show("tutti-conformance --only TestTailAllreduce -n 1,2,3 "
                      "mod_tail.so", out);
        fail_msg("broken module: %d failure lines naming a case, expected "
                 "20 or more", cases);
    }
}

/* An implementation that blocks inside run, out of the core's reach: the
 * kit does not hang; past its deadline it names the test and the case and
 * ends with status 1, leaving no temporary directory. */
static void test_blocking_module_ends(void **state)
{
    (void)state;
    const char *mod = B "/tests/modules/kit/.libs/mod_tail.so";
    char want[512];
    double t0 = tool_now();
    run_kit("--only TestBlockingAllreduce -n 1", mod, 1);
    double took = tool_now() - t0;
    const char *lines[] = {
        "[       OK ] TestBlockingAllreduce: matrix, 1 member",
        "[ RUN      ] TestBlockingAllreduce: a peer stops mid-execution",
        "[  FAILED  ] the process ends here: a blocked thread cannot be "
        "stopped"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (!has_line(lines[i])) {
            test_show("tutti-conformance --only TestBlockingAllreduce -n 1 "
                      "mod_tail.so", out);
            fail_msg("blocking module: no line '%s'", lines[i]);
        }
    }
    snprintf(want, sizeof(want), "ERROR: a peer stops mid-execution: "
             "TestBlockingAllreduce allreduce, 2 members, float64 sum count "
             "64: an execution has not returned after 16 s (expected "
             "ERR_TIMEOUT within 5.5 s)");
    if (strstr(out, want) == NULL) {
        test_show("tutti-conformance --only TestBlockingAllreduce", out);
        fail_msg("blocking module: no '%s'", want);
    }
    assert_true(took < 60);
}

static void test_refused_module(void **state)
{
    (void)state;
    run_kit("", B "/tests/modules/bad/.libs/mod_badabi.so", 1);
    if (strstr(out, "mod_badabi.so: refused by the loader: module ABI") ==
        NULL) {
        test_show("tutti-conformance mod_badabi.so", out);
        fail_msg("a module of another ABI: no 'refused by the loader' line");
    }
    /* The loader's descriptor checks: a table with a control byte. */
    run_kit("", B "/tests/modules/bad/.libs/mod_baddesc.so", 1);
    assert_non_null(strstr(out, "mod_baddesc.so: refused by the loader: "
                                "malformed table: description of "
                                "implementation 1 ('TestBadDesc')"));
    /* A file that is no module at all. */
    run_kit("", TUTTI_TEST_SRCDIR "/README.md", 1);
    assert_non_null(strstr(out, "README.md: refused by the loader: not an "
                                "ELF file"));
    run_kit("", B "/no-such-module.so", 1);
    assert_non_null(strstr(out, "no-such-module.so: No such file"));
}

static void test_usage(void **state)
{
    (void)state;
    run_kit("-n 0", B "/algorithms/ring/.libs/alg_ring.so", 2);
    assert_non_null(strstr(out, "--members '0': expected a comma list"));
    run_kit("--timeout x", B "/algorithms/ring/.libs/alg_ring.so", 2);
    assert_non_null(strstr(out, "--timeout 'x': expected seconds"));
    run_kit("", "", 2);
    assert_non_null(strstr(out, "usage: tutti-conformance"));
    run_kit("--memory pinned", B "/algorithms/ring/.libs/alg_ring.so", 2);
    assert_non_null(strstr(out, "--memory 'pinned': expected heap, "
                                "registered or mixed"));
    run_kit("--only NoSuchImpl", B "/algorithms/ring/.libs/alg_ring.so", 1);
    assert_non_null(strstr(out, "declares no implementation named "
                                "NoSuchImpl"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_refused_module),
        cmocka_unit_test(test_broken_module_fails),
        cmocka_unit_test(test_blocking_module_ends),
        cmocka_unit_test(test_template_passes),
        cmocka_unit_test(test_ring_passes),
        cmocka_unit_test(test_tree_passes),
        cmocka_unit_test(test_hier_passes),
        cmocka_unit_test(test_registered_passes),
        cmocka_unit_test(test_mixed_memory_passes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
