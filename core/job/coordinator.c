/*
 * The coordinator (task 0): forms groups from the members' joins, in task
 * order, topology order (host, then the GPU's PCI bus id) or the ring
 * order every member gave, and decides each instance once every member
 * proposed it: the fields must agree, then coord_decide.c picks the
 * implementation and makes the plan and group details every member
 * receives.  Any disagreement refuses every member alike, naming the
 * field, the ranks and the values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/type_names.h"
#include "job/coord_check.h"
#include "job/coord_decide.h"
#include "job/coordinator.h"
#include "job/wire.h"

typedef struct coord_group {
    uint64_t key;
    tutti__join_payload_t first;            /* what the first member brought */
    int first_task;
    int arrived;
    tutti_locality_t *members;        /* arrival order, size entries */
    uint32_t *pci;                    /* their GPUs' PCI bus ids, or 0 */
    char hosts[TUTTI_MAX_HOSTS][TUTTI_HOST_NAME_MAX];
    int num_hosts;
    int failed;
    int answered;                     /* joins told why it failed */
    char error[512];
    struct coord_group *next;
} coord_group_t;


/* A refusal (GROUP_ERR or INST_ERR) of @p status with @p text. */
static void send_text(tutti__job_t *job, int task, uint32_t type,
                      tutti_status_t status, uint64_t gkey, uint64_t ikey,
                      int device_index, const char *text)
{
    tutti__ctrl_msg_t m;
    tutti__job_msg_init(&m, type, gkey, ikey, device_index);
    m.status = status;
    tutti__decision_payload_t *d = (tutti__decision_payload_t *)m.payload;
    memset(d, 0, sizeof(*d));
    snprintf(d->detail, sizeof(d->detail), "%s", text);
    m.len = sizeof(*d);
    tutti__job_send(job, task, &m);
}

/* ---- groups -------------------------------------------------------------- */

static const tutti__fingerprint_t *
find_fingerprint(const tutti__join_payload_t *j, const char *name)
{
    for (int k = 0; k < j->num_mods; k++)
        if (strcmp(j->mods[k].name, name) == 0)
            return &j->mods[k];
    return NULL;
}

/* Compares a newcomer's module set with the first member's, both ways. */
static int modules_differ(const coord_group_t *cg,
                          const tutti__join_payload_t *j, int task, char *why,
                          size_t len)
{
    const tutti__join_payload_t *a = &cg->first;
    for (int i = 0; i < a->num_mods; i++) {
        const tutti__fingerprint_t *fa = &a->mods[i];
        const tutti__fingerprint_t *fb = find_fingerprint(j, fa->name);
        if (fb == NULL) {
            snprintf(why, len, "module '%s' is loaded by task %d but not by "
                     "task %d", fa->name, cg->first_task, task);
            return 1;
        }
        if (fb->hash != fa->hash || strcmp(fb->version, fa->version) != 0) {
            snprintf(why, len, "module '%s' differs: task %d has %s (file "
                     "hash %016llx), task %d has %s (file hash %016llx)",
                     fa->name, cg->first_task, fa->version,
                     (unsigned long long)fa->hash, task, fb->version,
                     (unsigned long long)fb->hash);
            return 1;
        }
    }
    for (int k = 0; k < j->num_mods; k++) {
        if (find_fingerprint(a, j->mods[k].name) == NULL) {
            snprintf(why, len, "module '%s' is loaded by task %d but not by "
                     "task %d", j->mods[k].name, task, cg->first_task);
            return 1;
        }
    }
    return 0;
}

