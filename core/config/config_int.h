/*
 * Configuration internals shared by the files of core/config (the object
 * and rules, the environment, the YAML file, modules' settings, printing).
 * Nothing outside core/config includes this header.
 */
#ifndef TUTTI_CORE_CONFIG_INT_H
#define TUTTI_CORE_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/size.h"
#include "config/config.h"

/* ---- small helpers ------------------------------------------------------ */

/** Record and return TUTTI_ERR_NO_MEMORY for the configuration. */
tutti_status_t tutti__cfg_oom(void);

/** Replace *@p field by a copy of @p value (NULL allowed); the old string is
 *  freed only on success. */
tutti_status_t tutti__cfg_set_str(char **field, const char *value);

/** 1 to 63 printable characters without spaces. */
bool tutti__cfg_valid_name(const char *s);


/** The variable whose rules come before the file's. */
#define TUTTI__ALGO_ENV "TUTTI_ALGO"

/* ---- string lists, rules ------------------------------------------------ */

/** Append a copy of @p s to @p l (recording the failure, if any). */
tutti_status_t tutti__cfg_strlist_push(tutti__strlist_t *l, const char *s);

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

/** Add a copy of the parameter @p key = @p value to @p r. */
tutti_status_t tutti__cfg_param_add(tutti__rule_t *r, const char *key,
                                    const char *value);

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

/* ---- the environment (env.c) --------------------------------------------- */

/** Applies the variables of @p rows (section @p section, NULL for the
 *  core's dotted keys) to @p values, marking @p src; fails naming the
 *  variable, its value and what was expected. */
tutti_status_t tutti__cfg_env_rows(const char *section,
                                   const tutti_setting_t *rows, size_t n,
                                   void *values, tutti__source_t *src);

/* ---- module settings before their modules (config.c) ----------------- */

/** Keeps a value of @p section.@p key from the file (place @p line,
 *  @p column) until a module of that name declares its rows. */
tutti_status_t tutti__cfg_pending_add(tutti__config_t *cfg,
                                      const char *section, const char *key,
                                      const char *value, int line, int column);
/** Forgets the pending values of @p section. */
void tutti__cfg_pending_drop(tutti__config_t *cfg, const char *section);

#endif
