/*
 * The core's CUDA room (internal): the CUDA operations table loaded on
 * first use (device.c), a GPU's PCI bus id as a number that travels in
 * the coordinator's frames, and the staging of CUDA data through pinned
 * host buffers for implementations that run on host memory (stage.c).
 * Nothing here includes a CUDA header: every CUDA call goes through the
 * table, so libtutti needs no CUDA library unless a CUDA group is joined.
 */
#ifndef TUTTI_CORE_DEVICE_DEVICE_H
#define TUTTI_CORE_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include <tutti/status.h>
#include <tutti/types.h>

#include "device/cuda_ops.h"

/**
 * The CUDA operations, loaded from libtutti_cuda the first time (the build
 * tree's when libtutti runs from it, else the installed one).  Fails with
 * TUTTI_ERR_UNSUPPORTED and a detail naming the cause: a build without
 * CUDA, the library missing or unloadable (dlerror's text), a table of
 * another version.  Thread-safe; the answer is kept.
 */
tutti_status_t tutti__cuda_get(const tutti__cuda_ops_t **ops_out);
/** The table if it was loaded already, else NULL (loads nothing). */
const tutti__cuda_ops_t *tutti__cuda_loaded(void);
/** Tests: use @p ops in place of the library from now on (NULL: forget
 *  it; the next tutti__cuda_get loads the library). */
void tutti__cuda_use(const tutti__cuda_ops_t *ops);
/** "<what>: <CUDA's error text>" into the thread's last error, with
 *  @p status; returns @p status. */
tutti_status_t tutti__cuda_error(tutti_status_t status, int err,
                                 const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** "0000:3b:00.0" as 0x003b0000 | device << 3 | function (domain 16
 *  bits, bus 8, device 5, function 3); 0 for "" or an unreadable id. */
uint32_t tutti__pci_code(const char *bus_id);
/** The code back as "dddd:bb:dd.f" ("" for 0) into @p buf
 *  (TUTTI__PCI_BUS_ID_LEN bytes). */
void tutti__pci_text(uint32_t code, char *buf);

#endif
