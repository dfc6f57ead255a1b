/*
 * Name tables for data types, ops, collectives and device types.  The data
 * types' sizes and names are inline definitions in tutti/types.h; the two
 * declarations below make this file hold their external definitions, which
 * libtutti exports.  The name table here serves tutti_dtype_parse().
 * A failing lookup or parse records its cause quietly (callers probe
 * them): the function, the argument and its value.
 */
#include <string.h>

#include <tutti/tutti.h>

#include "base/log.h"
#include "base/sbuf.h"
#include "base/size.h"
#include "base/type_names.h"

#define SIZE_EXPECTED                                                          \
    "a whole number of bytes with an optional K, M, G or T suffix and an "     \
    "optional B, e.g. 4096, 64K, 1M"

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

const char *tutti__op_name(tutti_op_t op)
{
    return (unsigned)op < TUTTI_OP_COUNT ? op_names[op] : NULL;
}

const char *tutti__collective_name(tutti_collective_t coll)
{
    return (unsigned)coll < TUTTI_COLL_COUNT ? coll_names[coll] : NULL;
}

const char *tutti__device_type_name(tutti_device_type_t type)
{
    return (unsigned)type < TUTTI_DEVICE_COUNT ? device_names[type] : NULL;
}

/* What a public lookup returns: @p name, or NULL recorded quietly (callers
 * probe), naming the function @p call, its argument @p arg of enum
 * @p type, the value and the range. */
static const char *looked_up(const char *name, const char *call,
                             const char *arg, const char *type, int value,
                             int count)
{
    if (name == NULL)
        tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "%s: %s %d is not a %s; "
                           "expected 0 to %d", call, arg, value, type,
                           count - 1);
    return name;
}

const char *tutti_op_name(tutti_op_t op)
{
    return looked_up(tutti__op_name(op), "tutti_op_name", "op", "tutti_op_t",
                     (int)op, TUTTI_OP_COUNT);
}

const char *tutti_collective_name(tutti_collective_t coll)
{
    return looked_up(tutti__collective_name(coll), "tutti_collective_name",
                     "coll", "tutti_collective_t", (int)coll,
                     TUTTI_COLL_COUNT);
}

const char *tutti_device_type_name(tutti_device_type_t type)
{
    return looked_up(tutti__device_type_name(type), "tutti_device_type_name",
                     "type", "tutti_device_type_t", (int)type,
                     TUTTI_DEVICE_COUNT);
}

/* @p names joined by ", ", for the messages of a refused parse. */
static void names_text(const char *const *names, int n, char *buf,
                       size_t len)
{
    tutti__sbuf_t sb = {buf, len, 0};
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        tutti__sbuf_printf(&sb, "%s%s", i > 0 ? ", " : "", names[i]);
}

/* The parse @p call: the index of @p name in @p names.  A NULL @p name or
 * output @p out (named @p out_name) is refused, and a name not in
 * @p names ("is not @p what"), recorded quietly: callers probe. */
static tutti_status_t find_name(const char *call, const char *what,
                                const char *out_name,
                                const char *const *names, int n,
                                const char *name, const void *out,
                                int *index_out)
{
    char expected[256];

    if (name != NULL && out == NULL)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "%s: %s is NULL",
                                  call, out_name);
    for (int i = 0; name != NULL && i < n; i++) {
        if (strcmp(names[i], name) == 0) {
            *index_out = i;
            return TUTTI_OK;
        }
    }
    names_text(names, n, expected, sizeof(expected));
    if (name == NULL)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "%s: name is NULL; "
                                  "expected one of %s", call, expected);
    return tutti__error_quiet(TUTTI_ERR_NOT_FOUND, "%s: name '%s' is not %s; "
                              "expected one of %s", call, name, what,
                              expected);
}

#define DEFINE_PARSE_(fn, type, what, out_name, names, count)                  \
    tutti_status_t fn(const char *name, type *out_name)                        \
    {                                                                          \
        int i = 0;                                                             \
        tutti_status_t st = find_name(#fn, what, #out_name, names,             \
                                      (int)(count), name, out_name, &i);       \
        if (st == TUTTI_OK)                                                    \
            *out_name = (type)i;                                               \
        return st;                                                             \
    }

DEFINE_PARSE_(tutti_dtype_parse, tutti_dtype_t, "a dtype", dtype_out,
              dtype_names, TUTTI_DTYPE_COUNT)
DEFINE_PARSE_(tutti_op_parse, tutti_op_t, "an op", op_out, op_names,
              TUTTI_OP_COUNT)
DEFINE_PARSE_(tutti_collective_parse, tutti_collective_t, "a collective",
              coll_out, coll_names, TUTTI_COLL_COUNT)
DEFINE_PARSE_(tutti_device_type_parse, tutti_device_type_t, "a device type",
              type_out, device_names, TUTTI_DEVICE_COUNT)

tutti_status_t tutti_size_parse(const char *text, uint64_t *bytes_out)
{
    uint64_t v;

    if (text == NULL)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "tutti_size_parse: "
                                  "text is NULL; expected %s",
                                  SIZE_EXPECTED);
    if (bytes_out == NULL)
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "tutti_size_parse: "
                                  "bytes_out is NULL");
    if (!tutti__size_value(text, &v))
        return tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "tutti_size_parse: "
                                  "text '%s' is not a size; expected %s",
                                  text, SIZE_EXPECTED);
    *bytes_out = v;
    return TUTTI_OK;
}
