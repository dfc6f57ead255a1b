/* Module loader and implementation registry. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/sbuf.h"
#include "base/paths.h"
#include "base/strlist.h"
#include "config/setting.h"
#include "plugin/check.h"
#include "plugin/image.h"
#include "plugin/registry.h"

#define REASON_MAX 512

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Module file stems in @p dir, sorted, each once (a .la and its .so count
 * as one).  Returns the count, or -1 if the directory cannot be read. */
static int list_stems(const char *dir, char ***stems_out)
{
    DIR *d = opendir(dir);
    char **stems = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 4)
            continue;
        if (strcmp(e->d_name + len - 3, ".la") != 0 &&
            strcmp(e->d_name + len - 3, ".so") != 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            char **grown = realloc(stems, ncap * sizeof(*stems));
            if (grown == NULL)
                break;
            stems = grown;
            cap = ncap;
        }
        stems[n] = strndup(e->d_name, len - 3);
        if (stems[n] != NULL)
            n++;
    }
    closedir(d);
    if (n > 1) /* an empty directory leaves stems NULL: no qsort of NULL */
        qsort(stems, n, sizeof(*stems), cmp_str);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0 && strcmp(stems[out - 1], stems[i]) == 0) {
            free(stems[i]);
            continue;
        }
        stems[out++] = stems[i];
    }
    *stems_out = stems;
    return (int)out;
}

static int name_ok(const char *name)
{
    return name != NULL && name[0] != '\0' &&
           strnlen(name, TUTTI_NAME_MAX) < TUTTI_NAME_MAX;
}

/* Whether @p impl answers to @p name: its own, or one of its aliases. */
static int answers_to(const tutti_alg_impl_t *impl, const char *name)
{
    if (strcmp(impl->name, name) == 0)
        return 1;
    for (const char *const *a = impl->aliases; a != NULL && *a != NULL; a++)
        if (strcmp(*a, name) == 0)
            return 1;
    return 0;
}

static const tutti__impl_entry_t *find_impl(const tutti__registry_t *reg,
                                            const char *name)
{
    for (size_t i = 0; i < reg->num_impls; i++) {
        if (answers_to(reg->impls[i].impl, name))
            return &reg->impls[i];
    }
    return NULL;
}

static const tutti__module_t *find_module(const tutti__registry_t *reg,
                                          const char *name)
{
    for (size_t i = 0; i < reg->num_modules; i++) {
        const tutti__module_t *m = &reg->modules[i];
        if ((m->desc != NULL || m->tp != NULL) && strcmp(m->name, name) == 0)
            return m;
    }
    return NULL;
}

/* The module that provides transport @p name, or NULL. */
static const tutti__module_t *tp_module(const tutti__registry_t *reg,
                                        const char *name)
{
    for (size_t i = 0; name != NULL && i < reg->num_modules; i++) {
        const tutti__module_t *m = &reg->modules[i];
        if (m->tp != NULL && strcmp(m->tp->ops->name, name) == 0)
            return m;
    }
    return NULL;
}

const tutti_tp_ops_t *tutti__registry_find_tp(const tutti__registry_t *reg,
                                              const char *name)
{
    const tutti__module_t *m = tp_module(reg, name);
    return m != NULL ? m->tp->ops : NULL;
}

tutti_status_t tutti__registry_tp_list(const tutti__registry_t *reg,
                                      const tutti__config_t *cfg,
                                      tutti__tp_list_t *list_out)
{
    const tutti__strlist_t *names = &cfg->transports;
    memset(list_out, 0, sizeof(*list_out));
    list_out->first = names->count > 0 ? names->items[0] : "empty";
    list_out->source = tutti__source_name(cfg->src[TUTTI__SET_TRANSPORTS]);
    for (size_t i = 0; i < names->count; i++) {
        /* "local" serves this process only, and comes first anyway. */
        const tutti__module_t *m = tp_module(reg, names->items[i]);
        if (m == NULL)
            continue;
        if (list_out->count == TUTTI__TP_LIST_MAX)
            return tutti__error(TUTTI_ERR_CONFIG, "transport", "transports: "
                                "more than %d loaded transports listed (%s)",
                                TUTTI__TP_LIST_MAX, list_out->source);
        list_out->settings[list_out->count] =
            tutti__config_module_values(cfg, m->name);
        list_out->ops[list_out->count++] = m->tp->ops;
    }
    return TUTTI_OK;
}

