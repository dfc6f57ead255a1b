/*
 * The services the core hands to modules (internal): tutti_core_ops_t for
 * algorithm modules (alg_services.c), tutti_tp_core_ops_t for transport
 * modules (tp_services.c).  Modules reach the core only through these
 * tables.
 */
#ifndef TUTTI_CORE_PLUGIN_SERVICES_H
#define TUTTI_CORE_PLUGIN_SERVICES_H

#include <stdarg.h>
#include <stdint.h>

#include <tutti/module.h>
#include <tutti/transport.h>

/* A group member's way to its peers, fixed once it joined. */
typedef struct {
    const tutti_tp_ops_t *tp;
    tutti_tp_ep_t *ep;   /* NULL in a group of one */
    int rank, size;
    uint64_t key;        /* the group's */
} tutti__peer_link_t;

/* What the services know of one execution: the executor fills it, and
 * tutti_alg_exec_t's core_private points at it. */
typedef struct {
    const tutti__peer_link_t *peers;
    uint64_t instance_key;
    const char *algorithm;     /* for messages */
    uint16_t *pending_from;    /* per rank: receives posted, not seen done */
    uint16_t *pending_to;      /* per rank: sends posted, not seen taken */
    uint64_t heard_from;       /* ranks < 64 a receive completed from */
} tutti__exec_link_t;

/** The services for algorithm modules. */
extern const tutti_core_ops_t tutti__core_ops;
/** The services for transport modules. */
extern const tutti_tp_core_ops_t tutti__tp_core_ops;

/** Logs a module's line under @p subsys if @p level is enabled (both
 *  tables' log; their errors go to tutti__verror, as the core's do). */
void tutti__module_vlog(int level, const char *subsys, const char *fmt,
                        va_list ap);

#endif