/* "[2,0,1]", "[2,0,1,...]" past 8 entries, or "none". */
static void order_text(const tutti__join_payload_t *j, char *buf, size_t len)
{
    size_t n = 0;
    if (!j->has_order) {
        snprintf(buf, len, "none");
        return;
    }
    for (int i = 0; i < j->size && i < 8 && n + 12 < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%d", i ? "," : "[",
                              j->order[i]);
    snprintf(buf + n, len - n, "%s]", j->size > 8 ? ",..." : "");
}

static int join_conflict(const coord_group_t *cg,
                         const tutti__join_payload_t *j, int task, char *why,
                         size_t len)
{
    char what[400];
    if (j->size != cg->first.size)
        snprintf(what, sizeof(what),
                 "group size differs: task %d %s:%d has "
                 "%d, task %d %s:%d has %d",
                 cg->first_task, tutti__job_dev_name(cg->first.device_type),
                 cg->first.device_index, cg->first.size, task,
                 tutti__job_dev_name(j->device_type), j->device_index, j->size);
    else if (j->device_type != cg->first.device_type)
        snprintf(what, sizeof(what), "device type differs: task %d has %s, "
                 "task %d has %s", cg->first_task,
                 tutti__job_dev_name(cg->first.device_type), task,
                 tutti__job_dev_name(j->device_type));
    else if (j->device_order != cg->first.device_order)
        snprintf(what, sizeof(what), "device_order differs: task %d has %d, "
                 "task %d has %d", cg->first_task, cg->first.device_order,
                 task, j->device_order);
    else if (j->has_order != cg->first.has_order ||
             (j->has_order && memcmp(j->order, cg->first.order,
                                     (size_t)j->size * sizeof(int32_t)) != 0)) {
        char a[64], b[64];
        order_text(&cg->first, a, sizeof(a));
        order_text(j, b, sizeof(b));
        snprintf(what, sizeof(what),
                 "ring_order differs: task %d %s:%d "
                 "gives %s, task %d %s:%d gives %s",
                 cg->first_task, tutti__job_dev_name(cg->first.device_type),
                 cg->first.device_index, a, task,
                 tutti__job_dev_name(j->device_type), j->device_index, b);
    }
    else if (!modules_differ(cg, j, task, what, sizeof(what))) {
        for (int i = 0; i < cg->arrived; i++) {
            if (cg->members[i].task == task &&
                cg->members[i].device_index == j->device_index) {
                snprintf(what, sizeof(what), "task %d %s:%d joined twice", task,
                         tutti__job_dev_name(j->device_type), j->device_index);
                goto found;
            }
        }
        return 0;
    }
found:
    snprintf(why, len, "group 0x%llx: %s", (unsigned long long)cg->key, what);
    return 1;
}

/* A member while the group is ordered: where it is, its GPU, and its
 * host's place among the group's host names in alphabetical order. */
typedef struct {
    tutti_locality_t loc;
    uint32_t pci;
    int host_key;
} coord_member_t;

static int member_cmp(const void *a, const void *b)
{
    const tutti_locality_t *x = &((const coord_member_t *)a)->loc;
    const tutti_locality_t *y = &((const coord_member_t *)b)->loc;
    if (x->task != y->task)
        return x->task < y->task ? -1 : 1;
    return (x->device_index > y->device_index) -
           (x->device_index < y->device_index);
}

/* Topology order: by host, then the GPU's PCI bus id, so that a ring's
 * neighbours sit on one host and on adjacent links. */
static int topology_cmp(const void *a, const void *b)
{
    const coord_member_t *x = a, *y = b;
    if (x->host_key != y->host_key)
        return x->host_key < y->host_key ? -1 : 1;
    if (x->pci != y->pci)
        return x->pci < y->pci ? -1 : 1;
    return member_cmp(a, b);
}

/* Orders the arrived members: ring_order over task order, else the
 * group's device order. */
static void order_members(coord_group_t *cg)
{
    coord_member_t m[TUTTI__MAX_MEMBERS], sorted[TUTTI__MAX_MEMBERS];
    int n = cg->first.size;
    for (int i = 0; i < n; i++) {
        int key = 0;
        for (int h = 0; h < cg->num_hosts; h++)
            key += strncmp(cg->hosts[h], cg->hosts[cg->members[i].host],
                           TUTTI_HOST_NAME_MAX) < 0;
        m[i] = (coord_member_t){cg->members[i], cg->pci[i], key};
    }
    int topology = !cg->first.has_order &&
                   cg->first.device_order == TUTTI_ORDER_TOPOLOGY;
    qsort(m, (size_t)n, sizeof(m[0]), topology ? topology_cmp : member_cmp);
    if (cg->first.has_order) {
        memcpy(sorted, m, (size_t)n * sizeof(m[0]));
        for (int i = 0; i < n; i++)
            m[i] = sorted[cg->first.order[i]];
    }
    for (int i = 0; i < n; i++) {
        cg->members[i] = m[i].loc;
        cg->pci[i] = m[i].pci;
    }
}

/* Numbers hosts in rank order (first seen, first numbered). */
static void renumber_hosts(coord_group_t *cg,
                           char (*names)[TUTTI_HOST_NAME_MAX])
{
    int map[TUTTI_MAX_HOSTS], next = 0;
    for (int h = 0; h < TUTTI_MAX_HOSTS; h++)
        map[h] = -1;
    for (int i = 0; i < cg->first.size; i++) {
        int *h = &cg->members[i].host;
        if (map[*h] < 0) {
            map[*h] = next;
            memcpy(names[next++], cg->hosts[*h], TUTTI_HOST_NAME_MAX);
        }
        *h = map[*h];
    }
}

/* All members arrived: order them and tell each its place. */
static void group_formed(tutti__job_t *job, coord_group_t *cg)
{
    tutti__ctrl_msg_t m;
    char names[TUTTI_MAX_HOSTS][TUTTI_HOST_NAME_MAX];
    int n = cg->first.size, tasks = 0;
    int has_pci = cg->first.device_type == TUTTI_DEVICE_CUDA;
    order_members(cg);
    renumber_hosts(cg, names);
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = cg->members[k].task == cg->members[i].task;
        tasks += !seen;
    }
    tutti__coord_formed_record(job->coord, cg->key, cg->first.size, tasks,
                               cg->num_hosts, cg->first.device_type,
                               cg->members, cg->pci);
    tutti__log(TUTTI_LOG_DEBUG, "resolve", "group 0x%llx formed: %d %s "
               "devices over %d tasks", (unsigned long long)cg->key, n,
               tutti__job_dev_name(cg->first.device_type), tasks);
    for (int i = 0; i < n; i++) {
        tutti__job_msg_init(&m, TUTTI_CTRL_GROUP, cg->key, 0,
                            cg->members[i].device_index);
        tutti__group_payload_t *gp = (tutti__group_payload_t *)m.payload;
        size_t mbytes = (size_t)n * sizeof(*cg->members);
        memset(gp, 0, sizeof(*gp));
        gp->size = n;
        gp->num_tasks = tasks;
        gp->num_hosts = cg->num_hosts;
        memcpy(gp->members, cg->members, mbytes);
        size_t hbytes = (size_t)cg->num_hosts * TUTTI_HOST_NAME_MAX;
        memcpy((char *)gp->members + mbytes, names, hbytes);
        gp->has_pci = has_pci;
        if (has_pci)
            memcpy((char *)gp->members + mbytes + hbytes, cg->pci,
                   (size_t)n * sizeof(uint32_t));
        m.len = (uint32_t)(sizeof(*gp) + mbytes + hbytes +
                           (has_pci ? (size_t)n * sizeof(uint32_t) : 0));
        tutti__job_send(job, cg->members[i].task, &m);
    }
}