void tutti__registry_tp_list_add(const tutti__registry_t *reg,
                                 const tutti__config_t *cfg,
                                 const char *name, tutti__tp_list_t *list)
{
    const tutti__module_t *m = tp_module(reg, name);
    if (m == NULL || list->count == TUTTI__TP_LIST_MAX)
        return;
    for (int i = 0; i < list->count; i++)
        if (list->ops[i] == m->tp->ops)
            return;
    list->settings[list->count] = tutti__config_module_values(cfg, m->name);
    list->ops[list->count++] = m->tp->ops;
}

/* 1 if no module registered @p name yet, else writes who did. */
static int name_free(const tutti__registry_t *reg, const char *name,
                     char *why, size_t len)
{
    const tutti__module_t *other = find_module(reg, name);
    if (other == NULL)
        return 1;
    snprintf(why, len, "module name '%s' already registered by %s", name,
             tutti__module_where(other));
    return 0;
}

#define TP_SETTINGS_MAX 64
#define TP_SETTINGS_BYTES_MAX (64u << 10)

/* The settings a transport descriptor declares (ABI 2.1), or 0. */
static uint32_t tp_num_settings(const tutti_tp_module_desc_t *d)
{
    return d->abi_minor >= 1 && d->size >= sizeof(tutti_tp_module_desc_t)
               ? d->num_settings
               : 0;
}

/* Checks the settings rows of @p d: their shape, distinct names, and that
 * each default is a valid value; writes why not. */
static int tp_settings_ok(const tutti__image_t *img,
                          const tutti_tp_module_desc_t *d, char *why,
                          size_t len)
{
    uint32_t n = tp_num_settings(d);
    char row_why[200];
    if (n == 0)
        return 1;
    if (d->settings == NULL || n > TP_SETTINGS_MAX || d->settings_size == 0 ||
        d->settings_size > TP_SETTINGS_BYTES_MAX) {
        snprintf(why, len, "malformed settings: %u rows at %p in a struct of "
                 "%u bytes; expected 1 to %d rows and 1 to %u bytes", n,
                 (const void *)d->settings, d->settings_size, TP_SETTINGS_MAX,
                 TP_SETTINGS_BYTES_MAX);
        return 0;
    }
    snprintf(row_why, sizeof(row_why), "malformed settings: the table of %u "
             "rows", n);
    if (!tutti__table_ok(img, row_why, d->settings,
                         n * sizeof(d->settings[0]), why, len))
        return 0;
    void *scratch = calloc(1, d->settings_size);
    int ok = scratch != NULL;
    for (uint32_t i = 0; ok && i < n; i++) {
        const tutti_setting_t *row = &d->settings[i];
        if (!tutti__setting_in_image(img, row, i, why, len)) {
            ok = 0;
        } else if (!tutti__setting_row_ok(row, d->settings_size, row_why,
                                          sizeof(row_why))) {
            snprintf(why, len, "malformed settings: %s", row_why);
            ok = 0;
        } else if (tutti__setting_set(row, row->default_value, scratch) !=
                   TUTTI_OK) {
            snprintf(why, len, "malformed settings: '%s' has the default "
                     "'%s'; expected %s", row->name, row->default_value,
                     tutti__setting_expected(row, row_why, sizeof(row_why)));
            ok = 0;
        }
        for (uint32_t k = 0; ok && k < i; k++) {
            if (strcmp(d->settings[k].name, row->name) == 0) {
                snprintf(why, len, "malformed settings: '%s' twice",
                         row->name);
                ok = 0;
            }
        }
    }
    if (scratch == NULL)
        snprintf(why, len, "no memory to check its settings");
    free(scratch);
    return ok;
}

