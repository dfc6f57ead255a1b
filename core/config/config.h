/*
 * Configuration (internal): built-in defaults < YAML file < environment <
 * API arguments.  Every value remembers its source so tutti-info can print
 * it.  Selection rules are data: the first rule that matches a call picks
 * the implementation.
 */
#ifndef TUTTI_CORE_CONFIG_H
#define TUTTI_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tutti/tutti.h>

#include "base/strlist.h"

typedef enum {
    TUTTI_SRC_DEFAULT = 0,
    TUTTI_SRC_FILE,
    TUTTI_SRC_ENV,
    TUTTI_SRC_API
} tutti__source_t;

const char *tutti__source_name(tutti__source_t src); /* "default", "file".. */

typedef struct {
    char *key;
    char *value;
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
    char *algorithm;           /* implementation name */
    tutti__kv_t *params;       /* free-form parameters for the impl */
    size_t num_params;
    char *file;                /* where it came from: path, or "TUTTI_ALGO" */
    int line, column;          /* 1-based; 0 when not from a file */
    int skipped;               /* set by tutti__config_check_rules() */
    char *skip_reason;
} tutti__rule_t;

/* shm.single_copy: whether the shm transport may move large messages with
 * one copy (cross-memory attach) where the kernel allows it. */
typedef enum {
    TUTTI_SHM_SINGLE_COPY_AUTO = 0,
    TUTTI_SHM_SINGLE_COPY_OFF
} tutti__single_copy_t;

/* tcp.family: which address families the tcp transport listens on. */
typedef enum {
    TUTTI_TCP_FAMILY_ANY = 0,
    TUTTI_TCP_FAMILY_IPV4,
    TUTTI_TCP_FAMILY_IPV6
} tutti__tcp_family_t;

#define TUTTI__TCP_IFNAME_MAX 16      /* IFNAMSIZ, NUL included */
#define TUTTI__TCP_CONNECTIONS_MAX 16

typedef struct {
    char *path;                   /* file read, or NULL */
    char *log_level;              tutti__source_t log_level_src;
    double timeout;               tutti__source_t timeout_src;   /* seconds */
    tutti__strlist_t module_path; tutti__source_t module_path_src;
    tutti__strlist_t module_load; tutti__source_t module_load_src; /* empty: all */
    tutti__strlist_t transports;  tutti__source_t transports_src;
    uint64_t shm_slot_size;       tutti__source_t shm_slot_size_src;
    uint64_t shm_slots;           tutti__source_t shm_slots_src;
    tutti__single_copy_t shm_single_copy; tutti__source_t shm_single_copy_src;
    char tcp_interface[TUTTI__TCP_IFNAME_MAX]; /* "": any */
                                  tutti__source_t tcp_interface_src;
    tutti__tcp_family_t tcp_family; tutti__source_t tcp_family_src;
    uint16_t tcp_port_lo, tcp_port_hi; /* 0, 0: any free port */
                                  tutti__source_t tcp_ports_src;
    uint32_t tcp_connections;     tutti__source_t tcp_connections_src;
    tutti__rule_t *rules;         /* in match order */
    size_t num_rules;
} tutti__config_t;

/** Set every field to its built-in default (log_level "warn", timeout 300,
 *  transports [shm], shm slot_size 64K, slots 16, single_copy auto, tcp
 *  interface "" (any), family any, ports "0" (any), connections 2, no
 *  rules). */
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

/** Apply TUTTI_LOG_LEVEL, TUTTI_TIMEOUT, TUTTI_MODULE_PATH (colon list,
 *  searched before the file's), TUTTI_TRANSPORTS (comma list),
 *  TUTTI_SHM_SINGLE_COPY, TUTTI_TCP_IFNAME, TUTTI_TCP_FAMILY,
 *  TUTTI_TCP_PORTS, TUTTI_TCP_CONNECTIONS and
 *  TUTTI_ALGO ("allreduce:RingReduce,broadcast:X", rules put before the
 *  file's).  A malformed value fails naming the variable. */
tutti_status_t tutti__config_apply_env(tutti__config_t *cfg);

/** A setting by its dotted key ("shm.slots", "timeout", "tcp.ports") as
 *  text in @p buf, for transport modules; NULL for a key not known here.
 *  Values read back in the form the file takes: shm.single_copy "auto" or
 *  "off", tcp.interface the name or "" (any), tcp.family "any", "ipv4" or
 *  "ipv6", tcp.ports "0" or "LO-HI", tcp.connections a number. */
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

#endif
