/*
 * tutti-conformance: the conformance kit for algorithm modules.  Given
 * module files, it loads each through the library's loader (whose
 * descriptor checks come first: a module it refuses fails, with its
 * reason), then runs a CMocka suite against every implementation the
 * module declares:
 *
 *   - the correctness matrix (matrix.h) in groups of 1, 2, 3, 4 and 5
 *     members run as threads of this process over the in-process transport:
 *     every collective the implementation declares x every dtype x every op
 *     (with scales) x counts 0, 1, n-1, n+1, 4099 and 1 Mi+3 x in place, out
 *     of place and mixed x every root, per-rank counts where it declares
 *     them, each element checked exactly, guard bytes past the outputs;
 *   - a peer that stops in the middle of an execution: the execution must
 *     end with an error at its time limit, not hang;
 *   - an abort while an execution waits: it must end with
 *     TUTTI_ERR_ABORTED at once, and the group be left cleanly.
 *
 * A failed case is printed with what reproduces it.  Implementations that
 * run only on CUDA devices are skipped with a message (this kit drives CPU
 * groups).
 */
#define _GNU_SOURCE /* mkdtemp, realpath */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "matrix.h"
#include "members.h"
#include "../tool_util.h"

#define MAX_MEMBERS 8
#define MAX_TIMEOUT_S 86400.0 /* a case's time limit, at most a day */
#define MAX_TESTS 512
#define PRINT_MAX 20 /* failure lines printed per test */

/* What one CMocka test runs. */
typedef enum { T_MATRIX, T_STALL, T_ABORT, T_DEVICE } kind_t;

typedef struct {
    kind_t kind;
    const char *module;   /* the file given */
    char impl[128];
    uint32_t collectives;
    int members;
    char name[256];
} case_t;

static struct {
    char dir[PATH_MAX];   /* temporary: the module's link, the config */
    char link[PATH_MAX * 2 + 8];
    char config[PATH_MAX + 16];
    double timeout;
    int full;
    int memory;           /* --memory, or -1: the environment's */
    uint64_t next_key;
    int members[MAX_MEMBERS];
    int nmembers;
} opt = {.timeout = 60, .next_key = 1, .memory = -1};

static void usage(FILE *to)
{
    fprintf(to,
        "usage: tutti-conformance [options] MODULE.so...\n"
        "Runs the conformance suite against algorithm modules: the loader's\n"
        "checks, then for each implementation a module declares the\n"
        "correctness matrix in groups of several members (threads of this\n"
        "process), a peer that stops mid-execution (an error at the time\n"
        "limit, no hang) and an abort (TUTTI_ERR_ABORTED at once).\n"
        "  -n, --members LIST  group sizes, comma list (1,2,3,4,5)\n"
        "      --only IMPL     this implementation alone\n"
        "      --full          every case of the matrix, none sampled out\n"
        "                      (TUTTI_CHECK_FULL=1 too)\n"
        "      --timeout SEC   a case's time limit (60)\n"
        "      --memory heap|registered|mixed\n"
        "                      where the calls' buffers come from (heap;\n"
        "                      TUTTI_CHECK_MEMORY too): registered is\n"
        "                      tutti_mem_alloc's, read by peers in place;\n"
        "                      mixed: registered on even ranks only\n"
        "  -h, --help          this text\n"
        "Prints CMocka's line per test and its summary; a failed case with\n"
        "what reproduces it.  Exit status: 0 when every test passed, 1 when\n"
        "one failed or a module was refused, 2 on bad usage.\n");
}

/* ---- the module's context ------------------------------------------------ */

/* A context that loads @p module (through a link in opt.dir) besides the
 * shipped modules, with a config of no rules; NULL with the reason.
 * @p quiet: no log at all (the failure tests' errors are expected). */