tutti_status_t tutti__registry_name_rules(const tutti__registry_t *reg,
                                         tutti__config_t *cfg)
{
    for (size_t i = 0; i < cfg->num_rules; i++) {
        tutti__rule_t *r = &cfg->rules[i];
        const tutti__impl_entry_t *e = tutti__registry_find(reg, r->algorithm);
        if (e == NULL || strcmp(e->impl->name, r->algorithm) == 0)
            continue;
        char *own = strdup(e->impl->name);
        if (own == NULL)
            return tutti__error(TUTTI_ERR_NO_MEMORY, "registry", "no memory "
                                "to name rule %zu's implementation", i + 1);
        free(r->written);
        r->written = r->algorithm;
        r->algorithm = own;
    }
    return TUTTI_OK;
}

/* Whether @p impl declares that it reads parameter @p key. */
static int reads_param(const tutti_alg_impl_t *impl, const char *key)
{
    for (int k = 0; impl->params != NULL && impl->params[k] != NULL; k++)
        if (strcmp(impl->params[k], key) == 0)
            return 1;
    return 0;
}

tutti_status_t tutti__registry_check_params(const tutti__registry_t *reg,
                                            const tutti__config_t *cfg)
{
    for (size_t i = 0; i < cfg->num_rules; i++) {
        const tutti__rule_t *r = &cfg->rules[i];
        const tutti__impl_entry_t *e =
            r->num_params > 0 ? tutti__registry_find(reg, r->algorithm)
                              : NULL;
        /* params NULL: not declared (every module of ABI 1.4 and older,
         * and one of 1.5 that sets none), so not checked. */
        if (e == NULL || e->impl->params == NULL)
            continue;
        for (size_t k = 0; k < r->num_params; k++) {
            const tutti__kv_t *kv = &r->params[k];
            char reads[TUTTI_PARAMS_MAX * (TUTTI_NAME_MAX + 2) + 32];
            tutti__sbuf_t sb = {reads, sizeof(reads), 0};
            if (reads_param(e->impl, kv->key))
                continue;
            for (int j = 0; e->impl->params && e->impl->params[j]; j++)
                tutti__sbuf_printf(&sb, "%s%s", j ? ", " : "one of ",
                                   e->impl->params[j]);
            if (sb.pos == 0)
                tutti__sbuf_printf(&sb, "none: it reads no parameter");
            return tutti__error(TUTTI_ERR_CONFIG, "config", "%s:%d:%d: "
                                "unknown parameter '%s' for implementation "
                                "'%s'; expected %s", r->file, kv->line,
                                kv->column, kv->key, e->impl->name, reads);
        }
    }
    return TUTTI_OK;
}

tutti_status_t tutti__registry_settings(const tutti__registry_t *reg,
                                       tutti__config_t *cfg)
{
    for (size_t i = 0; i < reg->num_modules; i++) {
        const tutti__module_t *m = &reg->modules[i];
        uint32_t n = m->tp != NULL ? tp_num_settings(m->tp) : 0;
        if (n == 0)
            continue;
        tutti_status_t st = tutti__config_add_module(
            cfg, m->name, m->tp->settings, n, m->tp->settings_size);
        if (st != TUTTI_OK)
            return st;
    }
    /* A section for a module found but not loaded is no typo: dropped with
     * a warning saying why, unless a module of that name did load. */
    for (size_t i = 0; i < reg->num_modules; i++) {
        const tutti__module_t *m = &reg->modules[i];
        tutti__config_module_found(cfg, m->name);
        if (m->reason != NULL && m->name != NULL &&
            find_module(reg, m->name) == NULL)
            tutti__config_module_absent(cfg, m->name, m->reason);
    }
    return tutti__config_modules_done(cfg);
}

