/*
 * shm transport module: processes of one host.
 *
 * Each member creates one segment holding the channels that lead to it
 * (one per rank), maps the segment of every peer it serves, and writes into
 * the channel it owns there.  Once every such peer has mapped a segment its
 * owner unlinks the name, so a crash after set-up leaves nothing in
 * /dev/shm; a crash during set-up leaves names that tutti-run removes (they
 * carry the job id).  The channels themselves are the core's (through
 * tutti_tp_core_ops_t); this module places them in shared memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tutti/transport.h>

#define SEG_MAGIC 0x316d7369747475ULL /* "tuttism1" */
#define SEG_HDR_BYTES 4096

typedef struct {
    _Atomic uint64_t magic;
    uint64_t group_key;
    uint64_t slot_size;
    uint32_t slots;
    int32_t size;
    int32_t rank;
    _Atomic int32_t attached;
    int32_t pid;           /* owner process, for liveness checks */
} seg_hdr_t;

typedef struct {
    const tutti_tp_core_ops_t *core;
    tutti_chan_ep_t *chan;
    int rank, size, npeers;
    uint32_t slots;
    size_t slot_size, chan_bytes;
    char **maps;         /* segments of this member and its peers */
    size_t seg_bytes;
    char own_name[128];
    int own_unlinked;
} shm_ep_t;

static void *seg_chan(const shm_ep_t *ep, int owner, int src)
{
    return ep->maps[owner] + SEG_HDR_BYTES + (size_t)src * ep->chan_bytes;
}

static void seg_name(char *buf, size_t len, const tutti_tp_group_t *g, int rank)
{
    snprintf(buf, len, "/tutti-%s-g%016llx-r%d", g->job_id,
             (unsigned long long)g->group_key, rank);
}

