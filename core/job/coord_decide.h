/*
 * Inside the coordinator (internal to core/job): the records of instances
 * being agreed and of formed groups, shared by coordinator.c (groups and
 * instances as members' frames bring them) and coord_decide.c (what is
 * decided for an agreed instance).
 */
#ifndef TUTTI_CORE_JOB_COORD_DECIDE_H
#define TUTTI_CORE_JOB_COORD_DECIDE_H

#include <stdint.h>

#include "device/device.h"
#include "job/job.h"
#include "job/wire.h"

typedef struct coord_inst {
    uint64_t group_key, instance_key;
    int size, arrived;
    tutti__inst_payload_t *by_rank;
    int *task_of_rank;               /* -1: not arrived */
    struct coord_inst *next;
} coord_inst_t;

/* What a formed group's decisions need: where its members are (for
 * supports()) and the per-group details each module's init_group_params
 * wrote, made once per group and module.  Replaced when a group of the
 * same key forms again. */
typedef struct coord_formed {
    uint64_t key;
    int size;
    int num_tasks;                    /* distinct tasks among the members */
    int num_hosts;                    /* distinct hosts among the members */
    int device_type;
    tutti_locality_t *members;        /* rank order */
    char (*pci)[TUTTI__PCI_BUS_ID_LEN];
    const char **pci_ids;             /* pointers into pci */
    size_t num_modules;
    struct coord_group_details {
        int made;                     /* 1: ok, -1: init_group_params failed */
        tutti_status_t status;
        char error[256];
        uint32_t len;
        unsigned char bytes[TUTTI_GROUP_DETAILS_MAX];
    } *details;                       /* per registry module, on demand */
    struct coord_formed *next;
} coord_formed_t;

/* What the coordinator keeps, bounded so that no task's frames make it
 * grow without end: groups waiting for members, instances waiting for
 * their members' proposals, and formed groups' records (the least
 * recently used one goes when a new one would pass the bound). */
#define TUTTI__COORD_MAX_PENDING_GROUPS 1024
#define TUTTI__COORD_MAX_PENDING_INSTANCES 65536
#define TUTTI__COORD_MAX_FORMED 4096

struct tutti__coord {
    struct coord_group *groups;
    int num_groups;
    coord_inst_t **insts;             /* instances being agreed: a hash
                                         table of chains (next), doubled as
                                         it fills: a job with thousands
                                         proposed at once costs O(1) each */
    size_t inst_buckets, num_insts;
    coord_formed_t *formed;           /* most recently used first */
    int num_formed;
};

/** Keeps what decisions for group @p key, just formed, need: its
 *  @p size members in rank order over @p num_tasks tasks on @p num_hosts
 *  hosts, their device type and their GPUs' PCI bus ids
 *  (tutti__pci_code), in place of an earlier group's of the same key, so
 *  a group formed again gets its modules' group details afresh. */
void tutti__coord_formed_record(tutti__coord_t *r, uint64_t key, int size,
                                int num_tasks, int num_hosts,
                                int device_type,
                                const tutti_locality_t *members,
                                const uint32_t *pci);
/** The record of formed group @p key, now the most recently used; NULL if
 *  none (never formed, or dropped for newer ones). */
coord_formed_t *tutti__coord_formed_find(tutti__coord_t *r, uint64_t key);
void tutti__coord_formed_free_all(tutti__coord_t *r);
/** The implementation for an agreed instance, its plan and its module's
 *  group details into @p d; a refusal's reason in d->detail. */
tutti_status_t tutti__coord_choose(tutti__job_t *job, const coord_inst_t *ci,
                                   tutti__decision_payload_t *d);

#endif
