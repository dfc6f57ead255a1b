/*
 * Name tables for data types, ops, collectives and device types.  The data
 * types' sizes and names are inline definitions in tutti/types.h; the two
 * declarations below make this file hold their external definitions, which
 * libtutti exports.  The name table here serves tutti_dtype_parse().
 */
#include <string.h>

#include <tutti/tutti.h>

#include "base/size.h"

extern size_t tutti_dtype_size(tutti_dtype_t dtype);
extern const char *tutti_dtype_name(tutti_dtype_t dtype);

static const char *const dtype_names[] = {
#define N_(up, low, size) #low,
    TUTTI_DTYPE_LIST(N_)
#undef N_
};
static const char *const op_names[] = {
#define N_(up, low) #low,
    TUTTI_OP_LIST(N_)
#undef N_
};
static const char *const coll_names[] = {
#define N_(up, low) #low,
    TUTTI_COLL_LIST(N_)
#undef N_
};
static const char *const device_names[] = {
#define N_(up, low) #low,
    TUTTI_DEVICE_LIST(N_)
#undef N_
};

const char *tutti_op_name(tutti_op_t op)
{
    return (unsigned)op < TUTTI_OP_COUNT ? op_names[op] : NULL;
}

const char *tutti_collective_name(tutti_collective_t coll)
{
    return (unsigned)coll < TUTTI_COLL_COUNT ? coll_names[coll] : NULL;
}

const char *tutti_device_type_name(tutti_device_type_t type)
{
    return (unsigned)type < TUTTI_DEVICE_COUNT ? device_names[type] : NULL;
}

static tutti_status_t find_name(const char *const *names, int n,
                                const char *name, int *index_out)
{
    if (name == NULL)
        return TUTTI_ERR_NOT_FOUND;
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], name) == 0) {
            *index_out = i;
            return TUTTI_OK;
        }
    }
    return TUTTI_ERR_NOT_FOUND;
}

#define DEFINE_PARSE_(fn, type, names, count)                                  \
    tutti_status_t fn(const char *name, type *out)                             \
    {                                                                          \
        int i;                                                                 \
        tutti_status_t st = find_name(names, (int)(count), name, &i);          \
        if (st == TUTTI_OK)                                                    \
            *out = (type)i;                                                    \
        return st;                                                             \
    }

DEFINE_PARSE_(tutti_dtype_parse, tutti_dtype_t, dtype_names, TUTTI_DTYPE_COUNT)
DEFINE_PARSE_(tutti_op_parse, tutti_op_t, op_names, TUTTI_OP_COUNT)
DEFINE_PARSE_(tutti_collective_parse, tutti_collective_t, coll_names,
              TUTTI_COLL_COUNT)
DEFINE_PARSE_(tutti_device_type_parse, tutti_device_type_t, device_names,
              TUTTI_DEVICE_COUNT)

tutti_status_t tutti_size_parse(const char *text, uint64_t *bytes_out)
{
    return text ? tutti__parse_size(text, bytes_out) : TUTTI_ERR_INVALID_ARG;
}
