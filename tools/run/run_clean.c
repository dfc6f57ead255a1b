/*
 * tutti-run: removing the tcp transport's one-host rendezvous file of the
 * job (transports/tcp/tcp_rdvfile.c decides where it is and whether its
 * writer is gone), when the job ends and when tutti-run itself is killed.
 *
 * A SIGKILLed tutti-run runs no code, and its ranks die with it
 * (PR_SET_PDEATHSIG), task 0 included: so a watcher, started before the
 * ranks and detached from the job (its own session, job-control signals
 * ignored), holds the read end of a pipe only tutti-run writes.  tutti-run
 * sends it each rank's pid; at end of file (tutti-run gone, however) it
 * waits for those pids to end and removes the file if its writer is gone.
 */
#define _GNU_SOURCE /* pipe2 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"
#include "../../transports/tcp/tcp_rdvfile.h"

static int watch_fd = -1;       /* write end; -1 when no watcher */

/* Removes the job's rendezvous file if its writer is gone; says so. */
void clean_rendezvous(const char *job_id)
{
    char dir[TCP_RDV_PATH_MAX], path[TCP_RDV_PATH_MAX], why[TCP_RDV_PATH_MAX];
    const char *shared = getenv("TUTTI_RENDEZVOUS_FILE");

    if (shared != NULL && *shared != '\0')
        return; /* the user's file, rewritten by the next job */
    if (tcp_rdv_dir(dir, sizeof dir, why, sizeof why) != 0)
        return; /* no private directory: the job could not write there */
    tcp_rdv_path(dir, job_id, path, sizeof path);
    if (tcp_rdv_remove_stale(path))
        fprintf(stderr, "tutti-run: removed rendezvous file %s left by job "
                "%s\n", path, job_id);
}

/* The pid is gone or a zombie. */
static int ended(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if ((f = fopen(path, "r")) == NULL)
        return 1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p == NULL || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X';
}

static void watcher(int rd, const char *job_id)
{
    pid_t pids[MAX_RANKS];
    int npids = 0;
    pid_t pid;
    ssize_t n;

    setsid();
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    close(sig_pipe[0]); /* tutti-run's, not ours */
    close(sig_pipe[1]);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        close(null);
    }
    while ((n = read(rd, &pid, sizeof pid)) != 0) {
        if (n == (ssize_t)sizeof pid && npids < MAX_RANKS)
            pids[npids++] = pid;
        else if (n < 0 && errno != EINTR)
            break;
    }
    /* tutti-run is gone; its ranks get SIGKILL a moment later */
    for (int tries = 0; tries < 200; tries++) {
        int left = 0;
        for (int i = 0; i < npids; i++)
            left += !ended(pids[i]);
        if (left == 0)
            break;
        usleep(25000);
    }
    clean_rendezvous(job_id);
    _exit(0);
}

int clean_start(const char *job_id)
{
    int p[2];
    pid_t child;

    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    child = fork();
    if (child == 0) {
        close(p[1]);
        if (fork() == 0) /* the grandchild: no child of tutti-run's */
            watcher(p[0], job_id);
        _exit(0);
    }
    close(p[0]);
    if (child < 0) {
        close(p[1]);
        return -1;
    }
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
    watch_fd = p[1];
    return 0;
}

void clean_note_rank(pid_t pid)
{
    if (watch_fd >= 0 && write(watch_fd, &pid, sizeof pid) != sizeof pid) {
        close(watch_fd); /* no watcher: the end of the job still cleans */
        watch_fd = -1;
    }
}
