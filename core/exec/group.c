/*
 * Groups (exec.h): a member joins through the coordinator, which tells it
 * its rank and its peers' places; then it connects its transport, and
 * leaves by freeing what its instances and requests held.  Handles are
 * checked before use (exec.h: state words, shells kept in a pool).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "device/device.h"
#include "exec/exec.h"
#include "transport/local.h"
#include "transport/mux.h"

/* Shells of left groups, and the groups joined or being joined in this
 * process (exec.h, TUTTI__HANDLE_*): a shell is never given back to
 * malloc, so a stale handle's state word stays readable.  Taken on join
 * and leave only. */
static pthread_mutex_t shells_lock = PTHREAD_MUTEX_INITIALIZER;
static tutti_group_t *shells, *live;

tutti_status_t tutti__group_check(const tutti_group_t *g, const char *call)
{
    if (g == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: group is "
                            "NULL", call);
    uint32_t state = atomic_load_explicit(&g->state, memory_order_relaxed);
    if (state == TUTTI__HANDLE_LIVE)
        return TUTTI_OK;
    return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: group %p %s",
                        call, (const void *)g,
                        state == TUTTI__HANDLE_LEFT
                            ? "was left (tutti_group_leave)"
                        : state == TUTTI__HANDLE_JOINING
                            ? "is still being joined"
                            : "is not a group tutti_group_join gave");
}

/* A shell for a group of @p job joining as @p p says, on the live list;
 * refused when that device is in the group already (a second handle would
 * be a second member). */
static tutti_status_t shell_take(tutti__job_t *job,
                                 const tutti_group_params_t *p,
                                 tutti_group_t **g_out)
{
    tutti_group_t *g;
    pthread_mutex_lock(&shells_lock);
    for (g = live; g != NULL; g = g->shell_next) {
        if (g->job == job && g->key == p->group_key &&
            g->device_type == p->device_type &&
            g->device_index == p->device_index)
            break;
    }
    if (g != NULL) {
        pthread_mutex_unlock(&shells_lock);
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "group 0x%llx: "
                            "task:%d/%s:%d has joined it already (handle "
                            "%p); leave it before joining again",
                            (unsigned long long)p->group_key, job->task,
                            tutti_device_type_name(p->device_type),
                            p->device_index, (void *)g);
    }
    if ((g = shells) != NULL)
        shells = g->shell_next;
    else
        g = malloc(sizeof(*g));
    if (g != NULL) {
        memset(g, 0, sizeof(*g));
        atomic_init(&g->state, TUTTI__HANDLE_JOINING);
        g->job = job;
        g->key = p->group_key;
        g->device_type = p->device_type;
        g->device_index = p->device_index;
        g->shell_next = live;
        live = g;
    }
    pthread_mutex_unlock(&shells_lock);
    if (g == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "group", "group 0x%llx: no "
                            "memory", (unsigned long long)p->group_key);
    *g_out = g;
    return TUTTI_OK;
}

/* @p g leaves the live list for the pool, marked left. */
static void shell_give_back(tutti_group_t *g)
{
    pthread_mutex_lock(&shells_lock);
    for (tutti_group_t **pp = &live; *pp; pp = &(*pp)->shell_next) {
        if (*pp == g) {
            *pp = g->shell_next;
            break;
        }
    }
    atomic_store_explicit(&g->state, TUTTI__HANDLE_LEFT,
                          memory_order_relaxed);
    g->shell_next = shells;
    shells = g;
    pthread_mutex_unlock(&shells_lock);
}

int tutti_group_rank(const tutti_group_t *group)
{
    if (tutti__group_check(group, "tutti_group_rank") != TUTTI_OK)
        return -1;
    return group->rank;
}

int tutti_group_size(const tutti_group_t *group)
{
    if (tutti__group_check(group, "tutti_group_size") != TUTTI_OK)
        return -1;
    return group->size;
}

