/*
 * Small helpers shared by the CMocka test programs (header-only, static):
 * commands and their output, files and directories of a test's own, the
 * names left in /dev/shm, Open MPI's mpirun, a pseudo-random sequence, and
 * the fixture of a context of one task.
 */
#ifndef TUTTI_TEST_UTIL_H
#define TUTTI_TEST_UTIL_H

#include <dirent.h>
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

#include <tutti/tutti.h>

/* ---- skips --------------------------------------------------------------- */

/* A case that cannot run on this machine (a tool or a privilege missing)
 * says why and is skipped; a program that may skip ends with
 * test_exit(failed), which gives 77 (automake's SKIP) when nothing failed
 * but something was skipped, so such a run does not read as a pass. */
static int test_skipped __attribute__((unused));
#define test_skip(...)                                                         \
    do {                                                                       \
        print_message(__VA_ARGS__);                                            \
        test_skipped = 1;                                                      \
        skip();                                                                \
    } while (0)

static inline int test_exit(int failed)
{
    return failed != 0 ? failed : test_skipped ? 77 : 0;
}

/* True if the file at @p path contains @p text, read whole however long
 * it is (a negative check on a long debug log must see all of it); @p text
 * may span lines.  0 if the file cannot be read. */
static inline int test_file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    int found;

    if (f == NULL)
        return 0;
    do {
        if (cap - n < 2) {
            char *grown = realloc(buf, cap = cap ? 2 * cap : 65536);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                fail_msg("no memory to read %s", path);
            }
            buf = grown;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    buf[n] = '\0';
    found = strstr(buf, text) != NULL;
    free(buf);
    return found;
}

/* Fails the test unless the file at @p path holds @p text (test_file_has). */
static inline void test_expect_in_file(const char *path, const char *text)
{
    if (!test_file_has(path, text))
        fail_msg("missing '%s' in %s", text, path);
}

/* Occurrences of @p text in @p out. */
static inline int test_count_of(const char *out, const char *text)
{
    int n = 0;
    for (const char *p = strstr(out, text); p; p = strstr(p + 1, text))
        n++;
    return n;
}

/* True if @p out holds @p lines (one line, or several joined by '\n') as
 * whole lines: at its start or after a newline, and followed by a newline
 * or its end. */
