/*
 * bench/plot on what it reads: a tutti-perf --csv run and a tutti-perf
 * table, both made through tutti-run, and an mpi_coll table written here
 * in bench/mpi_coll.c's format; each must be recognised for what it is,
 * with its sizes counted, and the result must be a PNG of the size the
 * script draws; and a tutti-perf run beside a real Open MPI run of
 * bench/mpi_coll.c.  Files in no known form are refused before anything is
 * drawn.  Where gnuplot is missing (build.sh installs gnuplot-nox), the
 * drawing tests are skipped and the program exits 77 saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define RUN TUTTI_TEST_BUILDDIR "/tools/tutti-run"
#define PERF TUTTI_TEST_BUILDDIR "/tools/tutti-perf"
#define PLOT TUTTI_TEST_SRCDIR "/bench/plot --no-install"

/* The PNG bench/plot draws: width and height in pixels. */
#define PNG_WIDTH 1400
#define PNG_HEIGHT 560

static int have_gnuplot;

static void require_gnuplot(void)
{
    if (!have_gnuplot) {
        test_skip("test_bench_plot: skipped: no gnuplot on PATH "
                      "(Debian: gnuplot-nox; ./build.sh deps installs it)\n");
    }
}

/* One row as bench/mpi_coll.c prints it. */
static void mpi_row(char *buf, size_t len, size_t bytes, double time_us)
{
    double algbw = (double)bytes / (time_us * 1e3);
    size_t n = strlen(buf);
    snprintf(buf + n, len - n,
             "%12zu %12d %9s %6s %5d %11.2f %11.3f %11.3f %7s  %s  %s\n",
             bytes, (int)(bytes / 4), "float32", "sum", -1, time_us, algbw,
             algbw, "-", "OpenMPI", "allreduce");
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

/* The file at @p path is a PNG (its 8-byte signature) whose first chunk
 * is the header, IHDR, of PNG_WIDTH x PNG_HEIGHT pixels. */
static void check_png(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G',
                                         '\r', '\n', 0x1a, '\n'};
    unsigned char head[24];
    FILE *f = fopen(path, "rb");

    if (f == NULL)
        fail_msg("%s: not written", path);
    size_t got = fread(head, 1, sizeof(head), f);
    fclose(f);
    assert_int_equal(got, sizeof(head));
    if (memcmp(head, sig, sizeof(sig)) != 0)
        fail_msg("%s: no PNG signature (%02x %02x %02x %02x ...)", path,
                 head[0], head[1], head[2], head[3]);
    assert_memory_equal(head + 12, "IHDR", 4);
    assert_int_equal(be32(head + 16), PNG_WIDTH);
    assert_int_equal(be32(head + 20), PNG_HEIGHT);
}

/* Runs tutti-perf (allreduce on 2, 8 B to 32 KiB by 8: 5 sizes) with
 * @p format into @p path. */
static void perf_run(const char *format, const char *path)
{
    char cmd[768], out[4096];
    snprintf(cmd, sizeof(cmd), "%s --timeout 120 -n 2 %s -b 8 -e 32K -f 8 "
             "-n 2 -w 1 %s > %s", RUN, PERF, format, path);
    int rc = test_run(cmd, 1, out, sizeof(out));
    if (rc != 0) {
        test_show(cmd, out);
        fail_msg("tutti-perf exited %d (output above)", rc);
    }
}

/* Three runs in one PNG: tutti-perf --csv and its table from real runs,
 * an mpi_coll table fabricated here (a size whose bandwidth reads 0.000,
 * which a log scale leaves out, included), the table labelled by its
 * file's name. */
static void test_plot_three_forms(void **state)
{
    test_tmp_t *t = *state;
    char csv[160], table[160], mpi[160], png[160], cmd[1024], out[4096];
    char want[1024], rows[2048] = "";

    require_gnuplot();
    test_tmpfile(csv, sizeof(csv), t->dir, "tutti.csv", NULL);
    test_tmpfile(table, sizeof(table), t->dir, "ring2.txt", NULL);
    test_tmpfile(png, sizeof(png), t->dir, "out.png", NULL);
    perf_run("--csv", csv);
    perf_run("-a RingAllreduce", table);
    snprintf(rows, sizeof(rows), "# mpi_coll: allreduce, 2 ranks, float32, "
             "2 iterations (+1 warm-up), OpenMPI\n");
    mpi_row(rows, sizeof(rows), 8, 100.0);
    mpi_row(rows, sizeof(rows), 64, 1.5);
    mpi_row(rows, sizeof(rows), 512, 2.25);
    mpi_row(rows, sizeof(rows), 4096, 3.5);
    test_tmpfile(mpi, sizeof(mpi), t->dir, "ompi.txt", rows);

    snprintf(cmd, sizeof(cmd), "%s -o %s -t 'allreduce, 2 ranks' "
             "tutti=%s %s 'Open MPI=%s'", PLOT, png, csv, table, mpi);
    test_run_ok(cmd, 1, out, sizeof(out));
    snprintf(want, sizeof(want),
             "tutti: %s: tutti-perf --csv, 5 sizes\n"
             "ring2: %s: tutti-perf table, 5 sizes\n"
             "Open MPI: %s: mpi_coll table, 4 sizes\n"
             "bench/plot: wrote %s\n", csv, table, mpi, png);
    assert_string_equal(out, want);
    check_png(png);
}

