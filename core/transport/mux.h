/*
 * Per-peer transport choice (internal): the endpoint a group, or the
 * control plane, talks through when its members span processes.
 */
#ifndef TUTTI_CORE_TRANSPORT_MUX_H
#define TUTTI_CORE_TRANSPORT_MUX_H

#include <tutti/transport.h>

#define TUTTI__TP_LIST_MAX 16

/* The transports a process may use for peers in other processes: the
 * configured names that are loaded, in the configured order (the
 * registry builds it once per context). */
typedef struct {
    const tutti_tp_ops_t *ops[TUTTI__TP_LIST_MAX];
    const void *settings[TUTTI__TP_LIST_MAX]; /* each one's module's */
    int count;
    const char *first;   /* the first configured name, or "empty" */
    const char *source;  /* where the list came from: "default", "file"... */
} tutti__tp_list_t;

/** Connects every peer of @p g: members of this process through the local
 *  transport, every other one through the first transport of @p list whose
 *  reachable() accepts it.  @p ops_out is the per-peer dispatch, or the one
 *  transport when one serves every peer.  Fails naming the first peer no
 *  transport reaches. */
tutti_status_t tutti__tp_mux_connect(const tutti__tp_list_t *list,
                                     const tutti_tp_group_t *g,
                                     const tutti_tp_ops_t **ops_out,
                                     tutti_tp_ep_t **ep_out);

/** The dispatch ops tutti__tp_mux_connect() hands out. */
extern const tutti_tp_ops_t tutti__tp_mux_ops;

#endif