static void coord_group_free(tutti__coord_t *r, coord_group_t *cg)
{
    coord_group_t **pp = &r->groups;
    while (*pp && *pp != cg)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = cg->next;
        r->num_groups--;
    }
    free(cg->members);
    free(cg->pci);
    free(cg);
}

static coord_group_t *coord_group_find(tutti__coord_t *r, uint64_t key)
{
    for (coord_group_t *cg = r->groups; cg; cg = cg->next)
        if (cg->key == key)
            return cg;
    return NULL;
}

/* A new group's record, its first member's join @p j (checked) from
 * @p task; NULL without memory. */
static coord_group_t *coord_group_new(tutti__coord_t *r, uint64_t key,
                                      const tutti__join_payload_t *j, int task)
{
    coord_group_t *cg = calloc(1, sizeof(*cg));
    size_t n = (size_t)j->size;
    if (cg == NULL ||
        (cg->members = calloc(n, sizeof(tutti_locality_t))) == NULL ||
        (cg->pci = calloc(n, sizeof(uint32_t))) == NULL) {
        if (cg)
            free(cg->members);
        free(cg);
        return NULL;
    }
    cg->key = key;
    cg->first = *j;
    cg->first_task = task;
    cg->next = r->groups;
    r->groups = cg;
    r->num_groups++;
    return cg;
}

