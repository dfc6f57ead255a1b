/*
 * What every kind of module shares: the one exported symbol, the header
 * fields every descriptor starts with, the export macro, and the settings
 * a module may declare.  module.h (algorithm modules) and transport.h
 * (transport modules) include it.
 *
 * A module is a shared object that exports exactly one symbol,
 * TUTTI_MODULE_SYMBOL.  Every descriptor starts with the same fields: ABI
 * major and minor of its kind, its own size, its kind, its name and its
 * version; the loader reads them before anything else, so a module of the
 * wrong kind or version is refused with both versions named.
 *
 * ABI versions.  Within a major version structs only grow at the end, and
 * the core reads a field only where the module's size (or ABI minor) says
 * it exists; such fields are marked with the minor that added them
 * (`ABI 2.1:`).  A change that breaks that rule gets a new major version:
 * the old header is then copied unchanged to include/tutti/abi/ (e.g.
 * abi/tp_v2.h), and one adapter file in the core (core/plugin/) wraps a
 * descriptor of the old major into the new one, so modules built against
 * the old header keep loading.
 */
#ifndef TUTTI_PLUGIN_H
#define TUTTI_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_MODULE_SYMBOL tutti_module_descriptor
#define TUTTI_MODULE_SYMBOL_NAME "tutti_module_descriptor"
#define TUTTI_NAME_MAX 64 /* bound on module and implementation names */

#define TUTTI_MODULE_KIND_ALG 1
#define TUTTI_MODULE_KIND_TP 2

#if defined(__GNUC__)
#define TUTTI_MODULE_EXPORT_ __attribute__((visibility("default")))
#else
#define TUTTI_MODULE_EXPORT_
#endif

/** The fields every descriptor starts with, for the DEFINE macros of
 *  module.h and transport.h: ABI major and minor, the descriptor's size,
 *  kind, name and version. */
#define TUTTI_DESC_HEAD_(major, minor, desc_type, kind, name, version)         \
    (major), (minor), (uint32_t)sizeof(desc_type), (kind), (name), (version)

/** How a setting's text becomes its value, and where the value lives in
 *  the module's settings struct (at the row's offset). */
typedef enum {
    TUTTI_SETTING_UINT = 1,  /**< uint64_t: a whole number in [min, max] */
    TUTTI_SETTING_SIZE,      /**< uint64_t: bytes with an optional K, M, G
                                  or T (binary), in [min, max] */
    TUTTI_SETTING_SECONDS,   /**< double: a number of seconds above 0 */
    TUTTI_SETTING_CHOICE,    /**< int: the index of the text in choices */
    TUTTI_SETTING_STRING,    /**< char[max]: text shorter than max, that
                                  check() accepts if given */
    TUTTI_SETTING_RANGE      /**< uint64_t[2]: "LO-HI" (or one number N,
                                  LO = HI = N), both in [min, max] */
} tutti_setting_type_t;

/** SIZE: the value must be a power of two. */
#define TUTTI_SETTING_POW2 0x1u
/** RANGE: "0" is also accepted and stands for any (both bounds 0). */
#define TUTTI_SETTING_ZERO_ANY 0x2u

/** One setting a module declares: one row gives its name, environment
 *  variable, default, one line of doc, its type and place.  The core reads
 *  it from the module's section of the YAML file (`tcp: { ports: ... }`)
 *  and from the environment, checks it against the row (ranges are checked
 *  there and nowhere else), prints it in tutti-info with its source, and
 *  hands the module the typed values. */
typedef struct {
    const char *name;          /**< key in the module's section: 1 to 31 of
                                    [a-z0-9_] */
    const char *env;           /**< environment variable, or NULL for
                                    TUTTI_<MODULE>_<NAME> in capitals */
    const char *default_value; /**< as a user writes it; must be valid */
    const char *doc;           /**< one line: what it does */
    tutti_setting_type_t type;
    size_t offset;             /**< of the value in the settings struct */
    uint64_t min, max;         /**< UINT, SIZE, RANGE: inclusive bounds;
                                    STRING: max is the buffer's size */
    const char *const *choices; /**< CHOICE: the names, NULL-terminated */
    unsigned flags;            /**< TUTTI_SETTING_POW2, ..._ZERO_ANY */
    /** STRING: nonzero if @p text is acceptable (NULL: any text). */
    int (*check)(const char *text);
    const char *expected;      /**< what a valid value looks like, for
                                    messages; NULL: said from type and
                                    bounds */
} tutti_setting_t;

#ifdef __cplusplus
}
#endif

#endif
