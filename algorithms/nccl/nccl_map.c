/*
 * The NCCL module's pure mappings and the checks of supports() that need
 * no CUDA call (see nccl_map.h).
 */
#include <stdio.h>
#include <string.h>

#include "nccl_map.h"

/* Names as the core prints them, from the public lists, so that this
 * file needs no libtutti symbol (a module links none). */
static const char *dtype_name(tutti_dtype_t v)
{
    static const char *const names[] = {
#define NAME_(up, low, size) #low,
        TUTTI_DTYPE_LIST(NAME_)
#undef NAME_
    };
    return (unsigned)v < TUTTI_DTYPE_COUNT ? names[v] : NULL;
}

static const char *op_name(tutti_op_t v)
{
    static const char *const names[] = {
#define NAME_(up, low) #low,
        TUTTI_OP_LIST(NAME_)
#undef NAME_
    };
    return (unsigned)v < TUTTI_OP_COUNT ? names[v] : NULL;
}

static const char *coll_name(tutti_collective_t v)
{
    static const char *const names[] = {
#define NAME_(up, low) #low,
        TUTTI_COLL_LIST(NAME_)
#undef NAME_
    };
    return (unsigned)v < TUTTI_COLL_COUNT ? names[v] : "(invalid)";
}

static const char *device_name(tutti_device_type_t v)
{
    static const char *const names[] = {
#define NAME_(up, low) #low,
        TUTTI_DEVICE_LIST(NAME_)
#undef NAME_
    };
    return (unsigned)v < TUTTI_DEVICE_COUNT ? names[v] : "(invalid)";
}

int tutti_alg_nccl_map_dtype(tutti_dtype_t dtype, ncclDataType_t *out)
{
    ncclDataType_t t;
    switch (dtype) {
    case TUTTI_INT8: t = ncclInt8; break;
    case TUTTI_UINT8: t = ncclUint8; break;
    case TUTTI_INT32: t = ncclInt32; break;
    case TUTTI_UINT32: t = ncclUint32; break;
    case TUTTI_INT64: t = ncclInt64; break;
    case TUTTI_UINT64: t = ncclUint64; break;
    case TUTTI_FLOAT16: t = ncclFloat16; break;
    case TUTTI_BFLOAT16: t = ncclBfloat16; break;
    case TUTTI_FLOAT32: t = ncclFloat32; break;
    case TUTTI_FLOAT64: t = ncclFloat64; break;
    default: return 0;
    }
    *out = t;
    return 1;
}

int tutti_alg_nccl_map_op(tutti_op_t op, ncclRedOp_t *out)
{
    ncclRedOp_t o;
    switch (op) {
    case TUTTI_OP_SUM: o = ncclSum; break;
    case TUTTI_OP_PROD: o = ncclProd; break;
    case TUTTI_OP_MIN: o = ncclMin; break;
    case TUTTI_OP_MAX: o = ncclMax; break;
    default: return 0;
    }
    *out = o;
    return 1;
}

int tutti_alg_nccl_check_gpus(int n, const tutti_locality_t *localities,
                              const char *const *pci_bus_ids, char *why,
                              size_t len)
{
    if (localities == NULL || pci_bus_ids == NULL)
        return 1;
    for (int i = 0; i < n; i++) {
        const char *a = pci_bus_ids[i];
        if (a == NULL || a[0] == '\0')
            continue;
        for (int j = i + 1; j < n; j++) {
            const char *b = pci_bus_ids[j];
            if (b == NULL || localities[i].host != localities[j].host ||
                strcmp(a, b) != 0)
                continue;
            snprintf(why, len, "ranks %d and %d share GPU %s on host %d: "
                     "NCCL needs one GPU per rank", i, j, a,
                     (int)localities[i].host);
            return 0;
        }
    }
    return 1;
}

int tutti_alg_nccl_check(const tutti_alg_instance_t *inst, char *why,
                         size_t len)
{
    ncclDataType_t t;
    ncclRedOp_t o;

    if (inst->device_type != TUTTI_DEVICE_CUDA) {
        snprintf(why, len, "device type %s: NCCL runs on cuda devices only",
                 device_name(inst->device_type));
        return 0;
    }
    if (!tutti_alg_nccl_map_dtype(inst->dtype, &t)) {
        const char *name = dtype_name(inst->dtype);
        if (name != NULL)
            snprintf(why, len, "data type %s: NCCL has no such type", name);
        else
            snprintf(why, len, "data type %d: not one NCCL knows",
                     (int)inst->dtype);
        return 0;
    }
    /* avg reaches the implementation as sum (the core divides). */
    if (tutti_collective_reduces(inst->collective) &&
        inst->op != TUTTI_OP_AVG && !tutti_alg_nccl_map_op(inst->op, &o)) {
        const char *name = op_name(inst->op);
        if (name != NULL)
            snprintf(why, len, "op %s: NCCL has no such reduction", name);
        else
            snprintf(why, len, "op %d: not one NCCL knows", (int)inst->op);
        return 0;
    }
    if (inst->count == TUTTI_COUNT_PER_RANK &&
        inst->collective != TUTTI_COLL_REDUCE_SCATTER) {
        snprintf(why, len, "%s with per-rank counts: its output sizes are "
                 "known only after an exchange, which cannot be ordered on "
                 "the caller's stream", coll_name(inst->collective));
        return 0;
    }
    return tutti_alg_nccl_check_gpus(inst->group_size, inst->localities,
                                     inst->pci_bus_ids, why, len);
}
