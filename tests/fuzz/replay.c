/*
 * The fuzz targets' inputs replayed in `make check`, without libFuzzer:
 * every file of the target's seed corpus and of its regressions (inputs
 * that once crashed it) goes through LLVMFuzzerTestOneInput, so the
 * targets build in every configuration and a fixed crash stays fixed.
 * The directories come from FUZZ_DIRS (colon-separated).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Feeds every regular file of @p dir to the target; the count. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char path[1024];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            continue;
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        print_message("replay %s (%zu bytes)\n", path, len);
        /* A copy of exactly len bytes, as libFuzzer gives, so reading
         * past the input is caught under the sanitizers. */
        uint8_t *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        memcpy(copy, buf, len);
        assert_int_equal(LLVMFuzzerTestOneInput(copy, len), 0);
        free(copy);
        n++;
    }
    closedir(d);
    return n;
}

static void test_replay(void **state)
{
    char dirs[2048];
    int n = 0;
    (void)state;
    snprintf(dirs, sizeof(dirs), "%s", FUZZ_DIRS);
    for (char *save = NULL, *dir = strtok_r(dirs, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save))
        n += replay_dir(dir);
    /* An empty corpus would test nothing. */
    assert_true(n > 0);
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_replay)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
