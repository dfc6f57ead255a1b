/* Doorbells: arm, wait, ring (bell.h). */
#include <sched.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

#include "transport/bell.h"

/* A full fence between this thread's writes before and its reads after.
 * gcc's thread sanitizer refuses atomic_thread_fence; in such a build a
 * sequentially consistent read-modify-write of the bell's word stands in
 * (a locked instruction, itself a full fence on x86). */
static void bell_fence(tutti__bell_t *b)
{
#if defined(__SANITIZE_THREAD__)
    atomic_fetch_add_explicit(&b->sleeping, 0, memory_order_seq_cst);
#else
    (void)b;
    atomic_thread_fence(memory_order_seq_cst);
#endif
}

uint32_t tutti__bell_arm(tutti__bell_t *b)
{
    uint32_t seen = atomic_load_explicit(&b->seq, memory_order_relaxed);
    atomic_store_explicit(&b->sleeping, 1, memory_order_relaxed);
    bell_fence(b);
    return seen;
}

void tutti__bell_disarm(tutti__bell_t *b)
{
    atomic_store_explicit(&b->sleeping, 0, memory_order_relaxed);
}

void tutti__bell_wait(tutti__bell_t *b, uint32_t seen, double seconds)
{
#ifdef __linux__
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    /* Returns at a ring (seq no longer seen), a signal or the limit: the
     * caller makes progress and decides either way. */
    syscall(SYS_futex, &b->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
#else
    (void)seen;
    (void)seconds;
    sched_yield();
#endif
    tutti__bell_disarm(b);
}

void tutti__bell_ring(tutti__bell_t *b)
{
    bell_fence(b);
    if (atomic_load_explicit(&b->sleeping, memory_order_relaxed) == 0)
        return;
    atomic_fetch_add_explicit(&b->seq, 1, memory_order_relaxed);
#ifdef __linux__
    syscall(SYS_futex, &b->seq, FUTEX_WAKE, 1, NULL, NULL, 0);
#endif
}
