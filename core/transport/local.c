/*
 * local transport: members of one group inside one process (one thread
 * each).  The first member to join allocates every channel of the group;
 * the others find it in a process-wide table by job and group key.  In a
 * group that spans processes, the members of one process meet here too,
 * through the per-peer choice (mux.c), with the number of such members.
 * The mesh holds a doorbell per member after the channels, used where the
 * group's waits sleep (tutti_tp_group_t.sleep).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "transport/chan.h"
#include "transport/local.h"

/* Job ids are at most 40 characters (job/bootstrap.h). */
#define MESH_JOB_MAX 64
/* Channels of a group inside one process, unless the group says. */
#define LOCAL_SLOTS 16
#define LOCAL_SLOT_SIZE (64u << 10)

struct tutti__local_mesh {
    char job_id[MESH_JOB_MAX];
    uint64_t key;
    int size;                   /* channel matrix is size x size */
    int expected;               /* members that join it (this process's) */
    int joined, left;
    unsigned char *present;     /* which ranks joined */
    char *mem;                  /* size x size channels, then size
                                   doorbells */
    size_t chan_bytes;
    struct tutti__local_mesh *next;
};
typedef tutti__local_mesh_t local_mesh_t;

typedef struct {
    tutti__chan_ep_t chan;
    local_mesh_t *mesh;
} local_ep_t;

static pthread_mutex_t mesh_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mesh_cond = PTHREAD_COND_INITIALIZER;
static local_mesh_t *meshes;

static tutti__chan_t *mesh_chan(local_mesh_t *m, int src, int dst)
{
    return (tutti__chan_t *)(m->mem +
                             ((size_t)src * (size_t)m->size + (size_t)dst) *
                                 m->chan_bytes);
}

static void *mesh_bell(local_mesh_t *m, int rank)
{
    return m->mem + (size_t)m->size * (size_t)m->size * m->chan_bytes +
           (size_t)rank * TUTTI_CHAN_BELL_BYTES;
}

static void mesh_free(local_mesh_t *m)
{
    local_mesh_t **pp = &meshes;
    while (*pp && *pp != m)
        pp = &(*pp)->next;
    if (*pp)
        *pp = m->next;
    free(m->mem);
    free(m->present);
    free(m);
}

/* Finds the mesh of a group still being joined, or makes one.  Called
 * with mesh_lock held. */
static tutti_status_t mesh_get(const tutti_tp_group_t *g, int expected,
                               size_t chan_bytes, local_mesh_t **mesh_out)
{
    for (local_mesh_t *m = meshes; m; m = m->next) {
        if (m->key != g->group_key || strcmp(m->job_id, g->job_id) != 0 ||
            m->joined == m->expected)
            continue;
        if (m->size != g->group_size)
            return tutti__error(TUTTI_ERR_MISMATCH, "local",
                                "group 0x%llx: rank %d joined with group size "
                                "%d, earlier members with %d",
                                (unsigned long long)g->group_key, g->rank,
                                g->group_size, m->size);
        *mesh_out = m;
        return TUTTI_OK;
    }
    local_mesh_t *m = calloc(1, sizeof(*m));
    size_t total = chan_bytes * (size_t)g->group_size * (size_t)g->group_size +
                   TUTTI_CHAN_BELL_BYTES * (size_t)g->group_size;
    if (m == NULL)
        return TUTTI_ERR_NO_MEMORY;
    m->present = calloc((size_t)g->group_size, 1);
    m->mem = aligned_alloc(TUTTI_CACHELINE,
                           (total + TUTTI_CACHELINE - 1) / TUTTI_CACHELINE *
                               TUTTI_CACHELINE);
    if (m->present == NULL || m->mem == NULL) {
        free(m->present);
        free(m->mem);
        free(m);
        return TUTTI_ERR_NO_MEMORY;
    }
    memset(m->mem, 0, total); /* slots unwritten, bells silent */
    snprintf(m->job_id, sizeof(m->job_id), "%s", g->job_id);
    m->key = g->group_key;
    m->size = g->group_size;
    m->expected = expected;
    m->chan_bytes = chan_bytes;
    for (int s = 0; s < m->size; s++)
        for (int d = 0; d < m->size; d++)
            tutti__chan_init(mesh_chan(m, s, d));
    m->next = meshes;
    meshes = m;
    *mesh_out = m;
    return TUTTI_OK;
}

static tutti_status_t wait_complete(local_mesh_t *m, const tutti_tp_group_t *g)
{
    struct timespec until;
    tutti__deadline(&until, g->timeout); /* any double the API gave */
    while (m->joined < m->expected) {
        if (pthread_cond_timedwait(&mesh_cond, &mesh_lock, &until) ==
            ETIMEDOUT && m->joined < m->expected) {
            char missing[256] = "";
            size_t n = 0;
            for (int r = 0; r < m->size && n < sizeof(missing) - 12; r++) {
                if (!m->present[r] && g->rank_task[r] == g->task)
                    n += (size_t)snprintf(missing + n, sizeof(missing) - n,
                                          "%s%d", n ? "," : "", r);
            }
            return tutti__error(TUTTI_ERR_TIMEOUT, "local",
                                "group 0x%llx: ranks %s did not join within "
                                "%.0f s", (unsigned long long)g->group_key,
                                missing, g->timeout);
        }
    }
    return TUTTI_OK;
}

