/*
 * mini: an out-of-tree transport module for Tutti, built against the
 * installed headers alone (pkg-config --cflags tutti), as a starting point
 * for your own.  It connects the members of one host through POSIX shared
 * memory, placing the core's message channels there; the core does the
 * rest (matching by key, fragments, reduction on receipt), so a transport
 * whose peers share memory with it needs only to place the rings.
 *
 * Each member creates a segment, /tutti-mini-<job>-g<group>-r<rank>, that
 * holds the channels leading to it (one per source rank) after a one-line
 * header whose word `ready` it sets last; it maps the segment of every
 * peer it serves once that word is set, and writes into its own channel
 * there.  It removes its own name at disconnect.  Left for your version:
 * names a crashed job leaves behind (the shipped shm transport removes
 * them), liveness of peers (peer_alive), settings rows.
 *
 * A transport module calls the core only through group->core (the
 * tutti_tp_core_ops_t table), so it links nothing of Tutti.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tutti/transport.h>

#define HDR_BYTES 4096
#define SLOTS 16
#define SLOT_SIZE (64u << 10)

typedef struct {
    const tutti_tp_core_ops_t *core;
    tutti_chan_ep_t *chan;
    int rank, size;
    size_t chan_bytes, seg_bytes;
    char **maps;        /* every member's segment this one uses */
    char own[128];
} mini_ep_t;

static void seg_name(char *buf, size_t len, const tutti_tp_group_t *g, int r)
{
    snprintf(buf, len, "/tutti-mini-%s-g%016llx-r%d", g->job_id,
             (unsigned long long)g->group_key, r);
}

static _Atomic int *ready_word(char *seg)
{
    return (_Atomic int *)seg;
}

static void *chan_in(const mini_ep_t *ep, int owner, int src)
{
    return ep->maps[owner] + HDR_BYTES + (size_t)src * ep->chan_bytes;
}

static int serves(const tutti_tp_group_t *g, int r)
{
    return r != g->rank && (g->serve == NULL || g->serve[r]);
}

static void mini_disconnect(tutti_tp_ep_t *tep)
{
    mini_ep_t *ep = (mini_ep_t *)tep;
    if (ep == NULL)
        return;
    for (int r = 0; ep->maps != NULL && r < ep->size; r++) {
        if (ep->maps[r] != NULL)
            munmap(ep->maps[r], ep->seg_bytes);
    }
    if (ep->own[0] != '\0')
        shm_unlink(ep->own);
    if (ep->chan != NULL)
        ep->core->chan_ep_destroy(ep->chan);
    free(ep->maps);
    free(ep);
}

/* Maps segment @p name of @p bytes; NULL (errno set) if it cannot, or if
 * its creator has not sized it yet (a page past its end would fault). */
static char *map_seg(const char *name, size_t bytes, int create)
{
    struct stat sb;
    int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR,
                      0600);
    if (fd < 0)
        return NULL;
    if (create && ftruncate(fd, (off_t)bytes) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(name);
        errno = e;
        return NULL;
    }
    if (!create && (fstat(fd, &sb) != 0 || (size_t)sb.st_size < bytes)) {
        close(fd);
        errno = EAGAIN;
        return NULL;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    errno = e;
    return p == MAP_FAILED ? NULL : p;
}

