/*
 * Where the modules and the default config are (internal): the build
 * tree's when this libtutti runs from it, else the install directory's;
 * and the names of per-task files, and opening them.
 */
#ifndef TUTTI_CORE_BASE_PATHS_H
#define TUTTI_CORE_BASE_PATHS_H

#include <stddef.h>
#include <stdio.h>

/** Whether this libtutti runs from the build tree: the libtutti.so there, or
 *  a program under it that links the core statically (tests, benchmarks). */
int tutti__running_from_build_tree(void);
/** Colon-separated module directories searched last. */
const char *tutti__default_module_path(void);
/** The config file read when neither the API nor TUTTI_CONFIG names one. */
const char *tutti__default_config_path(void);
/** Task @p task's file of a per-task setting (log_file, timeline) in
 *  @p buf: each "%t" in @p pattern becomes the task; a pattern without one
 *  gets ".<task>" before a final @p ext (NULL: none), else at its end
 *  ("trace.json" -> "trace.3.json", "job.log" -> "job.log.3"). */
void tutti__task_path(const char *pattern, int task, const char *ext,
                      char *buf, size_t len);
/** Opens task file @p path for writing: appended to (@p append) or
 *  emptied, created with mode 0644 (less the umask) where missing, never
 *  through a symbolic link at @p path.  NULL on failure, with why in
 *  @p why: "a symbolic link is refused", or the system's text. */
FILE *tutti__task_file_open(const char *path, int append, char *why,
                            size_t len);

#endif