void tutti__local_mesh_leave(tutti__local_mesh_t *m)
{
    if (m == NULL)
        return;
    pthread_mutex_lock(&mesh_lock);
    if (++m->left == m->expected)
        mesh_free(m);
    pthread_mutex_unlock(&mesh_lock);
}

static void local_disconnect(tutti_tp_ep_t *tep)
{
    local_ep_t *ep = (local_ep_t *)tep;
    if (ep == NULL)
        return;
    tutti__local_mesh_leave(ep->mesh);
    tutti__chan_ep_fini(&ep->chan);
    free(ep);
}

/* Withdraws a member that gave up waiting; frees the mesh if it was the
 * only one.  Called with mesh_lock held. */
static void mesh_withdraw(local_mesh_t *m, int rank)
{
    m->present[rank] = 0;
    if (--m->joined == 0)
        mesh_free(m);
}

tutti_status_t tutti__local_mesh_join(const tutti_tp_group_t *g, int expected,
                                     uint32_t slots, size_t slot_size,
                                     tutti__local_mesh_t **mesh_out)
{
    local_mesh_t *m = NULL;
    pthread_mutex_lock(&mesh_lock);
    tutti_status_t st = mesh_get(g, expected,
                                 tutti__chan_bytes(slots, slot_size), &m);
    if (st == TUTTI_OK && m->present[g->rank]) {
        st = tutti__error(TUTTI_ERR_MISMATCH, "local", "group 0x%llx: rank "
                          "%d joined twice", (unsigned long long)g->group_key,
                          g->rank);
        m = NULL;
    }
    if (st == TUTTI_OK) {
        m->present[g->rank] = 1;
        m->joined++;
        pthread_cond_broadcast(&mesh_cond);
        st = wait_complete(m, g);
        if (st != TUTTI_OK)
            mesh_withdraw(m, g->rank);
    }
    pthread_mutex_unlock(&mesh_lock);
    if (st == TUTTI_OK)
        *mesh_out = m;
    return st;
}

static tutti_status_t local_connect(const tutti_tp_group_t *g,
                                    tutti_tp_ep_t **ep_out)
{
    uint32_t slots = g->slots ? g->slots : LOCAL_SLOTS;
    size_t slot_size = g->slot_size ? g->slot_size : LOCAL_SLOT_SIZE;
    tutti_status_t st;
    local_ep_t *ep = calloc(1, sizeof(*ep));

    /* Every peer (a group inside this process), or those the per-peer
     * choice gave us: the members of this process. */
    int expected = 1;
    for (int r = 0; r < g->group_size; r++)
        expected += r != g->rank && (g->serve == NULL || g->serve[r]);
    if (ep == NULL)
        return TUTTI_ERR_NO_MEMORY;
    st = tutti__chan_ep_init(&ep->chan, g->rank, g->group_size, slots,
                             slot_size, "local");
    if (st == TUTTI_OK)
        st = tutti__local_mesh_join(g, expected, slots, slot_size, &ep->mesh);
    if (st != TUTTI_OK) {
        tutti__chan_ep_fini(&ep->chan);
        free(ep);
        return st;
    }
    for (int r = 0; r < g->group_size; r++) {
        if (r == g->rank || (g->serve != NULL && !g->serve[r]))
            continue;
        ep->chan.peers[r].out = mesh_chan(ep->mesh, g->rank, r);
        ep->chan.peers[r].in = mesh_chan(ep->mesh, r, g->rank);
        /* Registered memory: a peer reads this member's buffer where it
         * lies, as between processes (chan.h, mapped descriptors). */
        st = tutti__chan_enable_mapped(&ep->chan, r, ep->chan.pid);
        if (st != TUTTI_OK) {
            local_disconnect((tutti_tp_ep_t *)ep);
            return st;
        }
    }
    if (g->size >= offsetof(tutti_tp_group_t, sleep) + sizeof(g->sleep) &&
        g->sleep) {
        for (int r = 0; r < g->group_size; r++) {
            if (r == g->rank || g->serve == NULL || g->serve[r])
                tutti__chan_attach_bell(&ep->chan, r, mesh_bell(ep->mesh, r));
        }
    }
    *ep_out = (tutti_tp_ep_t *)ep;
    return TUTTI_OK;
}

const tutti_tp_ops_t tutti__tp_local_ops = {
    .size = sizeof(tutti_tp_ops_t), .name = "local", .connect = local_connect,
    .send = tutti__chan_tp_send, .recv = tutti__chan_tp_recv,
    .progress = tutti__chan_tp_progress, .disconnect = local_disconnect,
    .sleep = tutti__chan_tp_sleep};
