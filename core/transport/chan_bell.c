/* Doorbells: a member of a group whose waits sleep sleeps on its own, and
 * its peers ring it after moving data to or from it (chan.h,
 * tutti__chan_bell_t). */
#include <sched.h>
#include <stdatomic.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

#include "transport/chan.h"

/* A full fence between this thread's writes before and its reads after,
 * for the doorbell's handshake (chan.h).  gcc's thread sanitizer refuses
 * atomic_thread_fence; in such a build a sequentially consistent
 * read-modify-write of the bell's word stands in (a locked instruction,
 * itself a full fence on x86). */
static void bell_fence(tutti__chan_bell_t *b)
{
#if defined(__SANITIZE_THREAD__)
    atomic_fetch_add_explicit(&b->sleeping, 0, memory_order_seq_cst);
#else
    (void)b;
    atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* After this member's writes to a channel shared with the owner of @p b:
 * wakes the owner if it sleeps (chan.h, tutti__chan_bell_t). */
void tutti__chan_bell_ring(tutti__chan_bell_t *b)
{
    bell_fence(b);
    if (atomic_load_explicit(&b->sleeping, memory_order_relaxed) == 0)
        return;
    atomic_fetch_add_explicit(&b->seq, 1, memory_order_relaxed);
#ifdef __linux__
    syscall(SYS_futex, &b->seq, FUTEX_WAKE, 1, NULL, NULL, 0);
#endif
}

void tutti__chan_attach_bell(tutti__chan_ep_t *ep, int rank, void *bell)
{
    if (rank == ep->rank)
        ep->bell = bell;
    else if (rank >= 0 && rank < ep->size)
        ep->peers[rank].bell = bell;
}

int tutti__chan_sleep(tutti__chan_ep_t *ep, double seconds)
{
    tutti__chan_bell_t *b = ep->bell;
    if (b == NULL)
        return -1;
    uint32_t seen = atomic_load_explicit(&b->seq, memory_order_relaxed);
    atomic_store_explicit(&b->sleeping, 1, memory_order_relaxed);
    bell_fence(b);
    int moved = tutti__chan_progress(ep);
    if (moved == 0) {
#ifdef __linux__
        struct timespec ts;
        ts.tv_sec = (time_t)seconds;
        ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
        /* Returns at a ring (seq no longer seen), a signal or the limit:
         * the caller makes progress and decides either way. */
        syscall(SYS_futex, &b->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
#else
        (void)seen;
        (void)seconds;
        sched_yield();
#endif
    }
    atomic_store_explicit(&b->sleeping, 0, memory_order_relaxed);
    return moved;
}
