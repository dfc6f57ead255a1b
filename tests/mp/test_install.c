/*
 * Tutti from its installed files alone, as a user meets it: the source
 * tree is configured into a temporary build with a temporary prefix and
 * installed there; from then on only that prefix is used.  pkg-config
 * gives the flags and the module directory and ABI versions; the module
 * and transport templates of examples/ build with their plain Makefiles
 * (copied out of the tree) and run under the installed tutti-run and
 * tutti-perf, selected by name, with every element checked (and the
 * module template passes the installed tutti-conformance); a client
 * compiled with `pkg-config --cflags --libs tutti` runs an allreduce; the
 * prefix moved elsewhere, installed with DESTDIR, or laid out otherwise
 * and named by TUTTI_PREFIX finds its own modules and config; and
 * `make uninstall` leaves no file in the prefix.
 *
 * The configure and build take about a minute on 2 cores.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tutti/module.h>
#include <tutti/transport.h>

#include "test_util.h"

#define SRC TUTTI_TEST_SRCDIR
#define OUT_BYTES (256u << 10)

static char top[256];        /* the temporary directory */
static char env[1024];       /* exports PATH and PKG_CONFIG_PATH of the
                                prefix */
static char *out;

/* Runs @p fmt (printf-style) in the prefix's environment; the test fails
 * with the command and its output unless it exits 0. */
static void run_ok(const char *fmt, ...)
{
    char cmd[4096], full[4096 + 1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    snprintf(full, sizeof(full), "%s %s", env, cmd);
    int rc = test_run(full, 1, out, OUT_BYTES);
    if (rc != 0)
        fail_msg("exit %d: %s\n%s", rc, cmd, out);
}

/* Installs the source tree into @p top/prefix (once per test program). */
static int setup(void **state)
{
    (void)state;
    out = malloc(OUT_BYTES);
    snprintf(top, sizeof(top), "/tmp/tutti-install-%ld", (long)getpid());
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s/build %s/work && "
             "cd %s/build && %s/configure --prefix=%s/prefix --quiet "
             "--without-cuda > configure.log 2>&1 && make -j2 > make.log "
             "2>&1 && make install > install.log 2>&1", top, top, top, top,
             SRC, top);
    if (out == NULL || test_run(cmd, 1, out, OUT_BYTES) != 0) {
        fprintf(stderr, "test_install: installing into %s/prefix failed (see "
                "%s/build/*.log):\n%s\n", top, top, out ? out : "");
        return -1;
    }
    /* This program runs under libtool's wrapper, whose LD_LIBRARY_PATH
     * names the build tree's libtutti: the installed tools must not load
     * that one (it would use the build tree's modules). */
    snprintf(env, sizeof(env), "unset LD_LIBRARY_PATH; export "
             "PATH=%s/prefix/bin:$PATH PKG_CONFIG_PATH=%s/prefix/lib/pkgconfig "
             "TUTTI_TIMEOUT=60;", top, top);
    return 0;
}

static int teardown(void **state)
{
    char cmd[512];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
    test_run(cmd, 1, out, OUT_BYTES);
    free(out);
    return 0;
}

/* pkg-config's variables: the module directory holds the shipped modules,
 * and the ABI versions are the headers'. */
static void test_pkg_config(void **state)
{
    char want[64];
    (void)state;
    run_ok("pkg-config --cflags --libs tutti");
    if (strstr(out, "-I") == NULL || strstr(out, "-ltutti") == NULL)
        fail_msg("pkg-config --cflags --libs tutti: %s", out);
    run_ok("ls \"$(pkg-config --variable=moduledir tutti)\"");
    if (strstr(out, "alg_ring.so") == NULL || strstr(out, "tp_shm.so") == NULL)
        fail_msg("the module directory holds:\n%s", out);
    run_ok("pkg-config --variable=module_abi tutti");
    snprintf(want, sizeof(want), "%d.%d\n", TUTTI_MODULE_ABI_MAJOR,
             TUTTI_MODULE_ABI_MINOR);
    assert_string_equal(out, want);
    run_ok("pkg-config --variable=transport_abi tutti");
    snprintf(want, sizeof(want), "%d.%d\n", TUTTI_TP_ABI_MAJOR,
             TUTTI_TP_ABI_MINOR);
    assert_string_equal(out, want);
    /* The tools, the man pages and the default configuration. */
    run_ok("cd %s/prefix && ls bin/tutti-conformance bin/tutti-timeline-merge "
           "share/man/man1/tutti-conformance.1 share/man/man3/tutti.3 "
           "share/man/man5/tutti.yaml.5 "
           "\"$(pkg-config --variable=confdir tutti)/tutti.yaml\"", top);
}