static tutti_context_t *context_for(int quiet, char *why, size_t len)
{
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    tutti_context_params_init(&cp);
    cp.module_path = opt.dir;
    cp.config_path = opt.config;
    if (quiet)
        cp.log_level = "off";
    if (tutti_context_create(&cp, &ctx) != TUTTI_OK) {
        snprintf(why, len, "%s", tutti_last_error());
        return NULL;
    }
    return ctx;
}

/* Whether @p loaded (a path the loader printed: a file, or a stem without
 * .so, in the build tree the stem of a libtool .la whose library lies in
 * .libs/) is the file @p real. */
static int same_file(const char *loaded, const char *real)
{
    char a[PATH_MAX], b[PATH_MAX + 16];
    const char *slash = strrchr(loaded, '/');
    if (realpath(loaded, a) != NULL && strcmp(a, real) == 0)
        return 1;
    snprintf(b, sizeof(b), "%s.so", loaded);
    if (realpath(b, a) != NULL && strcmp(a, real) == 0)
        return 1;
    if (slash == NULL)
        return 0;
    snprintf(b, sizeof(b), "%.*s/.libs/%s.so", (int)(slash - loaded), loaded,
             slash + 1);
    return realpath(b, a) != NULL && strcmp(a, real) == 0;
}

/* ---- tests ----------------------------------------------------------------- */

typedef struct {
    tutti_check_env_t env;
    tutti_check_result_t res;
    FILE *log;
} matrix_member_t;

static void *matrix_main(void *arg)
{
    matrix_member_t *m = arg;
    m->res = tutti_check_matrix(&m->env);
    return NULL;
}

/* Prints the first of @p f's lines (the failures of one member) on
 * stdout, up to *@p left in all; counts the ones not printed. */
static void print_failures(FILE *f, int *left, int *unprinted)
{
    char line[1024];
    rewind(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (*left > 0) {
            print_message("  %s", line);
            --*left;
        } else {
            ++*unprinted;
        }
    }
}

static void test_matrix(void **state)
{
    case_t *c = *state;
    char why[1024];
    matrix_member_t m[MAX_MEMBERS];
    tutti_context_t *ctx = context_for(0, why, sizeof(why));
    if (ctx == NULL)
        fail_msg("context: %s", why);
    uint64_t key = opt.next_key++;
    for (int i = 0; i < c->members; i++) {
        tutti_check_env_init(&m[i].env, ctx);
        m[i].env.group_key = key;
        m[i].env.group_size = c->members;
        m[i].env.device_index = i;
        m[i].env.timeout = opt.timeout;
        m[i].env.full |= opt.full;
        if (opt.memory >= 0)
            m[i].env.memory = opt.memory;
        m[i].env.only_impl = c->impl;
        m[i].log = tmpfile();
        m[i].env.log = m[i].log != NULL ? m[i].log : stderr;
        memset(&m[i].res, 0, sizeof(m[i].res));
    }
    int started = test_threads(c->members, matrix_main, m, sizeof(m[0]));
    tutti_context_destroy(ctx);
    int failures = 0, checks = 0, left = PRINT_MAX, unprinted = 0;
    for (int i = 0; i < c->members; i++) {
        failures += m[i].res.failures;
        checks += m[i].res.checks;
    }
    if (failures > 0)
        print_message("%s, %d members: %d failed of %d cases (each line: "
                      "the rank, the call and what differed):\n", c->impl,
                      c->members, failures, checks);
    for (int i = 0; i < c->members; i++) {
        if (m[i].res.failures > 0 && m[i].log != NULL)
            print_failures(m[i].log, &left, &unprinted);
        if (m[i].log != NULL)
            fclose(m[i].log);
    }
    if (unprinted > 0)
        print_message("  (%d more lines like these)\n", unprinted);
    if (started != 0)
        fail_msg("could not start %d threads", c->members);
    if (failures > 0)
        fail_msg("%s, %d members: %d failed of %d cases; reproduce: "
                 "tutti-conformance --only %s -n %d%s %s", c->impl,
                 c->members, failures, checks, c->impl, c->members,
                 opt.full ? " --full" : "", c->module);
    if (checks == 0)
        fail_msg("no case ran for %s", c->impl);
    print_message("%s, %d members: %d cases, every element exact\n",
                  c->impl, c->members, checks / c->members);
}

