/* Param resolver: the coordinator and the member side (see resolve.h). */
#define _GNU_SOURCE /* getcpu */
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "job/resolve.h"

#define COORDINATOR_TASK 0
#define MAX_FINGERPRINTS 24

typedef struct {
    char name[TUTTI_NAME_MAX];
    char version[32];
    uint64_t hash;
} fingerprint_t;

#define MAX_MEMBERS 200 /* the group table and a ring order fit one frame */

typedef struct {
    int32_t size, device_type, device_index, num_mods;
    fingerprint_t mods[MAX_FINGERPRINTS];
    char host[TUTTI_HOST_NAME_MAX];
    int32_t numa_node;
    int32_t has_order;         /* ring_order given */
    int32_t order[MAX_MEMBERS]; /* size entries when has_order */
} join_payload_t;

/* Followed by num_hosts host names of TUTTI_HOST_NAME_MAX bytes. */
typedef struct {
    int32_t size, num_tasks, num_hosts, reserved;
    tutti__member_t members[];
} group_payload_t;

_Static_assert(sizeof(group_payload_t) + MAX_MEMBERS * sizeof(tutti__member_t)
                   + TUTTI_MAX_HOSTS * TUTTI_HOST_NAME_MAX <= TUTTI_CTRL_PAYLOAD,
               "group table");

typedef struct {
    int32_t rank, size, collective, dtype, op, root, device_type, num_tasks;
    uint64_t count;
    char algorithm[TUTTI_NAME_MAX];
    double pre_scale, post_scale;
    uint64_t perm_hash;
} inst_payload_t;

typedef struct {
    char algorithm[TUTTI_NAME_MAX];
    char detail[512];
    uint32_t details_len;
    unsigned char details[TUTTI_DETAILS_MAX];
} decision_payload_t;

_Static_assert(sizeof(join_payload_t) <= TUTTI_CTRL_PAYLOAD, "join payload");
_Static_assert(sizeof(decision_payload_t) <= TUTTI_CTRL_PAYLOAD, "decision");

typedef struct join_wait {
    uint64_t key;
    int device_index;
    int done;
    tutti_status_t status;
    char error[TUTTI_CTRL_PAYLOAD];
    tutti__group_table_t table;
    struct join_wait *next;
} join_wait_t;

typedef struct coord_group {
    uint64_t key;
    join_payload_t first;            /* what the first member brought */
    int first_task;
    int arrived;
    tutti__member_t *members;        /* arrival order, size entries */
    char hosts[TUTTI_MAX_HOSTS][TUTTI_HOST_NAME_MAX];
    int num_hosts;
    int failed;
    char error[512];
    struct coord_group *next;
} coord_group_t;

typedef struct coord_inst {
    uint64_t group_key, instance_key;
    int size, arrived;
    inst_payload_t *by_rank;
    int *task_of_rank;               /* -1: not arrived */
    struct coord_inst *next;
} coord_inst_t;

typedef struct group_ref {
    tutti_group_t *g;
    struct group_ref *next;
} group_ref_t;

struct tutti__resolver {
    tutti__ctrl_t *ctrl;
    pthread_cond_t cond;
    join_wait_t *waits;
    coord_group_t *groups;
    coord_inst_t *insts;
    group_ref_t *members;
    uint64_t frames_sent;
    int byes;                         /* tasks whose contexts went */
    unsigned char *said_bye;          /* per task */
};

/* Callers that answer from the control thread have no one to return a
 * failure to: it is logged here, once for all of them, and the task that
 * waits for the frame gives up at its time limit (or sooner, when its
 * peer is found gone). */
static tutti_status_t send_to(tutti_context_t *ctx, int task,
                              tutti__ctrl_msg_t *m)
{
    ctx->resolver->frames_sent += task != ctx->task;
    tutti_status_t st = tutti__ctrl_send(ctx->resolver->ctrl, task, m);
    if (st != TUTTI_OK)
        tutti__log(TUTTI_LOG_WARN, "resolve", "control frame of type %u to "
                   "task %d not sent: %s", m->type, task, tutti_strerror(st));
    return st;
}

static void msg_init(tutti__ctrl_msg_t *m, uint32_t type, uint64_t gkey,
                     uint64_t ikey, int device_index)
{
    memset(m, 0, offsetof(tutti__ctrl_msg_t, payload));
    m->type = type;
    m->group_key = gkey;
    m->instance_key = ikey;
    m->device_index = device_index;
}

static void send_text(tutti_context_t *ctx, int task, uint32_t type,
                      uint64_t gkey, uint64_t ikey, int device_index,
                      const char *text)
{
    tutti__ctrl_msg_t m;
    msg_init(&m, type, gkey, ikey, device_index);
    decision_payload_t *d = (decision_payload_t *)m.payload;
    memset(d, 0, sizeof(*d));
    snprintf(d->detail, sizeof(d->detail), "%s", text);
    m.len = sizeof(*d);
    send_to(ctx, task, &m);
}

/* ---- coordinator: groups ----------------------------------------------------- */

static const char *dev_name(int type)
{
    const char *n = tutti_device_type_name((tutti_device_type_t)type);
    return n ? n : "?";
}

