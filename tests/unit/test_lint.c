/*
 * Unit tests for the lint of selection rules (tutti__select_lint): rules
 * from a file (on the config tests' fixture), implementations from a table
 * made here (so that the cases do not hang on which modules a build has),
 * and the whole output and the number of findings compared for each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* By path: the build directory's autoconf config.h shadows "config.h". */
#include "config/config.h"
#include "select/lint.h"
#include "test_util.h"

#include "config_fixture.h"

#define COLL(c) TUTTI_COLL_BIT(TUTTI_COLL_##c)
#define CPU TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)
#define CUDA TUTTI_DEVICE_BIT(TUTTI_DEVICE_CUDA)

/* Host implementations serve CUDA groups too (the core stages); Gpu runs
 * on CUDA alone and may decline a call, as NCCL's do.  Both declares no
 * rule parameters (a module of ABI 1.4 or older), the others do. */
static const tutti__lint_impl_t impls[] = {
    {"Ring", "ring", COLL(ALLREDUCE), 0, CPU, CPU | CUDA, 0, 1},
    {"Small", "tree", COLL(ALLREDUCE), 0, CPU, CPU | CUDA, 0, 1},
    {"Gather", "ring", COLL(ALLGATHER), COLL(ALLGATHER), CPU, CPU | CUDA, 0,
     1},
    {"GatherEq", "tree", COLL(ALLGATHER), 0, CPU, CPU | CUDA, 0, 1},
    {"Both", "both", COLL(ALLREDUCE) | COLL(ALLGATHER), COLL(ALLGATHER), CPU,
     CPU | CUDA, 0, 0},
    {"Bcast", "tree", COLL(BROADCAST), 0, CPU, CPU | CUDA, 0, 1},
    {"Gpu", "gpu", COLL(ALLREDUCE), 0, CUDA, CUDA, 1, 1},
};
#define NIMPLS (sizeof(impls) / sizeof(impls[0]))
#define HOST_IMPLS (NIMPLS - 1) /* without Gpu: no module runs on cuda */

/* Lints "selection:" and @p rules (one rule a line, so rule k is on line
 * k + 1) against the first @p n implementations of the table; the output
 * must be @p want, each '@' in it standing for the file's path, and the
 * findings @p findings. */
static void lint_n(void **state, size_t n, const char *rules,
                   const char *want, size_t findings)
{
    fixture_t *f = *state;
    char text[4096], expect[8192], *out = NULL;
    size_t len = 0, got = 99, k = 0;

    snprintf(text, sizeof(text), "selection:\n%s", rules);
    load_yaml(f, "rules.yaml", text);
    for (const char *w = want; *w != '\0' && k + 128 < sizeof(expect); w++) {
        if (*w == '@')
            k += (size_t)snprintf(expect + k, sizeof(expect) - k, "%s",
                                  f->path);
        else
            expect[k++] = *w;
    }
    expect[k] = '\0';
    FILE *mem = open_memstream(&out, &len);
    assert_non_null(mem);
    assert_int_equal(tutti__select_lint(&f->cfg, impls, n, mem, &got),
                     TUTTI_OK);
    assert_int_equal(fclose(mem), 0);
    if (strcmp(out, expect) != 0) {
        test_show("the lint wrote:", out);
        test_show("expected:", expect);
        free(out);
        fail_msg("the lint's output differs (both are above)");
    }
    free(out);
    assert_int_equal(got, findings);
}

static void lint(void **state, const char *rules, const char *want,
                 size_t findings)
{
    lint_n(state, NIMPLS, rules, want, findings);
}

/* Ranges then a catch-all, a rule per collective, as the shipped file
 * writes them: nothing to say. */
static void test_clean(void **state)
{
    lint(state,
         "  - { collective: allreduce, size: 0-4K, algorithm: Small }\n"
         "  - { collective: allreduce, size: 0-8K, group_size: 3-,"
         " algorithm: Small }\n"
         "  - { collective: allreduce, algorithm: Ring }\n"
         "  - { collective: allgather, size: 0-1K, algorithm: GatherEq }\n"
         "  - { collective: allgather, algorithm: Gather }\n",
         "", 0);
}