/* Buffers big enough for every collective of @p n members of @p count
 * 8-byte elements each way. */
typedef struct {
    double in[MAX_MEMBERS * 64], out[MAX_MEMBERS * 64];
} bufs_t;

/* Instance @p key of collective @p coll for the failure tests. */
static void params_for(tutti_instance_params_t *p, uint64_t key,
                       tutti_collective_t coll, const char *impl,
                       const int *perm)
{
    test_params(p, key, coll, TUTTI_FLOAT64, 64);
    p->algorithm = impl;
    p->op = TUTTI_OP_SUM;
    /* Rank 0 must wait for rank 1: a broadcast's root only sends. */
    p->root = coll == TUTTI_COLL_BROADCAST ? 1 : 0;
    p->permutation = perm;
}

typedef struct {
    tutti_context_t *ctx;
    uint64_t key;
    const case_t *c;
    int index;
    tutti_collective_t coll;
    atomic_int *go;       /* member 1 leaves once set */
    tutti_status_t first, second;
    double seconds;       /* how long member 0's second execution took */
    int abort;            /* member 1 aborts the context instead */
} fail_member_t;

/* Both members run the instance once; member 0 runs it again alone, with
 * a time limit of 0.5 s (stall) or while member 1 aborts (abort). */
static void *fail_main(void *arg)
{
    fail_member_t *f = arg;
    static const int perm[2] = {1, 0};
    tutti_group_t *g;
    tutti_instance_params_t p;
    bufs_t *b = calloc(1, sizeof(*b));
    f->first = f->second = TUTTI_ERR_INTERNAL;
    if (b == NULL ||
        (f->first = test_join(f->ctx, f->key, 2, f->index, opt.timeout, &g)) !=
            TUTTI_OK) {
        free(b);
        return NULL;
    }
    params_for(&p, 1, f->coll, f->c->impl, perm);
    f->first = test_exec_wait(g, &p, b->in, b->out);
    if (f->index == 1) {
        if (f->abort) {
            struct timespec nap = {0, 100000000};
            nanosleep(&nap, NULL); /* member 0 is waiting by now */
            tutti_abort(f->ctx, "tutti-conformance: abort while a peer "
                        "waits");
        }
        while (!atomic_load(f->go)) {
            struct timespec nap = {0, 1000000};
            nanosleep(&nap, NULL);
        }
    } else if (f->first == TUTTI_OK) {
        p.timeout = f->abort ? opt.timeout : 0.5;
        double t0 = tool_now();
        f->second = test_exec_wait(g, &p, b->in, b->out);
        f->seconds = tool_now() - t0;
        atomic_store(f->go, 1);
    } else {
        atomic_store(f->go, 1);
    }
    tutti_group_leave(g);
    free(b);
    return NULL;
}

/* ---- the watchdog ---------------------------------------------------------- */

/* A member blocked inside the implementation (run or progress never
 * returns) is beyond the core's time limit and abort, and a thread cannot
 * be ended from outside: past the deadline of what it watches, the
 * watchdog prints the failure, removes the temporary directory and ends
 * the process with status 1, rather than let the kit hang. */
static struct {
    pthread_mutex_t lock;
    double deadline; /* tool_now() seconds; 0: nothing watched */
    char what[1024]; /* the failure to print */
} dog = {PTHREAD_MUTEX_INITIALIZER, 0, ""};

static void cleanup(void);

static void dog_watch(double seconds, const char *what)
{
    pthread_mutex_lock(&dog.lock);
    dog.deadline = seconds > 0 ? tool_now() + seconds : 0;
    snprintf(dog.what, sizeof(dog.what), "%s", what);
    pthread_mutex_unlock(&dog.lock);
}