/* Checks a transport module's descriptor (its name and version checked),
 * every pointer in it first; writes why it is refused. */
static int tp_desc_ok(const tutti__registry_t *reg, const tutti__image_t *img,
                      const tutti_tp_module_desc_t *d, char *why, size_t len)
{
    if (!tp_settings_ok(img, d, why, len) ||
        !tutti__tp_ops_ok(img, d, why, len) ||
        !name_free(reg, d->name, why, len))
        return 0;
    const char *name = d->ops->name;
    const tutti__module_t *other = tp_module(reg, name);
    if (strcmp(name, "local") == 0 || other != NULL) {
        snprintf(why, len, "transport '%s' already provided by %s", name,
                 other != NULL ? tutti__module_where(other) : "the core");
        return 0;
    }
    return 1;
}

/* The module's implementation rows as this core reads them (the module's
 * minor may be older), from a table the image holds, or NULL when memory
 * runs out. */
static tutti_alg_impl_t *read_rows(const tutti_module_desc_t *d)
{
    size_t stride = tutti__row_size(d->abi_minor);
    tutti_alg_impl_t *rows = calloc(d->num_impls, sizeof(*rows));
    for (uint32_t i = 0; rows != NULL && i < d->num_impls; i++)
        tutti__image_copy(&rows[i], (const char *)d->impls + i * stride,
                          stride);
    return rows;
}

/* A name or an alias of row @p i that a row before it, or a registered
 * implementation, already answers to; NULL if none. */
static const char *name_taken(const tutti__registry_t *reg,
                              const tutti_alg_impl_t *rows, uint32_t i,
                              char *why, size_t len)
{
    const tutti_alg_impl_t *impl = &rows[i];
    for (int k = -1; k < 0 || (impl->aliases && impl->aliases[k]); k++) {
        const char *n = k < 0 ? impl->name : impl->aliases[k];
        if (!name_ok(n)) {
            snprintf(why, len, "malformed table: implementation '%s' has an "
                     "empty or over-long alias", impl->name);
            return n ? n : "";
        }
        char what[128];
        snprintf(what, sizeof(what), "malformed table: alias %d of "
                 "implementation '%s'", k + 1, impl->name);
        if (k >= 0 && !tutti__name_check(what, n, why, len))
            return n;
        for (int m = -1; m < k; m++) {
            if (strcmp(m < 0 ? impl->name : impl->aliases[m], n) == 0) {
                snprintf(why, len, "malformed table: implementation '%s' "
                         "answers to '%s' twice", impl->name, n);
                return n;
            }
        }
        for (uint32_t j = 0; j < i; j++) {
            if (answers_to(&rows[j], n)) {
                snprintf(why, len, "implementation '%s' listed twice", n);
                return n;
            }
        }
        const tutti__impl_entry_t *dup = find_impl(reg, n);
        if (dup != NULL) {
            snprintf(why, len, "implementation '%s' already registered by "
                     "module '%s' (%s)", n, reg->modules[dup->module].name,
                     tutti__module_where(&reg->modules[dup->module]));
            return n;
        }
    }
    return NULL;
}

/* Checks a descriptor against the names registered so far, every pointer
 * in it first; @p rows are its implementations as read_rows() gave them
 * from a table the image holds.  Returns 1 if it may be registered, else
 * writes the reason. */
static int desc_ok(const tutti__registry_t *reg, const tutti__image_t *img,
                   const tutti_module_desc_t *d, const tutti_alg_impl_t *rows,
                   char *why, size_t len)
{
    if (!tutti__group_ops_ok(img, d, why, len))
        return 0;
    if (rows == NULL) {
        snprintf(why, len, "no memory to read its implementations");
        return 0;
    }
    if (!name_free(reg, d->name, why, len))
        return 0;
    for (uint32_t i = 0; i < d->num_impls; i++) {
        if (!tutti__impl_ok(img, &rows[i], i, why, len) ||
            name_taken(reg, rows, i, why, len) != NULL)
            return 0;
    }
    return 1;
}