/* The group's number for host @p name, added if new; -1 if full. */
static int host_index(coord_group_t *cg, const char *name)
{
    for (int h = 0; h < cg->num_hosts; h++)
        if (strncmp(cg->hosts[h], name, TUTTI_HOST_NAME_MAX) == 0)
            return h;
    if (cg->num_hosts == TUTTI_MAX_HOSTS)
        return -1;
    memcpy(cg->hosts[cg->num_hosts], name, TUTTI_HOST_NAME_MAX);
    cg->hosts[cg->num_hosts][TUTTI_HOST_NAME_MAX - 1] = '\0';
    return cg->num_hosts++;
}

/* A failed group's record goes once as many joins as it has members
 * were told why (no more come); one whose members did not all come goes
 * when the bound needs its room (coord_group_room). */
static void coord_group_answered(tutti__coord_t *r, coord_group_t *cg)
{
    if (++cg->answered >= cg->first.size)
        coord_group_free(r, cg);
}

/* Room for one more group waiting for members: a failed one's record may
 * go (its late members then time out instead); 0 if none can. */
static int coord_group_room(tutti__coord_t *r)
{
    coord_group_t *oldest_failed = NULL;
    if (r->num_groups < TUTTI__COORD_MAX_PENDING_GROUPS)
        return 1;
    for (coord_group_t *cg = r->groups; cg; cg = cg->next)
        if (cg->failed)
            oldest_failed = cg;
    if (oldest_failed == NULL)
        return 0;
    coord_group_free(r, oldest_failed);
    return 1;
}

static void coord_join(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    tutti__join_payload_t copy;
    const tutti__join_payload_t *j = &copy;
    tutti__coord_t *r = job->coord;
    int task = msg->from_task, device = msg->device_index;
    uint64_t key = msg->group_key;
    char why[512];

    memcpy(&copy, msg->payload, sizeof(copy));
    if (!tutti__coord_join_ok(msg, j, why, sizeof(why))) {
        tutti__log(TUTTI_LOG_ERROR, "resolve", "%s", why);
        send_text(job, task, TUTTI_CTRL_GROUP_ERR, TUTTI_ERR_PEER, key, 0,
                  device, why);
        return;
    }
    if (!tutti__coord_join_args_ok(msg, j, why, sizeof(why))) {
        send_text(job, task, TUTTI_CTRL_GROUP_ERR, TUTTI_ERR_MISMATCH, key, 0,
                  device, why);
        return;
    }
    coord_group_t *cg = coord_group_find(r, key);
    if (cg == NULL && !coord_group_room(r)) {
        snprintf(why, sizeof(why), "group 0x%llx: the coordinator has %d "
                 "groups waiting for members, as many as it keeps at once",
                 (unsigned long long)key, TUTTI__COORD_MAX_PENDING_GROUPS);
        tutti__log(TUTTI_LOG_ERROR, "resolve", "%s (join from task %d)", why,
                   task);
        send_text(job, task, TUTTI_CTRL_GROUP_ERR, TUTTI_ERR_UNSUPPORTED, key,
                  0, device, why);
        return;
    }
    if (cg == NULL && (cg = coord_group_new(r, key, j, task)) == NULL) {
        send_text(job, task, TUTTI_CTRL_GROUP_ERR, TUTTI_ERR_NO_MEMORY, key,
                  0, device, "coordinator out of memory");
        return;
    }
    if (!cg->failed && join_conflict(cg, j, task, why, sizeof(why))) {
        /* Everyone who came, and everyone who comes later, learns why. */
        cg->failed = 1;
        cg->answered = cg->arrived;
        snprintf(cg->error, sizeof(cg->error), "%s", why);
        for (int i = 0; i < cg->arrived; i++)
            send_text(job, cg->members[i].task, TUTTI_CTRL_GROUP_ERR,
                      TUTTI_ERR_MISMATCH, cg->key, 0,
                      cg->members[i].device_index, why);
    }
    if (cg->failed) {
        send_text(job, task, TUTTI_CTRL_GROUP_ERR, TUTTI_ERR_MISMATCH,
                  cg->key, 0, device, cg->error);
        coord_group_answered(r, cg);
        return;
    }
    int host = host_index(cg, j->host);
    if (host < 0) {
        snprintf(why, sizeof(why), "group 0x%llx spans more than %d hosts, "
                 "more than one control frame can describe",
                 (unsigned long long)cg->key, TUTTI_MAX_HOSTS);
        send_text(job, task, TUTTI_CTRL_GROUP_ERR, TUTTI_ERR_UNSUPPORTED,
                  cg->key, 0, device, why);
        return;
    }
    cg->pci[cg->arrived] = j->pci;
    cg->members[cg->arrived++] =
        (tutti_locality_t){task, j->device_index, host, j->numa_node};
    if (cg->arrived == cg->first.size) {
        group_formed(job, cg);
        coord_group_free(r, cg);
    }
}

