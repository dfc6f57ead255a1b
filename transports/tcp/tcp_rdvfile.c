/*
 * tcp transport: the one-host rendezvous file and its private directory
 * (tcp_rdvfile.h).  Another user must neither be able to make the job
 * talk to their listener nor to keep task 0 from writing: the directory
 * is this user's with no write access for others, files are created
 * O_EXCL|O_NOFOLLOW with their mode set whatever the umask (0600; 0644
 * for the shared TUTTI_RENDEZVOUS_FILE, written here too) and read only
 * when this user owns them and nobody else may write them.  A private
 * file keeps its writer's pid and start time, so that one left by a
 * killed job is told from one in use; one without them is stale.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tcp_rdvfile.h"

static const char *user_name(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *res = NULL;
    char tmp[1024];
    if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res != NULL)
        snprintf(buf, len, "%s", res->pw_name);
    else
        snprintf(buf, len, "?");
    return buf;
}

/* 0 if @p st is a directory of this user that nobody else may write. */
static int private_dir(const char *dir, const struct stat *st, char *why,
                       size_t wl)
{
    char name[64];
    if (S_ISDIR(st->st_mode) && st->st_uid == geteuid() &&
        (st->st_mode & 022) == 0)
        return 0;
    snprintf(why, wl, "rendezvous directory %s is %s owned by uid %u (%s) "
             "with mode %04o; expected a directory of uid %u that group and "
             "others cannot write (remove it, or set XDG_RUNTIME_DIR or "
             "TMPDIR elsewhere)", dir,
             S_ISLNK(st->st_mode) ? "a symbolic link"
             : S_ISDIR(st->st_mode) ? "a directory" : "not a directory",
             (unsigned)st->st_uid, user_name(st->st_uid, name, sizeof(name)),
             (unsigned)(st->st_mode & 07777), (unsigned)geteuid());
    return -1;
}

static int make_private(const char *dir, char *why, size_t wl)
{
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, wl, "cannot create the rendezvous directory %s: %s",
                 dir, strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) != 0) {
        snprintf(why, wl, "rendezvous directory %s: %s", dir,
                 strerror(errno));
        return -1;
    }
    return private_dir(dir, &st, why, wl);
}

int tcp_rdv_dir(char *dir, size_t len, char *why, size_t wl)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *tmp = getenv("TMPDIR");
    struct stat st;

    /* XDG_RUNTIME_DIR only when it is what the spec promises: ours, 0700. */
    if (xdg != NULL && xdg[0] == '/' && lstat(xdg, &st) == 0 &&
        S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
        (st.st_mode & 077) == 0 &&
        (size_t)snprintf(dir, len, "%s/tutti", xdg) < len &&
        make_private(dir, why, wl) == 0)
        return 0;
    if (tmp == NULL || tmp[0] != '/')
        tmp = "/tmp";
    if ((size_t)snprintf(dir, len, "%s/tutti-%u", tmp, (unsigned)geteuid()) >=
        len) {
        snprintf(why, wl, "TMPDIR is too long for a rendezvous directory");
        return -1;
    }
    return make_private(dir, why, wl);
}

void tcp_rdv_path(const char *dir, const char *job, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s/rdv-", dir);
    snprintf(buf + (n < len ? n : len - 1), len - (n < len ? n : len - 1),
             "%s", job);
    for (char *c = buf + (n < len ? n : len - 1); *c; c++) {
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
            *c = '_';
    }
}

/* The start time of @p pid (clock ticks since boot, /proc/PID/stat field
 * 22), or 0 if it is gone or a zombie. */
static unsigned long long start_time(long pid)
{
    char path[64], buf[1024], *p;
    unsigned long long t = 0;
    char state = 0;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if ((p = strrchr(buf, ')')) == NULL ||
        sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
               "%*s %*s %*s %*s %*s %*s %llu", &state, &t) != 2)
        return 0;
    return state == 'Z' || state == 'X' ? 0 : t;
}