/* Ours and a real peer's run of the same sweep in one PNG: bench/mpi_coll.c
 * built with Open MPI's compiler wrapper and run under its mpirun, as
 * bench/compare does. */
static void test_plot_with_open_mpi(void **state)
{
    test_tmp_t *t = *state;
    char csv[160], mpi[160], png[160], exe[160], cmd[1024], out[8192];
    char want[1024];

    require_gnuplot();
    if (test_run("command -v mpicc.openmpi && command -v mpirun.openmpi", 1,
                 out, sizeof(out)) != 0) {
        test_skip("skipped: no mpicc.openmpi or mpirun.openmpi (Debian: "
                      "libopenmpi-dev, openmpi-bin; ./build.sh deps installs "
                      "them)\n");
    }
    test_tmpfile(csv, sizeof(csv), t->dir, "tutti.csv", NULL);
    test_tmpfile(mpi, sizeof(mpi), t->dir, "ompi.txt", NULL);
    test_tmpfile(exe, sizeof(exe), t->dir, "ompi_coll", NULL);
    test_tmpfile(png, sizeof(png), t->dir, "both.png", NULL);
    perf_run("--csv", csv);
    snprintf(cmd, sizeof(cmd), "mpicc.openmpi -O2 -o %s %s/bench/mpi_coll.c",
             exe, TUTTI_TEST_SRCDIR);
    test_run_ok(cmd, 1, out, sizeof(out));
    snprintf(cmd, sizeof(cmd), "mpirun.openmpi%s --oversubscribe --bind-to "
             "none -n 2 %s allreduce 8 32768 8 2 1 > %s",
             test_mpirun_root_flag(), exe, mpi);
    test_run_ok(cmd, 1, out, sizeof(out));
    snprintf(cmd, sizeof(cmd), "%s -o %s -t 'allreduce, 2 ranks' "
             "tutti=%s 'Open MPI=%s'", PLOT, png, csv, mpi);
    test_run_ok(cmd, 1, out, sizeof(out));
    snprintf(want, sizeof(want),
             "tutti: %s: tutti-perf --csv, 5 sizes\n"
             "Open MPI: %s: mpi_coll table, 5 sizes\n"
             "bench/plot: wrote %s\n", csv, mpi, png);
    assert_string_equal(out, want);
    check_png(png);
}

/* Each file in no known form, or with nothing to draw, stops the script
 * with exit status 2 and a message naming it; no PNG is written. */
static void test_plot_refuses_unknown_input(void **state)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"hello\nworld\n", "not tutti-perf --csv, tutti-perf's table or "
                           "mpi_coll's table (its first line: 'hello')"},
        {"\n  \n", "empty"},
        {"size,count,type\n8,2,float32\n", "not tutti-perf --csv"},
        {"size,count,type,redop,root,time_us,algbw_GBps,busbw_GBps\n",
         "tutti-perf --csv without a row of size above 0 to draw"},
        {"# mpi_coll: allreduce, 4 ranks\n           0            0   "
         "float32    sum    -1        1.00       0.000       0.000       -"
         "  OpenMPI  allreduce\n",
         "mpi_coll table without a row of size above 0 to draw"},
    };
    test_tmp_t *t = *state;
    char in[160], png[160], cmd[768], out[4096], want[512];

    test_tmpfile(png, sizeof(png), t->dir, "never.png", NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        test_tmpfile(in, sizeof(in), t->dir, "in.txt", bad[i].text);
        snprintf(cmd, sizeof(cmd), "%s -o %s x=%s", PLOT, png, in);
        assert_int_equal(test_run(cmd, 1, out, sizeof(out)), 2);
        snprintf(want, sizeof(want), "bench/plot: %s: %s", in, bad[i].why);
        if (strstr(out, want) == NULL)
            fail_msg("case %zu: '%s', want '%s'", i, out, want);
        assert_int_equal(access(png, F_OK), -1);
    }
    snprintf(cmd, sizeof(cmd), "%s -o %s x=%s/missing.csv", PLOT, png,
             t->dir);
    assert_int_equal(test_run(cmd, 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "missing.csv: no such file"));
    assert_int_equal(test_run(PLOT " -o", 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "-o needs a value"));
    assert_int_equal(test_run(PLOT " x.csv", 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "usage: bench/plot -o OUT.png"));
}

/* --help: the usage and the three forms it reads. */
static void test_plot_help(void **state)
{
    char out[8192];
    (void)state;
    assert_int_equal(test_run(PLOT " --help", 1, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "bench/plot -o OUT.png [-t TITLE] "
                                "[--no-install] LABEL=FILE [LABEL=FILE...]"));
    assert_non_null(strstr(out, "tutti-perf --csv        \"size,count,"));
    assert_non_null(strstr(out, "tutti-perf's table      \"# tutti-perf: "));
    assert_non_null(strstr(out, "mpi_coll's table        \"# mpi_coll: "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plot_three_forms,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test_setup_teardown(test_plot_with_open_mpi,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test_setup_teardown(test_plot_refuses_unknown_input,
                                        test_tmp_setup, test_tmp_teardown),
        cmocka_unit_test(test_plot_help),
    };
    char out[256];

    have_gnuplot = test_run("command -v gnuplot", 1, out, sizeof(out)) == 0;
    return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