/* A member gave up waiting: tell it who had come, and forget it. */
static void coord_cancel(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    tutti__coord_t *r = job->coord;
    char why[512], who[300] = "";
    size_t n = 0;
    for (coord_group_t *cg = r->groups; cg; cg = cg->next) {
        if (cg->key != msg->group_key)
            continue;
        for (int i = 0; i < cg->arrived && n < sizeof(who) - 32; i++)
            n += (size_t)snprintf(who + n, sizeof(who) - n, "%stask %d %s:%d",
                                  i ? ", " : "", cg->members[i].task,
                                  tutti__job_dev_name(cg->first.device_type),
                                  cg->members[i].device_index);
        snprintf(why, sizeof(why), "group 0x%llx: only %d of %d members "
                 "joined within the time limit (%s)",
                 (unsigned long long)cg->key, cg->arrived, cg->first.size,
                 who);
        tutti__log(TUTTI_LOG_WARN, "resolve", "%s", why);
        send_text(job, msg->from_task, TUTTI_CTRL_GROUP_ERR, TUTTI_ERR_TIMEOUT,
                  cg->key, 0, msg->device_index, why);
        for (int i = 0; i < cg->arrived; i++) {
            if (cg->members[i].task == msg->from_task &&
                cg->members[i].device_index == msg->device_index) {
                cg->pci[i] = cg->pci[cg->arrived - 1];
                cg->members[i] = cg->members[--cg->arrived];
                break;
            }
        }
        if (cg->arrived == 0)
            coord_group_free(r, cg);
        return;
    }
}

static size_t inst_bucket(uint64_t gkey, uint64_t ikey, size_t buckets)
{
    uint64_t h = (gkey * 0x9e3779b97f4a7c15ULL) ^ ikey;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)(h & (buckets - 1));
}

/* The link that points at instance (@p gkey, @p ikey) in its chain, or at
 * the chain's end when it is not there; NULL while there is no table. */
static coord_inst_t **coord_inst_slot(tutti__coord_t *r, uint64_t gkey,
                                      uint64_t ikey)
{
    if (r->insts == NULL)
        return NULL;
    coord_inst_t **pp = &r->insts[inst_bucket(gkey, ikey, r->inst_buckets)];
    while (*pp && ((*pp)->group_key != gkey || (*pp)->instance_key != ikey))
        pp = &(*pp)->next;
    return pp;
}

/* Doubles the table (the first: 64 buckets); on no memory the old one
 * stays, its chains longer. */
static void coord_inst_grow(tutti__coord_t *r)
{
    size_t n = r->inst_buckets ? 2 * r->inst_buckets : 64;
    coord_inst_t **t = calloc(n, sizeof(*t));
    if (t == NULL)
        return;
    for (size_t b = 0; b < r->inst_buckets; b++) {
        coord_inst_t *ci = r->insts[b];
        while (ci) {
            coord_inst_t *next = ci->next;
            size_t nb = inst_bucket(ci->group_key, ci->instance_key, n);
            ci->next = t[nb];
            t[nb] = ci;
            ci = next;
        }
    }
    free(r->insts);
    r->insts = t;
    r->inst_buckets = n;
}

