/*
 * The NCCL module's pure mappings: Tutti's data types and reduction ops to
 * NCCL's, and the checks of supports() that need no CUDA call (device
 * type, data type, op, per-rank counts, two ranks on one GPU).  Nothing
 * here calls CUDA or NCCL, so a unit test compiles this file alone.
 */
#ifndef TUTTI_ALG_NCCL_MAP_H
#define TUTTI_ALG_NCCL_MAP_H

#include <stddef.h>

#include <nccl.h>

#include <tutti/module.h>

/** NCCL's type for @p dtype into @p out: 1, or 0 (nothing written) for a
 *  value NCCL has no type for. */
int tutti_alg_nccl_map_dtype(tutti_dtype_t dtype, ncclDataType_t *out);

/** NCCL's op for @p op into @p out: 1, or 0 (nothing written) for a value
 *  this module does not map.  avg is refused: the core applies it as sum
 *  and divides itself, so ncclAvg would divide twice. */
int tutti_alg_nccl_map_op(tutti_op_t op, ncclRedOp_t *out);

/**
 * What supports() can decide without CUDA: 1 if the module can run
 * @p inst, else 0 with one line in @p why (no final period): a device
 * type other than cuda, a data type or op without an NCCL counterpart,
 * per-rank counts other than reduce_scatter's, or two ranks on one GPU
 * (where @p inst gives localities and PCI bus ids).  An op of avg passes:
 * it reaches the implementation as sum.
 */
int tutti_alg_nccl_check(const tutti_alg_instance_t *inst, char *why,
                         size_t len);

/**
 * 0 with the first two ranks of @p n that sit on one GPU named in @p why
 * (same host number in @p localities and the same non-empty bus id in
 * @p pci_bus_ids), else 1.  Either array NULL: 1 (the group is not known
 * yet).  Quadratic in @p n, allocates nothing.
 */
int tutti_alg_nccl_check_gpus(int n, const tutti_locality_t *localities,
                              const char *const *pci_bus_ids, char *why,
                              size_t len);

#endif
