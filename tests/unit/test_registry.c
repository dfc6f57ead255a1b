/*
 * Loader and registry: real .so files built by the test suite, each refused
 * for its own reason while the good one loads and runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <elf.h>
#include <link.h>

#include <tutti/module.h>
#include <tutti/transport.h>
#include <tutti/tutti.h>

#include "members.h"
#include "test_util.h"

#define GOOD_DIR TUTTI_TEST_BUILDDIR "/tests/modules/good"
#define BAD_DIR TUTTI_TEST_BUILDDIR "/tests/modules/bad"
#define SHADOW_DIR TUTTI_TEST_BUILDDIR "/tests/modules/shadow"

static tutti_context_t *open_ctx(const char *config_path, const char *modules)
{
    tutti_context_params_t p;
    tutti_context_t *ctx = NULL;
    test_one_task_params(&p, config_path, modules, "off");
    tutti_status_t st = tutti_context_create(&p, &ctx);
    if (st != TUTTI_OK)
        fail_msg("context: %s: %s", tutti_strerror(st), tutti_last_error());
    return ctx;
}

/* The module whose file stem is @p stem; fails the test if absent. */
static tutti_module_info_t module_by_stem(tutti_context_t *ctx,
                                          const char *stem)
{
    tutti_module_info_t m;
    for (size_t i = 0; tutti_info_module(ctx, i, &m) == TUTTI_OK; i++) {
        /* The file: stem.so, in the build tree .libs/stem.so. */
        const char *base = strrchr(m.path, '/');
        size_t n = strlen(stem);
        if (base && strncmp(base + 1, stem, n) == 0 &&
            (base[1 + n] == '\0' || strcmp(base + 1 + n, ".so") == 0))
            return m;
    }
    fail_msg("module %s not seen by the loader", stem);
    return m;
}

/* The implementation named @p name; fails the test if none is. */
static tutti_impl_info_t impl_by_name(tutti_context_t *ctx, const char *name)
{
    tutti_impl_info_t im;
    for (size_t i = 0; tutti_info_impl(ctx, i, &im) == TUTTI_OK; i++)
        if (strcmp(im.name, name) == 0)
            return im;
    fail_msg("no implementation %s registered", name);
    return im;
}

static int setup(void **state)
{
    *state = open_ctx("", GOOD_DIR ":" BAD_DIR);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    tutti_context_destroy(*state);
    return 0;
}

static void test_good_module_loads(void **state)
{
    tutti_module_info_t m = module_by_stem(*state, "mod_good");
    assert_null(m.reason);
    assert_string_equal(m.name, "testgood");
    assert_string_equal(m.version, "1.2.3");
    assert_int_equal(m.abi_major, 1);
}

#define TUTTI_STR2_(x) #x
#define TUTTI_STR_(x) TUTTI_STR2_(x)
#define TUTTI_TP_ABI_MAJOR_NEXT 3 /* mod_badtp: TUTTI_TP_ABI_MAJOR + 1 */
_Static_assert(TUTTI_TP_ABI_MAJOR_NEXT == TUTTI_TP_ABI_MAJOR + 1,
               "mod_badtp's ABI");

static void assert_refused(tutti_context_t *ctx, const char *stem,
                           const char *reason_part)
{
    tutti_module_info_t m = module_by_stem(ctx, stem);
    assert_non_null(m.reason);
    if (strstr(m.reason, reason_part) == NULL)
        fail_msg("%s refused for '%s', expected '%s'", stem, m.reason,
                 reason_part);
}

/* Each module of the suite that is refused for one reason, and the
 * reason (a part of it). */
