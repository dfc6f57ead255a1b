/*
 * A member's side of the coordinator's work (member.h): the join, the
 * first-execution proposal, and the decisions the coordinator sends back,
 * queued on each group's member record.
 */
#define _GNU_SOURCE /* getcpu */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "job/member.h"
#include "job/wire.h"

typedef struct join_wait {
    uint64_t key;
    int device_index;
    int done;
    tutti_status_t status;
    char error[TUTTI_CTRL_PAYLOAD];
    tutti__group_table_t table;
    struct join_wait *next;
} join_wait_t;

struct tutti__members {
    join_wait_t *waits;
    tutti__job_member_t *groups;    /* joined, for their decisions */
};

/* ---- frames from the coordinator ---------------------------------------- */

static void member_group(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    tutti__members_t *r = job->members;
    for (join_wait_t *w = r->waits; w; w = w->next) {
        if (w->done || w->key != msg->group_key ||
            w->device_index != msg->device_index)
            continue;
        w->done = 1;
        if (msg->type == TUTTI_CTRL_GROUP_ERR) {
            const tutti__decision_payload_t *d = (const void *)msg->payload;
            w->status = TUTTI_ERR_MISMATCH;
            tutti__job_copy_text(w->error, sizeof(w->error), d->detail,
                      sizeof(d->detail));
        } else {
            const tutti__group_payload_t *gp = (const void *)msg->payload;
            if (gp->size < 1 || gp->size > TUTTI__MAX_MEMBERS ||
                gp->num_hosts < 0 || gp->num_hosts > TUTTI_MAX_HOSTS ||
                gp->num_tasks < 1 ||
                sizeof(*gp) + (size_t)gp->size * sizeof(tutti_locality_t) +
                        (size_t)gp->num_hosts * TUTTI_HOST_NAME_MAX +
                        (gp->has_pci ? (size_t)gp->size * 4 : 0) >
                    msg->len) {
                w->status = TUTTI_ERR_INTERNAL;
                snprintf(w->error, sizeof(w->error), "group 0x%llx: the "
                         "coordinator's table is malformed (%d members, %d "
                         "hosts in %u bytes)",
                         (unsigned long long)msg->group_key, gp->size,
                         gp->num_hosts, msg->len);
                tutti__job_wake(job);
                return;
            }
            size_t bytes = (size_t)gp->size * sizeof(tutti_locality_t);
            size_t hbytes = (size_t)gp->num_hosts * TUTTI_HOST_NAME_MAX;
            size_t pbytes = gp->has_pci ? (size_t)gp->size * 4 : 0;
            w->table.members = malloc(bytes);
            w->table.hosts = malloc(hbytes ? hbytes : 1);
            w->table.pci = pbytes ? malloc(pbytes) : NULL;
            w->status = w->table.members && w->table.hosts &&
                                (pbytes == 0 || w->table.pci)
                            ? TUTTI_OK : TUTTI_ERR_NO_MEMORY;
            if (w->status == TUTTI_OK) {
                memcpy(w->table.members, gp->members, bytes);
                memcpy(w->table.hosts, (const char *)gp->members + bytes,
                       hbytes);
                if (pbytes)
                    memcpy(w->table.pci,
                           (const char *)gp->members + bytes + hbytes, pbytes);
            }
            w->table.size = gp->size;
            w->table.num_tasks = gp->num_tasks;
            w->table.num_hosts = gp->num_hosts;
        }
        tutti__job_wake(job);
        return;
    }
}

static void member_decision(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    const tutti__decision_payload_t *d = (const void *)msg->payload;
    for (tutti__job_member_t *g = job->members->groups; g; g = g->next) {
        if (g->group_key != msg->group_key)
            continue;
        tutti__decision_t *dec = calloc(1, sizeof(*dec));
        if (dec == NULL) {
            tutti__log(TUTTI_LOG_ERROR, "resolve", "group 0x%llx: no memory "
                       "for the decision on instance 0x%llx",
                       (unsigned long long)g->group_key,
                       (unsigned long long)msg->instance_key);
            continue;
        }
        dec->instance_key = msg->instance_key;
        dec->status = msg->type == TUTTI_CTRL_INST_OK ? TUTTI_OK
                      : msg->status != 0 ? (tutti_status_t)msg->status
                                         : TUTTI_ERR_TIMEOUT;
        tutti__job_copy_text(dec->algorithm, sizeof(dec->algorithm),
                             d->algorithm, sizeof(d->algorithm));
        tutti__job_copy_text(dec->detail, sizeof(dec->detail), d->detail,
                             sizeof(d->detail));
        dec->details_len = d->details_len <= TUTTI_DETAILS_MAX
                               ? d->details_len : 0;
        memcpy(dec->details, d->details, dec->details_len);
        dec->group_details_len =
            d->group_details_len <= TUTTI_GROUP_DETAILS_MAX
                ? d->group_details_len : 0;
        memcpy(dec->group_details, d->group_details, dec->group_details_len);
        dec->next = g->decisions;
        g->decisions = dec;
        atomic_store_explicit(&g->has_decisions, 1, memory_order_release);
    }
}

