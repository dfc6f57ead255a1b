/*
 * Tutti value types shared by the host API and modules: data types,
 * reduction ops, collectives, device types.  Each enum has a name table in
 * the core (tutti_op_name() and friends) used by YAML, logs and tools.
 * The data types' sizes and names are C99 inline definitions here, so that
 * a module compiled with optimisation needs no libtutti symbol for them;
 * libtutti still exports both (core/base/types.c), for callers that do not
 * inline them and for programs and modules built against earlier headers.
 */
#ifndef TUTTI_TYPES_H
#define TUTTI_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/status.h>

#define TUTTI_DTYPE_LIST(X)                                                    \
    X(INT8, int8, 1)                                                           \
    X(UINT8, uint8, 1)                                                         \
    X(INT32, int32, 4)                                                         \
    X(UINT32, uint32, 4)                                                       \
    X(INT64, int64, 8)                                                         \
    X(UINT64, uint64, 8)                                                       \
    X(FLOAT16, float16, 2)                                                     \
    X(BFLOAT16, bfloat16, 2)                                                   \
    X(FLOAT32, float32, 4)                                                     \
    X(FLOAT64, float64, 8)

typedef enum {
#define TUTTI_DTYPE_ENUM_(up, low, size) TUTTI_##up,
    TUTTI_DTYPE_LIST(TUTTI_DTYPE_ENUM_)
#undef TUTTI_DTYPE_ENUM_
    TUTTI_DTYPE_COUNT
} tutti_dtype_t;

#define TUTTI_OP_LIST(X)                                                       \
    X(SUM, sum)                                                                \
    X(PROD, prod)                                                              \
    X(MIN, min)                                                                \
    X(MAX, max)                                                                \
    X(AVG, avg)

typedef enum {
#define TUTTI_OP_ENUM_(up, low) TUTTI_OP_##up,
    TUTTI_OP_LIST(TUTTI_OP_ENUM_)
#undef TUTTI_OP_ENUM_
    TUTTI_OP_COUNT
} tutti_op_t;

/* The order is part of the module ABI: collectives are bits in a mask. */
#define TUTTI_COLL_LIST(X)                                                     \
    X(ALLREDUCE, allreduce)                                                    \
    X(BROADCAST, broadcast)                                                    \
    X(ALLGATHER, allgather)                                                    \
    X(REDUCE_SCATTER, reduce_scatter)                                          \
    X(ALLTOALL, alltoall)                                                      \
    X(REDUCE, reduce)                                                          \
    X(GATHER, gather)                                                          \
    X(PERMUTE, permute)

typedef enum {
#define TUTTI_COLL_ENUM_(up, low) TUTTI_COLL_##up,
    TUTTI_COLL_LIST(TUTTI_COLL_ENUM_)
#undef TUTTI_COLL_ENUM_
    TUTTI_COLL_COUNT
} tutti_collective_t;

/** tutti_instance_params_t.count for collectives whose counts differ per
 *  rank (allgather, reduce_scatter, alltoall): each execution then gives
 *  them (see tutti_instance_params_t.counts and send_count). */
#define TUTTI_COUNT_PER_RANK SIZE_MAX

#define TUTTI_COLL_BIT(c) (1u << (unsigned)(c))

#define TUTTI_DEVICE_LIST(X)                                                   \
    X(CPU, cpu)                                                                \
    X(CUDA, cuda)

typedef enum {
#define TUTTI_DEVICE_ENUM_(up, low) TUTTI_DEVICE_##up,
    TUTTI_DEVICE_LIST(TUTTI_DEVICE_ENUM_)
#undef TUTTI_DEVICE_ENUM_
    TUTTI_DEVICE_COUNT
} tutti_device_type_t;

#define TUTTI_DEVICE_BIT(d) (1u << (unsigned)(d))

/** Where a group member is: its task and device index, its host (members
 *  with the same host number share a host; names via tutti_group_host())
 *  and its NUMA node (-1 if unknown). */
