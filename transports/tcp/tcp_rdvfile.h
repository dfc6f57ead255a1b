/*
 * tcp transport: the one-host rendezvous file, where task 0 writes the
 * address of its rendezvous server, in a directory only this user can
 * write.  Plain C with no part of the core, so that tutti-run, which
 * removes the file of a job that ended, shares the same rules.
 */
#ifndef TUTTI_TP_TCP_RDVFILE_H
#define TUTTI_TP_TCP_RDVFILE_H

#include <stddef.h>
#include <sys/types.h>

#define TCP_RDV_PATH_MAX 512

/** What tcp_rdv_read() found. */
enum {
    TCP_RDV_OK = 0,                 /* a file of a live writer: address out */
    TCP_RDV_ABSENT = 1,             /* no file (yet) */
    TCP_RDV_STALE = 2,              /* its writer is gone */
    TCP_RDV_REFUSED = -1            /* not ours, a link, not a regular
                                       file: why says which */
};

/**
 * The private directory of this user's rendezvous files, created if
 * needed: $XDG_RUNTIME_DIR/tutti when XDG_RUNTIME_DIR is owned by this
 * user with mode 0700, else ${TMPDIR:-/tmp}/tutti-<uid>.  0, or -1 with
 * @p why naming the directory, its owner and mode (another user owns it,
 * group or others may write it, it is a link).
 */
int tcp_rdv_dir(char *dir, size_t len, char *why, size_t wl);

/** The job's file in @p dir: rdv-<job id>, odd characters as '_'. */
void tcp_rdv_path(const char *dir, const char *job, char *buf, size_t len);

/**
 * Reads "<address> <port> <pid> <start time>" from @p path, not following
 * a link and only if this user owns it and neither group nor others may
 * write it.  @p host (at least 256 bytes) and @p port get the address of
 * a live writer.  Without @p need_pid a file without pid is taken as live
 * (TUTTI_RENDEZVOUS_FILE, written on another host); with it (the private
 * file) such a file is stale.  A TCP_RDV_* value.
 */
int tcp_rdv_read(const char *path, int need_pid, char *host, unsigned *port,
                 char *why, size_t wl);

/**
 * Writes @p addr and @p port with this process's pid and start time to
 * @p path, which must not exist (O_EXCL, O_NOFOLLOW, mode 0600 whatever
 * the umask; the content appears at once, by link(2)).  A stale file is
 * replaced; one of a live writer is an error naming it and its writer's
 * pid.  0, or -1 with @p why.
 */
int tcp_rdv_create(const char *path, const char *addr, unsigned port,
                   char *why, size_t wl);

/**
 * Writes "@p addr @p port" to @p path (TUTTI_RENDEZVOUS_FILE, read from
 * other hosts) with mode 0644 whatever the umask, replacing it at once
 * (rename(2)); 0, or -1 with @p why.
 */
int tcp_rdv_write_shared(const char *path, const char *addr, unsigned port,
                         char *why, size_t wl);

/** Removes @p path if it is this user's and its writer is gone; 1 if it
 *  did. */
int tcp_rdv_remove_stale(const char *path);

#endif
