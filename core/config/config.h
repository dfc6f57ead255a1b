/*
 * Configuration (internal): built-in defaults < YAML file < environment <
 * API arguments.  Every value remembers its source so tutti-info can print
 * it.  Selection rules are data: the first rule that matches a call picks
 * the implementation.
 */
#ifndef TUTTI_CORE_CONFIG_H
#define TUTTI_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tutti/plugin.h>
#include <tutti/tutti.h>

#include "base/strlist.h"

typedef enum {
    TUTTI_SRC_DEFAULT = 0,
    TUTTI_SRC_FILE,
    TUTTI_SRC_ENV,
    TUTTI_SRC_API
} tutti__source_t;

const char *tutti__source_name(tutti__source_t src); /* "default", "file".. */

/* A rule parameter: a size, as implementations read it (param_size). */
typedef struct {
    char *key;
    char *value;      /* as written */
    uint64_t size;    /* its value, parsed once */
    int line, column; /* of the key */
} tutti__kv_t;

typedef struct {
    /* What the rule matches; a zero mask means any. */
    uint32_t collectives;   /* TUTTI_COLL_BIT mask */
    uint32_t device_types;  /* TUTTI_DEVICE_BIT mask */
    uint32_t dtypes;        /* 1u << dtype mask */
    uint64_t size_min;      /* bytes, inclusive */
    uint64_t size_max;      /* bytes, inclusive; UINT64_MAX: open */
    int group_min, group_max;  /* inclusive; group_max INT32_MAX: open */
    int tasks_min, tasks_max;  /* likewise for num_tasks */
    int hosts_min, hosts_max;  /* likewise for hosts: distinct hosts */
    char *algorithm;           /* implementation name */
    tutti__kv_t *params;       /* free-form parameters for the impl */
    size_t num_params;
    char *file;                /* where it came from: path, or "TUTTI_ALGO" */
    int line, column;          /* 1-based; 0 when not from a file */
    int skipped;               /* set by tutti__select_check_rules() */
    char *skip_reason;
    char *written;             /* the name as the rule wrote it, where that
                                  was an old name (an alias) of algorithm */
} tutti__rule_t;

/* The core's own settings, by row (keys.c): log_level, timeout,
 * modules.path, modules.load, transports, verify, log_subsystems,
 * log_file, timeline, cuda.group_setup. */
enum {
    TUTTI__SET_LOG_LEVEL,
    TUTTI__SET_TIMEOUT,
    TUTTI__SET_MODULE_PATH,
    TUTTI__SET_MODULE_LOAD,
    TUTTI__SET_TRANSPORTS,
    TUTTI__SET_VERIFY,
    TUTTI__SET_LOG_SUBSYSTEMS,
    TUTTI__SET_LOG_FILE,
    TUTTI__SET_TIMELINE,
    TUTTI__SET_CUDA_GROUP_SETUP,
    TUTTI__CORE_SETTINGS
};

/* cuda.group_setup's choices (exec/cuda_setup.c). */
enum { TUTTI__CUDA_SETUP_JOIN, TUTTI__CUDA_SETUP_FIRST_USE };

/* Room for log_subsystems and log_file (STRING settings hold text shorter
 * than their buffer). */
#define TUTTI__LOG_SUBSYSTEMS_MAX 512
#define TUTTI__LOG_FILE_MAX 1024

/* A module's setting met in the file before the module loaded: its
 * section is not one of the core's, so it waits for a module of that
 * name to declare its rows (tutti__config_add_module).  Each section the
 * file names opens with an entry of its own, key and value NULL, that holds
 * the place of the section's name: a section no module takes is reported
 * there, an empty one too. */
typedef struct {
    char *section, *key, *value;
    int line, column;             /* of the key, or of the section's name */
    int value_line, value_column; /* of the value */
} tutti__pending_t;

/* A loaded module's settings: its rows and the typed values they fill. */
typedef struct {
    char *section;                 /* the module's name */
    const tutti_setting_t *rows;   /* the module's (lives while it is loaded) */
    size_t num_rows;
    void *values;                  /* the module's settings struct */
    tutti__source_t *src;          /* per row */
} tutti__module_settings_t;

/* The longest timeline path, with its terminating zero. */
#define TUTTI__TIMELINE_PATH_MAX 1024