/* Rows of a tutti-perf table in out: each with #wrong 0 and implementation
 * @p impl; at least @p min of them. */
static void expect_rows(const char *impl, int min)
{
    int rows = 0;
    for (char *l = strtok(out, "\n"); l != NULL; l = strtok(NULL, "\n")) {
        unsigned long long size, count;
        char type[32], op[32], root[32], name[96], coll[32];
        double t, alg, bus;
        long wrong;
        if (l[0] == '#' || strncmp(l, "tutti", 5) == 0)
            continue;
        if (sscanf(l, "%llu %llu %31s %31s %31s %lf %lf %lf %ld %95s %31s",
                   &size, &count, type, op, root, &t, &alg, &bus, &wrong, name,
                   coll) != 11)
            continue;
        if (wrong != 0 || strcmp(name, impl) != 0)
            fail_msg("row '%s': expected #wrong 0 by %s", l, impl);
        rows++;
    }
    if (rows < min)
        fail_msg("%d rows by %s, expected %d", rows, impl, min);
}

/* The module template: built from its copy with pkg-config alone, found
 * through TUTTI_MODULE_PATH, listed, selected by name, exact. */
static void test_module_template(void **state)
{
    (void)state;
    run_ok("cp -r %s/examples/module-template %s/work/ && make -C "
           "%s/work/module-template", SRC, top, top);
    run_ok("TUTTI_MODULE_PATH=%s/work/module-template tutti-info", top);
    if (strstr(out, "GatherBcastAllreduce") == NULL)
        fail_msg("tutti-info does not list the template:\n%s", out);
    run_ok("TUTTI_MODULE_PATH=%s/work/module-template tutti-run -n 3 "
           "tutti-perf -c allreduce -a GatherBcastAllreduce -b 8 -e 1M -f 8 "
           "-n 3 -w 1", top);
    expect_rows("GatherBcastAllreduce", 6); /* 8 B to 256 KiB by 8 */
    /* The installed conformance kit passes it. */
    run_ok("tutti-conformance -n 1,3 %s/work/module-template/alg_template.so",
           top);
    if (!test_has_lines(out, "[  PASSED  ] 4 test(s)."))
        fail_msg("tutti-conformance on the template:\n%s", out);
    /* Or from the installed module directory, selected in YAML. */
    run_ok("cp %s/work/module-template/alg_template.so "
           "\"$(pkg-config --variable=moduledir tutti)\" && printf "
           "'selection:\\n  - { collective: allreduce, algorithm: "
           "GatherBcastAllreduce }\\n' > %s/work/t.yaml && "
           "TUTTI_CONFIG=%s/work/t.yaml tutti-run -n 2 tutti-perf -b 8 -e 64K "
           "-f 8 -n 3 -w 1", top, top, top);
    expect_rows("GatherBcastAllreduce", 5); /* 8 B to 32 KiB by 8 */
    run_ok("rm \"$(pkg-config --variable=moduledir tutti)/alg_template.so\"");
}

/* A module source written before ABI 1.5 (its rows set no params field),
 * rebuilt against the installed headers: it declares no parameters, so a
 * rule's parameter reaches it as before (it refuses every value but 42,
 * so a run that passes shows the value arrived), and the lint warns that
 * it went unchecked.  Before, the configuration was refused at load. */