int tcp_rdv_read(const char *path, int need_pid, char *host, unsigned *port,
                 char *why, size_t wl)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char buf[512], name[64];
    long pid = 0;
    unsigned long long start = 0;
    ssize_t n;
    int fields;

    if (fd < 0 && errno == ENOENT)
        return TCP_RDV_ABSENT;
    if (fd < 0 && errno == ELOOP) {
        snprintf(why, wl, "rendezvous file %s is a symbolic link; refused",
                 path);
        return TCP_RDV_REFUSED;
    }
    if (fd < 0) {
        snprintf(why, wl, "rendezvous file %s: %s", path, strerror(errno));
        return TCP_RDV_REFUSED;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid()) {
        snprintf(why, wl, "rendezvous file %s is %s owned by uid %u (%s), "
                 "not by uid %u; refused", path,
                 S_ISREG(st.st_mode) ? "a file" : "not a regular file",
                 (unsigned)st.st_uid,
                 user_name(st.st_uid, name, sizeof(name)),
                 (unsigned)geteuid());
        close(fd);
        return TCP_RDV_REFUSED;
    }
    if ((st.st_mode & 022) != 0) {
        snprintf(why, wl, "rendezvous file %s has mode %04o: group or others "
                 "may write it; refused (expected mode 0600, or 0644 for "
                 "TUTTI_RENDEZVOUS_FILE: chmod 644 %s, or remove it)", path,
                 (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return TCP_RDV_REFUSED;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    fields = sscanf(buf, "%255s %u %ld %llu", host, port, &pid, &start);
    if (fields >= 4 && start_time(pid) != start)
        return TCP_RDV_STALE;
    if (need_pid && fields < 4)
        return TCP_RDV_STALE; /* written whole at once: no writer alive */
    if (fields < 2 || *port == 0 || *port > 65535)
        return TCP_RDV_ABSENT; /* being written (shared file): try again */
    return TCP_RDV_OK;
}

int tcp_rdv_create(const char *path, const char *addr, unsigned port,
                   char *why, size_t wl)
{
    char tmp[TCP_RDV_PATH_MAX + 32], line[320], host[256];
    unsigned long long me = start_time((long)getpid());
    unsigned p;
    int len, fd, ok, e, rc = -1;

    len = snprintf(line, sizeof(line), "%s %u %ld %llu\n", addr, port,
                   (long)getpid(), me);
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    unlink(tmp); /* ours, left by a process of the same pid */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    /* The mode as said, whatever the umask. */
    ok = fd >= 0 && fchmod(fd, 0600) == 0 &&
         write(fd, line, (size_t)len) == len;
    e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        snprintf(why, wl, "cannot write the rendezvous file %s: %s", tmp,
                 strerror(e));
        if (fd >= 0)
            unlink(tmp);
        return -1;
    }
    for (int tries = 0; tries < 2; tries++) {
        if (link(tmp, path) == 0) { /* never replaces a file */
            rc = 0;
            break;
        }
        if (errno != EEXIST) {
            snprintf(why, wl, "cannot create the rendezvous file %s: %s",
                     path, strerror(errno));
            break;
        }
        int st = tcp_rdv_read(path, 1, host, &p, why, wl);
        if (st == TCP_RDV_REFUSED)
            break;
        if (st == TCP_RDV_OK || tries > 0) {
            snprintf(why, wl, "rendezvous file %s exists and its writer is "
                     "alive (%s port %u): another job with the same job "
                     "id? expected a job id of its own", path, host, p);
            break;
        }
        unlink(path); /* stale or unreadable, and ours: a dead job's */
    }
    unlink(tmp);
    return rc;
}

int tcp_rdv_write_shared(const char *path, const char *addr, unsigned port,
                         char *why, size_t wl)
{
    char tmp[TCP_RDV_PATH_MAX + 32], line[320];
    int len, fd, ok, e;

    len = snprintf(line, sizeof(line), "%s %u\n", addr, port);
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0644);
    if (fd < 0) {
        snprintf(why, wl, "cannot write the rendezvous file %s (through "
                 "%s): %s", path, tmp, strerror(errno));
        return -1;
    }
    /* The mode as said, whatever the umask: others read it, none writes. */
    ok = fchmod(fd, 0644) == 0 && write(fd, line, (size_t)len) == len;
    e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) == 0)
        return 0;
    if (ok)
        e = errno;
    unlink(tmp);
    snprintf(why, wl, "cannot write the rendezvous file %s (through %s): "
             "%s", path, tmp, strerror(e));
    return -1;
}

int tcp_rdv_remove_stale(const char *path)
{
    char host[256], why[8];
    unsigned port;
    if (tcp_rdv_read(path, 1, host, &port, why, sizeof(why)) !=
        TCP_RDV_STALE)
        return 0;
    return unlink(path) == 0;
}
