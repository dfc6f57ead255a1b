/*
 * The built-in local transport (internal): the members of one group inside
 * this process, through channel meshes in its memory.
 */
#ifndef TUTTI_CORE_TRANSPORT_LOCAL_H
#define TUTTI_CORE_TRANSPORT_LOCAL_H

#include <tutti/transport.h>

extern const tutti_tp_ops_t tutti__tp_local_ops;

#endif