static const tutti__job_route_t member_routes[] = {
    {TUTTI_CTRL_GROUP, member_group},
    {TUTTI_CTRL_GROUP_ERR, member_group},
    {TUTTI_CTRL_INST_OK, member_decision},
    {TUTTI_CTRL_INST_ERR, member_decision},
};

tutti_status_t tutti__member_init(tutti__job_t *job)
{
    job->members = calloc(1, sizeof(*job->members));
    return tutti__job_part(job, job->members, "members' state", member_routes,
                           sizeof(member_routes) / sizeof(member_routes[0]));
}

void tutti__member_fini(tutti__job_t *job)
{
    /* Groups still joined keep their records; their leave unlinks them. */
    free(job->members);
    job->members = NULL;
}

tutti_status_t tutti__member_add(tutti__job_t *job, tutti__job_member_t *m)
{
    pthread_mutex_lock(&job->lock);
    m->next = job->members->groups;
    job->members->groups = m;
    pthread_mutex_unlock(&job->lock);
    return TUTTI_OK;
}

void tutti__member_remove(tutti__job_t *job, tutti__job_member_t *m)
{
    pthread_mutex_lock(&job->lock);
    for (tutti__job_member_t **pp = job->members ? &job->members->groups
                                                 : NULL;
         pp != NULL && *pp != NULL; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    }
    tutti__decision_t *d = m->decisions;
    m->decisions = NULL;
    pthread_mutex_unlock(&job->lock);
    while (d) {
        tutti__decision_t *next = d->next;
        free(d);
        d = next;
    }
}

