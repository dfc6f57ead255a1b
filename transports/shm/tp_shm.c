/*
 * shm transport module: processes of one host.
 *
 * Each member creates one segment holding the channels that lead to it
 * (one per rank), maps the segment of every peer it serves, and writes into
 * the channel it owns there.  Once every such peer has mapped a segment its
 * owner unlinks the name, so a crash after set-up leaves nothing in
 * /dev/shm; a crash during set-up leaves names that tutti-run removes (they
 * carry the job id), or the next start of a process of that job: its first
 * connect removes the job's segments whose owners are gone (scrub_stale).
 * Scrubbing and creating a segment hold one lock per host (names_lock), so
 * a task never unlinks a name that another task has just created anew.
 * The channels themselves are the core's (through tutti_tp_core_ops_t);
 * this module places them in shared memory.
 *
 * Single copy: each member publishes in its segment header its pid, the
 * address of a random 8-byte cookie in its memory and the cookie's value.
 * At connect a member reads every peer's cookie with process_vm_readv; if
 * it reads back the published value, it asks the core to let that peer
 * send large messages as descriptors it reads directly
 * (chan_enable_single_copy; chan.h).  If the read fails (EPERM under Yama
 * ptrace_scope or without CAP_SYS_PTRACE across users, ENOSYS, another pid
 * namespace) the pair keeps the two copies through the slots, said once per
 * process at info with the errno text.  shm.single_copy: off (or
 * TUTTI_SHM_SINGLE_COPY=off) skips the probe.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <tutti/transport.h>

#include "shm_seg.h"

/* A segment of a job that never got its header (its creator died between
 * shm_open and the header's last write) is stale once this old. */
#define SEG_INCOMPLETE_STALE_S 60

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
    uint64_t probe_cookie; /* read by peers probing for single copy */
    int sleeps;            /* bells attached: waits may sleep */
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

/* Start time of process @p pid in clock ticks since boot, 0 if unknown;
 * its state letter (R, S, Z ...) in @p state_out, '?' if unknown. */
static uint64_t proc_start_time(pid_t pid, char *state_out)
{
    char path[64], buf[1024];
    unsigned long long start = 0;
    *state_out = '?';
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    buf[n] = '\0';
    /* Field 2 (the command) may hold spaces and parentheses: count fields
     * from the last ')', which ends it; start time is field 22. */
    char *p = strrchr(buf, ')');
    if (p != NULL && p[1] == ' ' && p[2] != '\0')
        *state_out = p[2];
    for (int field = 2; p != NULL && field < 21; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
        return 0;
    return start;
}

/* A value no other process is likely to hold at the same address. */
static uint64_t make_cookie(const void *where)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^
            ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)where;
    }
    return v != 0 ? v : 0x5eed;
}

/* Takes the host's lock on segment names: an advisory flock on /dev/shm
 * itself, so nothing is left behind and a dead holder's lock goes with it.
 * Between judging a name stale and unlinking it, a scrubber holds it; so
 * does a creator between finding its name taken and creating it.  Returns
 * the descriptor to give to names_unlock, or -1 where the directory cannot
 * be locked (then nothing is serialised, as before the lock). */
