/*
 * LD_PRELOAD shim for test_shm: process_vm_readv fails with EPERM, as under
 * Yama ptrace_scope 2 or in a container without the capability, so the shm
 * transport's fallback to two copies can be tested on any host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/uio.h>

__attribute__((visibility("default"))) ssize_t
process_vm_readv(pid_t pid, const struct iovec *local, unsigned long nlocal,
                 const struct iovec *remote, unsigned long nremote,
                 unsigned long flags)
{
    (void)pid;
    (void)local;
    (void)nlocal;
    (void)remote;
    (void)nremote;
    (void)flags;
    errno = EPERM;
    return -1;
}
