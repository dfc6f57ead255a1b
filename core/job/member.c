/*
 * A member's side of the coordinator's work (member.h): the join, the
 * first-execution proposal, and the decisions the coordinator sends back,
 * queued on each group's member record.
 */
#define _GNU_SOURCE /* getcpu */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "job/member.h"
#include "job/wire.h"

struct tutti__members {
    tutti__join_wait_t *waits;
    tutti__job_member_t *groups;    /* joined, for their decisions */
};

/* ---- frames from the coordinator ---------------------------------------- */

/* Whether @p status is an error status (a refusal carries one). */
static int is_error_status(int32_t status)
{
    return status < 0 && strcmp(tutti_status_name((tutti_status_t)status),
                                "UNKNOWN_STATUS") != 0;
}

/* Writes why a table is refused ("group 0x2a: the coordinator's table:
 * size 3: expected 2, ..."); returns 0. */
static int refuse(char *why, size_t len, uint64_t key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(char *why, size_t len, uint64_t key, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(why, len, "group 0x%llx: the coordinator's table: ",
                     (unsigned long long)key);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < len)
        vsnprintf(why + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

/* Whether @p gp, the coordinator's table in @p len payload bytes, is one
 * @p w can take: the size it joined with, every index within what it
 * indexes, every name ended, each member once and this one among them.
 * The executor places the member from it (tutti__group_place). */
static int table_ok(const tutti__job_t *job, const tutti__join_wait_t *w,
                    const tutti__group_payload_t *gp, uint32_t len,
                    char *why, size_t why_len)
{
    uint64_t key = w->key;
    int cuda = w->device_type == TUTTI_DEVICE_CUDA, mine = 0, tasks = 0;

    if (gp->size != w->size)
        return refuse(why, why_len, key, "size %d: expected %d, the size "
                      "this member joined with", gp->size, w->size);
    if (gp->num_tasks < 1 || gp->num_tasks > job->num_tasks)
        return refuse(why, why_len, key, "num_tasks %d: expected 1..%d, the "
                      "job's tasks", gp->num_tasks, job->num_tasks);
    if (gp->num_hosts < 1 || gp->num_hosts > TUTTI_MAX_HOSTS)
        return refuse(why, why_len, key, "num_hosts %d: expected 1..%d",
                      gp->num_hosts, TUTTI_MAX_HOSTS);
    if (gp->has_pci != cuda)
        return refuse(why, why_len, key, "has_pci %d: expected %d for a %s "
                      "group", gp->has_pci, cuda,
                      tutti__job_dev_name(w->device_type));
    size_t need = sizeof(*gp) + (size_t)gp->size * sizeof(tutti_locality_t) +
                  (size_t)gp->num_hosts * TUTTI_HOST_NAME_MAX +
                  (cuda ? (size_t)gp->size * sizeof(uint32_t) : 0);
    if (need > len)
        return refuse(why, why_len, key, "%u bytes: expected at least %zu "
                      "for %d members on %d hosts", len, need, gp->size,
                      gp->num_hosts);
    for (int i = 0; i < gp->size; i++) {
        const tutti_locality_t *m = &gp->members[i];
        int seen = 0;
        if (m->task < 0 || m->task >= job->num_tasks)
            return refuse(why, why_len, key, "member %d: task %d: expected "
                          "0..%d, the job's tasks", i, m->task,
                          job->num_tasks - 1);
        if (m->device_index < 0)
            return refuse(why, why_len, key, "member %d: device_index %d: "
                          "expected at least 0", i, m->device_index);
        if (m->host < 0 || m->host >= gp->num_hosts)
            return refuse(why, why_len, key, "member %d: host %d: expected "
                          "0..%d, the table's hosts", i, m->host,
                          gp->num_hosts - 1);
        if (m->numa_node < -1)
            return refuse(why, why_len, key, "member %d: numa_node %d: "
                          "expected -1 (unknown) or at least 0", i,
                          m->numa_node);
        for (int k = 0; k < i; k++) {
            const tutti_locality_t *o = &gp->members[k];
            if (o->task == m->task && o->device_index == m->device_index)
                return refuse(why, why_len, key, "members %d and %d are "
                              "both task %d %s:%d", k, i, m->task,
                              tutti__job_dev_name(w->device_type),
                              m->device_index);
            seen |= o->task == m->task;
        }
        tasks += !seen;
        mine += m->task == job->task && m->device_index == w->device_index;
    }
    const char *names = (const char *)gp->members +
                        (size_t)gp->size * sizeof(tutti_locality_t);
    for (int h = 0; h < gp->num_hosts; h++)
        if (memchr(names + (size_t)h * TUTTI_HOST_NAME_MAX, '\0',
                   TUTTI_HOST_NAME_MAX) == NULL)
            return refuse(why, why_len, key, "host %d: name not "
                          "NUL-terminated within its %d bytes", h,
                          TUTTI_HOST_NAME_MAX);
    if (gp->num_tasks != tasks)
        return refuse(why, why_len, key, "num_tasks %d: expected %d, the "
                      "tasks among its members", gp->num_tasks, tasks);
    if (mine != 1)
        return refuse(why, why_len, key, "no member is this one, task %d "
                      "%s:%d", job->task, tutti__job_dev_name(w->device_type),
                      w->device_index);
    return 1;
}

/* Takes the table @p gp (checked) into @p w. */
static void take_table(tutti__join_wait_t *w, const tutti__group_payload_t *gp)
{
    size_t bytes = (size_t)gp->size * sizeof(tutti_locality_t);
    size_t hbytes = (size_t)gp->num_hosts * TUTTI_HOST_NAME_MAX;
    size_t pbytes = gp->has_pci ? (size_t)gp->size * sizeof(uint32_t) : 0;
    w->table.members = malloc(bytes);
    w->table.hosts = malloc(hbytes);
    w->table.pci = pbytes ? malloc(pbytes) : NULL;
    if (w->table.members == NULL || w->table.hosts == NULL ||
        (pbytes != 0 && w->table.pci == NULL)) {
        free(w->table.members);
        free(w->table.hosts);
        free(w->table.pci);
        memset(&w->table, 0, sizeof(w->table));
        w->status = TUTTI_ERR_NO_MEMORY;
        snprintf(w->error, sizeof(w->error), "group 0x%llx: no memory for "
                 "the table of %d members", (unsigned long long)w->key,
                 gp->size);
        return;
    }
    memcpy(w->table.members, gp->members, bytes);
    memcpy(w->table.hosts, (const char *)gp->members + bytes, hbytes);
    if (pbytes)
        memcpy(w->table.pci, (const char *)gp->members + bytes + hbytes,
               pbytes);
    w->table.size = gp->size;
    w->table.num_tasks = gp->num_tasks;
    w->table.num_hosts = gp->num_hosts;
    w->status = TUTTI_OK;
}

static void member_group(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    tutti__members_t *r = job->members;
    for (tutti__join_wait_t *w = r->waits; w; w = w->next) {
        if (w->done || w->key != msg->group_key ||
            w->device_index != msg->device_index)
            continue;
        w->done = 1;
        if (msg->type == TUTTI_CTRL_GROUP_ERR) {
            const tutti__decision_payload_t *d = (const void *)msg->payload;
            w->status = is_error_status(msg->status)
                            ? (tutti_status_t)msg->status
                            : TUTTI_ERR_MISMATCH;
            tutti__job_copy_text(w->error, sizeof(w->error), d->detail,
                                 sizeof(d->detail));
        } else {
            const tutti__group_payload_t *gp = (const void *)msg->payload;
            if (table_ok(job, w, gp, msg->len, w->error, sizeof(w->error)))
                take_table(w, gp);
            else
                w->status = TUTTI_ERR_PEER;
        }
        tutti__job_wake(job);
        return;
    }
}

/* The coordinator's decision in @p msg as @p dec: a refusal's status and
 * text, or what runs; one whose fields do not fit becomes a refusal with
 * TUTTI_ERR_PEER naming the field. */
static void read_decision(const tutti__ctrl_msg_t *msg, tutti__decision_t *dec)
{
    const tutti__decision_payload_t *d = (const void *)msg->payload;
    char what[160] = "";
    dec->instance_key = msg->instance_key;
    tutti__job_copy_text(dec->algorithm, sizeof(dec->algorithm),
                         d->algorithm, sizeof(d->algorithm));
    tutti__job_copy_text(dec->detail, sizeof(dec->detail), d->detail,
                         sizeof(d->detail));
    if (msg->type == TUTTI_CTRL_INST_ERR) {
        dec->status = (tutti_status_t)msg->status;
        if (!is_error_status(msg->status))
            snprintf(what, sizeof(what), "a refusal with status %d: expected "
                     "an error status", (int)msg->status);
    } else if (d->details_len > TUTTI_DETAILS_MAX) {
        snprintf(what, sizeof(what), "details_len %u: expected at most %d",
                 d->details_len, TUTTI_DETAILS_MAX);
    } else if (d->group_details_len > TUTTI_GROUP_DETAILS_MAX) {
        snprintf(what, sizeof(what), "group_details_len %u: expected at "
                 "most %d", d->group_details_len, TUTTI_GROUP_DETAILS_MAX);
    } else {
        dec->status = TUTTI_OK;
        dec->details_len = d->details_len;
        memcpy(dec->details, d->details, dec->details_len);
        dec->group_details_len = d->group_details_len;
        memcpy(dec->group_details, d->group_details, dec->group_details_len);
    }
    if (what[0] != '\0') {
        dec->status = TUTTI_ERR_PEER;
        snprintf(dec->detail, sizeof(dec->detail), "instance 0x%llx of group "
                 "0x%llx: the coordinator's decision: %s",
                 (unsigned long long)msg->instance_key,
                 (unsigned long long)msg->group_key, what);
    }
}

static void member_decision(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
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
        read_decision(msg, dec);
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

void tutti__member_wait_add(tutti__job_t *job, tutti__join_wait_t *w)
{
    w->next = job->members->waits;
    job->members->waits = w;
}

void tutti__member_wait_remove(tutti__job_t *job, tutti__join_wait_t *w)
{
    for (tutti__join_wait_t **pp = &job->members->waits; *pp;
         pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
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
    tutti__join_wait_t w;
    tutti__ctrl_msg_t m;
    struct timespec until;
    tutti_status_t st;

    memset(&w, 0, sizeof(w));
    w.key = key;
    w.size = size;
    w.device_type = type;
    w.device_index = device_index;
    tutti__job_msg_init(&m, TUTTI_CTRL_JOIN, key, 0, device_index);
    tutti__join_payload_t *j = (tutti__join_payload_t *)m.payload;
    /* Every byte that travels is set: the host name's tail, the unused
     * order entries and any padding (no stack bytes leave the task). */
    memset(j, 0, sizeof(*j));
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
    tutti__member_wait_add(job, &w);
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
        else if (w.done && w.status == TUTTI_ERR_PEER)
            st = tutti__error(w.status, "resolve", "%s", w.error);
        else
            st = tutti__error(TUTTI_ERR_TIMEOUT, "resolve", "%s",
                              w.done ? w.error
                                     : "group not formed within the time "
                                       "limit; the coordinator (task 0) did "
                                       "not answer");
    } else if (st == TUTTI_OK && w.status != TUTTI_OK) {
        st = tutti__error(w.status, "resolve", "%s", w.error);
    }
    tutti__member_wait_remove(job, &w);
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