static coord_inst_t *coord_inst_get(tutti__coord_t *r, uint64_t gkey,
                                    uint64_t ikey, int size)
{
    coord_inst_t **pp = coord_inst_slot(r, gkey, ikey);
    if (pp != NULL && *pp != NULL)
        return *pp;
    if (r->num_insts >= r->inst_buckets)
        coord_inst_grow(r);
    if (r->insts == NULL)
        return NULL;
    coord_inst_t *ci = calloc(1, sizeof(*ci));
    if (ci == NULL)
        return NULL;
    ci->by_rank = calloc((size_t)size, sizeof(tutti__inst_payload_t));
    ci->task_of_rank = malloc((size_t)size * sizeof(int));
    if (ci->by_rank == NULL || ci->task_of_rank == NULL) {
        free(ci->by_rank);
        free(ci->task_of_rank);
        free(ci);
        return NULL;
    }
    for (int i = 0; i < size; i++)
        ci->task_of_rank[i] = -1;
    ci->group_key = gkey;
    ci->instance_key = ikey;
    ci->size = size;
    size_t b = inst_bucket(gkey, ikey, r->inst_buckets);
    ci->next = r->insts[b];
    r->insts[b] = ci;
    r->num_insts++;
    return ci;
}

static void coord_inst_free(tutti__coord_t *r, coord_inst_t *ci)
{
    coord_inst_t **pp = coord_inst_slot(r, ci->group_key, ci->instance_key);
    if (pp != NULL && *pp == ci) {
        *pp = ci->next;
        r->num_insts--;
    }
    free(ci->by_rank);
    free(ci->task_of_rank);
    free(ci);
}

/* Value of field @p f of @p p as text, for messages and comparison. */
static void field_text(const tutti__inst_payload_t *p, int f, char *buf,
                       size_t len)
{
    const char *s = NULL;
    switch (f) {
    case 0:
        s = tutti__collective_name((tutti_collective_t)p->collective);
        break;
    case 1: s = tutti_dtype_name((tutti_dtype_t)p->dtype); break;
    case 2:
        if (p->count == (uint64_t)TUTTI_COUNT_PER_RANK)
            snprintf(buf, len, "per-rank");
        else
            snprintf(buf, len, "%llu", (unsigned long long)p->count);
        return;
    case 3: s = tutti__op_name((tutti_op_t)p->op); break;
    case 4: snprintf(buf, len, "%d", p->root); return;
    case 5: snprintf(buf, len, "%g", p->pre_scale); return;
    case 6: snprintf(buf, len, "%g", p->post_scale); return;
    case 7: snprintf(buf, len, "%016llx", (unsigned long long)p->perm_hash);
        return;
    default: s = p->algorithm[0] ? p->algorithm : "(selection)"; break;
    }
    snprintf(buf, len, "%s", s ? s : "?");
}

static const char *const field_names[] = {
    "collective", "dtype", "count", "op", "root", "pre_scale", "post_scale",
    "permutation (hash)", "algorithm"};
#define NUM_FIELDS ((int)(sizeof(field_names) / sizeof(field_names[0])))

/* Which fields must agree for this collective. */
static int field_applies(const tutti__inst_payload_t *p, int f)
{
    if (f == 3 || f == 5 || f == 6)
        return p->collective == TUTTI_COLL_ALLREDUCE ||
               p->collective == TUTTI_COLL_REDUCE ||
               p->collective == TUTTI_COLL_REDUCE_SCATTER;
    if (f == 7)
        return p->collective == TUTTI_COLL_PERMUTE;
    if (f == 4)
        return p->collective == TUTTI_COLL_BROADCAST ||
               p->collective == TUTTI_COLL_REDUCE ||
               p->collective == TUTTI_COLL_GATHER;
    return 1;
}

/* Finds the first field on which ranks disagree; writes the message. */
static int disagreement(const coord_inst_t *ci, char *why, size_t len)
{
    char want[96], got[96], ranks[200];
    for (int f = 0; f < NUM_FIELDS; f++) {
        if (!field_applies(&ci->by_rank[0], f))
            continue;
        field_text(&ci->by_rank[0], f, want, sizeof(want));
        size_t n = 0;
        got[0] = '\0';
        for (int r = 1; r < ci->size; r++) {
            char v[96];
            field_text(&ci->by_rank[r], f, v, sizeof(v));
            if (strcmp(v, want) == 0)
                continue;
            if (got[0] == '\0')
                snprintf(got, sizeof(got), "%s", v);
            if (n < sizeof(ranks) - 12)
                n += (size_t)snprintf(ranks + n, sizeof(ranks) - n, "%s%d",
                                      n ? "," : "", r);
        }
        if (n == 0)
            continue;
        snprintf(why, len, "instance 0x%llx of group 0x%llx: members disagree "
                 "on %s: rank 0 has %s, rank%s %s %s %s",
                 (unsigned long long)ci->instance_key,
                 (unsigned long long)ci->group_key, field_names[f], want,
                 strchr(ranks, ',') ? "s" : "", ranks,
                 strchr(ranks, ',') ? "have" : "has", got);
        return 1;
    }
    return 0;
}

