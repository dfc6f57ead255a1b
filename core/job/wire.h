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
} tutti__join_payload_t;

/* Followed by num_hosts host names of TUTTI_HOST_NAME_MAX bytes. */
typedef struct {
    int32_t size, num_tasks, num_hosts, reserved;
    tutti_locality_t members[];
} tutti__group_payload_t;

_Static_assert(sizeof(tutti__group_payload_t) +
                       TUTTI__MAX_MEMBERS * sizeof(tutti_locality_t) +
                       TUTTI_MAX_HOSTS * TUTTI_HOST_NAME_MAX <=
                   TUTTI_CTRL_PAYLOAD,
               "group table");

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
} tutti__decision_payload_t;

_Static_assert(sizeof(tutti__join_payload_t) <= TUTTI_CTRL_PAYLOAD,
               "join payload");
_Static_assert(sizeof(tutti__decision_payload_t) <= TUTTI_CTRL_PAYLOAD,
               "decision");

#endif