static void *dog_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec nap = {0, 100000000};
        nanosleep(&nap, NULL);
        pthread_mutex_lock(&dog.lock);
        if (dog.deadline > 0 && tool_now() > dog.deadline) {
            printf("ERROR: %s\n[  FAILED  ] the process ends here: a "
                   "blocked thread cannot be stopped\n", dog.what);
            fflush(stdout);
            cleanup();
            _exit(1);
        }
        pthread_mutex_unlock(&dog.lock);
    }
    return NULL;
}

/* The stall or abort test for every collective @p c's implementation
 * declares. */
static void run_failures(const case_t *c, int abort)
{
    for (int coll = 0; coll < TUTTI_COLL_COUNT; coll++) {
        char why[1024];
        atomic_int go = 0;
        fail_member_t f[2];
        if (!(c->collectives & TUTTI_COLL_BIT(coll)))
            continue;
        tutti_context_t *ctx = context_for(1, why, sizeof(why));
        if (ctx == NULL)
            fail_msg("context: %s", why);
        uint64_t key = opt.next_key++;
        const char *name = tutti_collective_name((tutti_collective_t)coll);
        tutti_status_t want = abort ? TUTTI_ERR_ABORTED : TUTTI_ERR_TIMEOUT;
        double limit = abort ? 5.0 : 0.5 + 5.0;
        char what[1024];
        snprintf(what, sizeof(what), "%s: %s %s, 2 members, float64 sum "
                 "count 64: an execution has not returned after %.0f s "
                 "(expected %s within %.1f s): the implementation blocks "
                 "inside run or progress, where the core's time limit and "
                 "abort cannot reach; reproduce: tutti-conformance --only "
                 "%s -n 1 %s", abort ? "abort while waiting"
                                     : "a peer stops mid-execution",
                 c->impl, name, limit + 10, tutti_status_name(want), limit,
                 c->impl, c->module);
        for (int i = 0; i < 2; i++)
            f[i] = (fail_member_t){ctx, key, c, i, (tutti_collective_t)coll,
                                   &go, 0, 0, 0, abort};
        dog_watch(limit + 10, what);
        int started = test_threads(2, fail_main, f, sizeof(f[0]));
        dog_watch(0, "");
        tutti_context_destroy(ctx);
        if (started != 0)
            fail_msg("%s: could not start 2 threads", name);
        if (f[0].first != TUTTI_OK || f[1].first != TUTTI_OK)
            fail_msg("%s %s, 2 members, float64 sum count 64: the first "
                     "execution failed: %s, %s\nreproduce: tutti-conformance "
                     "--only %s -n 2 %s", c->impl, name,
                     tutti_status_name(f[0].first),
                     tutti_status_name(f[1].first), c->impl, c->module);
        if (f[0].second != want || f[0].seconds > limit)
            fail_msg("%s %s, 2 members, float64 sum count 64, rank 1 %s: "
                     "rank 0's second execution ended with %s after %.2f s; "
                     "expected %s within %.1f s", c->impl, name,
                     abort ? "aborts the context while rank 0 waits"
                           : "stops before its second execution",
                     tutti_status_name(f[0].second), f[0].seconds,
                     tutti_status_name(want), limit);
    }
}

static void test_stall(void **state)
{
    run_failures(*state, 0);
}

static void test_abort(void **state)
{
    run_failures(*state, 1);
}

static void test_device_only(void **state)
{
    case_t *c = *state;
    print_message("%s runs only on CUDA devices: this kit drives CPU groups; "
                  "skipped\n", c->impl);
    skip();
}

/* ---- main ------------------------------------------------------------------ */

static int parse_members(const char *text)
{
    char item[16];
    opt.nmembers = 0;
    for (const char *p = text;; p++) {
        size_t n = strcspn(p, ",");
        if (n >= sizeof(item) || opt.nmembers == MAX_MEMBERS)
            return -1;
        memcpy(item, p, n);
        item[n] = '\0';
        if (!tool_parse_count(item, MAX_MEMBERS,
                              &opt.members[opt.nmembers++]))
            return -1;
        p += n;
        if (*p == '\0')
            return 0;
    }
}

