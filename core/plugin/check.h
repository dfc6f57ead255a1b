/*
 * Checks the loader makes before it trusts a module (internal): the file
 * before dlopen maps it, and the text a descriptor hands the core before
 * anything prints it.  Each writes why it refuses, naming what it read and
 * what it expected, never the offending bytes themselves.
 */
#ifndef TUTTI_CORE_PLUGIN_CHECK_H
#define TUTTI_CORE_PLUGIN_CHECK_H

#include <stddef.h>

/** Bytes a description may hold, its final NUL not counted. */
#define TUTTI__DESCRIPTION_MAX 1023

/**
 * Whether @p path is a shared object this process could map whole: a
 * readable regular file with an ELF header of this machine's class, byte
 * order and machine, and program and section header tables and loadable
 * segments that lie within the file.  A truncated file passes none of
 * this, where dlopen would fault (SIGBUS) on the pages it lacks.  Opens
 * without blocking (a FIFO is refused, not waited on).
 */
int tutti__elf_check(const char *path, char *why, size_t len);

/**
 * Whether @p name is 1 to TUTTI_NAME_MAX - 1 of [A-Za-z0-9_.-]: the
 * names of modules, implementations, aliases and transports, which logs,
 * rules and tutti-info print as they are.  @p what says whose name it is
 * ("implementation 2's name").
 */
int tutti__name_check(const char *what, const char *name, char *why,
                      size_t len);

/**
 * Whether @p text is printable ASCII (space to '~'), at most @p max bytes:
 * descriptions and versions, printed on lines of their own.  NULL passes
 * when @p optional.
 */
int tutti__text_check(const char *what, const char *text, size_t max,
                      int optional, char *why, size_t len);

#endif