typedef struct {
    char *path;                   /* file read, or NULL */
    /* The core's values, at the offsets its rows give (keys.c). */
    int log_level;                /* index in the row's choices */
    double timeout;               /* seconds */
    tutti__strlist_t module_path;
    tutti__strlist_t module_load; /* empty: all */
    tutti__strlist_t transports;
    int verify;                   /* TUTTI_TP_VERIFY_* (transport.h) */
    int cuda_group_setup;         /* TUTTI__CUDA_SETUP_* */
    char log_subsystems[TUTTI__LOG_SUBSYSTEMS_MAX]; /* "registry:debug,..." */
    char log_file[TUTTI__LOG_FILE_MAX]; /* "": stderr */
    char timeline[TUTTI__TIMELINE_PATH_MAX]; /* "": no timeline */
    tutti__source_t src[TUTTI__CORE_SETTINGS];
    tutti__rule_t *rules;         /* in match order */
    size_t num_rules;
    tutti__pending_t *pending;    /* file values for modules not yet seen */
    size_t num_pending;
    tutti__module_settings_t *modules;
    size_t num_modules;
    unsigned char *load_found;    /* per module_load item: a module found
                                     answers to it (NULL: none yet) */
} tutti__config_t;

/** The core's rows (keys.c), TUTTI__CORE_SETTINGS of them, in the order of
 *  the enum above; each row's name is its dotted key. */
extern const tutti_setting_t tutti__core_settings[];

/** The top-level keys of a configuration file, from the rows ("log_level,
 *  timeout, modules, ..., selection"), for messages. */
const char *tutti__config_top_keys(void);

/** The log level (TUTTI_LOG_*) the configuration asks for. */
int tutti__config_log_level(const tutti__config_t *cfg);
/** Sets the log level from the API's text; TUTTI_ERR_CONFIG naming it and
 *  what was expected if it is not one. */
tutti_status_t tutti__config_set_log_level(tutti__config_t *cfg,
                                           const char *text,
                                           tutti__source_t src);

/** Set every core setting to its row's default (log_level warn, timeout
 *  300, transports [shm, tcp]); no rules, no module settings. */
void tutti__config_init(tutti__config_t *cfg);
void tutti__config_free(tutti__config_t *cfg);

/**
 * Read a YAML file on top of @p cfg.  Unknown keys, wrong types, malformed
 * YAML and bad values fail with TUTTI_ERR_CONFIG and a detail of the form
 * "<path>:<line>:<column>: <what was found>; expected <what>".  A missing or
 * unreadable file fails with TUTTI_ERR_NOT_FOUND / TUTTI_ERR_IO naming it.
 * On failure @p cfg is unchanged.
 */
tutti_status_t tutti__config_load_file(tutti__config_t *cfg, const char *path);

/** Apply the core settings' variables (TUTTI_LOG_LEVEL, TUTTI_TIMEOUT,
 *  TUTTI_MODULE_PATH (colon list, searched before the file's),
 *  TUTTI_MODULES_LOAD and TUTTI_TRANSPORTS (comma lists)) and TUTTI_ALGO
 *  ("allreduce:RingAllreduce,broadcast:X", rules put before the file's).  A
 *  malformed value fails naming the variable.  Modules' variables are read
 *  when their rows come (tutti__config_add_module). */
tutti_status_t tutti__config_apply_env(tutti__config_t *cfg);

/** Takes module @p section's rows: fills a settings struct of @p size
 *  bytes with each row's default, then the values the file gave in its
 *  section (consumed from the pending ones), then the environment's.  A bad
 *  value fails naming file:line:column or the variable, and what was
 *  expected; an unknown key in the section fails likewise, and the config
 *  is then as it was.  The rows must have passed tutti__setting_row_ok(). */
tutti_status_t tutti__config_add_module(tutti__config_t *cfg,
                                        const char *section,
                                        const tutti_setting_t *rows,
                                        size_t num_rows, size_t size);
/** A module named @p section was found but not loaded (@p why: "not
 *  listed in modules.load", a refusal): its section in the file, if any,
 *  is dropped with a warning naming the section's place, the module and
 *  @p why, rather than reported as unknown. */
void tutti__config_module_absent(tutti__config_t *cfg, const char *section,
                                 const char *why);
/** The registry found a module named @p name (loaded or refused): the
 *  name in modules.load that asks for it, if any, is answered. */