/* Adds the tests of @p module (already linked into opt.dir) to @p tests;
 * returns how many, or -1 if the loader refused it (said on stderr). */
static int add_module_tests(const char *module, const char *only,
                            struct CMUnitTest *tests, case_t *cases, int n)
{
    char why[1024], real[PATH_MAX];
    tutti_module_info_t mi;
    tutti_impl_info_t ii;
    const char *name = NULL;
    if (realpath(module, real) == NULL) {
        fprintf(stderr, "tutti-conformance: %s: %s\n", module,
                strerror(errno));
        return -1;
    }
    tutti_context_t *ctx = context_for(0, why, sizeof(why));
    if (ctx == NULL) {
        fprintf(stderr, "tutti-conformance: %s: %s\n", module, why);
        return -1;
    }
    /* The file may be listed twice: loaded from the shipped directory and
     * refused, as a duplicate, through the link; the loaded one counts. */
    const char *refused = NULL;
    for (size_t i = 0; tutti_info_module(ctx, i, &mi) == TUTTI_OK; i++) {
        if (!same_file(mi.path, real))
            continue;
        if (mi.reason == NULL)
            name = mi.name;
        else if (refused == NULL)
            refused = mi.reason;
    }
    if (name == NULL) {
        fprintf(stderr, "tutti-conformance: %s: %s%s\n", module,
                refused ? "refused by the loader: " : "not loaded: the "
                "loader lists no module from this file (expected a shared "
                "object defining tutti_module_descriptor)",
                refused ? refused : "");
        tutti_context_destroy(ctx);
        return -1;
    }
    int added = 0;
    for (size_t i = 0; tutti_info_impl(ctx, i, &ii) == TUTTI_OK; i++) {
        if (strcmp(ii.module, name) != 0 ||
            (only != NULL && strcmp(ii.name, only) != 0))
            continue;
        int cpu = (ii.device_types & TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU)) != 0;
        for (int k = 0; k < (cpu ? opt.nmembers + 2 : 1); k++) {
            if (n + added >= MAX_TESTS)
                break;
            case_t *c = &cases[n + added];
            c->module = module;
            snprintf(c->impl, sizeof(c->impl), "%s", ii.name);
            c->collectives = ii.collectives;
            c->kind = !cpu ? T_DEVICE
                      : k < opt.nmembers ? T_MATRIX
                      : k == opt.nmembers ? T_STALL : T_ABORT;
            c->members = c->kind == T_MATRIX ? opt.members[k] : 2;
            if (c->kind == T_MATRIX)
                snprintf(c->name, sizeof(c->name), "%s: matrix, %d member%s",
                         c->impl, c->members, c->members > 1 ? "s" : "");
            else
                snprintf(c->name, sizeof(c->name), "%s: %s", c->impl,
                         c->kind == T_STALL ? "a peer stops mid-execution"
                         : c->kind == T_ABORT ? "abort while waiting"
                                              : "CUDA only");
            tests[n + added] = (struct CMUnitTest){
                c->name,
                c->kind == T_MATRIX  ? test_matrix
                : c->kind == T_STALL ? test_stall
                : c->kind == T_ABORT ? test_abort
                                     : test_device_only,
                NULL, NULL, c};
            added++;
        }
    }
    if (added == 0) /* name is the context's: said before it goes */
        fprintf(stderr, "tutti-conformance: %s: module '%s' declares no "
                "implementation%s%s\n", module, name,
                only ? " named " : "", only ? only : "");
    tutti_context_destroy(ctx);
    return added;
}

/* Makes opt.dir with a link to @p module and an empty config; says on
 * stderr which step failed, naming the path, and returns -1. */