static tutti_status_t mini_connect(const tutti_tp_group_t *g,
                                   tutti_tp_ep_t **ep_out)
{
    const tutti_tp_core_ops_t *core = g->core;
    double deadline = core->now() + g->timeout;
    mini_ep_t *ep = calloc(1, sizeof(*ep));
    tutti_status_t st;
    if (ep == NULL)
        return TUTTI_ERR_NO_MEMORY;
    ep->core = core;
    ep->rank = g->rank;
    ep->size = g->group_size;
    uint32_t slots = g->slots ? g->slots : SLOTS;
    size_t slot_size = g->slot_size ? g->slot_size : SLOT_SIZE;
    ep->chan_bytes = core->chan_bytes(slots, slot_size);
    ep->seg_bytes = HDR_BYTES + (size_t)g->group_size * ep->chan_bytes;
    ep->maps = calloc((size_t)g->group_size, sizeof(char *));
    st = core->chan_ep_create(g->rank, g->group_size, slots, slot_size,
                              "mini", &ep->chan);
    if (ep->maps == NULL || st != TUTTI_OK) {
        mini_disconnect((tutti_tp_ep_t *)ep);
        return TUTTI_ERR_NO_MEMORY;
    }
    /* Our segment: fresh shared memory is zero, as the channels need. */
    seg_name(ep->own, sizeof(ep->own), g, g->rank);
    if ((ep->maps[g->rank] = map_seg(ep->own, ep->seg_bytes, 1)) == NULL) {
        st = core->error(TUTTI_ERR_IO, "mini", "rank %d: creating %s: %s",
                         g->rank, ep->own, strerror(errno));
        ep->own[0] = '\0';
        mini_disconnect((tutti_tp_ep_t *)ep);
        return st;
    }
    for (int src = 0; src < g->group_size; src++)
        core->chan_init(chan_in(ep, g->rank, src));
    atomic_store_explicit(ready_word(ep->maps[g->rank]), 1,
                          memory_order_release);
    /* Every peer we serve: wait for its segment, then attach our channel
     * there (out) and its channel here (in). */
    for (int r = 0; r < g->group_size; r++) {
        char name[128];
        if (!serves(g, r))
            continue;
        seg_name(name, sizeof(name), g, r);
        while ((ep->maps[r] = map_seg(name, ep->seg_bytes, 0)) == NULL ||
               !atomic_load_explicit(ready_word(ep->maps[r]),
                                     memory_order_acquire)) {
            if (ep->maps[r] != NULL) {
                munmap(ep->maps[r], ep->seg_bytes);
                ep->maps[r] = NULL;
            }
            if (core->now() > deadline) {
                st = core->error(TUTTI_ERR_TIMEOUT, "mini", "rank %d: rank "
                                 "%d's segment %s did not appear within %.0f "
                                 "s", g->rank, r, name, g->timeout);
                mini_disconnect((tutti_tp_ep_t *)ep);
                return st;
            }
            struct timespec nap = {0, 1000000};
            nanosleep(&nap, NULL);
        }
        core->chan_attach(ep->chan, r, chan_in(ep, r, g->rank),
                          chan_in(ep, g->rank, r));
    }
    *ep_out = (tutti_tp_ep_t *)ep;
    return TUTTI_OK;
}

/* Shared memory reaches the processes of this host. */
static int mini_reachable(const tutti_tp_group_t *g, int peer)
{
    return g->rank_host == NULL ||
           g->rank_host[peer] == g->rank_host[g->rank];
}

static tutti_status_t mini_send(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    mini_ep_t *ep = (mini_ep_t *)tep;
    return ep->core->chan_send(ep->chan, op);
}

static tutti_status_t mini_recv(tutti_tp_ep_t *tep, tutti_tp_op_t *op)
{
    mini_ep_t *ep = (mini_ep_t *)tep;
    return ep->core->chan_recv(ep->chan, op);
}

static int mini_progress(tutti_tp_ep_t *tep)
{
    mini_ep_t *ep = (mini_ep_t *)tep;
    return ep->core->chan_progress(ep->chan);
}

static const tutti_tp_ops_t mini_ops = {
    .size = sizeof(tutti_tp_ops_t),
    .name = "mini",
    .connect = mini_connect,
    .send = mini_send,
    .recv = mini_recv,
    .progress = mini_progress,
    .disconnect = mini_disconnect,
    .reachable = mini_reachable,
};

TUTTI_TP_MODULE_DEFINE("mini", "1.0.0", mini_ops);