void tutti__config_module_found(tutti__config_t *cfg, const char *name);
/** After every module's rows: a name in modules.load that no module
 *  found answers to is refused (a typo loads nothing the user asked for,
 *  like an unknown key), naming it, the key and where modules.load came
 *  from; a section of the file that no module took is an unknown key,
 *  reported with its place. */
tutti_status_t tutti__config_modules_done(tutti__config_t *cfg);
/** Module @p section's settings struct, or NULL. */
const void *tutti__config_module_values(const tutti__config_t *cfg,
                                        const char *section);

/** A setting by its dotted key ("timeout", "tcp.ports"), the core's or a
 *  module's, as tutti-info prints it, in @p buf; NULL for a key no one
 *  declares (the services' config_get, for modules of transport ABI 2.0). */
const char *tutti__config_get_text(const tutti__config_t *cfg, const char *key,
                                   char *buf, size_t len);

/* Names of collectives, device types and data types, for rules. */
/** A set of names indexed by small integers (collectives, devices, dtypes). */
typedef struct {
    const char *key; /* YAML key and word in messages */
    int count;
    const char *(*name)(int index);
} tutti__cfg_name_kind_t;

/** Collectives, device types and data types, by their public names. */
extern const tutti__cfg_name_kind_t tutti__cfg_coll_kind;
extern const tutti__cfg_name_kind_t tutti__cfg_device_kind;
extern const tutti__cfg_name_kind_t tutti__cfg_dtype_kind;

/** Index of the name @p s in @p kind, or -1. */
int tutti__cfg_kind_lookup(const tutti__cfg_name_kind_t *kind, const char *s);

/** Names of the bits set in @p mask (all names when @p mask is ~0u), joined
 *  by @p sep, into @p buf. */
void tutti__cfg_mask_names(const tutti__cfg_name_kind_t *kind, uint32_t mask,
                           const char *sep, char *buf, size_t len);

/** The rule's implementation name, "(none)" for a rule without one. */
const char *tutti__config_rule_algo(const tutti__rule_t *r);
/** "file:line", or the file alone for a rule not from a file. */
void tutti__config_rule_where(const tutti__rule_t *r, char *buf, size_t len);

/** Print values with sources, then rules with skip reasons. */
void tutti__config_print(const tutti__config_t *cfg, FILE *out);
/** Print every setting, the core's and the modules': key, value, source,
 *  environment variable, default and its line of doc. */
void tutti__config_print_settings(const tutti__config_t *cfg, FILE *out);

/* ==== For the files of core/config only ================================= */

/* ---- small helpers ------------------------------------------------------ */

/** Record and return TUTTI_ERR_NO_MEMORY for the configuration. */
tutti_status_t tutti__cfg_oom(void);

/** Replace *@p field by a copy of @p value (NULL allowed); the old string is
 *  freed only on success. */
tutti_status_t tutti__cfg_set_str(char **field, const char *value);

/** 1 to 63 printable characters without spaces. */
bool tutti__cfg_valid_name(const char *s);

/** Where *@p array holds @p count items of @p size bytes, a zeroed slot for
 *  one more, or NULL when memory runs out (the array is then as it was).
 *  The array grows by doubling, so that filling it is linear: it must only
 *  ever have been grown by this function (its count may have shrunk). */
void *tutti__cfg_grow(void *array, size_t count, size_t size);

/** A set of names, hashed, each with a number: duplicate keys and YAML
 *  anchors are found in constant time, not by a scan of those before.  The
 *  names are the caller's and must outlive the set. */
typedef struct {
    const char **names;
    size_t *values;
    size_t mask;
} tutti__cfg_names_t;

/** Room for @p max names. */
tutti_status_t tutti__cfg_names_init(tutti__cfg_names_t *h, size_t max);
/** The number of @p name, or NULL when it is not in the set. */
size_t *tutti__cfg_names_find(const tutti__cfg_names_t *h, const char *name);
/** Adds @p name (not in the set; fewer than max names so far). */
void tutti__cfg_names_add(tutti__cfg_names_t *h, const char *name,
                          size_t value);
void tutti__cfg_names_free(tutti__cfg_names_t *h);


/** The variable whose rules come before the file's. */
#define TUTTI__ALGO_ENV "TUTTI_ALGO"

/* ---- string lists, rules ------------------------------------------------ */


