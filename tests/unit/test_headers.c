/*
 * What an installation gives a user: the headers `make install` copies
 * (pkginclude_HEADERS) compile on their own, each alone, in strict C99;
 * and a program built against them links with libtutti.so and calls the
 * functions types.h defines inline out of line, as a compiler that does not
 * inline them (or a program built against earlier headers) does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

/* From tests/Makefile.inc: the compiler and sanitizer flags of this build,
 * and the installed headers as Makefile.am lists them. */
#ifndef TUTTI_TEST_CC
#error "TUTTI_TEST_CC: the build's compiler command"
#endif
#ifndef TUTTI_TEST_PUBLIC_HEADERS
#error "TUTTI_TEST_PUBLIC_HEADERS: pkginclude_HEADERS of Makefile.am"
#endif

typedef struct {
    char dir[64];
} fixture_t;

/* Copies the installed headers, and those only, to <dir>/include/tutti. */
static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    char cmd[4096], out[4096];
    int n;

    if (f == NULL || test_tmpdir(f->dir, sizeof(f->dir), "headers") != 0)
        return -1;
    n = snprintf(cmd, sizeof(cmd), "mkdir -p %s/include/tutti && cd %s && "
                 "cp %s %s/include/tutti/", f->dir, TUTTI_TEST_SRCDIR,
                 TUTTI_TEST_PUBLIC_HEADERS, f->dir);
    if (n < 0 || (size_t)n >= sizeof(cmd) ||
        test_run(cmd, 1, out, sizeof(out)) != 0) {
        fprintf(stderr, "copying the installed headers failed: %s\n", out);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    char cmd[128], out[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    test_run(cmd, 1, out, sizeof(out));
    free(f);
    return 0;
}

/* Each installed header, included alone, compiles with nothing but the
 * installed headers beside it: one it includes that is not installed
 * fails here by name. */
static void test_each_installed_header_stands_alone(void **state)
{
    fixture_t *f = *state;
    char headers[] = TUTTI_TEST_PUBLIC_HEADERS;
    char src[128], cmd[1024], out[8192], text[256];
    int seen = 0;

    snprintf(src, sizeof(src), "%s/one.c", f->dir);
    for (char *h = strtok(headers, " \t"); h; h = strtok(NULL, " \t")) {
        const char *base = strrchr(h, '/') ? strrchr(h, '/') + 1 : h;
        snprintf(text, sizeof(text),
                 "#include <tutti/%s>\nint main(void) { return 0; }\n", base);
        test_write_file(src, text);
        snprintf(cmd, sizeof(cmd),
                 "%s -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only "
                 "-I%s/include %s", TUTTI_TEST_CC, f->dir, src);
        int rc = test_run(cmd, 1, out, sizeof(out));
        if (rc != 0)
            fail_msg("<tutti/%s> alone, with only the installed headers:\n%s",
                     base, out);
        seen++;
    }
    /* tutti, status, types, module, plugin, transport at least. */
    assert_true(seen >= 6);
}

/* A program built at -O0 against the installed headers calls the inline
 * functions of types.h out of line; libtutti.so must export them. */
static void test_inline_functions_exported(void **state)
{
    fixture_t *f = *state;
    char src[128], prog[128], cmd[1024], out[8192];

    snprintf(src, sizeof(src), "%s/prog.c", f->dir);
    snprintf(prog, sizeof(prog), "%s/prog", f->dir);
    test_write_file(src,
                    "#include <stdio.h>\n"
                    "#include <tutti/tutti.h>\n"
                    "int main(void)\n"
                    "{\n"
                    "    printf(\"%zu %s %zu\\n\", tutti_dtype_size(TUTTI_FLOAT64),\n"
                    "           tutti_dtype_name(TUTTI_BFLOAT16),\n"
                    "           tutti_dtype_size((tutti_dtype_t)-1));\n"
                    "    return 0;\n"
                    "}\n");
    snprintf(cmd, sizeof(cmd),
             "%s -std=c99 -O0 -Wall -Werror -I%s/include %s -o %s "
             "-L%s/core/.libs -ltutti && nm %s | grep -c ' U tutti_dtype_' "
             "&& LD_LIBRARY_PATH=%s/core/.libs %s",
             TUTTI_TEST_CC, f->dir, src, prog, TUTTI_TEST_BUILDDIR, prog,
             TUTTI_TEST_BUILDDIR, prog);
    test_run_ok(cmd, 1, out, sizeof(out));
    /* Two imported, then what they returned. */
    assert_string_equal(out, "2\n8 bfloat16 0\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_installed_header_stands_alone),
        cmocka_unit_test(test_inline_functions_exported),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