static void test_undeclared_params(void **state)
{
    (void)state;
    run_ok("mkdir -p %s/work/marker && cp %s/tests/modules/mod_marker.c "
           "%s/tests/modules/mod_common.h %s/work/marker/ && cc -shared -fPIC "
           "-fvisibility=hidden -Wall -Wextra -Werror $(pkg-config --cflags "
           "tutti) -o %s/work/marker/mod_marker.so %s/work/marker/mod_marker.c",
           top, SRC, SRC, top, top, top);
    run_ok("printf 'selection:\n  - { collective: allreduce, algorithm: "
           "TestMarker, params: { marker: 42 } }\n' > %s/work/marker.yaml && "
           "TUTTI_CONFIG=%s/work/marker.yaml TUTTI_MODULE_PATH=%s/work/marker "
           "tutti-run -n 1 tutti-perf -b 8 -e 64 -f 8 -n 2 -w 1", top, top,
           top);
    expect_rows("TestMarker", 2); /* 8 and 64 B */
    run_ok("TUTTI_CONFIG=%s/work/marker.yaml TUTTI_MODULE_PATH=%s/work/marker "
           "tutti-info --lint %s/work/marker.yaml", top, top, top);
    if (strstr(out, "marker.yaml:2:5: warning: implementation 'TestMarker' "
                    "(module testmarker) declares no params: not checked "
                    "(marker)") == NULL)
        fail_msg("tutti-info --lint:\n%s", out);
}

/* The transport template: every peer (and the control plane) meets
 * through it, results exact. */
static void test_transport_template(void **state)
{
    (void)state;
    run_ok("cp -r %s/examples/transport-template %s/work/ && make -C "
           "%s/work/transport-template", SRC, top, top);
    run_ok("TUTTI_MODULE_PATH=%s/work/transport-template tutti-info", top);
    if (strstr(out, "mini") == NULL)
        fail_msg("tutti-info does not list the transport:\n%s", out);
    run_ok("TUTTI_MODULE_PATH=%s/work/transport-template "
           "TUTTI_TRANSPORTS=mini TUTTI_LOG_LEVEL=debug tutti-run -n 3 "
           "tutti-perf -c allreduce -b 8 -e 8 -n 1 -w 0 2>&1", top);
    if (strstr(out, "mini to 2 peer(s)") == NULL)
        fail_msg("no group connected through mini:\n%s", out);
    run_ok("TUTTI_MODULE_PATH=%s/work/transport-template "
           "TUTTI_TRANSPORTS=mini tutti-run -n 3 tutti-perf -c allreduce -a "
           "RingAllreduce -b 8 -e 4M -f 8 -n 3 -w 1", top);
    expect_rows("RingAllreduce", 7); /* 8 B to 2 MiB by 8 */
}

/* A client compiled and linked with pkg-config's flags (and an rpath to
 * the prefix's libdir, as the README shows). */
static void test_client(void **state)
{
    (void)state;
    run_ok("cat > %s/work/client.c <<'EOF'\n"
           "#include <stdio.h>\n"
           "#include <tutti/tutti.h>\n"
           "int main(void)\n"
           "{\n"
           "    tutti_context_t *ctx;\n"
           "    tutti_group_params_t gp;\n"
           "    tutti_group_t *g;\n"
           "    double x[3];\n"
           "    if (tutti_context_create(NULL, &ctx) != TUTTI_OK)\n"
           "        return 1;\n"
           "    tutti_group_params_init(&gp);\n"
           "    gp.group_key = 1;\n"
           "    gp.group_size = tutti_context_num_tasks(ctx);\n"
           "    if (tutti_group_join(ctx, &gp, &g) != TUTTI_OK)\n"
           "        return 1;\n"
           "    for (int i = 0; i < 3; i++)\n"
           "        x[i] = tutti_context_task(ctx) + i;\n"
           "    if (tutti_allreduce(g, x, x, 3, TUTTI_FLOAT64, TUTTI_OP_SUM)"
           " != TUTTI_OK)\n"
           "        return 1;\n"
           "    printf(\"client %%d: %%g %%g %%g\\n\", tutti_context_task(ctx),"
           " x[0], x[1], x[2]);\n"
           "    tutti_group_leave(g);\n"
           "    tutti_context_destroy(ctx);\n"
           "    return 0;\n"
           "}\n"
           "EOF\n"
           "cc $(pkg-config --cflags tutti) -o %s/work/client %s/work/client.c "
           "$(pkg-config --libs tutti) "
           "-Wl,-rpath,$(pkg-config --variable=libdir tutti) && "
           "tutti-run -n 3 %s/work/client", top, top, top, top);
    /* sum over tasks t of (t + i): 3 + 3i */
    for (int t = 0; t < 3; t++) {
        char want[64];
        snprintf(want, sizeof(want), "client %d: 3 6 9", t);
        if (strstr(out, want) == NULL)
            fail_msg("no '%s' in:\n%s", want, out);
    }
}