/* FNV-1a over the file's bytes: members compare it to be sure they run the
 * same build of a module. */
static uint64_t file_hash(const char *path)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    unsigned char buf[65536];
    size_t n;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (f == NULL)
        return 0;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        for (size_t i = 0; i < n; i++) {
            h ^= buf[i];
            h *= 0x100000001b3ULL;
        }
    }
    fclose(f);
    return h;
}

static tutti_status_t add_impls(tutti__registry_t *reg, size_t module)
{
    const tutti_module_desc_t *d = reg->modules[module].desc;
    const tutti_alg_impl_t *rows = reg->modules[module].rows;
    tutti__impl_entry_t *grown =
        realloc(reg->impls, (reg->num_impls + d->num_impls) * sizeof(*grown));
    if (grown == NULL)
        return TUTTI_ERR_NO_MEMORY;
    reg->impls = grown;
    for (uint32_t i = 0; i < d->num_impls; i++) {
        reg->impls[reg->num_impls].impl = &rows[i];
        reg->impls[reg->num_impls].module = module;
        reg->num_impls++;
    }
    return TUTTI_OK;
}

/* Maps module file @p file with every symbol bound at once (one that
 * nothing defines refuses the module here, named, rather than ending the
 * process on its first call; libltdl cannot ask for this, its dlopen
 * loader passes RTLD_LAZY, a build-time choice), finds where it lies and
 * its descriptor.  Returns the descriptor, or NULL and why. */
static const void *map_module(tutti__module_t *m, const char *file,
                              tutti__image_t *img, char *why, size_t len)
{
    dlerror();
    m->handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (m->handle == NULL) {
        const char *err = dlerror();
        snprintf(why, len, "cannot open: %s", err ? err : "unknown error");
        return NULL;
    }
    if (!tutti__image_find(img, m->handle, file, why, len))
        return NULL;
    const void *sym = dlsym(m->handle, TUTTI_MODULE_SYMBOL_NAME);
    if (sym == NULL)
        snprintf(why, len, "no descriptor: symbol '%s' not found",
                 TUTTI_MODULE_SYMBOL_NAME);
    return sym;
}

/* Reads and checks the descriptor @p sym of mapped module @p m; 1 if it
 * may be registered, else 0 and why.  Nothing a pointer in it names is
 * read before the image says it lies in the module. */
static int check_module(tutti__registry_t *reg, tutti__module_t *m,
                        const tutti__image_t *img, const void *sym,
                        char *why, size_t len)
{
    m->desc_copy = tutti__read_desc(m, img, sym, why, len);
    if (m->desc_copy == NULL)
        return 0;
    const tutti_module_desc_t *d = m->desc_copy;
    const tutti_tp_module_desc_t *td = m->desc_copy;
    /* Kept for refused modules too (tutti-info, sections of the
     * configuration), once they are safe to print. */
    if (!tutti__head_ok(img, d->name, d->version, why, len))
        return 0;
    m->name = strdup(d->name);
    m->version = strdup(d->version);
    if (m->name == NULL || m->version == NULL) {
        snprintf(why, len, "no memory to keep its name");
        return 0;
    }
    if (d->kind == TUTTI_MODULE_KIND_TP)
        return tp_desc_ok(reg, img, td, why, len);
    if (!tutti__impls_in_image(img, d, why, len))
        return 0;
    m->rows = read_rows(d);
    return desc_ok(reg, img, d, m->rows, why, len);
}