tutti_status_t tutti_group_locality(const tutti_group_t *group, int rank,
                                    tutti_locality_t *locality_out)
{
    tutti_status_t st = tutti__group_check(group, "tutti_group_locality");
    if (st != TUTTI_OK)
        return st;
    if (locality_out == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group",
                            "tutti_group_locality: locality_out is NULL");
    if (rank < 0 || rank >= group->size)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group",
                            "tutti_group_locality: group 0x%llx: rank %d "
                            "outside 0..%d", (unsigned long long)group->key,
                            rank, group->size - 1);
    *locality_out = group->localities[rank];
    return TUTTI_OK;
}

/* Whether @p i is within 0..@p n - 1 (hosts, or ranks), for @p call; one
 * outside is a NULL callers probe for (is there a second host?), recorded
 * quietly, naming @p what. */
static int in_group(const tutti_group_t *group, const char *call,
                    const char *what, int i, int n)
{
    if (i >= 0 && i < n)
        return 1;
    tutti__error_quiet(TUTTI_ERR_INVALID_ARG, "%s: group 0x%llx: %s %d "
                       "outside 0..%d", call, (unsigned long long)group->key,
                       what, i, n - 1);
    return 0;
}

const char *tutti_group_host(const tutti_group_t *group, int host)
{
    const char *call = "tutti_group_host";
    if (tutti__group_check(group, call) != TUTTI_OK ||
        !in_group(group, call, "host", host, group->num_hosts))
        return NULL;
    return group->hosts[host];
}

const char *tutti_group_pci_bus_id(const tutti_group_t *group, int rank)
{
    const char *call = "tutti_group_pci_bus_id";
    if (tutti__group_check(group, call) != TUTTI_OK ||
        !in_group(group, call, "rank", rank, group->size))
        return NULL;
    return group->pci_ids[rank];
}

tutti_status_t tutti__group_place(tutti_group_t *g, tutti__group_table_t *t)
{
    /* The join checked the table (member.c); its arrays are sized by the
     * group's size, which these per-rank arrays of the member are too. */
    if (t->size != g->size) {
        int size = t->size;
        free(t->members);
        free(t->hosts);
        free(t->pci);
        memset(t, 0, sizeof(*t));
        return tutti__error(TUTTI_ERR_INTERNAL, "group", "group 0x%llx: the "
                            "coordinator's table has %d members, the group "
                            "%d", (unsigned long long)g->key, size, g->size);
    }
    g->localities = t->members;
    g->hosts = t->hosts;
    g->num_hosts = t->num_hosts;
    t->members = NULL;
    t->hosts = NULL;
    for (int i = 0; i < t->size; i++) {
        tutti__pci_text(t->pci ? t->pci[i] : 0, g->pci[i]);
        g->pci_ids[i] = g->pci[i];
    }
    free(t->pci);
    t->pci = NULL;
    g->rank = -1;
    for (int i = 0; i < t->size; i++) {
        g->rank_task[i] = g->localities[i].task;
        if (g->localities[i].task == g->job->task &&
            g->localities[i].device_index == g->device_index)
            g->rank = i;
    }
    g->num_tasks = t->num_tasks;
    if (g->rank < 0)
        return tutti__error(TUTTI_ERR_INTERNAL, "group", "group 0x%llx: the "
                            "coordinator's table lacks task %d device %d",
                            (unsigned long long)g->key, g->job->task,
                            g->device_index);
    return TUTTI_OK;
}

/* True if this host runs more members of @p g than it has processors:
 * those online, or those of this task's affinity mask where tutti-run
 * left its ranks unpinned (TUTTI_BIND=none: a mask it was itself started
 * under, e.g. by taskset, holds every rank).  A task pinned to one CPU by
 * another launcher sees one CPU in its mask, not the host's. */
static int host_oversubscribed(const tutti_group_t *g)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *bind = getenv("TUTTI_BIND");
    cpu_set_t mask;
    if (bind != NULL && strcmp(bind, "none") == 0 &&
        sched_getaffinity(0, sizeof(mask), &mask) == 0 &&
        CPU_COUNT(&mask) < cpus)
        cpus = CPU_COUNT(&mask);
    int here = 0;
    for (int r = 0; r < g->size; r++)
        here += g->localities[r].host == g->localities[g->rank].host;
    return cpus > 0 && here > cpus;
}

