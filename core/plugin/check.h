/*
 * Checks the loader makes before it trusts a module (internal): the file
 * before dlopen maps it, every table and string a descriptor points to
 * before the core reads through the pointer, and the text a descriptor
 * hands the core before anything prints it.  Each writes why it refuses,
 * naming what it read and what it expected, never the offending bytes
 * themselves.
 */
#ifndef TUTTI_CORE_PLUGIN_CHECK_H
#define TUTTI_CORE_PLUGIN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/module.h>
#include <tutti/transport.h>

#include "plugin/image.h"
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
 * The bytes from file address @p vaddr to the end of the object of
 * @p file's symbol table (.symtab, else .dynsym) that holds it, into
 * @p avail_out, and that object's name into @p name (may be cut).  0 when
 * the file has no symbol table or no object there: then nothing is
 * known.  Reads the file with bounds checked, so a malformed table is
 * "nothing known", never a fault.
 */
int tutti__elf_object(const char *file, uint64_t vaddr, uint64_t *avail_out,
                      char *name, size_t name_len);

/** A table of @p bytes at @p p a descriptor points to lies in one segment
 *  of the module (tutti__image_span()) and within the variable of the
 *  file's symbol table that holds @p p, where the file keeps one: else
 *  why, naming @p what ("malformed table: the table of 2
 *  implementations").  NULL is refused. */
int tutti__table_ok(const tutti__image_t *img, const char *what,
                    const void *p, size_t bytes, char *why, size_t len);

/** The same for a table whose first field, a size_t, gives its bytes (an
 *  ops table): the field first, then at least @p min_size bytes, and as
 *  many as it says. */
int tutti__ops_table_ok(const tutti__image_t *img, const char *what,
                        const void *p, size_t min_size, char *why,
                        size_t len);

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

/** A descriptor's module name and version, before anything prints them
 *  (their pointers are checked by tutti__head_ok()). */
int tutti__head_text_ok(const char *name, const char *version, char *why,
                        size_t len);

/* Every check below reads through a pointer only once the module's image
 * (plugin/image.h) holds what it points to, and names the field and, for
 * an implementation, its index ("implementation 2's name"). */

/** Most implementations one module may list. */
#define TUTTI__IMPLS_MAX 256
/** Most choices one setting row may list. */
#define TUTTI__CHOICES_MAX 64

/** A descriptor's module name and version: readable, then named and
 *  printable (tutti__head_text_ok()). */
int tutti__head_ok(const tutti__image_t *img, const char *name,
                   const char *version, char *why, size_t len);

/** The implementation table of @p d (a copy of the descriptor): 1 to
 *  TUTTI__IMPLS_MAX rows of its minor's size, in the image, and within
 *  the variable the file's symbol table says holds it. */
int tutti__impls_in_image(const tutti__image_t *img,
                          const tutti_module_desc_t *d, char *why,
                          size_t len);

/** One implementation row (@p index from 0), as read from a table
 *  tutti__impls_in_image() passed: name, description, sets of collectives
 *  and devices, alias and parameter lists, ops table. */
int tutti__impl_ok(const tutti__image_t *img, const tutti_alg_impl_t *impl,
                   uint32_t index, char *why, size_t len);

/** The per-group table of descriptor @p d (ABI 1.3), or NULL. */
const tutti_alg_group_ops_t *
tutti__desc_group_ops(const tutti_module_desc_t *d);

/** That table, if any: in the image, its size covering what the core
 *  reads, init_group and fini_group together. */
int tutti__group_ops_ok(const tutti__image_t *img,
                        const tutti_module_desc_t *d, char *why, size_t len);

/** A transport descriptor's ops table: in the image, its size covering
 *  the entries every transport has, those set, its transport named. */
int tutti__tp_ops_ok(const tutti__image_t *img,
                     const tutti_tp_module_desc_t *d, char *why, size_t len);

/** The texts of settings row @p index (from 0), from a table the image
 *  holds: each readable and printable; its choices a list of them. */
int tutti__setting_in_image(const tutti__image_t *img,
                            const tutti_setting_t *row, uint32_t index,
                            char *why, size_t len);

/** Reads descriptor @p sym within the size it declares, within its
 *  symbol where the dynamic symbol table gives one, and within the image:
 *  the head (ABI major, minor, size, kind) first, into @p m, then as much
 *  as its kind and minor need.  Returns a copy the size of this core's
 *  descriptor, the fields the module's lacks zero (the caller frees it),
 *  or NULL and why. */
void *tutti__read_desc(tutti__module_t *m, const tutti__image_t *img,
                       const void *sym, char *why, size_t len);
#endif
