/* Logging and the per-thread last-error detail. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/paths.h"

#include <tutti/tutti.h>

#define ERROR_DETAIL_MAX 1024

int tutti__log_level = TUTTI_LOG_WARN;

/* log_level itself, and the subsystems with a level of their own
 * (log_subsystems): set at context creation, read by every line. */
#define SUBSYS_MAX 16
#define SUBSYS_NAME_MAX 24
static int base_level = TUTTI_LOG_WARN;
static struct {
    char name[SUBSYS_NAME_MAX];
    int level;
} subsys_levels[SUBSYS_MAX];
static int num_subsys;

/* Where lines go: stderr, or the task's file (log_file). */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(FILE *) log_out;
static char log_path[1100];

/* Set by whichever thread learns the task first (a context, its control
 * thread); read by every thread that logs. */
static atomic_int log_task = -1;
static __thread int thread_rank = -1;
static __thread char thread_device[32];
static __thread char last_error[ERROR_DETAIL_MAX];
static __thread int error_level = TUTTI_LOG_ERROR;

const char *const tutti__log_level_names[] = {"error", "warn",  "info", "debug",
                                              "trace", "off",   NULL};

const char *tutti__log_level_name(int level)
{
    if (level < 0)
        return "off";
    return tutti__log_level_names[level <= TUTTI_LOG_TRACE ? level
                                                           : TUTTI_LOG_TRACE];
}

/* The macro's gate: the highest level any line may pass at. */
static void update_gate(void)
{
    int top = base_level;
    for (int i = 0; i < num_subsys; i++)
        top = subsys_levels[i].level > top ? subsys_levels[i].level : top;
    tutti__log_level = top;
}

void tutti__log_set_level(int level)
{
    base_level = level;
    update_gate();
}

/* The level of a name in @p text of @p len bytes, or -2 if none. */
static int level_named(const char *text, size_t len)
{
    for (int i = 0; tutti__log_level_names[i] != NULL; i++) {
        if (strlen(tutti__log_level_names[i]) == len &&
            strncmp(tutti__log_level_names[i], text, len) == 0)
            return i <= TUTTI_LOG_TRACE ? i : TUTTI_LOG_OFF;
    }
    return -2;
}

/* Parses "name:level,..." into the table if @p apply; 1 if it is valid. */
static int parse_subsystems(const char *text, int apply)
{
    int n = 0;
    const char *p = text;
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        size_t nlen = colon ? (size_t)(colon - p) : 0;
        if (colon == NULL || nlen == 0 || nlen >= SUBSYS_NAME_MAX ||
            strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_") != nlen ||
            n == SUBSYS_MAX)
            return 0;
        int level = level_named(colon + 1, len - nlen - 1);
        if (level == -2)
            return 0;
        if (apply) {
            memcpy(subsys_levels[n].name, p, nlen);
            subsys_levels[n].name[nlen] = '\0';
            subsys_levels[n].level = level;
        }
        n++;
        p += len;
        if (*p == ',' && *++p == '\0')
            return 0; /* a trailing comma */
    }
    if (apply) {
        num_subsys = n;
        update_gate();
    }
    return 1;
}

int tutti__log_subsystems_ok(const char *text)
{
    return parse_subsystems(text, 0);
}

tutti_status_t tutti__log_set_subsystems(const char *text)
{
    if (!parse_subsystems(text, 0))
        return tutti__error(TUTTI_ERR_CONFIG, "log", "log_subsystems "
                            "(TUTTI_LOG) '%s': expected SUBSYSTEM:LEVEL,... "
                            "e.g. registry:debug,tcp:trace", text);
    parse_subsystems(text, 1);
    return TUTTI_OK;
}

tutti_status_t tutti__log_set_file(const char *path)
{
    char name[sizeof(log_path)] = "";
    int task = atomic_load_explicit(&log_task, memory_order_relaxed);
    if (path[0] != '\0')
        tutti__task_path(path, task, NULL, name, sizeof(name));
    pthread_mutex_lock(&out_lock);
    int same = strcmp(name, log_path) == 0;
    pthread_mutex_unlock(&out_lock);
    if (same)
        return TUTTI_OK;
    FILE *f = NULL;
    char why[128];
    if (name[0] != '\0' &&
        (f = tutti__task_file_open(name, 1, why, sizeof(why))) == NULL)
        return tutti__error(TUTTI_ERR_IO, "log", "log_file (TUTTI_LOG_FILE) "
                            "%s: %s", name, why);
    if (f != NULL)
        setvbuf(f, NULL, _IOLBF, 0);
    pthread_mutex_lock(&out_lock);
    FILE *old = atomic_load_explicit(&log_out, memory_order_relaxed);
    atomic_store_explicit(&log_out, f, memory_order_relaxed);
    snprintf(log_path, sizeof(log_path), "%s", name);
    pthread_mutex_unlock(&out_lock);
    if (old != NULL)
        fclose(old);
    return TUTTI_OK;
}

void tutti__log_set_task(int task)
{
    atomic_store_explicit(&log_task, task, memory_order_relaxed);
}

void tutti__log_set_thread_member(int rank, const char *device)
{
    thread_rank = rank;
    snprintf(thread_device, sizeof(thread_device), "%s", device ? device : "");
}

void tutti__log_vwrite(int level, const char *subsys, const char *fmt,
                       va_list ap)
{
    int saved_errno = errno;
    int task = atomic_load_explicit(&log_task, memory_order_relaxed);
    char line[1536];
    int n;

    if (num_subsys > 0) {
        int limit = base_level;
        for (int i = 0; i < num_subsys; i++)
            if (strcmp(subsys_levels[i].name, subsys) == 0)
                limit = subsys_levels[i].level;
        if (level > limit)
            return;
    }
    if (thread_rank >= 0)
        n = snprintf(line, sizeof(line), "tutti[task %d rank %d %s] %s %s: ",
                     task, thread_rank, thread_device,
                     tutti__log_level_name(level), subsys);
    else
        n = snprintf(line, sizeof(line), "tutti[task %d] %s %s: ", task,
                     tutti__log_level_name(level), subsys);
    if (n < 0 || (size_t)n >= sizeof(line))
        n = 0;
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    /* One write per line so lines of several processes do not interleave. */
    if (atomic_load_explicit(&log_out, memory_order_relaxed) != NULL) {
        pthread_mutex_lock(&out_lock); /* not closed while written to */
        FILE *out = atomic_load_explicit(&log_out, memory_order_relaxed);
        fprintf(out != NULL ? out : stderr, "%s\n", line);
        pthread_mutex_unlock(&out_lock);
    } else {
        fprintf(stderr, "%s\n", line);
    }
    errno = saved_errno;
}

void tutti__log_write(int level, const char *subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tutti__log_vwrite(level, subsys, fmt, ap);
    va_end(ap);
}

tutti_status_t tutti__verror(tutti_status_t status, const char *subsys,
                             const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    vsnprintf(last_error, sizeof(last_error), fmt, copy);
    va_end(copy);
    tutti__log(status == TUTTI_ERR_TOO_SMALL ? TUTTI_LOG_INFO : error_level,
               subsys, "%s", last_error);
    return status;
}

tutti_status_t tutti__error(tutti_status_t status, const char *subsys,
                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tutti__verror(status, subsys, fmt, ap);
    va_end(ap);
    return status;
}

tutti_status_t tutti__error_quiet(tutti_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return status;
}

int tutti__log_error_level(int level)
{
    int previous = error_level;
    error_level = level;
    return previous;
}

void tutti__error_clear(void)
{
    last_error[0] = '\0';
}

const char *tutti_last_error(void)
{
    return last_error;
}