static const struct {
    const char *stem, *reason;
} refusals[] = {
    {"mod_badabi", "module ABI 2.0, core ABI 1." TUTTI_STR_(
                       TUTTI_MODULE_ABI_MINOR) ": major versions differ"},
    {"mod_nodesc", "no descriptor: symbol 'tutti_module_descriptor' not "
                   "found"},
    {"mod_malformed", "malformed table: 3 implementations"},
    {"mod_zdup", "implementation 'TestCopy' already registered by module "
                 "'testgood'"},
    /* A transport's settings rows: a default outside the row's bounds, a
     * row outside or misaligned in the settings struct, a name given
     * twice; the reason names the row. */
    {"mod_badset", "malformed settings: 'depth' has the default '0'; "
                   "expected a whole number from 1 to 8"},
    {"mod_badoffset", "malformed settings: setting 'depth' lies at offset "
                      "16 (8 bytes), outside or misaligned in its 16-byte "
                      "settings struct"},
    {"mod_badalign", "malformed settings: setting 'depth' lies at offset 4 "
                     "(8 bytes), outside or misaligned in its 16-byte "
                     "settings struct"},
    {"mod_dupset", "malformed settings: 'depth' twice"},
    /* Former names (aliases, module ABI 1.2) are checked as names are: an
     * empty one, an over-long one, one listed twice in a module, one that
     * repeats its own implementation's name, one that another module's
     * implementation has. */
    {"mod_emptyalias", "malformed table: implementation 'TestEmptyAlias' "
                       "has an empty or over-long alias"},
    {"mod_longalias", "malformed table: implementation 'TestLongAlias' has "
                      "an empty or over-long alias"},
    {"mod_twicealias", "implementation 'TestTwiceFirst' listed twice"},
    {"mod_selfalias", "malformed table: implementation 'TestSelfAlias' "
                      "answers to 'TestSelfAlias' twice"},
    {"mod_badalias", "implementation 'TestCopy' already registered by "
                     "module 'testgood' ("},
    {"mod_badparams", "malformed table: implementation 1 "
                      "('TestParamsTwice') lists parameter 'chunk' twice"},
};

static void test_bad_modules_refused(void **state)
{
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
        assert_refused(*state, refusals[i].stem, refusals[i].reason);
    /* Refused: no transport of theirs is listed, no implementation of
     * theirs registered. */
    assert_null(module_by_stem(*state, "mod_dupset").transport);
    for (size_t i = 0;; i++) {
        tutti_impl_info_t im;
        if (tutti_info_impl(*state, i, &im) != TUTTI_OK)
            break;
        if (strstr(im.name, "Alias") != NULL ||
            strstr(im.name, "Twice") != NULL ||
            strstr(im.name, "Self") != NULL)
            fail_msg("%s of a refused module is registered", im.name);
    }
}

static void test_wrong_transport_abi_refused(void **state)
{
    tutti_module_info_t m = module_by_stem(*state, "mod_badtp");
    assert_string_equal(m.kind, "transport");
    assert_null(m.transport);
    assert_refused(*state, "mod_badtp",
                   "transport ABI " TUTTI_STR_(TUTTI_TP_ABI_MAJOR_NEXT)
                   ".0, core transport ABI " TUTTI_STR_(TUTTI_TP_ABI_MAJOR)
                   "." TUTTI_STR_(TUTTI_TP_ABI_MINOR)
                   ": major versions differ");
    /* The shm transport beside it is loaded and listed as a transport. */
    m = module_by_stem(*state, "tp_shm");
    assert_null(m.reason);
    assert_string_equal(m.kind, "transport");
    assert_string_equal(m.transport, "shm");
}

/* An algorithm module built against ABI 1.1 (shorter rows, and
 * tutti_dtype_size imported from the core) still loads, each row read at
 * that minor's stride. */
static void test_older_module_minor_loads(void **state)
{
    tutti_module_info_t m = module_by_stem(*state, "mod_v11");
    tutti_impl_info_t im;
    int first = 0, second = 0;
    if (m.reason != NULL)
        fail_msg("mod_v11 refused: %s", m.reason);
    assert_int_equal(m.abi_minor, 1);
    for (size_t i = 0; tutti_info_impl(*state, i, &im) == TUTTI_OK; i++) {
        if (strcmp(im.name, "TestOldFirst") == 0)
            first = im.collectives == TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE) &&
                    im.aliases == NULL;
        if (strcmp(im.name, "TestOldSecond") == 0)
            second = im.collectives == TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST) &&
                     im.aliases == NULL &&
                     strstr(im.description, "1.1's stride") != NULL;
    }
    assert_true(first);
    assert_true(second);
}

/* An algorithm module built against ABI 1.2 (rows end before flags, the
 * descriptor before group_ops, the ops table before supports) still
 * loads, each row read at that minor's stride, its aliases with it. */
static void test_module_minor_2_loads(void **state)
{
    tutti_module_info_t m = module_by_stem(*state, "mod_v12");
    if (m.reason != NULL)
        fail_msg("mod_v12 refused: %s", m.reason);
    assert_int_equal(m.abi_minor, 2);
    tutti_impl_info_t first = impl_by_name(*state, "TestV12First");
    tutti_impl_info_t second = impl_by_name(*state, "TestV12Second");
    assert_int_equal(first.collectives, TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE));
    assert_null(first.aliases);
    assert_int_equal(second.collectives, TUTTI_COLL_BIT(TUTTI_COLL_BROADCAST));
    assert_string_equal(second.description,
                        "test: the second row, found at 1.2's stride");
    assert_non_null(second.aliases);
    assert_string_equal(second.aliases[0], "TestV12Former");
    assert_null(second.aliases[1]);
}