static int prepare(const char *module)
{
    char real[PATH_MAX];
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (realpath(module, real) == NULL) {
        fprintf(stderr, "tutti-conformance: %s: %s\n", module,
                strerror(errno));
        return -1;
    }
    snprintf(opt.dir, sizeof(opt.dir), "%s/tutti-conformance-XXXXXX", tmp);
    if (mkdtemp(opt.dir) == NULL) {
        fprintf(stderr, "tutti-conformance: cannot make a directory in %s "
                "(TMPDIR): %s\n", tmp, strerror(errno));
        opt.dir[0] = '\0';
        return -1;
    }
    const char *base = strrchr(real, '/');
    size_t len = strlen(real);
    /* The loader looks at .so (and .la) files only. */
    snprintf(opt.link, sizeof(opt.link), "%s/%s%s", opt.dir,
             base ? base + 1 : real,
             len > 3 && strcmp(real + len - 3, ".so") == 0 ? "" : ".so");
    snprintf(opt.config, sizeof(opt.config), "%s/empty.yaml", opt.dir);
    FILE *f = NULL;
    if (symlink(real, opt.link) != 0 || (f = fopen(opt.config, "w")) == NULL) {
        fprintf(stderr, "tutti-conformance: cannot write in %s: %s\n",
                opt.dir, strerror(errno));
        return -1;
    }
    fprintf(f, "# tutti-conformance: no rules; every call names its "
               "implementation\nlog_level: error\n");
    fclose(f);
    return 0;
}

/* Removes what prepare() made: its two files, then the directory. */
static void cleanup(void)
{
    if (opt.dir[0] == '\0')
        return;
    unlink(opt.link);
    unlink(opt.config);
    if (rmdir(opt.dir) != 0)
        fprintf(stderr, "tutti-conformance: could not remove %s: %s\n",
                opt.dir, strerror(errno));
    opt.dir[0] = '\0';
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"members", required_argument, NULL, 'n'},
        {"only", required_argument, NULL, 'o'},
        {"full", no_argument, NULL, 'f'},
        {"timeout", required_argument, NULL, 't'},
        {"memory", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *only = NULL;
    int c, rc = 0;
    parse_members("1,2,3,4,5");
    while ((c = getopt_long(argc, argv, "n:h", longs, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (parse_members(optarg) != 0) {
                fprintf(stderr, "tutti-conformance: --members '%s': expected "
                        "a comma list of group sizes from 1 to %d\n", optarg,
                        MAX_MEMBERS);
                return 2;
            }
            break;
        case 'o':
            only = optarg;
            break;
        case 'f':
            opt.full = 1;
            break;
        case 'm':
            opt.memory = tutti_check_memory_parse(optarg);
            if (opt.memory < 0) {
                fprintf(stderr, "tutti-conformance: --memory '%s': "
                        "expected heap, registered or mixed\n", optarg);
                return 2;
            }
            break;
        case 't':
            if (!tool_parse_seconds(optarg, MAX_TIMEOUT_S, &opt.timeout)) {
                fprintf(stderr, "tutti-conformance: --timeout '%s': expected "
                        "seconds above 0, at most 86400, in plain "
                        "decimal\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind == argc) {
        usage(stderr);
        return 2;
    }
    static struct CMUnitTest tests[MAX_TESTS];
    static case_t cases[MAX_TESTS];
    pthread_t dog_thread;
    if (pthread_create(&dog_thread, NULL, dog_main, NULL) != 0) {
        fprintf(stderr, "tutti-conformance: cannot start its watchdog "
                "thread: %s\n", strerror(errno));
        return 1;
    }
    pthread_detach(dog_thread);
    for (int i = optind; i < argc; i++) {
        if (prepare(argv[i]) != 0) {
            cleanup();
            rc = 1;
            continue;
        }
        int n = add_module_tests(argv[i], only, tests, cases, 0);
        if (n <= 0) {
            rc = 1;
        } else if (_cmocka_run_group_tests(argv[i], tests, (size_t)n, NULL,
                                           NULL) != 0) {
            rc = 1;
        }
        cleanup();
    }
    return rc;
}
