/*
 * Module registry (internal): scans directories for module files, checks
 * each file (plugin/check.h) and maps it with every symbol bound at once,
 * checks each descriptor, and maps implementation names to
 * implementations.  Refused modules are kept with their reason so
 * tutti-info can show them.
 */
#ifndef TUTTI_CORE_REGISTRY_H
#define TUTTI_CORE_REGISTRY_H

#include <tutti/module.h>
#include <tutti/transport.h>

#include "config/config.h"
#include "transport/mux.h"

typedef struct {
    char *path;        /* as found (stem without extension) */
    char *file;        /* the shared object opened (what a stem's .la
                          names, else stem.so), NULL if none was found */
    char *name;        /* from the descriptor, or NULL if unreadable */
    char *version;
    unsigned abi_major, abi_minor;
    char *reason;      /* NULL: loaded */
    void *handle;      /* dlopen's */
    const tutti_module_desc_t *desc;      /* algorithm module, or NULL */
    const tutti_tp_module_desc_t *tp;     /* transport module, or NULL */
    void *desc_copy;   /* the descriptor as far as its size says, the
                          fields it lacks zero: what desc or tp points to */
    uint32_t kind;       /* TUTTI_MODULE_KIND_*, 0 if unreadable */
    tutti_alg_impl_t *rows; /* its implementations as this core reads them:
                               rows of an older minor copied, with the fields
                               it lacks zero */
    uint64_t file_hash;  /* of the shared object's bytes (FNV-1a) */
    const tutti_alg_group_ops_t *group_ops; /* per-group state (ABI 1.3),
                                               or NULL */
} tutti__module_t;

/* Where @p m is, for messages and tutti-info: its file, else its stem. */
static inline const char *tutti__module_where(const tutti__module_t *m)
{
    return m->file != NULL ? m->file : m->path;
}

typedef struct {
    const tutti_alg_impl_t *impl; /* in its module's rows */
    size_t module;     /* index into modules */
} tutti__impl_entry_t;

typedef struct {
    tutti__module_t *modules;  /* loaded and refused, in scan order */
    size_t num_modules;
    tutti__impl_entry_t *impls;
    size_t num_impls;
} tutti__registry_t;

/**
 * Scan @p dirs, the shipped ones (tutti__default_module_path(): the build
 * tree's or the install directory) first, then the others in order; load
 * every module file (*.la or *.so) found, sorted by name within a
 * directory.  A .la names its shared object as libtool's loader would find
 * it (the uninstalled one in .libs/, else the one in libdir, else the one
 * beside the .la).  The file is checked before it is mapped, and mapped
 * with RTLD_NOW | RTLD_LOCAL, so a symbol nothing defines refuses it here.
 * The first module to register a module, implementation or transport name
 * wins, so a shipped module's names cannot be taken by a module found
 * elsewhere; the later one is refused and logged with both paths.  When
 * @p load_only is not empty, modules whose names it does not list are
 * refused with that reason (and their names are free for others: that is
 * how a configuration replaces a shipped module).  A directory that does
 * not exist is skipped quietly.  Fails only when memory runs out.
 */
tutti_status_t tutti__registry_load(tutti__registry_t *reg,
                                    const tutti__strlist_t *dirs,
                                    const tutti__strlist_t *load_only);
const tutti__impl_entry_t *tutti__registry_find(const tutti__registry_t *reg,
                                                const char *name);
/** What tutti__registry_accept takes as its argument: the registry, and
 *  the instance as rank 0 sees it (with the group's localities and PCI bus
 *  ids) when a coordinator decides one, or NULL: one is made from the
 *  query (op sum, no localities) for tutti_info_explain(). */
typedef struct {
    const tutti__registry_t *reg;
    const tutti_alg_instance_t *inst;
} tutti__accept_t;

/** A tutti__rule_accept_fn over a tutti__accept_t: the implementation is
 *  loaded, runs q's collective on q's device type, for per-rank counts
 *  runs the collective with them, and its supports() (ABI 1.3), if any,
 *  takes the instance. */
int tutti__registry_accept(const void *reg, const char *name,
                           const tutti_select_query_t *q, char *why,
                           size_t len);
/** Whether @p impl can serve a group of device @p type: it runs there,
 *  or it runs on cpus and the core stages a CUDA group's data. */
int tutti__impl_serves(const tutti_alg_impl_t *impl, tutti_device_type_t type);
/** Whether @p impl may decline a call it matches: it has supports()
 *  (ABI 1.3), so selection asks it. */
int tutti__impl_may_decline(const tutti_alg_impl_t *impl);
/** The loaded transport module whose transport is named @p name. */
const tutti_tp_ops_t *tutti__registry_find_tp(const tutti__registry_t *reg,
                                              const char *name);
/** The loaded transports among @p cfg's `transports`, in their order, for
 *  the per-peer choice, each with its module's settings; names no module
 *  provides (and "local") are passed over. */
tutti_status_t tutti__registry_tp_list(const tutti__registry_t *reg,
                                      const tutti__config_t *cfg,
                                      tutti__tp_list_t *list_out);
/** @p list with the loaded transport @p name added at its end, unless it
 *  is there or no module provides it (the control plane's fallback: a
 *  transport that needs the plane to connect declines the plane's own
 *  connections). */
void tutti__registry_tp_list_add(const tutti__registry_t *reg,
                                 const tutti__config_t *cfg,
                                 const char *name, tutti__tp_list_t *list);
/** Rules that name an implementation by one of its old names (aliases)
 *  name it by its own from now on, keeping the written one for printing. */
tutti_status_t tutti__registry_name_rules(const tutti__registry_t *reg,
                                         tutti__config_t *cfg);
/** Each parameter a rule gives its implementation must be one the
 *  implementation declares (modules of ABI 1.5 and later; older ones are
 *  not checked): TUTTI_ERR_CONFIG naming file:line:column, the parameter
 *  and the ones it reads, otherwise. */
tutti_status_t tutti__registry_check_params(const tutti__registry_t *reg,
                                            const tutti__config_t *cfg);
/** Checks the settings rows of every loaded transport module and hands
 *  them to @p cfg, which reads their values (file, environment); then a
 *  section of the file that no module took is an error. */
tutti_status_t tutti__registry_settings(const tutti__registry_t *reg,
                                       tutti__config_t *cfg);
void tutti__registry_free(tutti__registry_t *reg);

#endif