/* Inside one task the local transport connects everyone directly; across
 * tasks each peer gets its transport (tp_mux.c).  Where this host runs
 * more members than it has processors, a waiting member must give its
 * processor to the peer it waits for soon, not spin: it spins briefly,
 * then sleeps until a peer's data wakes it (the transports place
 * doorbells), or yields where a transport cannot wake it. */
static tutti_status_t connect_group(tutti_group_t *g)
{
    tutti__job_t *job = g->job;
    int *hosts = malloc((size_t)g->size * sizeof(int));
    if (hosts == NULL)
        return TUTTI_ERR_NO_MEMORY;
    for (int r = 0; r < g->size; r++)
        hosts[r] = g->localities[r].host;
    /* (A CUDA member's work completes on its device, which rings no
     * bell.) */
    int over = host_oversubscribed(g);
    int sleep = over && g->device_type == TUTTI_DEVICE_CPU;
    tutti_tp_group_t tg = {sizeof(tg), job->job_id, g->key, g->rank, g->size,
                           g->rank_task, job->task, g->timeout, job->cfg, 0,
                           0, &tutti__tp_core_ops, NULL, hosts, NULL,
                           job->cfg->verify, sleep, job->store, job->secret,
                           job};
    tutti__peer_link_t *link = &g->peers;
    tutti_status_t st;
    if (g->num_tasks == 1) {
        link->tp = &tutti__tp_local_ops;
        st = link->tp->connect(&tg, &link->ep);
    } else {
        st = tutti__tp_mux_connect(&job->transports, &tg, &link->tp,
                                   &link->ep);
    }
    free(hosts);
    if (st == TUTTI_OK && over) {
        g->spin_limit = TUTTI__SPIN_POLLS_OVERSUBSCRIBED;
        g->sleeps = sleep &&
                    link->tp->size >= offsetof(tutti_tp_ops_t, sleep) +
                                          sizeof(link->tp->sleep) &&
                    link->tp->sleep != NULL;
    }
    return st;
}

/* tutti_group_join()'s params, each field named as tutti.h names it. */
static tutti_status_t check_group_params(const tutti_group_params_t *p)
{
    const char *call = "tutti_group_join";
    unsigned long long key = p ? (unsigned long long)p->group_key : 0;

    if (p == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: params is "
                            "NULL", call);
    if (p->size < offsetof(tutti_group_params_t, device_order))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: "
                            "params->size %zu: expected %zu, or at least %zu "
                            "from an older header (tutti_group_params_init "
                            "sets it)", call, p->size, sizeof(*p),
                            offsetof(tutti_group_params_t, device_order));
    if (p->group_size < 1)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: group "
                            "0x%llx: group_size %d: expected at least 1",
                            call, key, p->group_size);
    if (p->device_index < 0)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: group "
                            "0x%llx: device_index %d: expected at least 0",
                            call, key, p->device_index);
    if ((unsigned)p->device_type >= TUTTI_DEVICE_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: group "
                            "0x%llx: device_type %d is not a "
                            "tutti_device_type_t; expected 0 to %d", call,
                            key, (int)p->device_type, TUTTI_DEVICE_COUNT - 1);
    if (p->size >= sizeof(*p) && p->device_order != TUTTI_ORDER_TASK &&
        p->device_order != TUTTI_ORDER_TOPOLOGY)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "%s: group "
                            "0x%llx: device_order %d: expected "
                            "TUTTI_ORDER_TASK or TUTTI_ORDER_TOPOLOGY", call,
                            key, (int)p->device_order);
    return TUTTI_OK;
}

/* The device resolver's part on a CUDA member: the CUDA operations, the
 * device made current on the joining thread, and its PCI bus id. */
