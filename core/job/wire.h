/*
 * What the coordinator and the members tell each other (internal): the
 * payloads of JOIN, GROUP, INST and INST_OK frames.  Plain data, the same
 * layout on every task of a job (one build).
 */
#ifndef TUTTI_CORE_JOB_WIRE_H
#define TUTTI_CORE_JOB_WIRE_H

#include <stdint.h>

#include <tutti/module.h>
#include <tutti/tutti.h>

#include "job/ctrl.h"

#define TUTTI_HOST_NAME_MAX 64
#define TUTTI_MAX_HOSTS 8  /* hosts in one group (one control frame) */

#define TUTTI__MAX_FINGERPRINTS 24

typedef struct {
    char name[TUTTI_NAME_MAX];
    char version[32];
    uint64_t hash;
} tutti__fingerprint_t;

#define TUTTI__MAX_MEMBERS                                                     \
    200 /* the group table and a ring order fit one frame */

typedef struct {
    int32_t size, device_type, device_index, num_mods;
    tutti__fingerprint_t mods[TUTTI__MAX_FINGERPRINTS];
    char host[TUTTI_HOST_NAME_MAX];
    int32_t numa_node;
    int32_t has_order;         /* ring_order given */
    int32_t order[TUTTI__MAX_MEMBERS]; /* size entries when has_order */
    uint32_t pci;              /* the GPU's PCI bus id (tutti__pci_code) */
    int32_t device_order;      /* tutti_device_order_t */
} tutti__join_payload_t;

/* A CUDA group's members are fewer: their GPUs' PCI bus ids travel too. */
#define TUTTI__MAX_CUDA_MEMBERS 128

/* Followed by num_hosts host names of TUTTI_HOST_NAME_MAX bytes, then,
 * when has_pci, size PCI bus ids (uint32_t, tutti__pci_code). */
typedef struct {
    int32_t size, num_tasks, num_hosts, has_pci;
    tutti_locality_t members[];
} tutti__group_payload_t;

_Static_assert(sizeof(tutti__group_payload_t) +
                       TUTTI__MAX_MEMBERS * sizeof(tutti_locality_t) +
                       TUTTI_MAX_HOSTS * TUTTI_HOST_NAME_MAX <=
                   TUTTI_CTRL_PAYLOAD,
               "group table");
_Static_assert(sizeof(tutti__group_payload_t) +
                       TUTTI__MAX_CUDA_MEMBERS * (sizeof(tutti_locality_t) +
                                                  sizeof(uint32_t)) +
                       TUTTI_MAX_HOSTS * TUTTI_HOST_NAME_MAX <=
                   TUTTI_CTRL_PAYLOAD,
               "CUDA group table");

typedef struct {
    int32_t rank, size, collective, dtype, op, root, device_type, num_tasks;
    uint64_t count;
    char algorithm[TUTTI_NAME_MAX];
    double pre_scale, post_scale;
    uint64_t perm_hash;
} tutti__inst_payload_t;

typedef struct {
    char algorithm[TUTTI_NAME_MAX];
    char detail[512];
    uint32_t details_len;
    unsigned char details[TUTTI_DETAILS_MAX];
    uint32_t group_details_len;      /* the module's init_group_params */
    unsigned char group_details[TUTTI_GROUP_DETAILS_MAX];
} tutti__decision_payload_t;

_Static_assert(sizeof(tutti__join_payload_t) <= TUTTI_CTRL_PAYLOAD,
               "join payload");
_Static_assert(sizeof(tutti__decision_payload_t) <= TUTTI_CTRL_PAYLOAD,
               "decision");

#endif
