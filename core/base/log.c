/* Logging and the per-thread last-error detail. */
#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

#include <tutti/tutti.h>

#define ERROR_DETAIL_MAX 1024

int tutti__log_level = TUTTI_LOG_WARN;

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

void tutti__log_set_level(int level)
{
    tutti__log_level = level;
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
    fprintf(stderr, "%s\n", line);
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