static inline int test_has_lines(const char *out, const char *lines)
{
    size_t n = strlen(lines);
    for (const char *p = strstr(out, lines); p; p = strstr(p + 1, lines))
        if ((p == out || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

/* Runs @p cmd (with stderr joined to stdout if @p join_stderr), keeps what
 * fits of its output in @p out (reading to the end, so it never dies of a
 * closed pipe); returns its exit status, 128 + signal, or -1 if it could
 * not be started. */
static inline int test_run(const char *cmd, int join_stderr, char *out,
                           size_t len)
{
    char full[4224], line[4096];
    size_t n = 0;
    out[0] = '\0';
    if (strlen(cmd) > 4096) {
        snprintf(out, len, "test_run: command over 4096 bytes: %.200s...",
                 cmd);
        return -1;
    }
    snprintf(full, sizeof(full), "%s%s", cmd, join_stderr ? " 2>&1" : "");
    FILE *p = popen(full, "r");
    if (p == NULL)
        return -1;
    while (fgets(line, sizeof(line), p) != NULL) {
        size_t l = strlen(line);
        if (n + l < len) {
            memcpy(out + n, line, l);
            n += l;
        }
    }
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* test_run() of a command that must exit 0: the test fails otherwise,
 * naming the command, its status and its output. */
static inline void test_run_ok(const char *cmd, int join_stderr, char *out,
                               size_t len)
{
    int rc = test_run(cmd, join_stderr, out, len);
    if (rc != 0)
        fail_msg("%s exited %d:\n%s", cmd, rc, out);
}

/* Prints @p out line by line under @p what, before a failure message
 * (cmocka cuts each message at 1K). */
static inline void test_show(const char *what, const char *out)
{
    const char *l = out;
    printf("%s\n", what);
    while (*l != '\0') {
        const char *e = strchr(l, '\n');
        int len = e ? (int)(e - l) : (int)strlen(l);
        printf("  %.*s\n", len, l);
        l += len + (e != NULL);
    }
    fflush(stdout);
}

/* ---- files of a test's own ---------------------------------------------- */

/* Writes @p text to the file @p path. */
static inline void test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* Makes a fresh directory /tmp/tutti-<stem>-XXXXXX into @p dir; 0, or -1
 * (a fixture's setup says so by its return value, a test asserts it). */
static inline int test_tmpdir(char *dir, size_t len, const char *stem)
{
    snprintf(dir, len, "/tmp/tutti-%s-XXXXXX", stem);
    return mkdtemp(dir) != NULL ? 0 : -1;
}

/* <@p dir>/<@p name> into @p path; with @p text, the file is written. */
static inline void test_tmpfile(char *path, size_t len, const char *dir,
                                const char *name, const char *text)
{
    snprintf(path, len, "%s/%s", dir, name);
    if (text != NULL)
        test_write_file(path, text);
}

/* A directory of a test's own and a file in it. */
typedef struct {
    char dir[64];
    char path[128];
} test_tmp_t;

/* Makes the directory /tmp/tutti-<stem>-XXXXXX, and <dir>/<name> in
 * t->path, written with @p text unless NULL. */
static inline void test_tmp_make(test_tmp_t *t, const char *stem,
                                 const char *name, const char *text)
{
    assert_int_equal(test_tmpdir(t->dir, sizeof(t->dir), stem), 0);
    test_tmpfile(t->path, sizeof(t->path), t->dir, name, text);
}

/* Removes every file in @p dir, then @p dir. */
static inline void test_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

/* CMocka fixture: a directory of the test's own, /tmp/tutti-test-XXXXXX,
 * as a test_tmp_t in *state (path empty: the test names its files with
 * test_tmpfile); removed after the test, whether it passed or failed. */
static inline int test_tmp_setup(void **state)
{
    test_tmp_t *t = calloc(1, sizeof(*t));
    if (t == NULL || test_tmpdir(t->dir, sizeof(t->dir), "test") != 0) {
        free(t);
        return -1;
    }
    *state = t;
    return 0;
}

static inline int test_tmp_teardown(void **state)
{
    test_tmp_t *t = *state;
    test_rmtree(t->dir);
    free(t);
    return 0;
}

/* Number of names in /dev/shm that start with @p prefix and, unless
 * @p magic is 0, whose first 8 bytes hold @p magic (read in host order). */
static inline int test_shm_names_magic(const char *prefix, uint64_t magic)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char path[512];
        uint64_t head = 0;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
        FILE *f = magic != 0 ? fopen(path, "rb") : NULL;
        if (f != NULL && fread(&head, sizeof(head), 1, f) != 1)
            head = 0;
        if (f != NULL)
            fclose(f);
        n += magic == 0 || head == magic;
    }
    closedir(d);
    return n;
}

/* Number of names in /dev/shm that start with @p prefix. */
static inline int test_shm_names_with(const char *prefix)
{
    return test_shm_names_magic(prefix, 0);
}

/* ---- launchers ---------------------------------------------------------- */

/* Skips the test unless the mpirun on PATH is Open MPI's; @p hint ends the
 * message when it is another one. */
static inline void test_require_ompi_mpirun(const char *hint)
{
    char out[4096];
    if (test_run("command -v mpirun", 0, out, sizeof(out)) != 0) {
        test_skip("skipped: mpirun (Open MPI) not found; ./build.sh "
                      "installs openmpi-bin\n");
    }
    test_run("mpirun --version", 1, out, sizeof(out));
    if (strstr(out, "Open MPI") == NULL && strstr(out, "Open RTE") == NULL) {
        test_skip("skipped: the mpirun on PATH is not Open MPI's "
                      "(%.80s)%s\n",
                      out, hint);
    }
}

/* What mpirun needs to start tasks as root, where the test runs as root. */
static inline const char *test_mpirun_root_flag(void)
{
    return geteuid() == 0 ? " --allow-run-as-root" : "";
}

/* ---- values and contexts ------------------------------------------------ */

/* splitmix64: deterministic, good enough to scatter bit patterns. */
static inline uint64_t test_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* The defaults, then a context of one task (task 0 of 1) with
 * @p config_path, @p modules and @p log_level (each NULL: the default). */
static inline void test_one_task_params(tutti_context_params_t *p,
                                        const char *config_path,
                                        const char *modules,
                                        const char *log_level)
{
    tutti_context_params_init(p);
    p->config_path = config_path;
    p->module_path = modules;
    p->log_level = log_level;
    p->task = 0;
    p->num_tasks = 1;
}

/* CMocka group fixture: a context of one task with logging off. */
static inline int test_single_task_setup(void **state)
{
    tutti_context_params_t p;
    tutti_context_t *ctx;
    test_one_task_params(&p, NULL, NULL, "off");
    if (tutti_context_create(&p, &ctx) != TUTTI_OK)
        return -1;
    *state = ctx;
    return 0;
}

static inline int test_context_teardown(void **state)
{
    tutti_context_destroy(*state);
    return 0;
}

#endif