/* FNV-1a of a permutation, for comparing members' (0 for none). */
static uint64_t perm_hash(const int *perm, int n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; perm != NULL && i < n; i++) {
        h ^= (uint64_t)(uint32_t)perm[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

tutti_status_t tutti__member_propose(tutti__job_t *job,
                                     const tutti__job_member_t *g,
                                     const tutti_instance_params_t *p)
{
    tutti__ctrl_msg_t m;
    tutti__job_msg_init(&m, TUTTI_CTRL_INST, g->group_key, p->instance_key,
                        g->device_index);
    tutti__inst_payload_t *ip = (tutti__inst_payload_t *)m.payload;
    memset(ip, 0, sizeof(*ip));
    *ip = (tutti__inst_payload_t){
        g->rank, g->size, p->collective, p->dtype, p->op, p->root,
        g->device_type, g->num_tasks, p->count, "", p->pre_scale,
        p->post_scale,
        p->collective == TUTTI_COLL_PERMUTE ? perm_hash(p->permutation,
                                                        g->size)
                                            : 0};
    if (p->algorithm) {
        /* Members may name it by an old name (an alias) or its own: the
         * coordinator compares its own. */
        const tutti__impl_entry_t *e = tutti__registry_find(job->reg,
                                                            p->algorithm);
        snprintf(ip->algorithm, sizeof(ip->algorithm), "%s",
                 e != NULL ? e->impl->name : p->algorithm);
    }
    m.len = sizeof(*ip);
    pthread_mutex_lock(&job->lock);
    tutti_status_t st = tutti__job_send(job, TUTTI__COORDINATOR_TASK, &m);
    pthread_mutex_unlock(&job->lock);
    return st;
}

tutti__decision_t *tutti__member_take(tutti__job_t *job,
                                      tutti__job_member_t *m)
{
    pthread_mutex_lock(&job->lock);
    tutti__decision_t *d = m->decisions;
    m->decisions = NULL;
    atomic_store_explicit(&m->has_decisions, 0, memory_order_relaxed);
    pthread_mutex_unlock(&job->lock);
    return d;
}

void tutti__member_timeout(tutti__job_t *job, const tutti__job_member_t *g,
                           uint64_t instance_key)
{
    tutti__ctrl_msg_t m;
    tutti__job_msg_init(&m, TUTTI_CTRL_INST_TIMEOUT, g->group_key,
                        instance_key, g->device_index);
    pthread_mutex_lock(&job->lock);
    tutti__job_send(job, TUTTI__COORDINATOR_TASK, &m);
    pthread_mutex_unlock(&job->lock);
}

/* ---- joining ------------------------------------------------------------- */

/* What this task's modules are, for the agreement check. */
static void fingerprints(const tutti__job_t *job, tutti__join_payload_t *j)
{
    j->num_mods = 0;
    for (size_t i = 0; i < job->reg->num_modules; i++) {
        const tutti__module_t *m = &job->reg->modules[i];
        if (m->desc == NULL || j->num_mods == TUTTI__MAX_FINGERPRINTS)
            continue;
        tutti__fingerprint_t *f = &j->mods[j->num_mods++];
        snprintf(f->name, sizeof(f->name), "%s", m->name);
        snprintf(f->version, sizeof(f->version), "%s", m->version);
        f->hash = m->file_hash;
    }
}

/* The device resolver's part on a CPU device: host name and the NUMA node
 * of the processor the joining thread runs on. */
static void where_am_i(tutti__join_payload_t *j)
{
    unsigned cpu, node;
    if (gethostname(j->host, sizeof(j->host)) != 0)
        snprintf(j->host, sizeof(j->host), "unknown");
    j->host[sizeof(j->host) - 1] = '\0';
    j->numa_node = getcpu(&cpu, &node) == 0 ? (int32_t)node : -1;
}

tutti_status_t tutti__member_join(tutti__job_t *job, uint64_t key, int size,
                                  tutti_device_type_t type, int device_index,
                                  const int *ring_order, int device_order,
                                  uint32_t pci, double timeout,
                                  tutti__group_table_t *table_out)
{
    tutti__members_t *r = job->members;
    join_wait_t w;
    tutti__ctrl_msg_t m;
    struct timespec until;
    tutti_status_t st;

    memset(&w, 0, sizeof(w));
    w.key = key;
    w.device_index = device_index;
    tutti__job_msg_init(&m, TUTTI_CTRL_JOIN, key, 0, device_index);
    tutti__join_payload_t *j = (tutti__join_payload_t *)m.payload;
    j->size = size;
    j->device_type = type;
    j->device_index = device_index;
    fingerprints(job, j);
    where_am_i(j);
    j->pci = pci;
    j->device_order = device_order;
    j->has_order = ring_order != NULL;
    for (int i = 0; ring_order && i < size && i < TUTTI__MAX_MEMBERS; i++)
        j->order[i] = ring_order[i];
    m.len = sizeof(*j);
    tutti__job_deadline(&until, timeout);

    pthread_mutex_lock(&job->lock);
    w.next = r->waits;
    r->waits = &w;
    st = tutti__job_send(job, TUTTI__COORDINATOR_TASK, &m);
    while (st == TUTTI_OK && !w.done && job->abort_status == TUTTI_OK &&
           tutti__job_wait(job, &until) == 0)
        ;
    if (st == TUTTI_OK && !w.done && job->abort_status != TUTTI_OK) {
        st = tutti__error(job->abort_status, "resolve", "group 0x%llx: %s",
                          (unsigned long long)key, job->abort_reason);
    } else if (st == TUTTI_OK && !w.done) {
        /* Ask the coordinator who had come; it answers at once. */
        tutti__job_msg_init(&m, TUTTI_CTRL_JOIN_CANCEL, key, 0, device_index);
        tutti__job_send(job, TUTTI__COORDINATOR_TASK, &m);
        tutti__job_deadline(&until, 2.0);
        while (!w.done && tutti__job_wait(job, &until) == 0)
            ;
        if (w.done && w.status == TUTTI_OK)
            st = TUTTI_OK; /* the last member came after all */
        else
            st = tutti__error(TUTTI_ERR_TIMEOUT, "resolve", "%s",
                              w.done ? w.error
                                     : "group not formed within the time "
                                       "limit; the coordinator (task 0) did "
                                       "not answer");
    } else if (st == TUTTI_OK && w.status != TUTTI_OK) {
        st = tutti__error(w.status, "resolve", "%s", w.error);
    }
    for (join_wait_t **pp = &r->waits; *pp; pp = &(*pp)->next) {
        if (*pp == &w) {
            *pp = w.next;
            break;
        }
    }
    pthread_mutex_unlock(&job->lock);
    if (st == TUTTI_OK) {
        *table_out = w.table;
    } else {
        free(w.table.members);
        free(w.table.hosts);
        free(w.table.pci);
    }
    return st;
}
