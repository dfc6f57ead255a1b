/*
 * Logging and error recording (internal).
 *
 * Levels: error, warn, info, debug, trace (and "off").  The macro checks the
 * level before any argument is formatted.  Every line carries the task and,
 * where the calling thread drives a group member, its rank and device.
 *
 * tutti__error() is called by the function that first detects an error: it
 * records the detail for tutti_last_error() on this thread and logs it once.
 * Callers that only pass a status up stay quiet.
 */
#ifndef TUTTI_CORE_LOG_H
#define TUTTI_CORE_LOG_H

#include <stdarg.h>

#include <tutti/status.h>

enum {
    TUTTI_LOG_OFF = -1,
    TUTTI_LOG_ERROR = 0,
    TUTTI_LOG_WARN = 1,
    TUTTI_LOG_INFO = 2,
    TUTTI_LOG_DEBUG = 3,
    TUTTI_LOG_TRACE = 4
};

/* The highest level any line may pass at (log_level, or a subsystem's
 * above it): what the macro checks before it formats anything. */
extern int tutti__log_level;

#define tutti__log(level, subsys, ...)                                         \
    do {                                                                       \
        if ((level) <= tutti__log_level)                                       \
            tutti__log_write((level), (subsys), __VA_ARGS__);                  \
    } while (0)

void tutti__log_write(int level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tutti__log_vwrite(int level, const char *subsys, const char *fmt,
                       va_list ap);
/** The levels' names by value, error (0) .. trace (4), then "off" (for
 *  TUTTI_LOG_OFF), NULL-terminated: the log_level setting's choices. */
extern const char *const tutti__log_level_names[];
const char *tutti__log_level_name(int level);
void tutti__log_set_level(int level);
/** Subsystems whose lines follow another level than log_level:
 *  "registry:debug,tcp:trace" (TUTTI_LOG, log_subsystems); "" for none.
 *  TUTTI_ERR_CONFIG, recorded, if @p text is not that. */
tutti_status_t tutti__log_set_subsystems(const char *text);
/** Nonzero if @p text is a valid subsystem list (the setting's check). */
int tutti__log_subsystems_ok(const char *text);
/** Lines go to @p path instead of stderr, "" for stderr: one file per
 *  task (%t in @p path is the task, else ".TASK" is appended), opened for
 *  appending, a line at a time.  TUTTI_ERR_IO naming the file if it cannot
 *  be opened (the lines stay where they were). */
tutti_status_t tutti__log_set_file(const char *path);
/** Identity printed on this thread's lines: task, and rank/device or -1. */
void tutti__log_set_task(int task);
void tutti__log_set_thread_member(int rank, const char *device);

/** Record @p status with a formatted detail, log it, and return
 *  @p status.  It is logged at error level (or the level
 *  tutti__log_error_level() set on this thread), except TUTTI_ERR_TOO_SMALL,
 *  an answer to the caller (what each rank needs), logged at info. */
tutti_status_t tutti__error(tutti_status_t status, const char *subsys,
                            const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tutti_status_t tutti__verror(tutti_status_t status, const char *subsys,
                             const char *fmt, va_list ap);
/** Record the detail without logging (for errors the caller expects). */
tutti_status_t tutti__error_quiet(tutti_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tutti__error_clear(void);
/** The level this thread logs recorded errors at from now on (errors every
 *  task of a job finds alike are logged at error level by task 0 only);
 *  returns the previous one. */
int tutti__log_error_level(int level);

#endif
