/* Single copy between processes (chan.h): the receiver's reading of a
 * descriptor, by process_vm_readv or from its mapping of a registered
 * region, and the set-up of both. */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/checksum.h"
#include "base/log.h"
#include "transport/chan_frag.h"

/* Reads @p len bytes at offset @p off of the message descriptor @p f names
 * into @p dst: from @p src, where the message lies mapped in this process,
 * else with process_vm_readv.  Returns 0, or the errno of the failure. */
static int sc_read(const tutti__chan_peer_t *p, const frag_t *f,
                   const char *src, uint64_t off, char *dst, size_t len)
{
    if (src != NULL) {
        memcpy(dst, src + off, len);
        return 0;
    }
    while (len > 0) {
        struct iovec local = {dst, len};
        struct iovec remote = {
            (void *)(uintptr_t)(f->h->u.x.sc_addr + off), len};
        ssize_t n = process_vm_readv(p->sc_pid, &local, 1, &remote, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EFAULT;
        dst += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads message @p f whole into @p dst (@p len bytes) and, where the
 * endpoint checks, passes it through the test hook and, verify on, sums
 * it into @p sum.  Mapped (@p src), the copy and the sum are one pass;
 * an armed hook, which flips its byte in @p dst and never in the sender's
 * memory, takes two. */
static int sc_read_sum(tutti__chan_ep_t *ep, const tutti__chan_peer_t *p,
                       const frag_t *f, const char *src, int peer, char *dst,
                       size_t len, tutti__csum_t *sum)
{
    if (src != NULL && ep->verify && !ep->corrupt_armed) {
        tutti__csum_copy(sum, dst, src, len);
        return 0;
    }
    int err = sc_read(p, f, src, 0, dst, len);
    if (err == 0 && ep->check) {
        tutti__chan_test_corrupt(ep, f, peer, 0, dst, len);
        if (ep->verify)
            tutti__csum_update(sum, dst, len);
    }
    return err;
}

/* Reads the message descriptor @p f names (mapped at @p src, or NULL)
 * into receive @p op: straight into its buffer; reduced straight from
 * @p src where nothing is checked; or bounce block by bounce block, each
 * reduced into it (and, where the endpoint checks, summed into @p sum
 * before). */
static int sc_read_op(tutti__chan_ep_t *ep, const tutti__chan_peer_t *p,
                      const frag_t *f, const char *src, int peer,
                      tutti_tp_op_t *op, tutti__csum_t *sum)
{
    if (op->reduce.fn == NULL)
        return sc_read_sum(ep, p, f, src, peer, op->rbuf, op->len, sum);
    if (src != NULL && !ep->check) {
        tutti__chan_deliver(op, 0, src, op->len);
        return 0;
    }
    if (src != NULL && !ep->corrupt_armed) { /* verify on */
        for (uint64_t off = 0; off < op->len; off += TUTTI_CHAN_SC_BOUNCE) {
            size_t n = op->len - off < TUTTI_CHAN_SC_BOUNCE
                           ? (size_t)(op->len - off) : TUTTI_CHAN_SC_BOUNCE;
            tutti__csum_update(sum, src + off, n); /* then reduced hot */
            tutti__chan_deliver(op, off, src + off, n);
        }
        return 0;
    }
    for (uint64_t off = 0; off < op->len; off += TUTTI_CHAN_SC_BOUNCE) {
        size_t n = op->len - off < TUTTI_CHAN_SC_BOUNCE
                       ? (size_t)(op->len - off) : TUTTI_CHAN_SC_BOUNCE;
        int err = sc_read(p, f, src, off, ep->bounce, n);
        if (err != 0)
            return err;
        if (ep->check) {
            tutti__chan_test_corrupt(ep, f, peer, off, ep->bounce, n);
            tutti__csum_update(sum, ep->bounce, n);
        }
        tutti__chan_deliver(op, off, ep->bounce, n);
    }
    return 0;
}

/* A single-copy read from @p peer failed (@p err: errno, or -1: the
 * descriptor names another process; @p mapped: of registered memory, the
 * mapping failed).  Its channel is taken no further:
 * what waits on it stays in progress and fails the way a silent peer's
 * transfers do, when the group learns why (the peer's task is gone, an
 * abort) or times out; the likely cause, a sender that failed, exited or
 * freed its buffer first, is then named there.  The read's own cause is
 * logged here. */
static void sc_freeze(tutti__chan_ep_t *ep, tutti__chan_peer_t *p, int peer,
                      const frag_t *f, int err, int mapped)
{
    char why[160];
    if (err > 0 && mapped)
        snprintf(why, sizeof(why), "mapping its registered memory "
                 "(/proc/%d/fd/%d): %s", (int)f->h->u.x.sc_pid,
                 (int)((const tutti__mem_region_t *)tutti__chan_slot_data(f->h))->fd,
                 strerror(err));
    else if (err > 0)
        snprintf(why, sizeof(why), "process_vm_readv: %s", strerror(err));
    else
        snprintf(why, sizeof(why), "its descriptor names pid %d",
                 (int)f->h->u.x.sc_pid);
    p->sc_frozen = 1;
    tutti__log(TUTTI_LOG_WARN, ep->tp_name,
               "rank %d: cannot read a %llu-byte message from rank %d (pid "
               "%d, instance 0x%llx step %u tag %u) by single copy: %s; "
               "nothing more is taken from rank %d", ep->rank,
               (unsigned long long)f->msg_len, peer,
               (int)f->h->u.x.sc_pid,
               (unsigned long long)f->key.instance, f->key.step, f->key.tag,
               why, peer);
}

/* Takes descriptor @p f: reads its message into the receive matched to it
 * or into the record it is buffered in (or drops it, on a size mismatch),
 * then tells the sender it may complete.  Returns 0 if the read failed
 * (sc_freeze). */
static int consume_descriptor(tutti__chan_ep_t *ep, tutti__chan_peer_t *p,
                              const frag_t *f, int peer)
{
    int mapped = (f->flags & FRAG_MAP) != 0;
    int err = f->h->u.x.sc_pid != (mapped ? p->map_pid : p->sc_pid) ? -1 : 0;
    const char *src = NULL;
    if (mapped && err == 0 && !p->discarding) {
        tutti__mem_region_t r;
        memcpy(&r, tutti__chan_slot_data(f->h), sizeof(r));
        /* A peer of this process: its buffer is where it says. */
        const char *base = p->map_pid == ep->pid
            ? (const char *)(uintptr_t)r.base
            : tutti__chan_map_get(p->maps, p->map_pid, &r, &err);
        if (base != NULL && (f->h->u.x.sc_addr < r.base ||
                             f->h->u.x.sc_addr - r.base > r.size ||
                             r.size - (f->h->u.x.sc_addr - r.base) <
                                 f->msg_len))
            err = ERANGE; /* a descriptor outside its own region */
        else if (base != NULL)
            src = base + (f->h->u.x.sc_addr - r.base);
    }
    if (p->discarding) {
        p->discarding = 0;
        p->discard_left = 0;
    } else if (p->filling != NULL) {
        tutti__chan_unexp_t *u = p->filling;
        tutti__csum_t sum;
        tutti__csum_init(&sum);
        if (err == 0)
            err = sc_read_sum(ep, p, f, src, peer, u->data, u->msg_len, &sum);
        if (err != 0) {
            sc_freeze(ep, p, peer, f, err, mapped);
            return 0;
        }
        u->got = u->msg_len;
        p->filling = NULL;
        if (ep->verify)
            u->status = tutti__chan_check_sum(ep, f, peer, 0, f->msg_len,
                                  tutti__csum_final(&sum));
        ep->stats.sc_in++;
    } else {
        tutti_tp_op_t *op = p->cur_recv;
        tutti_status_t st = TUTTI_OK;
        tutti__csum_t sum;
        tutti__csum_init(&sum);
        if (err == 0)
            err = sc_read_op(ep, p, f, src, peer, op, &sum);
        if (err != 0) {
            sc_freeze(ep, p, peer, f, err, mapped);
            return 0;
        }
        if (ep->verify)
            st = tutti__chan_check_sum(ep, f, peer, 0, f->msg_len, tutti__csum_final(&sum));
        op->done = op->len;
        p->cur_recv = NULL;
        op->status = st;
        ep->stats.sc_in++;
    }
    ep->stats.map_in += mapped;
    p->in_sc_done++;
    atomic_store_explicit(&p->in->sc_done, p->in_sc_done,
                          memory_order_release);
    return 1;
}

/* What both ways of reading descriptors need: @p peer an attached peer
 * of process @p peer_pid, and the bounce block; @p what names the way. */
static tutti_status_t prepare_reads(tutti__chan_ep_t *ep, int peer,
                                    int peer_pid, const char *what)
{
    if (peer < 0 || peer >= ep->size || peer == ep->rank ||
        ep->peers[peer].in == NULL || peer_pid <= 0)
        return tutti__error(TUTTI_ERR_INVALID_ARG, ep->tp_name,
                            "rank %d: %s rank %d (pid %d): not an attached "
                            "peer of a group of %d", ep->rank, what, peer,
                            peer_pid, ep->size);
    if (ep->bounce == NULL &&
        (ep->bounce = malloc(TUTTI_CHAN_SC_BOUNCE)) == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, ep->tp_name,
                            "rank %d: no memory for a %d-byte bounce block",
                            ep->rank, TUTTI_CHAN_SC_BOUNCE);
    return TUTTI_OK;
}

tutti_status_t tutti__chan_enable_single_copy(tutti__chan_ep_t *ep, int peer,
                                              int peer_pid)
{
    tutti_status_t st = prepare_reads(ep, peer, peer_pid,
                                      "single copy from");
    if (st != TUTTI_OK)
        return st;
    ep->read_descriptor = consume_descriptor;
    ep->peers[peer].sc_pid = peer_pid;
    atomic_fetch_or_explicit(&ep->peers[peer].in->sc_accept,
                             TUTTI_CHAN_ACCEPT_READV, memory_order_release);
    return TUTTI_OK;
}

tutti_status_t tutti__chan_enable_mapped(tutti__chan_ep_t *ep, int peer,
                                         int peer_pid)
{
    tutti_status_t st = prepare_reads(ep, peer, peer_pid,
                                      "mapping the memory of");
    if (st != TUTTI_OK)
        return st;
    tutti__chan_peer_t *p = &ep->peers[peer];
    if (p->map_pid == peer_pid)
        return TUTTI_OK;
    /* Threads of one process: nothing to map, a buffer is where it lies.
     * Another process: opening its descriptors takes the kernel's read
     * check on it (same user, dumpable), not the attach check
     * process_vm_readv needs, so this works under Yama where single copy
     * does not. */
    if (peer_pid != ep->pid) {
        char path[40];
        snprintf(path, sizeof(path), "/proc/%d/fd", peer_pid);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            tutti__log(TUTTI_LOG_INFO, ep->tp_name, "rank %d: no mapped "
                       "reads from rank %d: %s: %s", ep->rank, peer, path,
                       strerror(errno));
            return TUTTI_ERR_UNSUPPORTED;
        }
        close(fd);
        if (p->maps == NULL &&
            (p->maps = tutti__chan_maps_create()) == NULL)
            return tutti__error(TUTTI_ERR_NO_MEMORY, ep->tp_name,
                                "rank %d: no memory for rank %d's mappings",
                                ep->rank, peer);
    }
    ep->read_descriptor = consume_descriptor;
    p->map_pid = peer_pid;
    atomic_fetch_or_explicit(&p->in->sc_accept, TUTTI_CHAN_ACCEPT_MAPPED,
                             memory_order_release);
    return TUTTI_OK;
}