/* Opens one module file and registers it, or records why not. */
static tutti_status_t load_one(tutti__registry_t *reg, const char *path,
                               const tutti__strlist_t *load_only)
{
    char why[REASON_MAX] = "";
    char file[PATH_MAX + 256];
    tutti__image_t img;
    tutti__module_t *m =
        tutti__grow(&reg->modules, reg->num_modules, sizeof(*m));
    if (m == NULL)
        return TUTTI_ERR_NO_MEMORY;
    m->path = strdup(path);
    if (m->path == NULL)
        return TUTTI_ERR_NO_MEMORY;
    reg->num_modules++;

    if (!tutti__module_file(path, file, sizeof(file), why, sizeof(why)))
        goto refuse;
    m->file = strdup(file);
    if (m->file == NULL)
        return TUTTI_ERR_NO_MEMORY;
    const void *sym;
    if (!tutti__elf_check(file, why, sizeof(why)) ||
        (sym = map_module(m, file, &img, why, sizeof(why))) == NULL ||
        !check_module(reg, m, &img, sym, why, sizeof(why)))
        goto refuse;
    const tutti_module_desc_t *d = m->desc_copy;
    int tp = d->kind == TUTTI_MODULE_KIND_TP;
    if (load_only->count > 0 && !tutti__strlist_has(load_only, d->name)) {
        snprintf(why, sizeof(why), "not listed in modules.load");
        goto refuse;
    }
    m->file_hash = file_hash(file);
    tutti__log(TUTTI_LOG_DEBUG, "registry", "loaded %s module '%s' %s from %s "
               "(hash %016llx)", tp ? "transport" : "algorithm", d->name,
               d->version, file, (unsigned long long)m->file_hash);
    if (tp) {
        m->tp = m->desc_copy;
        return TUTTI_OK;
    }
    m->desc = d;
    m->group_ops = tutti__desc_group_ops(d);
    return add_impls(reg, reg->num_modules - 1);

refuse:
    m->reason = strdup(why);
    free(m->rows);
    m->rows = NULL;
    free(m->desc_copy);
    m->desc_copy = NULL;
    tutti__log(TUTTI_LOG_WARN, "registry", "module %s refused: %s",
               tutti__module_where(m), why);
    if (m->handle != NULL) {
        dlclose(m->handle);
        m->handle = NULL;
    }
    return m->reason ? TUTTI_OK : TUTTI_ERR_NO_MEMORY;
}

/* True if @p path (a stem) was loaded already, e.g. a directory listed
 * twice. */
static int seen_path(const tutti__registry_t *reg, const char *path)
{
    for (size_t i = 0; i < reg->num_modules; i++) {
        if (strcmp(reg->modules[i].path, path) == 0)
            return 1;
    }
    return 0;
}

static tutti_status_t load_dir(tutti__registry_t *reg, const char *dir,
                               const tutti__strlist_t *load_only)
{
    char **stems = NULL;
    char real[PATH_MAX];
    tutti_status_t st = TUTTI_OK;
    int n = list_stems(dir, &stems);

    if (n < 0) {
        tutti__log(TUTTI_LOG_DEBUG, "registry", "module dir %s: %s", dir,
                   strerror(errno));
        return TUTTI_OK;
    }
    if (realpath(dir, real) == NULL)
        snprintf(real, sizeof(real), "%s", dir);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX + 256];
        snprintf(path, sizeof(path), "%s/%s", real, stems[i]);
        if (st == TUTTI_OK && !seen_path(reg, path))
            st = load_one(reg, path, load_only);
        free(stems[i]);
    }
    free(stems);
    return st;
}

/* Whether @p dir is one of the shipped module directories (the build
 * tree's or the install directory). */
static int is_shipped(const char *dir)
{
    char real[PATH_MAX], other[PATH_MAX], item[PATH_MAX];
    const char *p = tutti__default_module_path();
    if (realpath(dir, real) == NULL)
        return 0;
    while (*p != '\0') {
        size_t n = strcspn(p, ":");
        if (n > 0 && n < sizeof(item)) {
            memcpy(item, p, n);
            item[n] = '\0';
            if (realpath(item, other) != NULL && strcmp(real, other) == 0)
                return 1;
        }
        p += n + (p[n] == ':');
    }
    return 0;
}