static int names_lock(void)
{
    int fd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

static void names_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* Test hook, not for production: TUTTI_SHM_TEST_SCRUB_DELAY_MS=N makes a
 * scrubber wait N ms between judging its job's segments stale and
 * unlinking them, so a test can show that no other task's new segment is
 * lost meanwhile. */
static void scrub_test_delay(void)
{
    const char *v = getenv("TUTTI_SHM_TEST_SCRUB_DELAY_MS");
    long ms = v != NULL ? strtol(v, NULL, 10) : 0;
    if (ms > 0 && ms <= 10000) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static tutti_status_t create_own(shm_ep_t *ep, const tutti_tp_group_t *g)
{
    const tutti_tp_core_ops_t *core = ep->core;
    int lock = names_lock();
    int fd = shm_open(ep->own_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        core->log(1, "shm", "removing stale segment %s", ep->own_name);
        shm_unlink(ep->own_name);
        fd = shm_open(ep->own_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    int open_errno = errno;
    names_unlock(lock);
    errno = open_errno;
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
    /* Populated at once: a job's first messages otherwise fault in a
     * page per new slot (8 B allreduces at 4 us instead of 0.4 until
     * every slot had been used once). */
    void *p = mmap(NULL, ep->seg_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, fd, 0);
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
    char state;
    h->pid_start = proc_start_time(getpid(), &state);
    ep->probe_cookie = make_cookie(ep);
    h->probe_addr = (uint64_t)(uintptr_t)&ep->probe_cookie;
    h->probe_value = ep->probe_cookie;
    for (int s = 0; s < g->group_size; s++)
        core->chan_init(seg_chan(ep, g->rank, s));
    atomic_store_explicit(&h->magic, SEG_MAGIC, memory_order_release);
    return TUTTI_OK;
}

/* True if @p rest is "g<16 hex digits>-r<digits>": what seg_name() puts
 * after "tutti-<job>-" (so job "a" never takes job "a-b"'s names). */
static int seg_tail_ok(const char *rest)
{
    static const char hex[] = "0123456789abcdef";
    if (rest[0] != 'g' || strspn(rest + 1, hex) != 16 ||
        strncmp(rest + 17, "-r", 2) != 0 || rest[19] == '\0')
        return 0;
    return strspn(rest + 19, "0123456789") == strlen(rest + 19);
}

/* True if the process that wrote header @p h has exited (a zombie
 * included) or its pid now names another process; @p why says which. */
static int owner_gone(const seg_hdr_t *h, char *why, size_t len)
{
    char state;
    if (h->pid <= 0 || (kill(h->pid, 0) != 0 && errno == ESRCH)) {
        snprintf(why, len, "its owner, pid %d, is gone", (int)h->pid);
        return 1;
    }
    uint64_t start = proc_start_time(h->pid, &state);
    if (state == 'Z' || state == 'X') {
        snprintf(why, len, "its owner, pid %d, is gone (not yet reaped)",
                 (int)h->pid);
        return 1;
    }
    snprintf(why, len, "pid %d is now another process", (int)h->pid);
    return atomic_load(&h->magic) == SEG_MAGIC && h->pid_start != 0 &&
           start != 0 && start != h->pid_start;
}

/* True if segment @p name (shm_open form) belongs to no live process;
 * @p why says how that was found. */
static int seg_is_stale(const char *name, char *why, size_t len)
{
    seg_hdr_t h;
    struct stat sb;
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return 0; /* gone meanwhile, or another user's */
    ssize_t n = fstat(fd, &sb) == 0 ? pread(fd, &h, sizeof(h), 0) : -1;
    close(fd);
    if (n < 0)
        return 0;
    uint64_t magic = atomic_load(&h.magic);
    if ((size_t)n < sizeof(h) ||
        (magic != SEG_MAGIC && magic != SEG_MAGIC_V1)) {
        /* Its creator may be writing the header this moment. */
        long age = (long)(time(NULL) - sb.st_mtime);
        snprintf(why, len, "left incomplete %ld s ago", age);
        return age > SEG_INCOMPLETE_STALE_S;
    }
    return owner_gone(&h, why, len);
}

/* A segment name judged stale, and why. */
typedef struct {
    char name[300];
    char why[96];
} stale_name_t;

/* Lists in @p *out the segments of job @p job whose owners are gone;
 * returns how many (fewer if memory runs out: they wait for a later
 * start). */
static size_t find_stale(const char *job, stale_name_t **out)
{
    char prefix[160];
    size_t n = 0, cap = 0;
    stale_name_t *list = NULL;
    *out = NULL;
    size_t plen = (size_t)snprintf(prefix, sizeof(prefix), "tutti-%s-", job);
    DIR *dir = plen < sizeof(prefix) ? opendir("/dev/shm") : NULL;
    if (dir == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        stale_name_t cand;
        if (strncmp(e->d_name, prefix, plen) != 0 ||
            !seg_tail_ok(e->d_name + plen))
            continue;
        snprintf(cand.name, sizeof(cand.name), "/%s", e->d_name);
        if (!seg_is_stale(cand.name, cand.why, sizeof(cand.why)))
            continue;
        if (n == cap) {
            size_t ncap = cap != 0 ? 2 * cap : 8;
            stale_name_t *grown = realloc(list, ncap * sizeof(*list));
            if (grown == NULL)
                break;
            list = grown;
            cap = ncap;
        }
        list[n++] = cand;
    }
    closedir(dir);
    *out = list;
    return n;
}

/* Removes the segments of job @p job whose owners are gone: a job id
 * reused after a crash in set-up that nobody cleaned after.  Once per
 * process, at its first connect.  The names are judged and unlinked under
 * the host's lock on names: a task of the job that creates its segment
 * under a name judged stale here waits until this is done, and then
 * creates it anew. */
static void scrub_stale(const tutti_tp_core_ops_t *core, const char *job)
{
    static _Atomic int done;
    stale_name_t *list;
    if (atomic_exchange(&done, 1))
        return;
    int lock = names_lock();
    size_t n = find_stale(job, &list);
    if (n > 0)
        scrub_test_delay();
    for (size_t i = 0; i < n; i++) {
        if (shm_unlink(list[i].name) == 0)
            core->log(1, "shm", "removed stale segment /dev/shm%s of job %s: "
                      "%s", list[i].name, job, list[i].why);
        else if (errno != ENOENT)
            core->log(1, "shm", "cannot remove stale segment /dev/shm%s of "
                      "job %s (%s): %s", list[i].name, job, list[i].why,
                      strerror(errno));
    }
    names_unlock(lock);
    free(list);
}

/* Inode the name @p name refers to now, or 0. */
static ino_t name_inode(const char *name)
{
    struct stat sb;
    int fd = shm_open(name, O_RDONLY, 0);
    ino_t ino = fd >= 0 && fstat(fd, &sb) == 0 ? sb.st_ino : 0;
    if (fd >= 0)
        close(fd);
    return ino;
}

/* Waits until the segment mapped at @p h is ready.  Returns 1 when it is,
 * 0 if it is a stale one (a dead owner's, or one whose name now leads to
 * another segment: its owner's successor replaced it), -1 past the
 * deadline. */
static int wait_ready(shm_ep_t *ep, const seg_hdr_t *h, const char *name,
                      ino_t ino, double deadline)
{
    char why[96];
    while (atomic_load_explicit(&h->magic, memory_order_acquire) !=
           SEG_MAGIC) {
        if (name_inode(name) != ino)
            return 0;
        if (ep->core->now() > deadline)
            return -1;
        pause_briefly();
    }
    if (owner_gone(h, why, sizeof(why))) {
        ep->core->log(3, "shm", "segment %s is stale (%s): waiting for its "
                      "owner's successor", name, why);
        return 0;
    }
    return 1;
}

/* Maps peer @p r's segment once it exists, is sized and initialised, and
 * its owner lives. */
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
                           MAP_SHARED | MAP_POPULATE, fd, 0);
            close(fd);
            if (p == MAP_FAILED)
                return core->error(TUTTI_ERR_IO, "shm", "mmap %s: %s", name,
                                    strerror(errno));
            int ready = wait_ready(ep, p, name, sb.st_ino, deadline);
            if (ready > 0) {
                ep->maps[r] = p;
                break;
            }
            munmap(p, ep->seg_bytes);
            if (ready < 0)
                return core->error(TUTTI_ERR_TIMEOUT, "shm", "segment %s "
                                   "never became ready", name);
            fd = -1;
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

/* The module's settings (rows at the end of this file), typed. */
typedef struct {
    uint64_t slot_size;
    uint64_t slots;
    int single_copy;      /* index in single_copy_modes */
    uint64_t sc_min, sc_max; /* message lengths sent by single copy */
    int registered;       /* index in single_copy_modes */
    uint64_t reg_min;     /* registered messages from this many bytes */
} shm_settings_t;

static const char *const single_copy_modes[] = {"auto", "off", NULL};
enum { SINGLE_COPY_AUTO, SINGLE_COPY_OFF };

/* 0 if this process can read peer @p r's memory (it reads back the cookie
 * the peer published), else the errno, or -1 if it read other bytes. */
static int probe_peer(const shm_ep_t *ep, int r)
{
    const seg_hdr_t *h = (const seg_hdr_t *)ep->maps[r];
    uint64_t got = 0;
    struct iovec local = {&got, sizeof(got)};
    struct iovec remote = {(void *)(uintptr_t)h->probe_addr, sizeof(got)};
    ssize_t n = process_vm_readv(h->pid, &local, 1, &remote, 1, 0);
    if (n < 0)
        return errno;
    return n == (ssize_t)sizeof(got) && got == h->probe_value ? 0 : -1;
}

/* Lets every peer whose memory this process can read send it large
 * messages by single copy (after the channels are attached). */
static void enable_single_copy(shm_ep_t *ep, const tutti_tp_group_t *g,
                               const shm_settings_t *set)
{
    static _Atomic int said; /* the first failure is logged, once */
    const tutti_tp_core_ops_t *core = ep->core;
    unsigned long long key = (unsigned long long)g->group_key;
    int on = 0;
    if (core->size < offsetof(tutti_tp_core_ops_t, chan_enable_single_copy) +
                         sizeof(core->chan_enable_single_copy) ||
        core->chan_enable_single_copy == NULL) {
        core->log(3, "shm", "group 0x%llx rank %d: single copy off: the core "
                  "does not offer it", key, g->rank);
        return;
    }
    if (set->single_copy == SINGLE_COPY_OFF) {
        core->log(3, "shm", "group 0x%llx rank %d: single copy off "
                  "(shm.single_copy)", key, g->rank);
        return;
    }
    /* The receiver's core does a single copy alone, where the slots' two
     * copies run on both ends' cores at once: with a processor per member
     * it won up to 5x (alltoall, 2 processes, 4 MiB), with 4 members on 2
     * processors it lost up to 2.8x (allgather 1 MiB; bench/NOTES.md,
     * 2026-11-29). */
    if (g->size >= offsetof(tutti_tp_group_t, sleep) + sizeof(g->sleep) &&
        g->sleep) {
        core->log(3, "shm", "group 0x%llx rank %d: single copy off: this "
                  "host runs more members of the group than it has "
                  "processors", key, g->rank);
        return;
    }
    if (core->size >= offsetof(tutti_tp_core_ops_t,
                               chan_set_single_copy_range) +
                          sizeof(core->chan_set_single_copy_range))
        core->chan_set_single_copy_range(ep->chan, (size_t)set->sc_min,
                                         (size_t)set->sc_max);
    for (int r = 0; r < g->group_size; r++) {
        if (!serves(g, r))
            continue;
        int pid = ((const seg_hdr_t *)ep->maps[r])->pid;
        int e = probe_peer(ep, r);
        if (e == 0 && core->chan_enable_single_copy(ep->chan, r, pid) ==
                          TUTTI_OK) {
            on++;
        } else if (e != 0 && !atomic_exchange(&said, 1)) {
            core->log(2, "shm", "rank %d: no single copy from rank %d (pid "
                      "%d): process_vm_readv: %s; large messages take two "
                      "copies through shared memory", g->rank, r, pid,
                      e > 0 ? strerror(e)
                            : "read other bytes than the peer published "
                              "(another pid namespace?)");
        }
    }
    core->log(3, "shm", "group 0x%llx rank %d: single copy from %d of %d "
              "peer(s)", key, g->rank, on, ep->npeers);
}

/* Lets every peer of another process send from its registered memory as
 * descriptors this member maps (transport ABI 2.5). */
static void enable_mapped(shm_ep_t *ep, const tutti_tp_group_t *g,
                          const shm_settings_t *set)
{
    const tutti_tp_core_ops_t *core = ep->core;
    unsigned long long key = (unsigned long long)g->group_key;
    if (core->size < offsetof(tutti_tp_core_ops_t, chan_set_mapped_min) +
                         sizeof(core->chan_set_mapped_min) ||
        core->chan_enable_mapped == NULL) {
        core->log(3, "shm", "group 0x%llx rank %d: registered memory moves "
                  "through the slots: the core does not map it", key,
                  g->rank);
        return;
    }
    if (set->registered == SINGLE_COPY_OFF) {
        core->chan_set_mapped_min(ep->chan, SIZE_MAX);
        core->log(3, "shm", "group 0x%llx rank %d: registered memory moves "
                  "through the slots (shm.registered)", key, g->rank);
        return;
    }
    core->chan_set_mapped_min(ep->chan, (size_t)set->reg_min);
    int on = 0;
    for (int r = 0; r < g->group_size; r++) {
        int pid = serves(g, r) ? ((const seg_hdr_t *)ep->maps[r])->pid : 0;
        if (pid > 0 && core->chan_enable_mapped(ep->chan, r, pid) ==
                           TUTTI_OK)
            on++;
    }
    /* (Not "peer(s)": the transport choice's line ends so, and tools
     * read that line.) */
    core->log(3, "shm", "group 0x%llx rank %d: registered memory mapped "
              "from %d of %d peers", key, g->rank, on, ep->npeers);
}

static tutti_status_t shm_connect(const tutti_tp_group_t *g,
                                  tutti_tp_ep_t **ep_out)
{
    const tutti_tp_core_ops_t *core = g->core;
    /* Filled from the rows below by the core, which loads this module only
     * if its transport ABI is 2.1 or later: group->settings exists. */
    const shm_settings_t *set = g->settings;
    double deadline = core->now() + g->timeout;
    tutti_status_t st;

    if (set == NULL)
        return core->error(TUTTI_ERR_MODULE, "shm", "the core handed no "
                           "settings; this module needs a core of "
                           "transport ABI 2.1 or later");
    if (set->sc_min > set->sc_max)
        return core->error(TUTTI_ERR_CONFIG, "shm", "shm.single_copy_min "
                           "(TUTTI_SHM_SINGLE_COPY_MIN) is %llu bytes, above "
                           "shm.single_copy_max (TUTTI_SHM_SINGLE_COPY_MAX), "
                           "%llu: expected min <= max",
                           (unsigned long long)set->sc_min,
                           (unsigned long long)set->sc_max);
    shm_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return TUTTI_ERR_NO_MEMORY;
    ep->core = core;
    ep->rank = g->rank;
    ep->size = g->group_size;
    ep->slots = g->slots ? g->slots : (uint32_t)set->slots;
    ep->slot_size = g->slot_size ? g->slot_size : (size_t)set->slot_size;
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
    /* verify: checksum (transport ABI 2.2): the channels sum and check. */
    if (g->size >= offsetof(tutti_tp_group_t, verify) + sizeof(g->verify) &&
        core->size >= offsetof(tutti_tp_core_ops_t, chan_set_verify) +
                          sizeof(core->chan_set_verify) &&
        core->chan_set_verify != NULL)
        core->chan_set_verify(ep->chan, g->verify);
    ep->seg_bytes = SEG_HDR_BYTES + (size_t)g->group_size * ep->chan_bytes;
    scrub_stale(core, g->job_id);
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
    /* Doorbells (ABI 2.3): a member of a group whose waits sleep sleeps
     * on the bell in its own header, and rings its peers' in theirs. */
    ep->sleeps = g->size >= offsetof(tutti_tp_group_t, sleep) +
                                sizeof(g->sleep) &&
                 g->sleep &&
                 core->size >= offsetof(tutti_tp_core_ops_t, chan_sleep) +
                                   sizeof(core->chan_sleep);
    for (int r = 0; ep->sleeps && r < g->group_size; r++) {
        if (r == g->rank || serves(g, r))
            core->chan_attach_bell(ep->chan, r, ep->maps[r] + SEG_BELL_OFF);
    }
    core->log(3, "shm", "group 0x%llx rank %d: channels of %u slots of %zu "
              "bytes, a segment of %zu bytes", (unsigned long long)g->group_key,
              g->rank, ep->slots, ep->slot_size, ep->seg_bytes);
    enable_single_copy(ep, g, set);
    enable_mapped(ep, g, set);
    *ep_out = (tutti_tp_ep_t *)ep;
    return TUTTI_OK;
}

/* Peers are processes of this host: the owner of a segment is alive
 * until its pid is gone, a zombie its parent has not reaped yet (kill(pid,
 * 0) still succeeds then), or another process's. */
static int shm_peer_alive(tutti_tp_ep_t *tep, int peer)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    char why[96];
    if (peer < 0 || peer >= ep->size || ep->maps[peer] == NULL)
        return -1;
    return !owner_gone((const seg_hdr_t *)ep->maps[peer], why, sizeof(why));
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

static int shm_sleep(tutti_tp_ep_t *tep, double seconds)
{
    shm_ep_t *ep = (shm_ep_t *)tep;
    return ep->sleeps ? ep->core->chan_sleep(ep->chan, seconds) : -1;
}

static const tutti_tp_ops_t shm_ops = {
    .size = sizeof(tutti_tp_ops_t), .name = "shm", .connect = shm_connect,
    .send = shm_send, .recv = shm_recv, .progress = shm_progress,
    .disconnect = shm_disconnect, .peer_alive = shm_peer_alive,
    .reachable = shm_reachable, .sleep = shm_sleep};

static const tutti_setting_t shm_settings[] = {
    {.name = "slot_size",
     .default_value = "64K",
     .doc = "bytes per slot of a channel between two processes",
     .type = TUTTI_SETTING_SIZE,
     .offset = offsetof(shm_settings_t, slot_size),
     .min = 4u << 10,
     .max = 16u << 20,
     .flags = TUTTI_SETTING_POW2,
     .expected = "a power of two from 4K to 16M, e.g. 64K"},
    {.name = "slots",
     .default_value = "16",
     .doc = "slots per channel: messages in flight between two processes",
     .type = TUTTI_SETTING_UINT,
     .offset = offsetof(shm_settings_t, slots),
     .min = 2,
     .max = 1024},
    {.name = "single_copy",
     .default_value = "auto",
     .doc = "large messages by one copy (process_vm_readv) where allowed",
     .type = TUTTI_SETTING_CHOICE,
     .offset = offsetof(shm_settings_t, single_copy),
     .choices = single_copy_modes,
     .expected = "auto or off"},
    {.name = "single_copy_min",
     .default_value = "64K",
     .doc = "the smallest message sent by single copy",
     .type = TUTTI_SETTING_SIZE,
     .offset = offsetof(shm_settings_t, sc_min),
     .min = 1,
     .max = 1ULL << 40},
    {.name = "single_copy_max",
     .default_value = "1G",
     .doc = "the largest message sent by single copy (larger: two copies "
            "through the slots, the sender's and the receiver's at once)",
     .type = TUTTI_SETTING_SIZE,
     .offset = offsetof(shm_settings_t, sc_max),
     .min = 1,
     .max = 1ULL << 40},
    {.name = "registered",
     .default_value = "auto",
     .doc = "messages from registered memory (tutti_mem_alloc) read by "
            "the receiver in place, one copy",
     .type = TUTTI_SETTING_CHOICE,
     .offset = offsetof(shm_settings_t, registered),
     .choices = single_copy_modes,
     .expected = "auto or off"},
    {.name = "registered_min",
     .default_value = "4K",
     .doc = "the smallest message from registered memory read in place",
     .type = TUTTI_SETTING_SIZE,
     .offset = offsetof(shm_settings_t, reg_min),
     .min = 1,
     .max = 1ULL << 40},
};

TUTTI_TP_MODULE_DEFINE_SETTINGS("shm", "0.3.0", shm_ops, shm_settings,
                                shm_settings_t);