static const fingerprint_t *find_fingerprint(const join_payload_t *j,
                                             const char *name)
{
    for (int k = 0; k < j->num_mods; k++)
        if (strcmp(j->mods[k].name, name) == 0)
            return &j->mods[k];
    return NULL;
}

/* Compares a newcomer's module set with the first member's, both ways. */
static int modules_differ(const coord_group_t *cg, const join_payload_t *j,
                          int task, char *why, size_t len)
{
    const join_payload_t *a = &cg->first;
    for (int i = 0; i < a->num_mods; i++) {
        const fingerprint_t *fa = &a->mods[i];
        const fingerprint_t *fb = find_fingerprint(j, fa->name);
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
static void order_text(const join_payload_t *j, char *buf, size_t len)
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

static int join_conflict(const coord_group_t *cg, const join_payload_t *j,
                         int task, char *why, size_t len)
{
    char what[400];
    if (j->size != cg->first.size)
        snprintf(what, sizeof(what), "group size differs: task %d %s:%d has "
                 "%d, task %d %s:%d has %d", cg->first_task,
                 dev_name(cg->first.device_type), cg->first.device_index,
                 cg->first.size, task, dev_name(j->device_type),
                 j->device_index, j->size);
    else if (j->device_type != cg->first.device_type)
        snprintf(what, sizeof(what), "device type differs: task %d has %s, "
                 "task %d has %s", cg->first_task,
                 dev_name(cg->first.device_type), task,
                 dev_name(j->device_type));
    else if (j->has_order != cg->first.has_order ||
             (j->has_order && memcmp(j->order, cg->first.order,
                                     (size_t)j->size * sizeof(int32_t)) != 0)) {
        char a[64], b[64];
        order_text(&cg->first, a, sizeof(a));
        order_text(j, b, sizeof(b));
        snprintf(what, sizeof(what), "ring_order differs: task %d %s:%d "
                 "gives %s, task %d %s:%d gives %s", cg->first_task,
                 dev_name(cg->first.device_type), cg->first.device_index, a,
                 task, dev_name(j->device_type), j->device_index, b);
    }
    else if (!modules_differ(cg, j, task, what, sizeof(what))) {
        for (int i = 0; i < cg->arrived; i++) {
            if (cg->members[i].task == task &&
                cg->members[i].device_index == j->device_index) {
                snprintf(what, sizeof(what), "task %d %s:%d joined twice",
                         task, dev_name(j->device_type), j->device_index);
                goto found;
            }
        }
        return 0;
    }
found:
    snprintf(why, len, "group 0x%llx: %s", (unsigned long long)cg->key, what);
    return 1;
}

static int member_cmp(const void *a, const void *b)
{
    const tutti__member_t *x = a, *y = b;
    if (x->task != y->task)
        return x->task < y->task ? -1 : 1;
    return (x->device_index > y->device_index) -
           (x->device_index < y->device_index);
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
static void group_formed(tutti_context_t *ctx, coord_group_t *cg)
{
    tutti__ctrl_msg_t m;
    char names[TUTTI_MAX_HOSTS][TUTTI_HOST_NAME_MAX];
    int n = cg->first.size, tasks = 0;
    qsort(cg->members, (size_t)n, sizeof(*cg->members), member_cmp);
    if (cg->first.has_order) {
        tutti__member_t sorted[MAX_MEMBERS];
        memcpy(sorted, cg->members, (size_t)n * sizeof(*sorted));
        for (int i = 0; i < n; i++)
            cg->members[i] = sorted[cg->first.order[i]];
    }
    renumber_hosts(cg, names);
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = cg->members[k].task == cg->members[i].task;
        tasks += !seen;
    }
    tutti__log(TUTTI_LOG_DEBUG, "resolve", "group 0x%llx formed: %d %s "
               "devices over %d tasks", (unsigned long long)cg->key, n,
               dev_name(cg->first.device_type), tasks);
    for (int i = 0; i < n; i++) {
        msg_init(&m, TUTTI_CTRL_GROUP, cg->key, 0, cg->members[i].device_index);
        group_payload_t *gp = (group_payload_t *)m.payload;
        size_t mbytes = (size_t)n * sizeof(*cg->members);
        gp->size = n;
        gp->num_tasks = tasks;
        gp->num_hosts = cg->num_hosts;
        memcpy(gp->members, cg->members, mbytes);
        memcpy((char *)gp->members + mbytes, names,
               (size_t)cg->num_hosts * TUTTI_HOST_NAME_MAX);
        m.len = (uint32_t)(sizeof(*gp) + mbytes +
                           (size_t)cg->num_hosts * TUTTI_HOST_NAME_MAX);
        send_to(ctx, cg->members[i].task, &m);
    }
}

static void coord_group_free(tutti__resolver_t *r, coord_group_t *cg)
{
    coord_group_t **pp = &r->groups;
    while (*pp && *pp != cg)
        pp = &(*pp)->next;
    if (*pp)
        *pp = cg->next;
    free(cg->members);
    free(cg);
}

static coord_group_t *coord_group_get(tutti__resolver_t *r, uint64_t key,
                                      const join_payload_t *j, int task)
{
    for (coord_group_t *cg = r->groups; cg; cg = cg->next)
        if (cg->key == key)
            return cg;
    coord_group_t *cg = calloc(1, sizeof(*cg));
    int n = j->size > 0 && j->size <= MAX_MEMBERS ? j->size : 1;
    if (cg == NULL || (cg->members = calloc((size_t)n, sizeof(tutti__member_t)))
                          == NULL) {
        free(cg);
        return NULL;
    }
    cg->key = key;
    cg->first = *j;
    cg->first_task = task;
    cg->next = r->groups;
    r->groups = cg;
    return cg;
}

static int is_permutation(const int32_t *order, int n)
{
    unsigned char seen[MAX_MEMBERS] = {0};
    for (int i = 0; i < n; i++) {
        if (order[i] < 0 || order[i] >= n || seen[order[i]])
            return 0;
        seen[order[i]] = 1;
    }
    return 1;
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

static void coord_join(tutti_context_t *ctx, const tutti__ctrl_msg_t *msg)
{
    const join_payload_t *j = (const join_payload_t *)msg->payload;
    tutti__resolver_t *r = ctx->resolver;
    int task = msg->from_task;
    char why[512];

    if (j->size < 1 || j->size > MAX_MEMBERS) {
        snprintf(why, sizeof(why), "group 0x%llx: group size %d: expected "
                 "1..%d", (unsigned long long)msg->group_key, j->size,
                 MAX_MEMBERS);
        send_text(ctx, task, TUTTI_CTRL_GROUP_ERR, msg->group_key, 0,
                  j->device_index, why);
        return;
    }
    if (j->has_order && !is_permutation(j->order, j->size)) {
        snprintf(why, sizeof(why), "group 0x%llx: ring_order is not a "
                 "permutation of 0..%d", (unsigned long long)msg->group_key,
                 j->size - 1);
        send_text(ctx, task, TUTTI_CTRL_GROUP_ERR, msg->group_key, 0,
                  j->device_index, why);
        return;
    }
    coord_group_t *cg = coord_group_get(r, msg->group_key, j, task);
    if (cg == NULL) {
        send_text(ctx, task, TUTTI_CTRL_GROUP_ERR, msg->group_key, 0,
                  j->device_index, "coordinator out of memory");
        return;
    }
    if (!cg->failed && join_conflict(cg, j, task, why, sizeof(why))) {
        /* Everyone who came, and everyone who comes later, learns why. */
        cg->failed = 1;
        snprintf(cg->error, sizeof(cg->error), "%s", why);
        for (int i = 0; i < cg->arrived; i++)
            send_text(ctx, cg->members[i].task, TUTTI_CTRL_GROUP_ERR, cg->key,
                      0, cg->members[i].device_index, why);
    }
    if (cg->failed) {
        send_text(ctx, task, TUTTI_CTRL_GROUP_ERR, cg->key, 0,
                  j->device_index, cg->error);
        return;
    }
    int host = host_index(cg, j->host);
    if (host < 0) {
        snprintf(why, sizeof(why), "group 0x%llx spans more than %d hosts, "
                 "more than one control frame can describe",
                 (unsigned long long)cg->key, TUTTI_MAX_HOSTS);
        send_text(ctx, task, TUTTI_CTRL_GROUP_ERR, cg->key, 0,
                  j->device_index, why);
        return;
    }
    cg->members[cg->arrived++] =
        (tutti__member_t){task, j->device_index, host, j->numa_node};
    if (cg->arrived == cg->first.size) {
        group_formed(ctx, cg);
        coord_group_free(r, cg);
    }
}

/* A member gave up waiting: tell it who had come, and forget it. */
static void coord_cancel(tutti_context_t *ctx, const tutti__ctrl_msg_t *msg)
{
    tutti__resolver_t *r = ctx->resolver;
    char why[512], who[300] = "";
    size_t n = 0;
    for (coord_group_t *cg = r->groups; cg; cg = cg->next) {
        if (cg->key != msg->group_key)
            continue;
        for (int i = 0; i < cg->arrived && n < sizeof(who) - 32; i++)
            n += (size_t)snprintf(who + n, sizeof(who) - n, "%stask %d %s:%d",
                                  i ? ", " : "", cg->members[i].task,
                                  dev_name(cg->first.device_type),
                                  cg->members[i].device_index);
        snprintf(why, sizeof(why), "group 0x%llx: only %d of %d members "
                 "joined within the time limit (%s)",
                 (unsigned long long)cg->key, cg->arrived, cg->first.size,
                 who);
        tutti__log(TUTTI_LOG_WARN, "resolve", "%s", why);
        send_text(ctx, msg->from_task, TUTTI_CTRL_GROUP_ERR, cg->key, 0,
                  msg->device_index, why);
        for (int i = 0; i < cg->arrived; i++) {
            if (cg->members[i].task == msg->from_task &&
                cg->members[i].device_index == msg->device_index) {
                cg->members[i] = cg->members[--cg->arrived];
                break;
            }
        }
        if (cg->arrived == 0)
            coord_group_free(r, cg);
        return;
    }
}

/* ---- coordinator: instances ----------------------------------------------------- */

static coord_inst_t *coord_inst_get(tutti__resolver_t *r, uint64_t gkey,
                                    uint64_t ikey, int size)
{
    for (coord_inst_t *ci = r->insts; ci; ci = ci->next)
        if (ci->group_key == gkey && ci->instance_key == ikey)
            return ci;
    coord_inst_t *ci = calloc(1, sizeof(*ci));
    if (ci == NULL)
        return NULL;
    ci->by_rank = calloc((size_t)size, sizeof(inst_payload_t));
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
    ci->next = r->insts;
    r->insts = ci;
    return ci;
}

static void coord_inst_free(tutti__resolver_t *r, coord_inst_t *ci)
{
    coord_inst_t **pp = &r->insts;
    while (*pp && *pp != ci)
        pp = &(*pp)->next;
    if (*pp)
        *pp = ci->next;
    free(ci->by_rank);
    free(ci->task_of_rank);
    free(ci);
}

/* Value of field @p f of @p p as text, for messages and comparison. */
static void field_text(const inst_payload_t *p, int f, char *buf, size_t len)
{
    const char *s = NULL;
    switch (f) {
    case 0: s = tutti_collective_name((tutti_collective_t)p->collective); break;
    case 1: s = tutti_dtype_name((tutti_dtype_t)p->dtype); break;
    case 2:
        if (p->count == (uint64_t)TUTTI_COUNT_PER_RANK)
            snprintf(buf, len, "per-rank");
        else
            snprintf(buf, len, "%llu", (unsigned long long)p->count);
        return;
    case 3: s = tutti_op_name((tutti_op_t)p->op); break;
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
static int field_applies(const inst_payload_t *p, int f)
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

/* What selection sees of an agreed instance. */
static void query_of(const inst_payload_t *p, tutti_select_query_t *q)
{
    int per_rank = p->count == (uint64_t)TUTTI_COUNT_PER_RANK;
    *q = (tutti_select_query_t){
        (tutti_collective_t)p->collective, (tutti_device_type_t)p->device_type,
        (tutti_dtype_t)p->dtype,
        per_rank ? SIZE_MAX
                 : tutti__coll_select_bytes((tutti_collective_t)p->collective,
                                            (tutti_dtype_t)p->dtype, p->count),
        p->size, p->num_tasks, per_rank};
}

/* Runs the implementation's init_params once, for every member: its bytes
 * travel in the decision. */
static tutti_status_t plan(tutti_context_t *ctx, const coord_inst_t *ci,
                           const tutti__impl_entry_t *e,
                           decision_payload_t *d)
{
    const inst_payload_t *p = &ci->by_rank[0];
    const tutti_alg_ops_t *ops = e->impl->ops;
    size_t len = 0;
    d->details_len = 0;
    if (ops->init_params == NULL)
        return TUTTI_OK;
    tutti_select_query_t q;
    query_of(p, &q);
    tutti_alg_instance_t inst = {
        sizeof(inst), (tutti_collective_t)p->collective,
        (tutti_dtype_t)p->dtype, (tutti_op_t)p->op, p->count, p->root, 0,
        p->size, p->num_tasks, (tutti_device_type_t)p->device_type,
        ci->instance_key,
        /* A call that names its implementation still gets the params of
         * the first rule for it that matches the call. */
        p->algorithm[0]
            ? tutti__config_select_named(&ctx->cfg, &q, p->algorithm)
            : tutti__config_select(&ctx->cfg, &q, tutti__registry_accept,
                                   &ctx->reg, NULL, 0),
        NULL, NULL};
    if (inst.op == TUTTI_OP_AVG)
        inst.op = TUTTI_OP_SUM;
    tutti__error_clear();
    tutti_status_t st = ops->init_params(&inst, &tutti__core_ops, d->details,
                                         &len);
    if (st == TUTTI_OK && len > TUTTI_DETAILS_MAX) {
        snprintf(d->detail, sizeof(d->detail), "%s: init_params wrote %zu "
                 "bytes of details, at most %d allowed", e->impl->name, len,
                 TUTTI_DETAILS_MAX);
        return TUTTI_ERR_MODULE;
    }
    if (st != TUTTI_OK) {
        snprintf(d->detail, sizeof(d->detail), "%s: init_params failed: %s",
                 e->impl->name, tutti_last_error()[0] ? tutti_last_error()
                                                      : tutti_strerror(st));
        return st;
    }
    d->details_len = (uint32_t)len;
    return TUTTI_OK;
}

/* The implementation for an agreed instance: the call's choice, else the
 * first rule that matches. */
static tutti_status_t choose(tutti_context_t *ctx, const coord_inst_t *ci,
                             decision_payload_t *d)
{
    const inst_payload_t *p = &ci->by_rank[0];
    const char *name = p->algorithm[0] ? p->algorithm : NULL;

    snprintf(d->detail, sizeof(d->detail), "named by the call");
    if (name == NULL) {
        char size[32];
        tutti_select_query_t q;
        query_of(p, &q);
        const tutti__rule_t *rule = tutti__config_select(
            &ctx->cfg, &q, tutti__registry_accept, &ctx->reg, NULL, 0);
        if (rule == NULL) {
            snprintf(d->detail, sizeof(d->detail),
                     "no selection rule matches %s (%s, %s, %s, group of "
                     "%d, %d tasks) with an implementation that runs it; "
                     "add one to %s or set TUTTI_ALGO (tutti-info --explain "
                     "shows each rule's reason)",
                     tutti_collective_name(q.collective),
                     dev_name(p->device_type), tutti_dtype_name(q.dtype),
                     tutti__config_query_size(&q, size, sizeof(size)),
                     q.group_size, q.num_tasks,
                     ctx->cfg.path ? ctx->cfg.path : "the config");
            return TUTTI_ERR_NOT_FOUND;
        }
        name = rule->algorithm;
        snprintf(d->detail, sizeof(d->detail), "rule %s:%d", rule->file,
                 rule->line);
    }
    const tutti__impl_entry_t *e = tutti__registry_find(&ctx->reg, name);
    if (e == NULL) {
        snprintf(d->detail, sizeof(d->detail), "implementation '%s' is not "
                 "provided by any loaded module (tutti-info lists them)",
                 name);
        return TUTTI_ERR_NOT_FOUND;
    }
    if (!(e->impl->collectives & TUTTI_COLL_BIT(p->collective)) ||
        !(e->impl->device_types & TUTTI_DEVICE_BIT(p->device_type))) {
        snprintf(d->detail, sizeof(d->detail), "implementation '%s' (module "
                 "%s) does not run %s on %s devices", name,
                 ctx->reg.modules[e->module].name,
                 tutti_collective_name((tutti_collective_t)p->collective),
                 dev_name(p->device_type));
        return TUTTI_ERR_UNSUPPORTED;
    }
    if (p->count == (uint64_t)TUTTI_COUNT_PER_RANK &&
        !(e->impl->per_rank_collectives & TUTTI_COLL_BIT(p->collective))) {
        snprintf(d->detail, sizeof(d->detail), "implementation '%s' (module "
                 "%s) runs %s with equal counts only, not per-rank counts",
                 name, ctx->reg.modules[e->module].name,
                 tutti_collective_name((tutti_collective_t)p->collective));
        return TUTTI_ERR_UNSUPPORTED;
    }
    snprintf(d->algorithm, sizeof(d->algorithm), "%s", name);
    return plan(ctx, ci, e, d);
}

/* Every member sent its parameters: decide and tell each member task. */
static void instance_decided(tutti_context_t *ctx, const coord_inst_t *ci)
{
    tutti__ctrl_msg_t m;
    decision_payload_t *d = (decision_payload_t *)m.payload;
    tutti_status_t st = TUTTI_ERR_MISMATCH;

    msg_init(&m, TUTTI_CTRL_INST_OK, ci->group_key, ci->instance_key, -1);
    memset(d, 0, sizeof(*d));
    if (!disagreement(ci, d->detail, sizeof(d->detail)))
        st = choose(ctx, ci, d);
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
            send_to(ctx, t, &m);
    }
}

/* A member waited too long for the others' first execution: every member
 * that came learns which ranks never did. */
static void coord_inst_timeout(tutti_context_t *ctx,
                               const tutti__ctrl_msg_t *msg)
{
    tutti__resolver_t *r = ctx->resolver;
    char missing[200] = "", why[512];
    size_t n = 0;
    for (coord_inst_t *ci = r->insts; ci; ci = ci->next) {
        if (ci->group_key != msg->group_key ||
            ci->instance_key != msg->instance_key)
            continue;
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
                send_text(ctx, t, TUTTI_CTRL_INST_ERR, ci->group_key,
                          ci->instance_key, -1, why);
        }
        coord_inst_free(r, ci);
        return;
    }
}

static void coord_inst(tutti_context_t *ctx, const tutti__ctrl_msg_t *msg)
{
    const inst_payload_t *p = (const inst_payload_t *)msg->payload;
    tutti__resolver_t *r = ctx->resolver;
    if (p->size < 1 || p->rank < 0 || p->rank >= p->size)
        return;
    coord_inst_t *ci = coord_inst_get(r, msg->group_key, msg->instance_key,
                                      p->size);
    if (ci == NULL || p->size != ci->size || ci->task_of_rank[p->rank] >= 0)
        return;
    ci->by_rank[p->rank] = *p;
    ci->task_of_rank[p->rank] = msg->from_task;
    if (++ci->arrived < ci->size)
        return;
    instance_decided(ctx, ci);
    coord_inst_free(r, ci);
}

/* ---- members ------------------------------------------------------------------------ */

/* Copies text from a frame, which a peer may not have terminated. */
static void copy_text(char *dst, size_t dst_len, const char *src,
                      size_t src_len)
{
    size_t n = strnlen(src, src_len < dst_len ? src_len : dst_len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void member_group(tutti_context_t *ctx, const tutti__ctrl_msg_t *msg)
{
    tutti__resolver_t *r = ctx->resolver;
    for (join_wait_t *w = r->waits; w; w = w->next) {
        if (w->done || w->key != msg->group_key ||
            w->device_index != msg->device_index)
            continue;
        w->done = 1;
        if (msg->type == TUTTI_CTRL_GROUP_ERR) {
            const decision_payload_t *d = (const void *)msg->payload;
            w->status = TUTTI_ERR_MISMATCH;
            copy_text(w->error, sizeof(w->error), d->detail,
                      sizeof(d->detail));
        } else {
            const group_payload_t *gp = (const void *)msg->payload;
            size_t bytes = (size_t)gp->size * sizeof(tutti__member_t);
            size_t hbytes = (size_t)gp->num_hosts * TUTTI_HOST_NAME_MAX;
            w->table.members = malloc(bytes);
            w->table.hosts = malloc(hbytes ? hbytes : 1);
            w->status = w->table.members && w->table.hosts
                            ? TUTTI_OK : TUTTI_ERR_NO_MEMORY;
            if (w->status == TUTTI_OK) {
                memcpy(w->table.members, gp->members, bytes);
                memcpy(w->table.hosts, (const char *)gp->members + bytes,
                       hbytes);
            }
            w->table.size = gp->size;
            w->table.num_tasks = gp->num_tasks;
            w->table.num_hosts = gp->num_hosts;
        }
        pthread_cond_broadcast(&r->cond);
        return;
    }
}

static void member_decision(tutti_context_t *ctx, const tutti__ctrl_msg_t *msg)
{
    const decision_payload_t *d = (const void *)msg->payload;
    for (group_ref_t *ref = ctx->resolver->members; ref; ref = ref->next) {
        tutti_group_t *g = ref->g;
        if (g->key != msg->group_key)
            continue;
        tutti__decision_t *dec = calloc(1, sizeof(*dec));
        if (dec == NULL)
            continue;
        dec->instance_key = msg->instance_key;
        dec->status = msg->type == TUTTI_CTRL_INST_OK ? TUTTI_OK
                      : msg->status != 0 ? (tutti_status_t)msg->status
                                         : TUTTI_ERR_TIMEOUT;
        copy_text(dec->algorithm, sizeof(dec->algorithm), d->algorithm,
                  sizeof(d->algorithm));
        copy_text(dec->detail, sizeof(dec->detail), d->detail,
                  sizeof(d->detail));
        dec->details_len = d->details_len <= TUTTI_DETAILS_MAX
                               ? d->details_len : 0;
        memcpy(dec->details, d->details, dec->details_len);
        dec->next = g->decisions;
        g->decisions = dec;
        atomic_store_explicit(&g->has_decisions, 1, memory_order_release);
    }
}

/* Runs with the resolver lock held, in the control thread or in place. */
static void dispatch(tutti_context_t *ctx, const tutti__ctrl_msg_t *msg)
{
    char text[TUTTI_CTRL_PAYLOAD];
    switch (msg->type) {
    case TUTTI_CTRL_ABORT:
        copy_text(text, sizeof(text), msg->payload, sizeof(msg->payload));
        tutti__context_abort(ctx, TUTTI_ERR_ABORTED, text);
        pthread_cond_broadcast(&ctx->resolver->cond);
        break;
    case TUTTI_CTRL_TASK_DEAD:
        /* A task that destroyed its context and then exited is not news. */
        if (ctx->resolver->said_bye[msg->from_task])
            break;
        tutti__context_task_dead(ctx, msg->from_task);
        if (msg->from_task == COORDINATOR_TASK)
            tutti__context_abort(ctx, TUTTI_ERR_PEER, "task 0, which "
                                 "coordinates this job's groups, is gone: "
                                 "its process exited or was killed");
        pthread_cond_broadcast(&ctx->resolver->cond);
        break;
    case TUTTI_CTRL_BYE:
        if (!ctx->resolver->said_bye[msg->from_task]) {
            ctx->resolver->said_bye[msg->from_task] = 1;
            ctx->resolver->byes++;
        }
        pthread_cond_broadcast(&ctx->resolver->cond);
        break;
    case TUTTI_CTRL_JOIN: coord_join(ctx, msg); break;
    case TUTTI_CTRL_JOIN_CANCEL: coord_cancel(ctx, msg); break;
    case TUTTI_CTRL_GROUP:
    case TUTTI_CTRL_GROUP_ERR: member_group(ctx, msg); break;
    case TUTTI_CTRL_INST: coord_inst(ctx, msg); break;
    case TUTTI_CTRL_INST_TIMEOUT: coord_inst_timeout(ctx, msg); break;
    case TUTTI_CTRL_INST_OK:
    case TUTTI_CTRL_INST_ERR: member_decision(ctx, msg); break;
    default:
        if (msg->type < TUTTI_CTRL_TYPES && ctx->ctrl_handlers[msg->type]) {
            ctx->ctrl_handlers[msg->type](ctx, msg);
            break;
        }
        tutti__log(TUTTI_LOG_ERROR, "resolve", "control frame of unknown "
                   "type %u from task %d", msg->type, msg->from_task);
    }
}

tutti_status_t tutti__resolver_start(tutti_context_t *ctx)
{
    tutti__resolver_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return TUTTI_ERR_NO_MEMORY;
    r->said_bye = calloc((size_t)ctx->num_tasks, 1);
    if (r->said_bye == NULL) {
        free(r);
        return TUTTI_ERR_NO_MEMORY;
    }
    pthread_cond_init(&r->cond, NULL);
    ctx->resolver = r;
    tutti_status_t st = tutti__ctrl_start(ctx, dispatch, &r->ctrl);
    if (st != TUTTI_OK) {
        tutti__resolver_stop(ctx);
        return st;
    }
    return TUTTI_OK;
}

void tutti__resolver_stop(tutti_context_t *ctx)
{
    tutti__resolver_t *r = ctx->resolver;
    if (r == NULL)
        return;
    tutti__ctrl_stop(r->ctrl);
    while (r->groups)
        coord_group_free(r, r->groups);
    while (r->insts)
        coord_inst_free(r, r->insts);
    while (r->members) {
        group_ref_t *next = r->members->next;
        free(r->members);
        r->members = next;
    }
    pthread_cond_destroy(&r->cond);
    free(r->said_bye);
    free(r);
    ctx->resolver = NULL;
}

/* What this task's modules are, for the agreement check. */
static void fingerprints(const tutti_context_t *ctx, join_payload_t *j)
{
    j->num_mods = 0;
    for (size_t i = 0; i < ctx->reg.num_modules; i++) {
        const tutti__module_t *m = &ctx->reg.modules[i];
        if (m->desc == NULL || j->num_mods == MAX_FINGERPRINTS)
            continue;
        fingerprint_t *f = &j->mods[j->num_mods++];
        snprintf(f->name, sizeof(f->name), "%s", m->name);
        snprintf(f->version, sizeof(f->version), "%s", m->version);
        f->hash = m->file_hash;
    }
}

/* The device resolver's part on a CPU device: host name and the NUMA node
 * of the processor the joining thread runs on. */
static void where_am_i(join_payload_t *j)
{
    unsigned cpu, node;
    if (gethostname(j->host, sizeof(j->host)) != 0)
        snprintf(j->host, sizeof(j->host), "unknown");
    j->host[sizeof(j->host) - 1] = '\0';
    j->numa_node = getcpu(&cpu, &node) == 0 ? (int32_t)node : -1;
}

static void deadline_after(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_REALTIME, ts);
    double whole = (double)(time_t)seconds;
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

tutti_status_t tutti__resolve_group(tutti_context_t *ctx, uint64_t key,
                                    int size, tutti_device_type_t type,
                                    int device_index, const int *ring_order,
                                    double timeout,
                                    tutti__group_table_t *table_out)
{
    tutti__resolver_t *r = ctx->resolver;
    join_wait_t w;
    tutti__ctrl_msg_t m;
    struct timespec until;
    tutti_status_t st;

    memset(&w, 0, sizeof(w));
    w.key = key;
    w.device_index = device_index;
    msg_init(&m, TUTTI_CTRL_JOIN, key, 0, device_index);
    join_payload_t *j = (join_payload_t *)m.payload;
    j->size = size;
    j->device_type = type;
    j->device_index = device_index;
    fingerprints(ctx, j);
    where_am_i(j);
    j->has_order = ring_order != NULL;
    for (int i = 0; ring_order && i < size && i < MAX_MEMBERS; i++)
        j->order[i] = ring_order[i];
    m.len = sizeof(*j);
    deadline_after(&until, timeout);

    pthread_mutex_lock(&ctx->resolver_lock);
    w.next = r->waits;
    r->waits = &w;
    st = send_to(ctx, COORDINATOR_TASK, &m);
    while (st == TUTTI_OK && !w.done && ctx->abort_status == TUTTI_OK &&
           pthread_cond_timedwait(&r->cond, &ctx->resolver_lock, &until) == 0)
        ;
    if (st == TUTTI_OK && !w.done && ctx->abort_status != TUTTI_OK) {
        st = tutti__error(ctx->abort_status, "resolve", "group 0x%llx: %s",
                          (unsigned long long)key, ctx->abort_reason);
    } else if (st == TUTTI_OK && !w.done) {
        /* Ask the coordinator who had come; it answers at once. */
        msg_init(&m, TUTTI_CTRL_JOIN_CANCEL, key, 0, device_index);
        send_to(ctx, COORDINATOR_TASK, &m);
        deadline_after(&until, 2.0);
        while (!w.done && pthread_cond_timedwait(&r->cond, &ctx->resolver_lock,
                                                 &until) == 0)
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
    pthread_mutex_unlock(&ctx->resolver_lock);
    if (st == TUTTI_OK) {
        *table_out = w.table;
    } else {
        free(w.table.members);
        free(w.table.hosts);
    }
    return st;
}

tutti_status_t tutti__resolver_add_group(tutti_context_t *ctx,
                                         tutti_group_t *g)
{
    group_ref_t *ref = malloc(sizeof(*ref));
    if (ref == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "group", "group 0x%llx: no "
                            "memory to register it for decisions",
                            (unsigned long long)g->key);
    pthread_mutex_lock(&ctx->resolver_lock);
    ref->g = g;
    ref->next = ctx->resolver->members;
    ctx->resolver->members = ref;
    pthread_mutex_unlock(&ctx->resolver_lock);
    return TUTTI_OK;
}

void tutti__resolver_remove_group(tutti_context_t *ctx, tutti_group_t *g)
{
    pthread_mutex_lock(&ctx->resolver_lock);
    for (group_ref_t **pp = &ctx->resolver->members; *pp; pp = &(*pp)->next) {
        if ((*pp)->g == g) {
            group_ref_t *dead = *pp;
            *pp = dead->next;
            free(dead);
            break;
        }
    }
    tutti__decision_t *d = g->decisions;
    g->decisions = NULL;
    pthread_mutex_unlock(&ctx->resolver_lock);
    while (d) {
        tutti__decision_t *next = d->next;
        free(d);
        d = next;
    }
}

tutti_status_t tutti__resolve_instance(tutti_group_t *g,
                                       const tutti_instance_params_t *p)
{
    tutti_context_t *ctx = g->ctx;
    tutti__ctrl_msg_t m;
    msg_init(&m, TUTTI_CTRL_INST, g->key, p->instance_key, g->device_index);
    inst_payload_t *ip = (inst_payload_t *)m.payload;
    memset(ip, 0, sizeof(*ip));
    *ip = (inst_payload_t){g->rank, g->size, p->collective, p->dtype, p->op,
                           p->root, g->device_type, g->num_tasks, p->count,
                           "", p->pre_scale, p->post_scale,
                           p->collective == TUTTI_COLL_PERMUTE
                               ? tutti__coll_perm_hash(p->permutation, g->size)
                               : 0};
    if (p->algorithm)
        snprintf(ip->algorithm, sizeof(ip->algorithm), "%s", p->algorithm);
    m.len = sizeof(*ip);
    pthread_mutex_lock(&ctx->resolver_lock);
    tutti_status_t st = send_to(ctx, COORDINATOR_TASK, &m);
    pthread_mutex_unlock(&ctx->resolver_lock);
    return st;
}

tutti__decision_t *tutti__resolver_take(tutti_group_t *g)
{
    pthread_mutex_lock(&g->ctx->resolver_lock);
    tutti__decision_t *d = g->decisions;
    g->decisions = NULL;
    atomic_store_explicit(&g->has_decisions, 0, memory_order_relaxed);
    pthread_mutex_unlock(&g->ctx->resolver_lock);
    return d;
}

static int tasks_gone(const tutti_context_t *ctx)
{
    int n = 0;
    for (int t = 0; t < ctx->num_tasks; t++)
        n += atomic_load_explicit(&ctx->task_dead[t], memory_order_relaxed);
    return n;
}

void tutti__resolver_finish(tutti_context_t *ctx)
{
    tutti__resolver_t *r = ctx->resolver;
    struct timespec until;
    tutti__ctrl_msg_t m;
    if (r == NULL || ctx->num_tasks == 1)
        return;
    pthread_mutex_lock(&ctx->resolver_lock);
    /* Every task learns it, so no one reports this task's exit as a
     * failure; the coordinator also waits for everyone's. */
    msg_init(&m, TUTTI_CTRL_BYE, 0, 0, -1);
    ctx->resolver->frames_sent += (uint64_t)(ctx->num_tasks - 1);
    tutti__ctrl_broadcast(r->ctrl, &m);
    if (ctx->task == COORDINATOR_TASK) {
        deadline_after(&until, ctx->cfg.timeout);
        while (r->byes + tasks_gone(ctx) < ctx->num_tasks - 1 &&
               pthread_cond_timedwait(&r->cond, &ctx->resolver_lock,
                                      &until) == 0)
            ;
        if (r->byes + tasks_gone(ctx) < ctx->num_tasks - 1)
            tutti__log(TUTTI_LOG_WARN, "resolve", "context destroyed while "
                       "%d other tasks still had theirs",
                       ctx->num_tasks - 1 - r->byes - tasks_gone(ctx));
    }
    pthread_mutex_unlock(&ctx->resolver_lock);
}

void tutti__resolver_abort(tutti_context_t *ctx, const char *text)
{
    tutti__ctrl_msg_t m;
    msg_init(&m, TUTTI_CTRL_ABORT, 0, 0, -1);
    snprintf(m.payload, sizeof(m.payload), "%s", text);
    m.len = (uint32_t)strlen(m.payload) + 1;
    m.from_task = ctx->task;
    ctx->resolver->frames_sent += (uint64_t)(ctx->num_tasks - 1);
    tutti__ctrl_broadcast(ctx->resolver->ctrl, &m);
    pthread_cond_broadcast(&ctx->resolver->cond);
}

void tutti__resolve_timeout(tutti_group_t *g, uint64_t instance_key)
{
    tutti__ctrl_msg_t m;
    msg_init(&m, TUTTI_CTRL_INST_TIMEOUT, g->key, instance_key,
             g->device_index);
    pthread_mutex_lock(&g->ctx->resolver_lock);
    send_to(g->ctx, COORDINATOR_TASK, &m);
    pthread_mutex_unlock(&g->ctx->resolver_lock);
}

tutti_status_t tutti__resolver_send(tutti_context_t *ctx, int task,
                                    tutti__ctrl_msg_t *msg)
{
    return send_to(ctx, task, msg);
}

void tutti__resolver_broadcast(tutti_context_t *ctx, tutti__ctrl_msg_t *msg)
{
    msg->from_task = ctx->task;
    ctx->resolver->frames_sent += (uint64_t)(ctx->num_tasks - 1);
    tutti__ctrl_broadcast(ctx->resolver->ctrl, msg);
}

int tutti__resolver_wait(tutti_context_t *ctx, const struct timespec *until)
{
    return pthread_cond_timedwait(&ctx->resolver->cond, &ctx->resolver_lock,
                                  until);
}

void tutti__resolver_wake(tutti_context_t *ctx)
{
    pthread_cond_broadcast(&ctx->resolver->cond);
}

int tutti__resolver_poll(tutti_context_t *ctx)
{
    return ctx->resolver ? tutti__ctrl_poll(ctx->resolver->ctrl) : 0;
}

uint64_t tutti__resolver_frames_sent(const tutti_context_t *ctx)
{
    return ctx->resolver ? ctx->resolver->frames_sent : 0;
}