static tutti_status_t cuda_member(tutti_group_t *g, uint32_t *pci_out)
{
    const tutti__cuda_ops_t *ops;
    char bus[TUTTI__PCI_BUS_ID_LEN];
    int count = 0, err;
    unsigned long long key = (unsigned long long)g->key;

    if (tutti__cuda_get(&ops) != TUTTI_OK) {
        char why[400];
        snprintf(why, sizeof(why), "%s", tutti_last_error());
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "group", "group 0x%llx: "
                            "cuda:%d: %s", key, g->device_index, why);
    }
    if ((err = ops->device_count(&count)) != 0)
        return tutti__cuda_error(TUTTI_ERR_UNSUPPORTED, err, "group 0x%llx: "
                                 "cuda:%d: no CUDA device usable", key,
                                 g->device_index);
    if (g->device_index >= count)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "group", "group 0x%llx: "
                            "cuda:%d: this process sees %d CUDA device%s "
                            "(0..%d)", key, g->device_index, count,
                            count == 1 ? "" : "s", count - 1);
    if ((err = ops->set_device(g->device_index)) != 0 ||
        (err = ops->pci_bus_id(g->device_index, bus, sizeof(bus))) != 0)
        return tutti__cuda_error(TUTTI_ERR_UNSUPPORTED, err, "group 0x%llx: "
                                 "cuda:%d", key, g->device_index);
    g->cuda = ops;
    *pci_out = tutti__pci_code(bus);
    return TUTTI_OK;
}

tutti_status_t tutti__group_join(tutti__job_t *job,
                                 tutti__timeline_file_t *timeline,
                                 const tutti_group_params_t *params,
                                 tutti_group_t **group_out)
{
    tutti__group_table_t table;
    tutti_status_t st;
    tutti_group_t *g = NULL;
    uint64_t began = timeline != NULL ? tutti__timeline_now() : 0;

    tutti__error_clear();
    if ((st = check_group_params(params)) != TUTTI_OK)
        return st;
    /* A caller built against 0.1's header ends before device_order: its
     * struct is read into a whole one, the fields it lacks left at zero. */
    tutti_group_params_t whole;
    if (params->size < sizeof(whole)) {
        memset(&whole, 0, sizeof(whole));
        memcpy(&whole, params, params->size);
        whole.size = sizeof(whole);
        params = &whole;
    }
    if ((st = shell_take(job, params, &g)) != TUTTI_OK)
        return st;
    g->size = params->group_size;
    g->timeout = params->timeout > 0 ? params->timeout : job->cfg->timeout;
    g->spin_limit = TUTTI__SPIN_POLLS; /* connect_group() may lower it */
    snprintf(g->device_name, sizeof(g->device_name), "task:%d/%s:%d",
             job->task, tutti_device_type_name(g->device_type),
             g->device_index);
    g->rank_task = malloc((size_t)g->size * sizeof(int));
    g->pci = calloc((size_t)g->size, sizeof(*g->pci));
    g->pci_ids = calloc((size_t)g->size, sizeof(*g->pci_ids));
    g->mod_state = calloc(job->reg->num_modules + 1, sizeof(*g->mod_state));
    if (g->rank_task == NULL || g->pci == NULL || g->pci_ids == NULL ||
        g->mod_state == NULL ||
        tutti__instance_table(g, TUTTI_INSTANCE_BUCKETS) != TUTTI_OK) {
        st = tutti__error(TUTTI_ERR_NO_MEMORY, "group", "group 0x%llx: no "
                          "memory for a member of %d", (unsigned long long)
                          g->key, g->size);
        goto err_free;
    }
    /* A CUDA member that cannot use its device still joins, and fails
     * once the coordinator saw every member agree on the type: a mixed
     * group then fails everywhere alike, naming the difference. */
    uint32_t pci = 0;
    tutti_status_t cuda_st = TUTTI_OK;
    char cuda_why[512] = "";
    if (g->device_type == TUTTI_DEVICE_CUDA &&
        (cuda_st = cuda_member(g, &pci)) != TUTTI_OK)
        snprintf(cuda_why, sizeof(cuda_why), "%s", tutti_last_error());
    st = tutti__member_join(job, g->key, g->size, g->device_type,
                            g->device_index, params->ring_order,
                            params->device_order, pci, g->timeout, &table);
    if (st != TUTTI_OK)
        goto err_free;
    st = tutti__group_place(g, &table);
    if (st != TUTTI_OK)
        goto err_free;
    if (cuda_st != TUTTI_OK) {
        st = tutti__error(cuda_st, "group", "%s", cuda_why);
        goto err_free;
    }
    tutti__log_set_thread_member(g->rank, g->device_name);
    if (timeline != NULL &&
        (st = tutti__timeline_member(timeline, g->key, g->rank,
                                     g->device_name, &g->tl)) != TUTTI_OK)
        goto err_free;
    g->core_ops = g->tl != NULL ? tutti__timeline_core_ops()
                                : &tutti__core_ops;
    if (g->size > 1 && (st = connect_group(g)) != TUTTI_OK)
        goto err_free;
    g->peers.rank = g->rank;
    g->peers.size = g->size;
    g->peers.key = g->key;
    g->health_seen = -1; /* look at the job's health on first use */
    g->member = (tutti__job_member_t){
        .group_key = g->key, .device_index = g->device_index,
        .rank = g->rank, .size = g->size, .device_type = g->device_type,
        .num_tasks = g->num_tasks};
    if ((st = tutti__member_add(job, &g->member)) != TUTTI_OK)
        goto err_disconnect;
    tutti__log(TUTTI_LOG_DEBUG, "group", "joined group 0x%llx as rank %d of "
               "%d over %d tasks (%s transport)", (unsigned long long)g->key,
               g->rank, g->size, g->num_tasks,
               g->peers.tp ? g->peers.tp->name : "no");
    pthread_mutex_lock(&job->groups_lock);
    job->num_groups++;
    pthread_mutex_unlock(&job->groups_lock);
    if (g->tl != NULL)
        tutti__timeline_join(g->tl, began, g->size, g->num_tasks);
    atomic_store_explicit(&g->state, TUTTI__HANDLE_LIVE,
                          memory_order_relaxed);
    *group_out = g;
    return TUTTI_OK;

err_disconnect:
    if (g->peers.ep)
        g->peers.tp->disconnect(g->peers.ep);
err_free:
    tutti__timeline_leave(g->tl);
    g->tl = NULL;
    free(g->localities);
    free(g->hosts);
    free(g->rank_task);
    free(g->pci);
    free(g->pci_ids);
    free(g->mod_state);
    free(g->instances);
    shell_give_back(g);
    return st;
}

