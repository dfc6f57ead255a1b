/*
 * tests/gpu/run, the script a machine with a GPU runs, checked here where
 * none is: its dry run lists every case skipped within seconds, with
 * limits of at most 60 s each that add up to at most 450 s (the run then
 * ends within 8 minutes); without a GPU a plain run says why each case is
 * skipped; and, where NCCL was found, --compile-only builds its programs
 * against NCCL laid out as the nvidia-nccl-cu13 wheel lays it out
 * (include/ and lib/libnccl.so.2 alone), the CUDA programs on the shared
 * CUDA runtime and none on libcuda.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tutti-build.h"

#include "test_util.h"

#define SRC TUTTI_TEST_SRCDIR
#define BUILD TUTTI_TEST_BUILDDIR
#define OUT_BYTES (64u << 10)
#define CASES 13

static const char *const cases[CASES] = {
    "smoke-nccl-1", "smoke-staged-2", "matrix-nccl-1", "matrix-staged-2",
    "matrix-staged-3", "matrix-selected-2", "order-nccl-1",
    "order-staged-2", "abort-staged-2", "memcheck-1", "perf-nccl-1",
    "perf-staged-2", "nccl-baseline"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every case skipped, in order, for @p why; the limits' sum in range. */
static void check_skipped(const char *out, const char *why)
{
    char line[256];
    int total = -1, n = -1;
    const char *at = strstr(out, "tests/gpu/run: ");
    if (at == NULL || sscanf(at, "tests/gpu/run: %d cases; their limits "
                             "add up to %d s", &n, &total) != 2) {
        test_show("output:", out);
        fail_msg("no 'N cases; their limits add up to S s' line");
    }
    assert_int_equal(n, CASES);
    if (total <= 0 || total > 450)
        fail_msg("the limits add up to %d s: at most 450 allowed", total);
    const char *from = out;
    for (int i = 0; i < CASES; i++) {
        snprintf(line, sizeof(line), "SKIP %s: %s", cases[i], why);
        const char *p = strstr(from, line);
        if (p == NULL) {
            test_show("output:", out);
            fail_msg("no '%s' after the cases before it", line);
        }
        from = p + strlen(line);
    }
    snprintf(line, sizeof(line), "0 passed, 0 failed, %d skipped", CASES);
    if (!test_has_lines(out, line)) {
        test_show("output:", out);
        fail_msg("no line '%s'", line);
    }
}

static void test_dry_run(void **state)
{
    char *out = *state;
    double t0 = now_s();
    int rc = test_run(SRC "/tests/gpu/run --dry-run --build " BUILD, 1, out,
                      OUT_BYTES);
    double secs = now_s() - t0;
    assert_int_equal(rc, 77);
    check_skipped(out, "--dry-run");
    printf("dry run: %d cases skipped in %.2f s\n", CASES, secs);
    if (secs > 10.0)
        fail_msg("the dry run took %.1f s", secs);
}

/* Here no nvidia-smi answers: each case says so. */
static void test_no_gpu(void **state)
{
    char *out = *state;
    if (test_run("nvidia-smi -L >/dev/null 2>&1", 0, out, OUT_BYTES) == 0) {
        skip(); /* a GPU answers: tests/gpu/run would run for minutes */
        return;
    }
    int rc = test_run(SRC "/tests/gpu/run --build " BUILD, 1, out,
                      OUT_BYTES);
    assert_int_equal(rc, 77);
    check_skipped(out, "no GPU (");
}

#if TUTTI_HAVE_NCCL
/* The NEEDED entries of @p file, space-separated, into @p out. */
static void needed(const char *file, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "readelf -d %s | sed -n "
             "'s/.*(NEEDED).*\\[\\(.*\\)\\]/\\1/p' | tr '\\n' ' '", file);
    test_run_ok(cmd, 1, out, len);
}

static void test_compile_against_the_wheel_layout(void **state)
{
    char *out = *state, dir[256], cmd[4096], libs[1024], path[512];
    snprintf(dir, sizeof(dir), "/tmp/tutti-gpu-script-%ld", (long)getpid());
    /* NCCL as the wheel has it: headers, and libnccl.so.2 without
     * libnccl.so; a build directory of this build's libraries whose
     * tests/gpu is the test's own. */
    snprintf(cmd, sizeof(cmd),
             "rm -rf %s && mkdir -p %s/nccl/lib %s/build/tests/gpu && "
             "ln -s %s/include %s/nccl/include && "
             "ln -s %s/libnccl.so.2 %s/nccl/lib/libnccl.so.2 && "
             "ln -s %s/core %s/build/core && "
             "CUDA_HOME=$(dirname $(dirname %s)) %s/tests/gpu/run "
             "--compile-only --nccl %s/nccl --build %s/build",
             dir, dir, dir, TUTTI_TEST_NCCL_HOME, dir, TUTTI_TEST_NCCL_LIBDIR,
             dir, BUILD, dir, TUTTI_TEST_NVCC, SRC, dir, dir);
    int rc = test_run(cmd, 1, out, OUT_BYTES);
    if (rc != 0) {
        test_show("output:", out);
        fail_msg("--compile-only against %s/nccl exited %d", dir, rc);
    }
    assert_true(test_has_lines(out, "compiled: gpu_coll gpu_order gpu_abort "
                                    "nccl_baseline"));
    static const char *const progs[] = {"gpu_coll", "gpu_order", "gpu_abort",
                                        "nccl_baseline"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/build/tests/gpu/%s", dir, progs[i]);
        needed(path, libs, sizeof(libs));
        printf("%s needs: %s\n", progs[i], libs);
        if (strstr(libs, "libcudart.so.") == NULL)
            fail_msg("%s does not link the shared CUDA runtime: %s",
                     progs[i], libs);
        if (strstr(libs, "libcuda.so") != NULL)
            fail_msg("%s links libcuda: %s", progs[i], libs);
        if (i == 3 && strstr(libs, "libnccl.so.2") == NULL)
            fail_msg("nccl_baseline does not need libnccl.so.2: %s", libs);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    test_run_ok(cmd, 1, out, OUT_BYTES);
}
#endif

static int setup(void **state)
{
    *state = malloc(OUT_BYTES);
    return *state == NULL;
}

static int teardown(void **state)
{
    free(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dry_run),
        cmocka_unit_test(test_no_gpu),
#if TUTTI_HAVE_NCCL
        cmocka_unit_test(test_compile_against_the_wheel_layout),
#endif
    };
    return cmocka_run_group_tests_name("gpu_script", tests, setup, teardown);
}