/* The moved prefix's modules and config in tutti-info's listing (out),
 * below @p where. */
static void expect_found_below(const char *where)
{
    char want[600];
    snprintf(want, sizeof(want), "algorithm %s/lib/tutti/alg_ring.so", where);
    if (strstr(out, want) == NULL)
        fail_msg("no '%s' in:\n%s", want, out);
    snprintf(want, sizeof(want), "transport %s/lib/tutti/tp_shm.so", where);
    if (strstr(out, want) == NULL)
        fail_msg("no '%s' in:\n%s", want, out);
    snprintf(want, sizeof(want), "config file = %s/etc/tutti/tutti.yaml",
             where);
    if (!test_has_lines(out, want))
        fail_msg("no line '%s' in:\n%s", want, out);
}

/* Puts the prefix back where the tests after this one expect it. */
static int unmove(void **state)
{
    char cmd[1024];
    (void)state;
    snprintf(cmd, sizeof(cmd), "cd %s && if [ -d moved ]; then rm -rf prefix "
             "&& mv moved prefix; fi", top);
    return test_run(cmd, 1, out, OUT_BYTES) == 0 ? 0 : -1;
}

/* A prefix that is not where it was installed: moved (the configured one
 * gone), installed with DESTDIR, and laid out otherwise (libtutti in a
 * directory of its own) with TUTTI_PREFIX naming it.  Each finds its own
 * modules and config; the moved one runs a 2-task job, exact. */
static void test_relocated(void **state)
{
    char moved[300], dest[600], odd[300];
    (void)state;
    snprintf(moved, sizeof(moved), "%s/moved", top);
    snprintf(dest, sizeof(dest), "%s/dest%s/prefix", top, top);
    snprintf(odd, sizeof(odd), "%s/odd", top);
    run_ok("mv %s/prefix %s", top, moved);
    /* make check names the source tree's config: the install's own is
     * what is looked for. */
    run_ok("unset TUTTI_CONFIG; %s/bin/tutti-info", moved);
    expect_found_below(moved);
    run_ok("%s/bin/tutti-run -n 2 %s/bin/tutti-perf -b 8 -e 1K", moved,
           moved);
    expect_rows("RecursiveDoublingAllreduce", 8);
    /* DESTDIR: the files under dest/<prefix>, the prefix itself gone. */
    run_ok("make -C %s/build install DESTDIR=%s/dest > /dev/null", top, top);
    run_ok("unset TUTTI_CONFIG; %s/bin/tutti-info", dest);
    expect_found_below(dest);
    /* libtutti in a directory that is not the prefix's lib: the layout
     * cannot tell, TUTTI_PREFIX does. */
    run_ok("mkdir -p %s/libs && cp -P %s/lib/libtutti.so* %s/libs/ && "
           "cp -R %s/lib %s/etc %s/", odd, moved, odd, moved, moved, odd);
    run_ok("unset TUTTI_CONFIG; LD_LIBRARY_PATH=%s/libs TUTTI_PREFIX=%s "
           "%s/bin/tutti-info", odd, odd, moved);
    expect_found_below(odd);
    run_ok("rm -rf %s/dest %s", top, odd);
}

/* make uninstall takes back every file make install put in the prefix. */
static void test_uninstall(void **state)
{
    (void)state;
    /* What the module test copied in, should it have failed before its
     * own removal: not make install's. */
    run_ok("rm -f \"$(pkg-config --variable=moduledir tutti)/alg_template.so\"");
    /* Links too (libtutti.so), not only plain files. */
    run_ok("make -C %s/build uninstall > /dev/null && find %s/prefix ! -type d",
           top, top);
    if (out[0] != '\0')
        fail_msg("left after make uninstall:\n%s", out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pkg_config),
        cmocka_unit_test(test_module_template),
        cmocka_unit_test(test_transport_template),
        cmocka_unit_test(test_undeclared_params),
        cmocka_unit_test(test_client),
        cmocka_unit_test_teardown(test_relocated, unmove),
        cmocka_unit_test(test_uninstall),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