/* Every member sent its parameters: decide and tell each member task. */
static void instance_decided(tutti__job_t *job, const coord_inst_t *ci)
{
    tutti__ctrl_msg_t m;
    tutti__decision_payload_t *d = (tutti__decision_payload_t *)m.payload;
    tutti_status_t st = TUTTI_ERR_MISMATCH;

    tutti__job_msg_init(&m, TUTTI_CTRL_INST_OK, ci->group_key, ci->instance_key,
                        -1);
    memset(d, 0, sizeof(*d));
    if (!disagreement(ci, d->detail, sizeof(d->detail)))
        st = tutti__coord_choose(job, ci, d);
    if (st != TUTTI_OK)
        m.type = TUTTI_CTRL_INST_ERR;
    m.status = st;
    m.len = sizeof(*d);
    tutti__log(TUTTI_LOG_DEBUG, "resolve", "instance 0x%llx of group 0x%llx: "
               "%s %s", (unsigned long long)ci->instance_key,
               (unsigned long long)ci->group_key,
               st == TUTTI_OK ? d->algorithm : "refused:", d->detail);
    for (int r = 0; r < ci->size; r++) {
        int t = ci->task_of_rank[r], seen = 0;
        for (int k = 0; k < r && !seen; k++)
            seen = ci->task_of_rank[k] == t;
        if (!seen)
            tutti__job_send(job, t, &m);
    }
}

/* A member waited too long for the others' first execution: every member
 * that came learns which ranks never did. */
static void coord_inst_timeout(tutti__job_t *job,
                               const tutti__ctrl_msg_t *msg)
{
    tutti__coord_t *r = job->coord;
    char missing[200] = "", why[512];
    size_t n = 0;
    coord_inst_t **pp = coord_inst_slot(r, msg->group_key,
                                         msg->instance_key);
    coord_inst_t *ci = pp != NULL ? *pp : NULL;
    int proposed = 0;
    for (int k = 0; ci != NULL && k < ci->size; k++)
        proposed |= ci->task_of_rank[k] == msg->from_task;
    if (ci != NULL && !proposed) {
        /* Only a member that waits for the others may end their wait. */
        tutti__log(TUTTI_LOG_ERROR, "resolve", "instance 0x%llx of group "
                   "0x%llx: INST_TIMEOUT from task %d, which proposed no "
                   "rank of it, dropped", (unsigned long long)ci->instance_key,
                   (unsigned long long)ci->group_key, msg->from_task);
        return;
    }
    if (ci != NULL) {
        for (int k = 0; k < ci->size && n < sizeof(missing) - 12; k++)
            if (ci->task_of_rank[k] < 0)
                n += (size_t)snprintf(missing + n, sizeof(missing) - n,
                                      "%s%d", n ? "," : "", k);
        snprintf(why, sizeof(why), "instance 0x%llx of group 0x%llx: "
                 "rank%s %s never executed it within the time limit",
                 (unsigned long long)ci->instance_key,
                 (unsigned long long)ci->group_key,
                 strchr(missing, ',') ? "s" : "", missing);
        tutti__log(TUTTI_LOG_WARN, "resolve", "%s", why);
        for (int k = 0; k < ci->size; k++) {
            int t = ci->task_of_rank[k], seen = 0;
            for (int j = 0; j < k && !seen; j++)
                seen = ci->task_of_rank[j] == t;
            if (t >= 0 && !seen)
                send_text(job, t, TUTTI_CTRL_INST_ERR, TUTTI_ERR_TIMEOUT,
                          ci->group_key, ci->instance_key, -1, why);
        }
        coord_inst_free(r, ci);
        return;
    }
}

/* Refuses a proposal to its sender alone (the others' stand). */
static void refuse_proposal(tutti__job_t *job, const tutti__ctrl_msg_t *msg,
                            tutti_status_t st, const char *why)
{
    tutti__log(TUTTI_LOG_ERROR, "resolve", "%s", why);
    send_text(job, msg->from_task, TUTTI_CTRL_INST_ERR, st, msg->group_key,
              msg->instance_key, msg->device_index, why);
}

