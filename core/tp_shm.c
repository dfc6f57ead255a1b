/*
 * shm transport: processes of one host.
 *
 * Each member creates one segment holding the channels that lead to it
 * (one per peer), maps every peer's segment, and writes into the channel it
 * owns there.  Once every peer has mapped a segment its owner unlinks the
 * name, so a crash after set-up leaves nothing in /dev/shm; a crash during
 * set-up leaves names that tutti-run removes (they carry the job id).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "config.h"
#include "context.h"
#include "log.h"

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
    tutti__chan_ep_t chan;
    char **maps;         /* every member's segment, own included */
    size_t seg_bytes;
    char own_name[128];
    int own_unlinked;
    tutti__local_mesh_t *local;  /* channels to members of this process */
} shm_ep_t;

static size_t seg_bytes(int size, uint32_t slots, size_t slot_size)
{
    return SEG_HDR_BYTES + (size_t)size * tutti__chan_bytes(slots, slot_size);
}

static tutti__chan_t *seg_chan(const shm_ep_t *ep, int owner, int src)
{
    return (tutti__chan_t *)(ep->maps[owner] + SEG_HDR_BYTES +
                             (size_t)src * tutti__chan_bytes(ep->chan.slots,
                                                             ep->chan.slot_size));
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
    int fd = shm_open(ep->own_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        tutti__log(TUTTI_LOG_WARN, "shm", "removing stale segment %s",
                   ep->own_name);
        shm_unlink(ep->own_name);
        fd = shm_open(ep->own_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0)
        return tutti__error(TUTTI_ERR_IO, "shm", "shm_open %s: %s",
                            ep->own_name, strerror(errno));
    if (ftruncate(fd, (off_t)ep->seg_bytes) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(ep->own_name);
        return tutti__error(TUTTI_ERR_IO, "shm", "sizing %s to %zu bytes: %s",
                            ep->own_name, ep->seg_bytes, strerror(e));
    }
    void *p = mmap(NULL, ep->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(ep->own_name);
        return tutti__error(TUTTI_ERR_IO, "shm", "mmap %s: %s", ep->own_name,
                            strerror(e));
    }
    ep->maps[g->rank] = p;
    seg_hdr_t *h = p;
    h->group_key = g->group_key;
    h->slot_size = ep->chan.slot_size;
    h->slots = ep->chan.slots;
    h->size = g->group_size;
    h->rank = g->rank;
    h->pid = (int32_t)getpid();
    for (int s = 0; s < g->group_size; s++)
        tutti__chan_init(seg_chan(ep, g->rank, s));
    atomic_store_explicit(&h->magic, SEG_MAGIC, memory_order_release);
    return TUTTI_OK;
}

/* Maps peer @p r's segment once it exists, is sized and initialised. */
static tutti_status_t map_peer(shm_ep_t *ep, const tutti_tp_group_t *g, int r,
                               double deadline)
{
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
                return tutti__error(TUTTI_ERR_IO, "shm", "mmap %s: %s", name,
                                    strerror(errno));
            ep->maps[r] = p;
            break;
        }
        if (fd >= 0)
            close(fd);
        if (tutti__now() > deadline)
            return tutti__error(TUTTI_ERR_TIMEOUT, "shm",
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
        if (tutti__now() > deadline)
            return tutti__error(TUTTI_ERR_TIMEOUT, "shm", "segment %s never "
                                "became ready", name);
        pause_briefly();
    }
    if (h->size != g->group_size || h->group_key != g->group_key)
        return tutti__error(TUTTI_ERR_MISMATCH, "shm",
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
    seg_hdr_t *h = (seg_hdr_t *)ep->maps[g->rank];
    while (atomic_load_explicit(&h->attached, memory_order_acquire) <
           g->group_size - 1) {
        if (tutti__now() > deadline)
            return tutti__error(TUTTI_ERR_TIMEOUT, "shm",
                                "group 0x%llx: only %d of %d peers attached to "
                                "rank %d within %.0f s",
                                (unsigned long long)g->group_key,
                                (int)atomic_load(&h->attached),
                                g->group_size - 1, g->rank, g->timeout);
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
    for (int r = 0; ep->maps && r < ep->chan.size; r++) {
        if (ep->maps[r] != NULL)
            munmap(ep->maps[r], ep->seg_bytes);
    }
    if (!ep->own_unlinked && ep->own_name[0] != '\0')
        shm_unlink(ep->own_name);
    tutti__local_mesh_leave(ep->local);
    free(ep->maps);
    tutti__chan_ep_fini(&ep->chan);
    free(ep);
}

/* Peers in other processes go through the shared segments; peers in this
 * process through an in-process mesh (the local transport's channels). */
static tutti_status_t wire_peers(shm_ep_t *ep, const tutti_tp_group_t *g)
{
    int here = 0;
    for (int r = 0; r < g->group_size; r++)
        here += g->rank_task[r] == g->task;
    if (here > 1) {
        tutti_status_t st = tutti__local_mesh_join(
            g, here, ep->chan.slots, ep->chan.slot_size, &ep->local);
        if (st != TUTTI_OK)
            return st;
    }
    for (int r = 0; r < g->group_size; r++) {
        if (r == g->rank)
            continue;
        int local = g->rank_task[r] == g->task;
        ep->chan.peers[r].out = local ? tutti__local_mesh_chan(ep->local,
                                                               g->rank, r)
                                      : seg_chan(ep, r, g->rank);
        ep->chan.peers[r].in = local ? tutti__local_mesh_chan(ep->local, r,
                                                              g->rank)
                                     : seg_chan(ep, g->rank, r);
    }
    tutti__log(TUTTI_LOG_DEBUG, "shm", "group 0x%llx rank %d: local channels "
               "to %d peer(s) in this process, shared memory to %d",
               (unsigned long long)g->group_key, g->rank, here - 1,
               g->group_size - here);
    return TUTTI_OK;
}

static tutti_status_t shm_connect(const tutti_tp_group_t *g,
                                  tutti_tp_ep_t **ep_out)
{
    const tutti__config_t *cfg = g->config;
    double deadline = tutti__now() + g->timeout;
    tutti_status_t st;
    shm_ep_t *ep = calloc(1, sizeof(*ep));

    if (ep == NULL)
        return TUTTI_ERR_NO_MEMORY;
    st = tutti__chan_ep_init(&ep->chan, g->rank, g->group_size,
                             g->slots ? g->slots : (uint32_t)cfg->shm_slots,
                             g->slot_size ? g->slot_size
                                          : (size_t)cfg->shm_slot_size,
                             "shm");
    ep->maps = calloc((size_t)g->group_size, sizeof(char *));
    if (st != TUTTI_OK || ep->maps == NULL) {
        shm_disconnect((tutti_tp_ep_t *)ep);
        return TUTTI_ERR_NO_MEMORY;
    }
    ep->seg_bytes = seg_bytes(g->group_size, ep->chan.slots,
                              ep->chan.slot_size);
    seg_name(ep->own_name, sizeof(ep->own_name), g, g->rank);
    st = create_own(ep, g);
    for (int r = 0; st == TUTTI_OK && r < g->group_size; r++) {
        if (r != g->rank)
            st = map_peer(ep, g, r, deadline);
    }
    if (st == TUTTI_OK)
        st = unlink_when_attached(ep, g, deadline);
    if (st != TUTTI_OK) {
        shm_disconnect((tutti_tp_ep_t *)ep);
        return st;
    }
    if ((st = wire_peers(ep, g)) != TUTTI_OK) {
        shm_disconnect((tutti_tp_ep_t *)ep);
        return st;
    }
    *ep_out = (tutti_tp_ep_t *)ep;
    return TUTTI_OK;
}

/* Peers are processes of this host: the owner of a segment is alive while
 * its pid is (a recycled pid within a job's life is not guarded against). */
static int shm_peer_alive(tutti_tp_ep_t *tep, int peer)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    if (peer < 0 || peer >= ep->chan.size || ep->maps[peer] == NULL)
        return -1;
    pid_t pid = ((seg_hdr_t *)ep->maps[peer])->pid;
    return kill(pid, 0) == 0 || errno != ESRCH;
}

const tutti_tp_ops_t tutti__tp_shm_ops = {
    sizeof(tutti_tp_ops_t), "shm", shm_connect, tutti__chan_tp_send,
    tutti__chan_tp_recv, tutti__chan_tp_progress, shm_disconnect,
    shm_peer_alive,
};
