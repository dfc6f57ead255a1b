/*
 * Small helpers shared by the tests (header-only, static).
 */
#ifndef TUTTI_TEST_UTIL_H
#define TUTTI_TEST_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <tutti/tutti.h>

/* True if the file at @p path contains @p text (first 32 KiB). */
static inline int test_file_has(const char *path, const char *text)
{
    char buf[32768];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
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

/* Number of names in /dev/shm that start with @p prefix. */
static inline int test_shm_names_with(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* CMocka group fixture: a context of one task with logging off. */
static inline int test_single_task_setup(void **state)
{
    tutti_context_params_t p;
    tutti_context_t *ctx;
    tutti_context_params_init(&p);
    p.task = 0;
    p.num_tasks = 1;
    p.log_level = "off";
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