static void test_unknown_implementation(void **state)
{
    lint(state,
         "  - { collective: allreduce, algorithm: Rnig }\n"
         "  - { collective: allreduce, algorithm: Ring }\n"
         "  - { algorithm: Nothing }\n",
         "@:2:5: implementation 'Rnig' is not provided by any loaded module; "
         "expected one that runs allreduce: Ring, Small, Both, Gpu\n"
         "@:4:5: implementation 'Nothing' is not provided by any loaded "
         "module; expected the name of a loaded implementation (tutti-info "
         "lists them)\n",
         2);
}

/* The whole rule is skipped, as selection skips it: the next one is no
 * shadow of it. */
static void test_collective_not_run(void **state)
{
    lint(state,
         "  - { collective: broadcast, algorithm: Ring }\n"
         "  - { collective: broadcast, algorithm: Bcast }\n"
         "  - { collective: [allreduce, broadcast], algorithm: Small }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "@:2:5: implementation 'Ring' (module ring) does not run broadcast "
         "(it runs allreduce), so the rule is skipped; expected one that "
         "runs broadcast: Bcast\n"
         "@:4:5: implementation 'Small' (module tree) does not run broadcast "
         "(it runs allreduce), so the rule is skipped; expected one that "
         "runs allreduce,broadcast (no loaded implementation runs them all: "
         "a rule for each)\n",
         2);
}

/* A cpu rule naming a cuda implementation; a cuda rule naming a host one
 * is fine (the core stages). */