typedef struct {
    int32_t task;
    int32_t device_index;
    int32_t host;
    int32_t numa_node;
} tutti_locality_t;

/** 1 if @p coll reduces (allreduce, reduce, reduce_scatter). */
static inline int tutti_collective_reduces(tutti_collective_t coll)
{
    return coll == TUTTI_COLL_ALLREDUCE || coll == TUTTI_COLL_REDUCE ||
           coll == TUTTI_COLL_REDUCE_SCATTER;
}

/** 1 if @p coll has a root (broadcast, reduce, gather). */
static inline int tutti_collective_rooted(tutti_collective_t coll)
{
    return coll == TUTTI_COLL_BROADCAST || coll == TUTTI_COLL_REDUCE ||
           coll == TUTTI_COLL_GATHER;
}

/** 1 for the floating types (float16, bfloat16, float32, float64). */
static inline int tutti_dtype_is_float(tutti_dtype_t dtype)
{
    return dtype == TUTTI_FLOAT16 || dtype == TUTTI_BFLOAT16 ||
           dtype == TUTTI_FLOAT32 || dtype == TUTTI_FLOAT64;
}

/** Size in bytes of one element of @p dtype; 0 for an invalid value.
 *  Inline for modules that do not link libtutti, so it sets no
 *  tutti_last_error(). */
inline size_t tutti_dtype_size(tutti_dtype_t dtype)
{
    static const size_t sizes[] = {
#define TUTTI_DTYPE_SIZE_(up, low, size) size,
        TUTTI_DTYPE_LIST(TUTTI_DTYPE_SIZE_)
#undef TUTTI_DTYPE_SIZE_
    };
    return (unsigned)dtype < TUTTI_DTYPE_COUNT ? sizes[dtype] : 0;
}

/** Names as used in YAML and logs ("float32", "sum", "allreduce", "cpu").
 *  Return a static string, or NULL for an invalid value.  tutti_dtype_name()
 *  is inline for modules that do not link libtutti and sets no
 *  tutti_last_error(); the other three record one naming the value (not
 *  logged: callers probe). */
inline const char *tutti_dtype_name(tutti_dtype_t dtype)
{
    /* An invalid value reads the NULL entry at the end: a NULL from a
     * conditional instead would make GCC's -Wformat-overflow flag callers
     * that print the name of a valid data type held in a variable. */
    static const char *const names[TUTTI_DTYPE_COUNT + 1] = {
#define TUTTI_DTYPE_NAME_(up, low, size) #low,
        TUTTI_DTYPE_LIST(TUTTI_DTYPE_NAME_)
#undef TUTTI_DTYPE_NAME_
        NULL};
    return names[(unsigned)dtype < TUTTI_DTYPE_COUNT
                     ? (unsigned)dtype
                     : (unsigned)TUTTI_DTYPE_COUNT];
}
const char *tutti_op_name(tutti_op_t op);
const char *tutti_collective_name(tutti_collective_t coll);
const char *tutti_device_type_name(tutti_device_type_t type);
/** Parse a name back; return TUTTI_ERR_NOT_FOUND for an unknown name,
 *  TUTTI_ERR_INVALID_ARG for a NULL @p name or output.  Either way
 *  tutti_last_error() names the argument (not logged: callers probe) and
 *  the output is left as it was. */
tutti_status_t tutti_dtype_parse(const char *name, tutti_dtype_t *dtype_out);
tutti_status_t tutti_op_parse(const char *name, tutti_op_t *op_out);
tutti_status_t tutti_collective_parse(const char *name,
                                      tutti_collective_t *coll_out);
tutti_status_t tutti_device_type_parse(const char *name,
                                       tutti_device_type_t *type_out);

/** Parse a byte count: "4096", "64K", "1M", "2G" (binary suffixes K, M,
 *  G, T, optional B, any case).  TUTTI_ERR_INVALID_ARG otherwise, or for a
 *  NULL @p text or @p bytes_out, recorded as the parse functions do. */
tutti_status_t tutti_size_parse(const char *text, uint64_t *bytes_out);

#endif