static void pause_briefly(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

static tutti_status_t create_own(shm_ep_t *ep, const tutti_tp_group_t *g)
{
    const tutti_tp_core_ops_t *core = ep->core;
    int fd = shm_open(ep->own_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        core->log(1, "shm", "removing stale segment %s", ep->own_name);
        shm_unlink(ep->own_name);
        fd = shm_open(ep->own_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0)
        return core->error(TUTTI_ERR_IO, "shm", "shm_open %s: %s",
                            ep->own_name, strerror(errno));
    if (ftruncate(fd, (off_t)ep->seg_bytes) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(ep->own_name);
        return core->error(TUTTI_ERR_IO, "shm", "sizing %s to %zu bytes: %s",
                            ep->own_name, ep->seg_bytes, strerror(e));
    }
    void *p = mmap(NULL, ep->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(ep->own_name);
        return core->error(TUTTI_ERR_IO, "shm", "mmap %s: %s", ep->own_name,
                            strerror(e));
    }
    ep->maps[g->rank] = p;
    seg_hdr_t *h = p;
    h->group_key = g->group_key;
    h->slot_size = ep->slot_size;
    h->slots = ep->slots;
    h->size = g->group_size;
    h->rank = g->rank;
    h->pid = (int32_t)getpid();
    for (int s = 0; s < g->group_size; s++)
        core->chan_init(seg_chan(ep, g->rank, s));
    atomic_store_explicit(&h->magic, SEG_MAGIC, memory_order_release);
    return TUTTI_OK;
}

/* Maps peer @p r's segment once it exists, is sized and initialised. */
static tutti_status_t map_peer(shm_ep_t *ep, const tutti_tp_group_t *g, int r,
                               double deadline)
{
    const tutti_tp_core_ops_t *core = ep->core;
    char name[128];
    struct stat sb;
    seg_name(name, sizeof(name), g, r);
    for (;;) {
        int fd = shm_open(name, O_RDWR, 0);
        if (fd >= 0 && fstat(fd, &sb) == 0 &&
            (size_t)sb.st_size == ep->seg_bytes) {
            void *p = mmap(NULL, ep->seg_bytes, PROT_READ | PROT_WRITE,
                           MAP_SHARED, fd, 0);
            close(fd);
            if (p == MAP_FAILED)
                return core->error(TUTTI_ERR_IO, "shm", "mmap %s: %s", name,
                                    strerror(errno));
            ep->maps[r] = p;
            break;
        }
        if (fd >= 0)
            close(fd);
        if (core->now() > deadline)
            return core->error(TUTTI_ERR_TIMEOUT, "shm",
                                "group 0x%llx: rank %d (task %d) did not join "
                                "within %.0f s (segment %s %s)",
                                (unsigned long long)g->group_key, r,
                                g->rank_task[r], g->timeout, name,
                                fd >= 0 ? "has another size: its slots or "
                                          "slot_size differ from ours"
                                        : "not found");
        pause_briefly();
    }
    seg_hdr_t *h = (seg_hdr_t *)ep->maps[r];
    while (atomic_load_explicit(&h->magic, memory_order_acquire) != SEG_MAGIC) {
        if (core->now() > deadline)
            return core->error(TUTTI_ERR_TIMEOUT, "shm", "segment %s never "
                                "became ready", name);
        pause_briefly();
    }
    if (h->size != g->group_size || h->group_key != g->group_key)
        return core->error(TUTTI_ERR_MISMATCH, "shm",
                            "group 0x%llx: rank %d has group size %d, rank %d "
                            "has %d", (unsigned long long)g->group_key, r,
                            h->size, g->rank, g->group_size);
    atomic_fetch_add_explicit(&h->attached, 1, memory_order_acq_rel);
    return TUTTI_OK;
}

/* Waits until every peer mapped our segment, then removes its name. */
static tutti_status_t unlink_when_attached(shm_ep_t *ep,
                                           const tutti_tp_group_t *g,
                                           double deadline)
{
    const tutti_tp_core_ops_t *core = ep->core;
    seg_hdr_t *h = (seg_hdr_t *)ep->maps[g->rank];
    while (atomic_load_explicit(&h->attached, memory_order_acquire) <
           ep->npeers) {
        if (core->now() > deadline)
            return core->error(TUTTI_ERR_TIMEOUT, "shm",
                               "group 0x%llx: only %d of %d peers attached to "
                               "rank %d within %.0f s",
                               (unsigned long long)g->group_key,
                               (int)atomic_load(&h->attached), ep->npeers,
                               g->rank, g->timeout);
        pause_briefly();
    }
    shm_unlink(ep->own_name);
    ep->own_unlinked = 1;
    return TUTTI_OK;
}

static void shm_disconnect(tutti_tp_ep_t *tep)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    if (ep == NULL)
        return;
    for (int r = 0; ep->maps && r < ep->size; r++) {
        if (ep->maps[r] != NULL)
            munmap(ep->maps[r], ep->seg_bytes);
    }
    if (!ep->own_unlinked && ep->own_name[0] != '\0')
        shm_unlink(ep->own_name);
    free(ep->maps);
    if (ep->chan != NULL)
        ep->core->chan_ep_destroy(ep->chan);
    free(ep);
}

static int serves(const tutti_tp_group_t *g, int r)
{
    return r != g->rank && (g->serve == NULL || g->serve[r]);
}

/* A size setting: the group's, else the configuration's. */
static uint64_t setting(const tutti_tp_group_t *g, const char *key,
                        uint64_t given, uint64_t dflt)
{
    char buf[64];
    const char *v;
    if (given != 0)
        return given;
    v = g->core->config_get(g->config, key, buf, sizeof(buf));
    return v != NULL ? strtoull(v, NULL, 10) : dflt;
}

static tutti_status_t shm_connect(const tutti_tp_group_t *g,
                                  tutti_tp_ep_t **ep_out)
{
    const tutti_tp_core_ops_t *core = g->core;
    double deadline = core->now() + g->timeout;
    tutti_status_t st;
    shm_ep_t *ep = calloc(1, sizeof(*ep));

    if (ep == NULL)
        return TUTTI_ERR_NO_MEMORY;
    ep->core = core;
    ep->rank = g->rank;
    ep->size = g->group_size;
    ep->slots = (uint32_t)setting(g, "shm.slots", g->slots, 16);
    ep->slot_size = (size_t)setting(g, "shm.slot_size", g->slot_size, 65536);
    ep->chan_bytes = core->chan_bytes(ep->slots, ep->slot_size);
    for (int r = 0; r < g->group_size; r++)
        ep->npeers += serves(g, r);
    st = core->chan_ep_create(g->rank, g->group_size, ep->slots,
                              ep->slot_size, "shm", &ep->chan);
    ep->maps = calloc((size_t)g->group_size, sizeof(char *));
    if (st != TUTTI_OK || ep->maps == NULL) {
        shm_disconnect((tutti_tp_ep_t *)ep);
        return TUTTI_ERR_NO_MEMORY;
    }
    ep->seg_bytes = SEG_HDR_BYTES + (size_t)g->group_size * ep->chan_bytes;
    seg_name(ep->own_name, sizeof(ep->own_name), g, g->rank);
    st = create_own(ep, g);
    for (int r = 0; st == TUTTI_OK && r < g->group_size; r++) {
        if (serves(g, r))
            st = map_peer(ep, g, r, deadline);
    }
    if (st == TUTTI_OK)
        st = unlink_when_attached(ep, g, deadline);
    if (st != TUTTI_OK) {
        shm_disconnect((tutti_tp_ep_t *)ep);
        return st;
    }
    for (int r = 0; r < g->group_size; r++) {
        if (serves(g, r))
            core->chan_attach(ep->chan, r, seg_chan(ep, r, g->rank),
                              seg_chan(ep, g->rank, r));
    }
    *ep_out = (tutti_tp_ep_t *)ep;
    return TUTTI_OK;
}

/* Peers are processes of this host: the owner of a segment is alive while
 * its pid is (a recycled pid within a job's life is not guarded against). */
static int shm_peer_alive(tutti_tp_ep_t *tep, int peer)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    if (peer < 0 || peer >= ep->size || ep->maps[peer] == NULL)
        return -1;
    pid_t pid = ((seg_hdr_t *)ep->maps[peer])->pid;
    return kill(pid, 0) == 0 || errno != ESRCH;
}

/* Shared memory reaches the processes of this host. */
static int shm_reachable(const tutti_tp_group_t *g, int peer)
{
    return g->rank_host == NULL ||
           g->rank_host[peer] == g->rank_host[g->rank];
}

static tutti_status_t shm_send(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    return ep->core->chan_send(ep->chan, op);
}

static tutti_status_t shm_recv(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    return ep->core->chan_recv(ep->chan, op);
}

static int shm_progress(tutti_tp_ep_t *tep)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    return ep->core->chan_progress(ep->chan);
}

static const tutti_tp_ops_t shm_ops = {
    sizeof(tutti_tp_ops_t), "shm", shm_connect, shm_send, shm_recv,
    shm_progress, shm_disconnect, shm_peer_alive, shm_reachable,
};

TUTTI_TP_MODULE_DEFINE("shm", "0.2.0", shm_ops);