/* An algorithm module built against ABI 1.0 (rows end before
 * per_rank_collectives) still loads, each row read at that minor's
 * stride and no further: the second row whole, and neither runs per-rank
 * counts although bits that would pass follow the table. */
static void test_module_minor_0_loads(void **state)
{
    tutti_module_info_t m = module_by_stem(*state, "mod_v10");
    assert_null(m.reason);
    assert_int_equal(m.abi_major, 1);
    assert_int_equal(m.abi_minor, 0);
    tutti_impl_info_t first = impl_by_name(*state, "TestV10First");
    tutti_impl_info_t second = impl_by_name(*state, "TestV10Second");
    assert_string_equal(first.module, "testv10");
    assert_int_equal(first.collectives, TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE));
    assert_int_equal(first.per_rank_collectives, 0);
    assert_null(first.aliases);
    assert_string_equal(second.module, "testv10");
    assert_string_equal(second.description,
                        "test: the second row, found at 1.0's stride");
    assert_int_equal(second.collectives,
                     TUTTI_COLL_BIT(TUTTI_COLL_ALLGATHER));
    assert_int_equal(second.device_types, TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU));
    assert_int_equal(second.per_rank_collectives, 0);
    assert_null(second.aliases);
}

/* A transport built against ABI 2.0 (no settings fields) still loads. */
static void test_older_transport_minor_loads(void **state)
{
    tutti_module_info_t m = module_by_stem(*state, "tp_v20");
    assert_null(m.reason);
    assert_string_equal(m.transport, "v20");
    assert_int_equal(m.abi_major, 2);
    assert_int_equal(m.abi_minor, 0);
}

/* An implementation lists its former names: RingAllreduce was RingReduce. */
static void test_impl_lists_former_names(void **state)
{
    tutti_impl_info_t im = impl_by_name(*state, "RingAllreduce");
    assert_non_null(im.aliases);
    assert_string_equal(im.aliases[0], "RingReduce");
    assert_null(im.aliases[1]);
    assert_null(impl_by_name(*state, "TestCopy").aliases);
}

static void test_builtin_modules_load(void **state)
{
    tutti_module_info_t ring = module_by_stem(*state, "alg_ring");
    tutti_module_info_t tree = module_by_stem(*state, "alg_tree");
    assert_null(ring.reason);
    assert_null(tree.reason);
    assert_string_equal(ring.name, "ring");
    assert_string_equal(tree.name, "tree");
}

