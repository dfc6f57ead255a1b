/*
 * Checks the loader makes before it trusts a module (internal): the file
 * before dlopen maps it, the descriptor before the core reads it, and the
 * text a descriptor hands the core before anything prints it.  Each writes why it refuses, naming what it read and
 * what it expected, never the offending bytes themselves.
 */
#ifndef TUTTI_CORE_PLUGIN_CHECK_H
#define TUTTI_CORE_PLUGIN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/module.h>

#include "plugin/registry.h"

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

/** The shared object of module @p stem: what stem.la names, tried in
 *  libtool's loader's order (the uninstalled one in .libs/, the installed
 *  one in its libdir, the one beside the .la), else stem.so; into @p file.
 *  The registry dlopens it itself: libltdl's dlopen loader binds lazily, a
 *  choice made when libltdl was built. */
int tutti__module_file(const char *stem, char *file, size_t flen, char *why,
                       size_t len);

/** A descriptor's ABI version against the core's (@p what: "module" or
 *  "transport"). */
int tutti__abi_ok(const char *what, unsigned major, unsigned minor,
                  unsigned core_major, unsigned core_minor, char *why,
                  size_t len);

/** Bytes of one implementation row, and of the descriptor, as a module of
 *  ABI minor @p minor laid them out. */
size_t tutti__row_size(uint32_t minor);
size_t tutti__desc_size(uint32_t minor);

/** A descriptor's module name and version, before anything prints them. */
int tutti__head_text_ok(const char *name, const char *version, char *why,
                        size_t len);

/** One implementation row (@p index from 0): name, description, sets of
 *  collectives and devices, ops table. */
int tutti__impl_ok(const tutti_alg_impl_t *impl, uint32_t index, char *why,
                   size_t len);

/** Whether @p bytes from @p p lie in the object mapped at @p base. */
int tutti__in_image(const void *p, size_t bytes, const void *base);

/** Reads descriptor @p sym within the size it declares and, where the
 *  dynamic symbol table gives one, its symbol's size: the head (ABI
 *  major, minor, size, kind) first, into @p m, then as much as its kind
 *  and minor need.  Returns a copy the size of this core's descriptor, the
 *  fields the module's lacks zero (the caller frees it), or NULL and why. */
void *tutti__read_desc(tutti__module_t *m, const void *sym, char *why,
                       size_t len);
#endif