static void coord_inst(tutti__job_t *job, const tutti__ctrl_msg_t *msg)
{
    tutti__inst_payload_t copy;
    const tutti__inst_payload_t *p = &copy;
    tutti__coord_t *r = job->coord;
    char why[512];
    memcpy(&copy, msg->payload, sizeof(copy));
    const coord_formed_t *f = tutti__coord_formed_find(r, msg->group_key);
    if (f == NULL) {
        tutti__coord_inst_refused(
            why, sizeof(why), msg,
            "the coordinator keeps no "
            "record of group 0x%llx: never formed, or not used "
            "while %d others formed",
            (unsigned long long)msg->group_key, TUTTI__COORD_MAX_FORMED);
        refuse_proposal(job, msg, TUTTI_ERR_NOT_FOUND, why);
        return;
    }
    if (!tutti__coord_inst_ok(msg, f, p, why, sizeof(why))) {
        refuse_proposal(job, msg, TUTTI_ERR_INVALID_ARG, why);
        return;
    }
    coord_inst_t **pp = coord_inst_slot(r, msg->group_key, msg->instance_key);
    if ((pp == NULL || *pp == NULL) &&
        r->num_insts >= TUTTI__COORD_MAX_PENDING_INSTANCES) {
        tutti__coord_inst_refused(
            why, sizeof(why), msg,
            "the coordinator has %d "
            "instances waiting for their members' proposals, as "
            "many as it keeps at once",
            TUTTI__COORD_MAX_PENDING_INSTANCES);
        refuse_proposal(job, msg, TUTTI_ERR_UNSUPPORTED, why);
        return;
    }
    coord_inst_t *ci =
        coord_inst_get(r, msg->group_key, msg->instance_key, p->size);
    if (ci == NULL) {
        tutti__coord_inst_refused(why, sizeof(why), msg,
                                  "no memory for the instance's "
                                  "record at the coordinator");
        refuse_proposal(job, msg, TUTTI_ERR_NO_MEMORY, why);
        return;
    }
    if (ci->size != p->size) {
        /* The group formed again, of another size, since it came. */
        tutti__coord_inst_refused(why, sizeof(why), msg,
                                  "size %d: expected %d, the size "
                                  "its first proposal had",
                                  p->size, ci->size);
        refuse_proposal(job, msg, TUTTI_ERR_MISMATCH, why);
        return;
    }
    if (ci->task_of_rank[p->rank] >= 0) {
        /* Its member proposed it already (inst_ok: the rank is its). */
        tutti__log(TUTTI_LOG_ERROR, "resolve",
                   "instance 0x%llx of group "
                   "0x%llx: task %d proposed rank %d a second time, dropped",
                   (unsigned long long)msg->instance_key,
                   (unsigned long long)msg->group_key, msg->from_task, p->rank);
        return;
    }
    ci->by_rank[p->rank] = *p;
    ci->task_of_rank[p->rank] = msg->from_task;
    if (++ci->arrived < ci->size)
        return;
    instance_decided(job, ci);
    coord_inst_free(r, ci);
}

/* ---- the coordinator's frames ------------------------------------------- */

static const tutti__job_route_t coord_routes[] = {
    {TUTTI_CTRL_JOIN, coord_join},
    {TUTTI_CTRL_JOIN_CANCEL, coord_cancel},
    {TUTTI_CTRL_INST, coord_inst},
    {TUTTI_CTRL_INST_TIMEOUT, coord_inst_timeout},
};

tutti_status_t tutti__coord_init(tutti__job_t *job)
{
    job->coord = calloc(1, sizeof(*job->coord));
    return tutti__job_part(job, job->coord, "coordinator", coord_routes,
                           sizeof(coord_routes) / sizeof(coord_routes[0]));
}

void tutti__coord_fini(tutti__job_t *job)
{
    tutti__coord_t *r = job->coord;
    if (r == NULL)
        return;
    while (r->groups)
        coord_group_free(r, r->groups);
    for (size_t b = 0; b < r->inst_buckets; b++)
        while (r->insts[b])
            coord_inst_free(r, r->insts[b]);
    free(r->insts);
    tutti__coord_formed_free_all(r);
    free(r);
    job->coord = NULL;
}