/* The good module's implementation runs although bad ones sit beside it. */
static void test_good_module_runs(void **state)
{
    tutti_instance_params_t ip;
    tutti_group_t *g;
    tutti_request_t *r;
    int32_t in[5] = {1, -2, 3, -4, 5}, out[5] = {0};

    assert_int_equal(test_join(*state, 7, 1, 0, 0, &g), TUTTI_OK);
    test_params(&ip, 1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, 5);
    ip.algorithm = "TestCopy";
    assert_int_equal(tutti_execute(g, &ip, in, out, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_OK);
    tutti_request_free(r);
    assert_memory_equal(in, out, sizeof(in));
    /* Naming a refused module's implementation fails clearly. */
    ip.instance_key = 2;
    ip.algorithm = "TestBadAbi";
    assert_int_equal(tutti_execute(g, &ip, in, out, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_ERR_NOT_FOUND);
    tutti_request_free(r);
    assert_non_null(strstr(tutti_last_error(), "'TestBadAbi' is not provided"));
    tutti_group_leave(g);
}

/* With the ring module filtered out, allreduce selection fails with a
 * message naming the call, and nothing crashes. */
static void test_missing_module_fails_clearly(void **state)
{
    test_tmp_t t;
    tutti_group_t *g;
    float x = 1, y = 0;
    (void)state;

    test_tmp_make(&t, "reg", "t.yaml",
                  "modules: { load: [tree] }\n"
                  "selection:\n"
                  "  - { collective: allreduce, algorithm: RingReduce }\n"
                  "  - { collective: broadcast, "
                  "algorithm: HierarchicalTreeBroadcast }\n");
    tutti_context_t *ctx = open_ctx(t.path, NULL);
    assert_refused(ctx, "alg_ring", "not listed in modules.load");
    assert_int_equal(test_join(ctx, 0, 1, 0, 0, &g), TUTTI_OK);
    assert_int_equal(tutti_allreduce(g, &x, &y, 1, TUTTI_FLOAT32, TUTTI_OP_SUM),
                     TUTTI_ERR_NOT_FOUND);
    assert_non_null(strstr(tutti_last_error(),
                           "no selection rule matches allreduce"));
    assert_int_equal(tutti_broadcast(g, &x, 1, TUTTI_FLOAT32, 0), TUTTI_OK);
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    test_rmtree(t.dir);
}

/* Writes a config whose only allreduce rule names @p impl. */
static void write_rule(const char *path, const char *impl)
{
    char text[256];
    snprintf(text, sizeof(text), "selection:\n"
             "  - { collective: allreduce, algorithm: %s }\n", impl);
    test_write_file(path, text);
}

/* Runs one allreduce on a group of one under @p config, with the log sent
 * to @p log_path; returns what selection chose according to explain. */
static const char *run_with(const char *config, const char *log_path,
                            tutti_context_t **ctx_out)
{
    tutti_context_params_t p;
    tutti_group_t *g;
    tutti_select_query_t q = {TUTTI_COLL_ALLREDUCE, TUTTI_DEVICE_CPU,
                              TUTTI_FLOAT32, 8, 1, 1, 0, 0};
    const char *chosen = NULL;
    char explain[2048];
    float in[2] = {3, 4}, out[2] = {0, 0};

    /* The API's log level beats TUTTI_LOG_LEVEL. */
    test_one_task_params(&p, config, GOOD_DIR, "debug");
    fflush(stderr);
    int saved = dup(2);
    FILE *log = freopen(log_path, "w", stderr);
    assert_non_null(log);
    assert_int_equal(tutti_context_create(&p, ctx_out), TUTTI_OK);
    assert_int_equal(test_join(*ctx_out, 0, 1, 0, 0, &g), TUTTI_OK);
    assert_int_equal(tutti_allreduce(g, in, out, 2, TUTTI_FLOAT32,
                                     TUTTI_OP_SUM), TUTTI_OK);
    tutti_group_leave(g);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_true(out[0] == 3 && out[1] == 4);
    assert_int_equal(tutti_info_explain(*ctx_out, &q, explain,
                                        sizeof(explain), &chosen), TUTTI_OK);
    return chosen;
}


/* Changing the rule in YAML changes what runs, and both explain and the
 * debug log say so. */
static void test_rule_change_changes_what_runs(void **state)
{
    test_tmp_t t;
    char log[128];
    const char *cfg = t.path;
    tutti_context_t *ctx;
    (void)state;
    test_tmp_make(&t, "rule", "t.yaml", NULL);
    test_tmpfile(log, sizeof(log), t.dir, "log", NULL);

    write_rule(cfg, "TestCopy");
    assert_string_equal(run_with(cfg, log, &ctx), "TestCopy");
    assert_true(test_file_has(log, "-> TestCopy (rule "));
    assert_true(test_file_has(log, "t.yaml:2)"));
    tutti_context_destroy(ctx);

    /* A former name (an alias) selects the implementation, which runs
     * under its own name. */
    write_rule(cfg, "RingReduce");
    assert_string_equal(run_with(cfg, log, &ctx), "RingAllreduce");
    assert_true(test_file_has(log, "-> RingAllreduce (rule "));
    assert_false(test_file_has(log, "-> TestCopy"));
    tutti_context_destroy(ctx);
    test_rmtree(t.dir);
}

/* The shipped config names shm's and tcp's sections; with modules.load
 * leaving those modules out, their sections are dropped with a warning
 * naming the place, the module and why, and the context opens. */
static void test_section_of_unloaded_module_warns(void **state)
{
    test_tmp_t t;
    tutti_context_params_t p;
    tutti_context_t *ctx = NULL;
    const char *shipped = TUTTI_TEST_SRCDIR "/conf/tutti.yaml";
    (void)state;
    test_tmp_make(&t, "unloaded", "log", NULL);

    test_one_task_params(&p, shipped, GOOD_DIR, "warn");
    assert_int_equal(setenv("TUTTI_MODULES_LOAD", "ring,tree", 1), 0);
    fflush(stderr);
    int saved = dup(2);
    assert_non_null(freopen(t.path, "w", stderr));
    tutti_status_t st = tutti_context_create(&p, &ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("TUTTI_MODULES_LOAD");
    if (st != TUTTI_OK)
        fail_msg("context: %s: %s", tutti_strerror(st), tutti_last_error());
    assert_true(test_file_has(t.path, "conf/tutti.yaml:"));
    assert_true(test_file_has(t.path, ": section 'shm' ignored: module shm "
                              "is not loaded (not listed in modules.load)"));
    assert_true(test_file_has(t.path, ": section 'tcp' ignored: module tcp "
                              "is not loaded (not listed in modules.load)"));
    tutti_context_destroy(ctx);
    test_rmtree(t.dir);
}

/* One execution of a group of one naming @p name; the implementation that
 * ran goes to @p ran (its own name). */
static tutti_status_t run_named(tutti_group_t *g, uint64_t key,
                                const char *name, const char **ran)
{
    int32_t in[2] = {4, 5}, out[2] = {0, 0};
    tutti_instance_params_t ip;
    tutti_request_t *r;
    tutti_request_info_t info;
    test_params(&ip, key, TUTTI_COLL_ALLTOALL, TUTTI_INT32, 2);
    ip.algorithm = name;
    tutti_status_t st = tutti_execute(g, &ip, in, out, &r);
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_info(r, &info);
    *ran = info.algorithm;
    tutti_request_free(r);
    assert_memory_equal(out, in, sizeof(in));
    return st;
}

/* A call may name an implementation by its former name (an alias), in its
 * first execution or a later one, alike with its own name; another
 * implementation's name is a mismatch. */
static void test_former_names_select(void **state)
{
    tutti_group_t *g;
    const char *ran = NULL;
    assert_int_equal(test_join(*state, 77, 1, 0, 0, &g), TUTTI_OK);
    assert_int_equal(run_named(g, 1, "AllToAll", &ran), TUTTI_OK);
    assert_string_equal(ran, "PairwiseAlltoall");
    assert_int_equal(run_named(g, 1, "PairwiseAlltoall", &ran), TUTTI_OK);
    assert_int_equal(run_named(g, 1, "AllToAll", &ran), TUTTI_OK);
    assert_int_equal(run_named(g, 2, "PairwiseAlltoall", &ran), TUTTI_OK);
    assert_int_equal(run_named(g, 2, "AllToAll", &ran), TUTTI_OK);
    assert_string_equal(ran, "PairwiseAlltoall");
    assert_int_equal(run_named(g, 2, "RingAllgather", &ran),
                     TUTTI_ERR_MISMATCH);
    assert_non_null(strstr(tutti_last_error(), "runs PairwiseAlltoall; this "
                                               "call asks for RingAllgather"));
    tutti_group_leave(g);
}

/* Creates a context over @p yaml (written as t.yaml) with the good and
 * shipped modules; its status, the error in @p why. */
static tutti_status_t ctx_of(const char *yaml, char *why, size_t len)
{
    test_tmp_t t;
    tutti_context_params_t p;
    tutti_context_t *ctx = NULL;
    test_tmp_make(&t, "params", "t.yaml", yaml);
    test_one_task_params(&p, t.path, GOOD_DIR, "off");
    tutti_status_t st = tutti_context_create(&p, &ctx);
    snprintf(why, len, "%s", st == TUTTI_OK ? "" : tutti_last_error());
    if (ctx != NULL)
        tutti_context_destroy(ctx);
    test_rmtree(t.dir);
    return st;
}

/* A rule's parameters: each must be one its implementation declares (ABI
 * 1.5), and a size; the context refuses the file otherwise, naming the
 * file, line and column and what the implementation reads.  A module of an
 * older minor declares none and is not checked. */
static void test_rule_params_checked(void **state)
{
    char why[1024];
    (void)state;
    assert_int_equal(
        ctx_of("selection:\n"
               "  - { collective: broadcast,\n"
               "      algorithm: HierarchicalTreeBroadcast, params: "
               "{ chunck: 1M } }\n", why, sizeof(why)),
        TUTTI_ERR_CONFIG);
    if (strstr(why, "t.yaml:3:55: unknown parameter 'chunck' for "
                    "implementation 'HierarchicalTreeBroadcast'; expected "
                    "one of fanout, chunk") == NULL)
        fail_msg("a misspelt parameter: '%s'", why);
    assert_int_equal(
        ctx_of("selection:\n  - { algorithm: RecursiveDoublingAllreduce, "
               "params: { chunk: 1M } }\n", why, sizeof(why)),
        TUTTI_ERR_CONFIG);
    if (strstr(why, "t.yaml:2:56: unknown parameter 'chunk' for "
                    "implementation 'RecursiveDoublingAllreduce'; expected "
                    "none: it reads no parameter") == NULL)
        fail_msg("a parameter for an implementation that reads none: '%s'",
                 why);
    assert_int_equal(
        ctx_of("selection:\n  - { algorithm: TreeReduce, params: "
               "{ fanout: 4, chunk: lots } }\n", why, sizeof(why)),
        TUTTI_ERR_CONFIG);
    if (strstr(why, "t.yaml:2:58:") == NULL ||
        strstr(why, "expected a size, e.g. 2, 64K or 1M") == NULL)
        fail_msg("a value that is no size: '%s'", why);
    /* Declared ones, through a former name too; a module of ABI 1.2. */
    assert_int_equal(
        ctx_of("selection:\n"
               "  - { algorithm: RingReduce, params: { subdivisions: 2 } }\n"
               "  - { algorithm: TreeReduce, params: { fanout: 4, "
               "chunk: 64K } }\n"
               "  - { algorithm: TestV12First, params: { anything: 1 } }\n",
               why, sizeof(why)),
        TUTTI_OK);
}

/* A per-rank call whose first matching rule names an implementation with
 * equal counts only goes on to the next rule, in explain and in a call;
 * messages say "per-rank counts", never a size.  Before, the call failed
 * with ERR_UNSUPPORTED, naming 18446744073709551615 bytes. */
static void test_per_rank_falls_through(void **state)
{
    test_tmp_t t;
    char explain[2048];
    tutti_context_params_t p;
    tutti_context_t *ctx;
    tutti_group_t *g;
    tutti_instance_params_t ip;
    tutti_request_t *r;
    tutti_request_info_t info;
    tutti_select_query_t q = {TUTTI_COLL_ALLGATHER, TUTTI_DEVICE_CPU,
                              TUTTI_INT32, 0, 1, 1, 1, 0};
    const char *chosen = NULL;
    int32_t in[3] = {7, 8, 9}, out[4] = {0, 0, 0, -1};
    (void)state;

    test_tmp_make(&t, "perrank", "t.yaml",
                  "selection:\n"
                  "  - { collective: allgather, algorithm: BruckAllgather }\n"
                  "  - { collective: allgather, size: \"0-1K\", "
                  "algorithm: RingAllgather }\n"
                  "  - { collective: allgather, algorithm: RingAllgather }\n");
    test_one_task_params(&p, t.path, NULL, "off");
    assert_int_equal(tutti_context_create(&p, &ctx), TUTTI_OK);
    assert_int_equal(tutti_info_explain(ctx, &q, explain, sizeof(explain),
                                        &chosen), TUTTI_OK);
    assert_string_equal(chosen, "RingAllgather");
    assert_non_null(strstr(explain, "t.yaml:2: BruckAllgather: no "
                           "(BruckAllgather (module tree) runs allgather "
                           "with equal counts only, not per-rank counts)"));
    assert_non_null(strstr(explain, "t.yaml:3: RingAllgather: no (per-rank "
                           "counts match as the largest size, outside "
                           "0-1024)"));
    assert_non_null(strstr(explain, "t.yaml:4: RingAllgather: matches"));
    assert_null(strstr(explain, "18446744073709551615"));

    assert_int_equal(test_join(ctx, 0, 1, 0, 0, &g), TUTTI_OK);
    test_params(&ip, 5, TUTTI_COLL_ALLGATHER, TUTTI_INT32,
                TUTTI_COUNT_PER_RANK);
    ip.send_count = 3;
    ip.recv_capacity = 3;
    assert_int_equal(tutti_execute(g, &ip, in, out, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_OK);
    tutti_request_info(r, &info);
    assert_string_equal(info.algorithm, "RingAllgather");
    tutti_request_free(r);
    assert_memory_equal(out, ((int32_t[]){7, 8, 9, -1}), sizeof(out));

    /* Nothing left that runs it: the message names per-rank counts. */
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    test_write_file(t.path, "selection:\n"
                            "  - { collective: allgather, "
                            "algorithm: BruckAllgather }\n");
    assert_int_equal(tutti_context_create(&p, &ctx), TUTTI_OK);
    assert_int_equal(test_join(ctx, 0, 1, 0, 0, &g), TUTTI_OK);
    assert_int_equal(tutti_execute(g, &ip, in, out, &r), TUTTI_OK);
    assert_int_equal(tutti_request_wait(r), TUTTI_ERR_NOT_FOUND);
    tutti_request_free(r);
    assert_non_null(strstr(tutti_last_error(), "no selection rule matches "
                           "allgather (cpu, int32, per-rank counts, group of "
                           "1, 1 tasks) with an implementation that runs "
                           "it"));
    tutti_group_leave(g);
    tutti_context_destroy(ctx);
    test_rmtree(t.dir);
}

typedef struct {
    tutti_context_t *ctx;
    int index;
    uint64_t instance;
    tutti_status_t st;
    float out[3];
} plan_member_t;

static void *plan_member(void *arg)
{
    plan_member_t *m = arg;
    tutti_instance_params_t ip;
    tutti_group_t *g;
    float in[3] = {0, 0, 0};
    if ((m->st = test_join(m->ctx, 77, 3, m->index, 0, &g)) != TUTTI_OK)
        return NULL;
    test_params(&ip, m->instance, TUTTI_COLL_ALLREDUCE, TUTTI_FLOAT32, 3);
    ip.algorithm = "TestPlan";
    m->st = test_exec_wait(g, &ip, in, m->out);
    tutti_group_leave(g);
    return NULL;
}

/* init_params runs once per instance, and every member gets its bytes. */
static void test_details_made_once_for_all(void **state)
{
    plan_member_t m[3];
    for (uint64_t inst = 1; inst <= 2; inst++) {
        for (int i = 0; i < 3; i++)
            m[i] = (plan_member_t){*state, i, inst, TUTTI_OK, {0, 0, 0}};
        assert_int_equal(test_threads(3, plan_member, m, sizeof(m[0])), 0);
        for (int i = 0; i < 3; i++) {
            if (m[i].st != TUTTI_OK)
                fail_msg("member %d: %s", i, tutti_status_name(m[i].st));
            /* one call per instance so far, whichever member asked */
            assert_true(m[i].out[0] == (float)inst);
            assert_true(m[i].out[1] == 3.0f && m[i].out[2] == 3.0f);
        }
    }
}

/* A module with an undefined symbol is refused at load, the symbol named
 * by the dynamic loader; bound lazily it loaded, and the process exited
 * 127 on its first call. */
static void test_undefined_symbol_refused(void **state)
{
    assert_refused(*state, "mod_undef", "cannot open: ");
    assert_refused(*state, "mod_undef",
                   "undefined symbol: tutti_test_undefined_symbol");
}

/* A descriptor is read only within what it declares: a symbol shorter
 * than the head is refused before any field is read, and a 1.0
 * descriptor declaring fewer bytes than 1.0 needs is refused naming both
 * sizes (before, the loader read 48 bytes of each: ASan reported both). */
static void test_short_descriptor_refused(void **state)
{
    char want[160];
    assert_refused(*state, "mod_tinydesc",
                   "descriptor symbol 'tutti_module_descriptor' is 4 bytes, "
                   "shorter than the 16-byte head");
    snprintf(want, sizeof(want), "malformed descriptor: 4 bytes; module ABI "
             "1.0 needs %zu", offsetof(tutti_module_desc_t, group_ops));
    assert_refused(*state, "mod_shortdesc", want);
    /* Nothing read past the head reaches the listing. */
    assert_null(module_by_stem(*state, "mod_shortdesc").name);
    assert_null(module_by_stem(*state, "mod_tinydesc").name);
}

/* Names are [A-Za-z0-9_.-], descriptions printable ASCII: a newline or an
 * escape sequence is refused with the field and the byte's place, and
 * never printed. */
static void test_forged_names_refused(void **state)
{
    assert_refused(*state, "mod_badname", "implementation 1's name: byte 11 "
                   "is 0x0a; expected 1 to 63 of [A-Za-z0-9_.-]");
    assert_refused(*state, "mod_baddesc", "description of implementation 1 "
                   "('TestBadDesc'): byte 7 is 0x1b; expected printable "
                   "ASCII");
    for (size_t i = 0;; i++) {
        tutti_impl_info_t im;
        if (tutti_info_impl(*state, i, &im) != TUTTI_OK)
            break;
        if (strchr(im.name, '\n') != NULL ||
            strcmp(im.name, "TestBadDesc") == 0)
            fail_msg("implementation %zu of a refused module registered", i);
    }
}

/* Writes @p n bytes of @p data to <@p dir>/<@p name>. */
static void write_bytes(const char *dir, const char *name, const void *data,
                        size_t n)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A module file cut short, or no shared object at all, is refused with
 * the reason before dlopen maps it: a cut one crashed the process with
 * SIGBUS inside dlopen, a FIFO blocked it for ever. */
static void test_truncated_file_refused(void **state)
{
    test_tmp_t t;
    char path[256];
    static char so[1 << 20];
    (void)state;
    FILE *f = fopen(GOOD_DIR "/.libs/mod_good.so", "rb");
    assert_non_null(f);
    size_t n = fread(so, 1, sizeof(so), f);
    fclose(f);
    /* Cut at 8 KiB, its later segments lie past the end. */
    assert_true(n > 16384 && n < sizeof(so));
    test_tmp_make(&t, "cut", "", NULL);

    write_bytes(t.dir, "mod_cut0.so", so, 0);
    write_bytes(t.dir, "mod_cut40.so", so, 40);
    write_bytes(t.dir, "mod_cut64.so", so, 64);
    write_bytes(t.dir, "mod_cut8k.so", so, 8192);
    /* With no section headers to give it away, the loadable segments
     * must: dlopen maps them, past the end of the file. */
    ((ElfW(Ehdr) *)so)->e_shnum = 0;
    write_bytes(t.dir, "mod_cutseg.so", so, 8192);
    memset(path, '#', sizeof(path));
    memcpy(path, "#!/bin/sh", 9);
    write_bytes(t.dir, "mod_text.so", path, 128);
    snprintf(path, sizeof(path), "%s/mod_fifo.so", t.dir);
    assert_int_equal(mkfifo(path, 0600), 0);

    tutti_context_t *ctx = open_ctx("", t.dir);
    assert_refused(ctx, "mod_cut0", "truncated: 0 bytes, shorter than an "
                                    "ELF header (64)");
    assert_refused(ctx, "mod_cut40", "truncated: 40 bytes, shorter than an "
                                     "ELF header (64)");
    assert_refused(ctx, "mod_cut64", "truncated or malformed: ");
    assert_refused(ctx, "mod_cut64", "program headers of 56 bytes at offset "
                                     "64, in a file of 64 bytes");
    assert_refused(ctx, "mod_cut8k", "truncated or malformed: ");
    assert_refused(ctx, "mod_cut8k", "section headers");
    assert_refused(ctx, "mod_cutseg", "truncated: segment ");
    assert_refused(ctx, "mod_cutseg", "the file ends at ");
    assert_refused(ctx, "mod_text", "not an ELF file: its first bytes are "
                                    "23 21 2f 62, expected 7f 45 4c 46");
    assert_refused(ctx, "mod_fifo", "a FIFO, expected a shared object file");
    /* The shipped modules load beside them. */
    assert_null(module_by_stem(ctx, "alg_ring").reason);
    tutti_context_destroy(ctx);
    unlink(path);
    test_rmtree(t.dir);
}

/* A module searched before the shipped ones that repeats a shipped
 * implementation's name is the one refused, both paths named; leaving the
 * shipped module out of modules.load lets it take the name. */
static void test_shipped_module_wins(void **state)
{
    test_tmp_t t;
    (void)state;
    tutti_context_t *ctx = open_ctx("", SHADOW_DIR);
    tutti_module_info_t ring = module_by_stem(ctx, "alg_ring");
    assert_null(ring.reason);
    assert_refused(ctx, "mod_shadow", "implementation 'RingAllreduce' "
                   "already registered by module 'ring' (");
    assert_refused(ctx, "mod_shadow", ring.path);
    assert_string_equal(impl_by_name(ctx, "RingAllreduce").module, "ring");
    tutti_context_destroy(ctx);

    test_tmp_make(&t, "shadow", "t.yaml",
                  "modules: { load: [testshadow, tree] }\n"
                  "selection:\n"
                  "  - { collective: allreduce, algorithm: RingAllreduce }\n");
    ctx = open_ctx(t.path, SHADOW_DIR);
    assert_null(module_by_stem(ctx, "mod_shadow").reason);
    assert_refused(ctx, "alg_ring", "not listed in modules.load");
    assert_string_equal(impl_by_name(ctx, "RingAllreduce").module,
                        "testshadow");
    tutti_context_destroy(ctx);
    test_rmtree(t.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_module_loads),
        cmocka_unit_test(test_bad_modules_refused),
        cmocka_unit_test(test_wrong_transport_abi_refused),
        cmocka_unit_test(test_older_transport_minor_loads),
        cmocka_unit_test(test_older_module_minor_loads),
        cmocka_unit_test(test_module_minor_0_loads),
        cmocka_unit_test(test_module_minor_2_loads),
        cmocka_unit_test(test_former_names_select),
        cmocka_unit_test(test_impl_lists_former_names),
        cmocka_unit_test(test_builtin_modules_load),
        cmocka_unit_test(test_good_module_runs),
        cmocka_unit_test(test_missing_module_fails_clearly),
        cmocka_unit_test(test_rule_change_changes_what_runs),
        cmocka_unit_test(test_section_of_unloaded_module_warns),
        cmocka_unit_test(test_per_rank_falls_through),
        cmocka_unit_test(test_rule_params_checked),
        cmocka_unit_test(test_details_made_once_for_all),
        cmocka_unit_test(test_undefined_symbol_refused),
        cmocka_unit_test(test_short_descriptor_refused),
        cmocka_unit_test(test_forged_names_refused),
        cmocka_unit_test(test_truncated_file_refused),
        cmocka_unit_test(test_shipped_module_wins),
    };
    return cmocka_run_group_tests_name("registry", tests, setup, teardown);
}