void tutti_group_leave(tutti_group_t *g)
{
    if (g == NULL || tutti__group_check(g, "tutti_group_leave") != TUTTI_OK)
        return;
    if (g->active.head != NULL)
        tutti__log(TUTTI_LOG_WARN, "group", "group 0x%llx left with "
                   "executions in flight", (unsigned long long)g->key);
    /* Before the instances go: events name their implementations. */
    tutti__timeline_leave(g->tl);
    g->tl = NULL;
    for (size_t b = 0; b < g->num_buckets; b++) {
        while (g->instances[b]) {
            tutti__instance_t *next = g->instances[b]->next;
            tutti__instance_free(g->instances[b]);
            g->instances[b] = next;
        }
    }
    /* Module group states end after every instance that used them. */
    const tutti__registry_t *reg = g->job->reg;
    for (size_t m = 0; m < reg->num_modules; m++) {
        const tutti_alg_group_ops_t *gops = reg->modules[m].group_ops;
        if (g->mod_state[m].made && gops != NULL && gops->fini_group)
            gops->fini_group(g->mod_state[m].state);
    }
    tutti__request_release_all(g);
    while (g->stages) {
        tutti__stage_t *next = g->stages->next;
        free(g->stages->buf);
        free(g->stages);
        g->stages = next;
    }
    tutti__member_remove(g->job, &g->member);
    if (g->peers.ep)
        g->peers.tp->disconnect(g->peers.ep);
    pthread_mutex_lock(&g->job->groups_lock);
    g->job->num_groups--;
    pthread_mutex_unlock(&g->job->groups_lock);
    free(g->localities);
    free(g->hosts);
    free(g->rank_task);
    free(g->pci);
    free(g->pci_ids);
    free(g->mod_state);
    free(g->instances);
    shell_give_back(g);
}