/** A growing array of rules, as tutti__cfg_rules_push() builds it. */
typedef struct {
    tutti__rule_t *rules;
    size_t count;
} tutti__cfg_rules_t;

/** Set @p r to a rule that matches everything and owns nothing. */
void tutti__cfg_rule_init(tutti__rule_t *r);

/** Free what @p r owns and re-initialise it. */
void tutti__cfg_rule_free(tutti__rule_t *r);

/** Free @p n rules and the array holding them (NULL allowed). */
void tutti__cfg_rules_free(tutti__rule_t *rules, size_t n);

/** Add a copy of @p kv (key and value copied) to @p r's parameters. */
tutti_status_t tutti__cfg_param_add(tutti__rule_t *r, const tutti__kv_t *kv);

/** Move @p r onto the end of *@p rules; on failure @p r is still the
 *  caller's. */
tutti_status_t tutti__cfg_rules_push(tutti__rule_t **rules, size_t *n,
                                     tutti__rule_t *r);

/** Replace the rules of one origin (TUTTI_ALGO if @p env, else files) by
 *  @p add; TUTTI_ALGO rules stay in front.  Takes @p add in all cases. */
tutti_status_t tutti__cfg_rules_replace(tutti__config_t *cfg, bool env,
                                        tutti__rule_t *add, size_t num_add);

/* ---- configuration object ----------------------------------------------- */

/** Deep copy of @p src into @p dst; on failure @p dst holds nothing. */
tutti_status_t tutti__cfg_config_copy(tutti__config_t *dst,
                                      const tutti__config_t *src);

/** Free @p cfg and move @p tmp into it. */
void tutti__cfg_config_replace(tutti__config_t *cfg, tutti__config_t *tmp);

/* ---- limits of a YAML file (yaml_check.c) ------------------------------ */

/* A config file is a few hundred lines: these are far above what one needs
 * and far below what takes a reader long. */
#define TUTTI__YAML_DEPTH_MAX 64           /* nested lists and mappings */
#define TUTTI__YAML_ALIAS_NODES_MAX 100000 /* nodes seen through aliases */
#define TUTTI__YAML_ANCHORS_MAX 1000
#define TUTTI__STR_(x) #x
#define TUTTI__STR(x) TUTTI__STR_(x)

struct yaml_parser_s;

/** Reads @p text as YAML events and refuses, naming path:line:column, the
 *  key it is in and the limit: syntax errors, nesting deeper than
 *  TUTTI__YAML_DEPTH_MAX (before libyaml's loader recurses into it),
 *  aliases that make more than TUTTI__YAML_ALIAS_NODES_MAX nodes visible,
 *  an alias inside its own anchor or to no anchor, more than
 *  TUTTI__YAML_ANCHORS_MAX anchors or one defined twice. */
tutti_status_t tutti__cfg_yaml_check(const char *path, const char *text,
                                     size_t len);
/** The error of parser @p ps, at path:line:column (a reader error's byte
 *  offset too), in the value of @p key where not NULL or empty. */
tutti_status_t tutti__cfg_yaml_syntax_error(const struct yaml_parser_s *ps,
                                            const char *path,
                                            const char *text, size_t len,
                                            const char *key);
/** @p n keys joined by dots into @p buf, empty ones passed over. */
void tutti__cfg_yaml_key_path(const char *const *keys, int n, char *buf,
                              size_t len);

/* ---- the environment (env.c) --------------------------------------------- */

/** Applies the variables of @p rows (section @p section, NULL for the
 *  core's dotted keys) to @p values, marking @p src; fails naming the
 *  variable, its value and what was expected. */
tutti_status_t tutti__cfg_env_rows(const char *section,
                                   const tutti_setting_t *rows, size_t n,
                                   void *values, tutti__source_t *src);

/* ---- module settings before their modules (config.c) ----------------- */

/** Keeps a copy of @p p, a value of a module's section from the file (or
 *  the section's own entry), until a module of that name declares its
 *  rows. */
tutti_status_t tutti__cfg_pending_add(tutti__config_t *cfg,
                                      const tutti__pending_t *p);
/** Forgets the pending values of @p section. */
void tutti__cfg_pending_drop(tutti__config_t *cfg, const char *section);

/** Frees what a module's settings hold (modules.c). */
void tutti__cfg_module_free(tutti__module_settings_t *m);

#endif
