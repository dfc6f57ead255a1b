/*
 * Configuration internals shared by config.c (values, rules, environment,
 * selection) and config_yaml.c (the YAML file).  Nothing outside those two
 * files includes this header.
 */
#ifndef TUTTI_CORE_CONFIG_INT_H
#define TUTTI_CORE_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/size.h"
#include "config/config.h"

#define TUTTI__CFG_LEVEL_EXPECTED "one of error, warn, info, debug, trace, off"

#define TUTTI__CFG_SINGLE_COPY_EXPECTED "auto or off"
#define TUTTI__CFG_IFNAME_EXPECTED                                             \
    "a network interface name of 1 to 15 characters without '/', ':' or "    \
    "spaces, e.g. eth0, or \"\" for any"
#define TUTTI__CFG_FAMILY_EXPECTED "one of any, ipv4, ipv6"
#define TUTTI__CFG_PORTS_EXPECTED                                              \
    "0 (any free port) or a range LO-HI of ports from 1 to 65535, e.g. "      \
    "29500-29599"
#define TUTTI__CFG_CONNECTIONS_EXPECTED "a whole number from 1 to 16"

/* ---- small helpers ------------------------------------------------------ */

/** Record and return TUTTI_ERR_NO_MEMORY for the configuration. */
tutti_status_t tutti__cfg_oom(void);

/** Replace *@p field by a copy of @p value (NULL allowed); the old string is
 *  freed only on success. */
tutti_status_t tutti__cfg_set_str(char **field, const char *value);

/** 1 to 63 printable characters without spaces. */
bool tutti__cfg_valid_name(const char *s);

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

/* ---- values -------------------------------------------------------------- */

/* Values of shm.single_copy and the tcp section; each leaves its output
 * alone and returns false on anything its TUTTI__CFG_*_EXPECTED does not
 * describe. */
bool tutti__cfg_single_copy_value(const char *s, tutti__single_copy_t *out);
bool tutti__cfg_ifname_value(const char *s, char out[TUTTI__TCP_IFNAME_MAX]);
bool tutti__cfg_family_value(const char *s, tutti__tcp_family_t *out);
bool tutti__cfg_ports_value(const char *s, uint16_t *lo, uint16_t *hi);
bool tutti__cfg_connections_value(const char *s, uint32_t *out);

/** A setting given as one scalar, in YAML (section.key) and in the
 * environment alike: its parser writes the value into the config. */
typedef struct {
    const char *section, *key;  /* "tcp", "family" */
    const char *env;            /* "TUTTI_TCP_FAMILY" */
    const char *expected;       /* TUTTI__CFG_*_EXPECTED */
    const char *not_what;       /* "not an address family" (env errors) */
    bool (*set)(tutti__config_t *cfg, const char *text);
    size_t src_offset;          /* offsetof the setting's source field */
} tutti__cfg_scalar_t;

/** The scalar settings of shm and tcp, ended by a NULL key. */
extern const tutti__cfg_scalar_t tutti__cfg_scalars[];
/** The one named @p section.@p key, or the one read from @p env. */
const tutti__cfg_scalar_t *tutti__cfg_scalar_find(const char *section,
                                                  const char *key,
                                                  const char *env);

/** Names of the values above, for printing. */
const char *tutti__cfg_single_copy_name(tutti__single_copy_t v);
const char *tutti__cfg_family_name(tutti__tcp_family_t v);

#endif