tutti_status_t tutti__registry_load(tutti__registry_t *reg,
                                    const tutti__strlist_t *dirs,
                                    const tutti__strlist_t *load_only)
{
    memset(reg, 0, sizeof(*reg));
    /* Shipped modules first: the first to register a name keeps it, and a
     * module found elsewhere must not take a shipped one's names. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < dirs->count; i++) {
            if (is_shipped(dirs->items[i]) != (pass == 0))
                continue;
            tutti_status_t st = load_dir(reg, dirs->items[i], load_only);
            if (st != TUTTI_OK)
                return tutti__error(st, "registry", "out of memory loading "
                                    "%s", dirs->items[i]);
        }
    }
    return TUTTI_OK;
}

const tutti__impl_entry_t *tutti__registry_find(const tutti__registry_t *reg,
                                                const char *name)
{
    return name ? find_impl(reg, name) : NULL;
}

int tutti__registry_accept(const void *arg, const char *name,
                           const tutti_select_query_t *q, char *why,
                           size_t len)
{
    const tutti__accept_t *acc = arg;
    const tutti__registry_t *reg = acc->reg;
    const tutti__impl_entry_t *e = tutti__registry_find(reg, name);
    const char *coll = tutti_collective_name(q->collective);
    if (e == NULL) {
        snprintf(why, len, "%s is not provided by any loaded module", name);
        return 0;
    }
    if (!(e->impl->collectives & TUTTI_COLL_BIT(q->collective)) ||
        !tutti__impl_serves(e->impl, q->device_type)) {
        snprintf(why, len, "%s (module %s) does not run %s on %s devices",
                 name, reg->modules[e->module].name, coll ? coll : "?",
                 tutti_device_type_name(q->device_type));
        return 0;
    }
    if (q->per_rank &&
        !(e->impl->per_rank_collectives & TUTTI_COLL_BIT(q->collective))) {
        snprintf(why, len, "%s (module %s) runs %s with equal counts only, "
                 "not per-rank counts", name, reg->modules[e->module].name,
                 coll);
        return 0;
    }
    const tutti_alg_ops_t *ops = e->impl->ops;
    if (!tutti__impl_may_decline(e->impl))
        return 1;
    size_t esize = tutti_dtype_size(q->dtype);
    tutti_alg_instance_t made = {
        .size = sizeof(made), .collective = q->collective, .dtype = q->dtype,
        .op = TUTTI_OP_SUM,
        .count = q->per_rank ? TUTTI_COUNT_PER_RANK
                             : (esize ? q->bytes / esize : 0),
        .group_size = q->group_size, .num_tasks = q->num_tasks,
        .device_type = q->device_type};
    char reason[256] = "";
    if (ops->supports(acc->inst ? acc->inst : &made, reason,
                      sizeof(reason)))
        return 1;
    snprintf(why, len, "%s (module %s) declines: %s", name,
             reg->modules[e->module].name,
             reason[0] ? reason : "no reason given");
    return 0;
}

int tutti__impl_serves(const tutti_alg_impl_t *impl,
                       tutti_device_type_t type)
{
    if (impl->device_types & TUTTI_DEVICE_BIT(type))
        return 1;
    /* The core stages CUDA data through host memory for a cpu
     * implementation (core/device/stage.h). */
    return type == TUTTI_DEVICE_CUDA &&
           (impl->device_types & TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU));
}

int tutti__impl_may_decline(const tutti_alg_impl_t *impl)
{
    return impl->ops->size > offsetof(tutti_alg_ops_t, supports) &&
           impl->ops->supports != NULL;
}

void tutti__registry_free(tutti__registry_t *reg)
{
    if (reg == NULL)
        return;
    for (size_t i = 0; i < reg->num_modules; i++) {
        tutti__module_t *m = &reg->modules[i];
        if (m->handle != NULL)
            dlclose(m->handle);
        free(m->path);
        free(m->file);
        free(m->name);
        free(m->version);
        free(m->reason);
        free(m->rows);
        free(m->desc_copy);
    }
    free(reg->modules);
    free(reg->impls);
    memset(reg, 0, sizeof(*reg));
}