static void test_device_not_run(void **state)
{
    lint(state,
         "  - { collective: allreduce, device: cpu, algorithm: Gpu }\n"
         "  - { collective: allreduce, device: cuda, algorithm: Small }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "@:2:5: implementation 'Gpu' (module gpu) does not run on cpu (it "
         "runs on cuda); expected device: cuda, or an implementation that "
         "runs on cpu\n",
         1);
}

/* Where no loaded module runs on cuda, a cuda rule's missing
 * implementation is a note (the optional module is not in this build);
 * where one does, it is a finding. */
static void test_cuda_rule_without_cuda_module(void **state)
{
    const char *rules =
        "  - { collective: allreduce, device: cuda, algorithm: Gpx }\n"
        "  - { collective: allreduce, algorithm: Ring }\n";
    lint_n(state, HOST_IMPLS, rules,
           "@:2:5: note: implementation 'Gpx' not checked: no loaded module "
           "runs on cuda, the only device of this rule, which is skipped "
           "here\n",
           0);
    lint(state, rules,
         "@:2:5: implementation 'Gpx' is not provided by any loaded module; "
         "expected one that runs allreduce: Ring, Small, Both, Gpu\n",
         1);
}

static void test_shadowed(void **state)
{
    lint(state,
         "  - { collective: allreduce, algorithm: Ring }\n"
         "  - { collective: allreduce, size: 0-4K, algorithm: Small }\n",
         "@:3:5: rule (Small) never matches: the earlier rule @:2 (Ring) "
         "takes every call it could match; expected it removed, or moved "
         "before it\n",
         1);
}

/* Two rules take a third's calls between them, neither alone. */
static void test_shadowed_by_two(void **state)
{
    lint(state,
         "  - { collective: allreduce, size: 0-4K, algorithm: Small }\n"
         "  - { collective: allreduce, size: 4097-, algorithm: Ring }\n"
         "  - { collective: allreduce, group_size: 4-, algorithm: Ring }\n",
         "@:4:5: rule (Ring) never matches: the earlier rules @:2 (Small), "
         "@:3 (Ring) take every call it could match; expected it removed, or "
         "moved before them\n",
         1);
}

/* A rule naming two collectives, one of them taken by an earlier rule;
 * a rule for any collective is a catch-all and not reported so. */
static void test_shadowed_for_one_collective(void **state)
{
    lint(state,
         "  - { collective: allreduce, algorithm: Ring }\n"
         "  - { collective: [allreduce, allgather], algorithm: Both }\n"
         "  - { algorithm: Both }\n",
         "@:3:5: rule (Both) never matches allreduce: the earlier rule @:2 "
         "(Ring) takes every call it could match; expected it removed, or "
         "moved before it\n"
         "@:4:5: rule (Both) never matches: the earlier rules @:2 (Ring), "
         "@:3 (Both) take every call it could match; expected it removed, or "
         "moved before them\n",
         2);
}

/* A rule whose implementation may decline (Gpu) takes nothing from the
 * rules after it. */
static void test_may_decline_shadows_nothing(void **state)
{
    lint(state,
         "  - { collective: allreduce, device: cuda, algorithm: Gpu }\n"
         "  - { collective: allreduce, device: cuda, algorithm: Small }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "", 0);
}

/* Equal counts only (GatherEq) leaves the per-rank calls to the next rule:
 * Gather after it is not shadowed. */
static void test_per_rank_counts(void **state)
{
    lint(state,
         "  - { collective: allgather, algorithm: GatherEq }\n"
         "  - { collective: allgather, algorithm: Gather }\n",
         "", 0);
    lint(state,
         "  - { collective: allgather, algorithm: GatherEq }\n",
         "@:2:5: no rule matches allgather calls with per-rank counts; "
         "expected a rule that does, or one for allgather without size, "
         "group_size, num_tasks and hosts after the others\n",
         1);
}

/* A gap is reported at the rule whose range ends right below it. */
static void test_size_gap(void **state)
{
    lint(state,
         "  - { collective: allreduce, size: 0-4K, algorithm: Small }\n"
         "  - { collective: allreduce, size: 8K-, algorithm: Ring }\n",
         "@:2:5: no rule matches allreduce calls with size 4097-8191; "
         "expected a rule that does, or one for allreduce without size, "
         "group_size, num_tasks and hosts after the others\n",
         1);
}

/* Gaps in the other keys: devices, group sizes; at the last rule. */
static void test_other_gaps(void **state)
{
    lint(state,
         "  - { collective: allreduce, device: cpu, algorithm: Ring }\n",
         "@:2:5: no rule matches allreduce calls with device cuda; expected "
         "a rule that does, or one for allreduce without size, group_size, "
         "num_tasks and hosts after the others\n",
         1);
    lint(state,
         "  - { collective: allreduce, group_size: 3-, algorithm: Ring }\n"
         "  - { collective: broadcast, algorithm: Bcast }\n",
         "@:2:5: no rule matches allreduce calls with group_size 1-2; "
         "expected a rule that does, or one for allreduce without size, "
         "group_size, num_tasks and hosts after the others\n",
         1);
    lint(state,
         "  - { collective: allreduce, hosts: 1, algorithm: Ring }\n"
         "  - { collective: broadcast, algorithm: Bcast }\n",
         "@:2:5: no rule matches allreduce calls with hosts 2-; expected a "
         "rule that does, or one for allreduce without size, group_size, "
         "num_tasks and hosts after the others\n",
         1);
    /* Two tasks or more on one host: the calls left name both keys. */
    lint(state,
         "  - { collective: allreduce, num_tasks: 1, algorithm: Small }\n"
         "  - { collective: allreduce, hosts: 2-, algorithm: Ring }\n",
         "@:3:5: no rule matches allreduce calls with num_tasks 2-, hosts 1; "
         "expected a rule that does, or one for allreduce without size, "
         "group_size, num_tasks and hosts after the others\n",
         1);
}

/* Ranges that overlap between rules alike in every other key; the shipped
 * file's ranges differ in group_size, and a rule without size is the
 * catch-all. */
static void test_overlap(void **state)
{
    lint(state,
         "  - { collective: allreduce, size: 0-8K, algorithm: Small }\n"
         "  - { collective: allreduce, size: 4K-, algorithm: Ring }\n",
         "@:3:5: size 4K- overlaps size 0-8K of the earlier rule @:2 "
         "(Small), alike in every other key: allreduce calls of 4K-8K go to "
         "that rule; expected size ranges that do not overlap\n",
         1);
    lint(state,
         "  - { collective: allreduce, size: 0-8K, algorithm: Small }\n"
         "  - { collective: allreduce, size: 4K-, group_size: 2-,"
         " algorithm: Ring }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "", 0);
}

/* num_tasks beyond group_size, or a group of none, matches no call. */
static void test_counts_that_never_match(void **state)
{
    lint(state,
         "  - { collective: allreduce, group_size: 2-4, num_tasks: 5-,"
         " algorithm: Small }\n"
         "  - { collective: allreduce, group_size: 0, algorithm: Small }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "@:2:5: rule (Small) never matches: num_tasks 5- is more than "
         "group_size 2-4 allows, as each task holds at least one member; "
         "expected num_tasks up to 4\n"
         "@:3:5: rule (Small) never matches: group_size 0: a group has at "
         "least one member, one task and one host; expected 1 or more\n",
         2);
}

/* hosts beyond num_tasks or group_size (whichever is less), or none,
 * matches no call: a task runs on one host, a host holds a member. */
static void test_hosts_that_never_match(void **state)
{
    lint(state,
         "  - { collective: allreduce, group_size: 2-4, hosts: 5-,"
         " algorithm: Small }\n"
         "  - { collective: allreduce, num_tasks: 1-2, hosts: 3,"
         " algorithm: Small }\n"
         "  - { collective: allreduce, hosts: 0, algorithm: Small }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "@:2:5: rule (Small) never matches: hosts 5- is more than "
         "group_size 2-4 allows, as each host holds at least one member; "
         "expected hosts up to 4\n"
         "@:3:5: rule (Small) never matches: hosts 3 is more than "
         "num_tasks 1-2 allows, as each task runs on one host; expected "
         "hosts up to 2\n"
         "@:4:5: rule (Small) never matches: hosts 0: a group has at least "
         "one member, one task and one host; expected 1 or more\n",
         3);
}

/* One task is on one host: a rule for one host takes every call of a
 * later rule for one task.  Rules that differ in hosts alone are not
 * alike, so their size ranges may overlap. */
static void test_hosts_shadow_and_overlap(void **state)
{
    lint(state,
         "  - { collective: allreduce, hosts: 1, algorithm: Small }\n"
         "  - { collective: allreduce, num_tasks: 1, algorithm: Ring }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "@:3:5: rule (Ring) never matches: the earlier rule @:2 (Small) "
         "takes every call it could match; expected it removed, or moved "
         "before it\n",
         1);
    lint(state,
         "  - { collective: allreduce, size: 0-8K, hosts: 1,"
         " algorithm: Small }\n"
         "  - { collective: allreduce, size: 4K-, hosts: 2-,"
         " algorithm: Ring }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "", 0);
    lint(state,
         "  - { collective: allreduce, size: 0-8K, hosts: 2-,"
         " algorithm: Small }\n"
         "  - { collective: allreduce, size: 4K-, hosts: 2-,"
         " algorithm: Ring }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "@:3:5: size 4K- overlaps size 0-8K of the earlier rule @:2 "
         "(Small), alike in every other key: allreduce calls of 4K-8K go to "
         "that rule; expected size ranges that do not overlap\n",
         1);
}

/* Parameters for an implementation that declares none (params NULL:
 * module ABI 1.4 and older, or a row that sets none) were taken unchecked
 * when the file loaded: a warning, not a finding.  Loading checked those
 * of one that declares its own, so nothing is said of them. */
static void test_undeclared_params_warned(void **state)
{
    lint(state,
         "  - { collective: allgather, size: 0-1K, algorithm: Both,"
         " params: { marker: 42, chunk: 1M } }\n"
         "  - { collective: allgather, algorithm: Gather, params: "
         "{ chunk: 1M } }\n"
         "  - { collective: allreduce, algorithm: Both }\n",
         "@:2:5: warning: implementation 'Both' (module both) declares no "
         "params: not checked (marker, chunk); expected its module to list "
         "the ones it reads\n",
         0);
}

/* TUTTI_ALGO's rules come first at run time but are not the file's. */
static void test_env_rules_left_out(void **state)
{
    fixture_t *f = *state;
    setenv("TUTTI_ALGO", "allreduce:Ring", 1);
    assert_int_equal(tutti__config_apply_env(&f->cfg), TUTTI_OK);
    unsetenv("TUTTI_ALGO");
    assert_int_equal(f->cfg.num_rules, 1);
    lint(state,
         "  - { collective: allreduce, size: 0-4K, algorithm: Small }\n"
         "  - { collective: allreduce, algorithm: Ring }\n",
         "", 0);
    assert_int_equal(f->cfg.num_rules, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) FIXTURE_TEST(fn)
        T(test_clean),
        T(test_unknown_implementation),
        T(test_collective_not_run),
        T(test_device_not_run),
        T(test_cuda_rule_without_cuda_module),
        T(test_shadowed),
        T(test_shadowed_by_two),
        T(test_shadowed_for_one_collective),
        T(test_may_decline_shadows_nothing),
        T(test_per_rank_counts),
        T(test_size_gap),
        T(test_other_gaps),
        T(test_overlap),
        T(test_counts_that_never_match),
        T(test_hosts_that_never_match),
        T(test_hosts_shadow_and_overlap),
        T(test_env_rules_left_out),
        T(test_undeclared_params_warned),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
