/*
 * tutti-run: start N processes (ranks) of a program on this host, tell each
 * its rank through the environment, wait for all of them, and tear the job
 * down when a rank fails, the job times out or the launcher is interrupted.
 *
 * Every rank runs in its own process group, so stopping a rank also stops
 * whatever it started (a shell script's commands, a libtool wrapper's
 * program).  Signals reach the main loop through a self-pipe; the loop polls
 * that pipe and, with --tag-output, the ranks' output pipes, with a timeout
 * taken from the nearest deadline (--timeout or the SIGTERM grace period).
 * A finished rank is looked at with WNOWAIT before it is reaped: while its
 * zombie exists its pid, and so its process-group id, cannot be reused, so
 * the processes it left behind can be killed safely.
 *
 * This file holds the job's main loop and main; run_args.c reads the
 * command line, run_bind.c pins the ranks to CPUs (--bind-to),
 * run_spawn.c starts the ranks, run_output.c forwards their
 * tagged output, run_signals.c routes signals into the self-pipe and
 * run_clean.c removes the tcp transport's rendezvous file.
 * run.h holds what they share.
 *
 * This program does not link libtutti.
 */
#define _GNU_SOURCE /* pipe2 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run.h"

#define KILL_GRACE_S 2.0
#define RANK_LIST_BYTES 8192  /* holds any list of up to MAX_RANKS ranks */

/* ---- small helpers ---------------------------------------------------- */

/* Write the running ranks as "rank 3" or "ranks 0-2, 5"; return how many. */
static int running_ranks(const struct job *job, char *buf, size_t size)
{
    int count = 0, ranges = 0;
    size_t len;

    for (int i = 0; i < job->started; i++)
        count += job->ranks[i].running;
    len = (size_t)snprintf(buf, size, count == 1 ? "rank " : "ranks ");
    for (int i = 0; i < job->started; i++) {
        int j = i, k;

        if (!job->ranks[i].running)
            continue;
        while (j + 1 < job->started && job->ranks[j + 1].running)
            j++;
        k = i == j ? snprintf(buf + len, size - len, "%s%d",
                              ranges ? ", " : "", i)
                   : snprintf(buf + len, size - len, "%s%d-%d",
                              ranges ? ", " : "", i, j);
        if (k < 0 || (size_t)k >= size - len)
            break; /* cannot happen with RANK_LIST_BYTES; stay bounded */
        len += (size_t)k;
        ranges++;
        i = j;
    }
    return count;
}

/* ---- the job ---------------------------------------------------------- */

static void signal_rank(const struct rank *r, int sig)
{
    if (kill(-r->pid, sig) != 0 && errno == ESRCH)
        kill(r->pid, sig); /* its group was never created */
}

static void start_terminating(struct job *job, int sig)
{
    for (int i = 0; i < job->started; i++)
        if (job->ranks[i].running)
            signal_rank(&job->ranks[i], sig);
    job->phase = PHASE_TERMINATING;
    job->term_signal = sig;
    job->kill_at = now_s() + KILL_GRACE_S;
}

static void kill_remaining(struct job *job)
{
    for (int i = 0; i < job->started; i++)
        if (job->ranks[i].running)
            signal_rank(&job->ranks[i], SIGKILL);
    job->phase = PHASE_KILLING;
}

static void rank_finished(struct job *job, struct rank *r, int status)
{
    int rank = (int)(r - job->ranks);

    r->running = false;
    job->running--;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return;
    /* once we are stopping the job, exits are our doing, not news */
    if (job->phase != PHASE_RUNNING)
        return;
    if (WIFEXITED(status)) {
        fprintf(stderr, "tutti-run: rank %d (pid %jd) exited with status %d\n",
                rank, (intmax_t)r->pid, WEXITSTATUS(status));
        job->exit_code = WEXITSTATUS(status);
    } else {
        int sig = WTERMSIG(status);

        fprintf(stderr, "tutti-run: rank %d (pid %jd) was killed by signal %d "
                "(%s)%s\n", rank, (intmax_t)r->pid, sig, signal_name(sig),
                WCOREDUMP(status) ? ", core dumped" : "");
        job->exit_code = 128 + sig;
    }
    if (job->opt->grace > 0) {
        job->phase = PHASE_GRACE;
        job->grace_until = now_s() + job->opt->grace;
        return;
    }
    start_terminating(job, SIGTERM);
}

static struct rank *find_rank(struct job *job, pid_t pid)
{
    for (int i = 0; i < job->started; i++)
        if (job->ranks[i].pid == pid)
            return &job->ranks[i];
    return NULL;
}

static void reap_ranks(struct job *job)
{
    for (;;) {
        siginfo_t si;
        struct rank *r;
        int status;

        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
            if (errno == EINTR)
                continue;
            break; /* ECHILD: none left */
        }
        if (si.si_pid == 0)
            break;
        r = find_rank(job, si.si_pid);
        /* The zombie still holds the group id: whatever the rank left
         * behind in its group goes with it. */
        if (r != NULL)
            kill(-r->pid, SIGKILL);
        while (waitpid(si.si_pid, &status, 0) < 0 && errno == EINTR)
            ;
        /* r == NULL: a child we inherited through exec; just reap it */
        if (r != NULL && r->running)
            rank_finished(job, r, status);
    }
}

static void on_caught_signal(struct job *job, int sig)
{
    char list[RANK_LIST_BYTES];

    if (job->phase == PHASE_RUNNING || job->phase == PHASE_GRACE) {
        fprintf(stderr, "tutti-run: caught %s; passing it on to the ranks of "
                "job %s\n", signal_name(sig), job->opt->job_id);
        if (job->exit_code < 0) {
            job->exit_code = 128 + sig;
            job->caught_signal = sig;
        }
        start_terminating(job, sig);
    } else if (job->phase == PHASE_TERMINATING) {
        running_ranks(job, list, sizeof list);
        fprintf(stderr, "tutti-run: caught %s while stopping the job; "
                "sending SIGKILL to %s\n", signal_name(sig), list);
        kill_remaining(job);
    }
}

static void on_timeout(struct job *job)
{
    char list[RANK_LIST_BYTES];

    running_ranks(job, list, sizeof list);
    fprintf(stderr, "tutti-run: job %s timed out after %g s; %s still "
            "running\n", job->opt->job_id, job->opt->timeout, list);
    job->exit_code = EXIT_TIMEOUT;
    start_terminating(job, SIGTERM);
}

static void on_grace_over(struct job *job)
{
    char list[RANK_LIST_BYTES];

    running_ranks(job, list, sizeof list);
    fprintf(stderr, "tutti-run: %s still running %g s after %s; sending "
            "SIGKILL\n", list, KILL_GRACE_S, signal_name(job->term_signal));
    kill_remaining(job);
}

static int poll_timeout_ms(const struct job *job, double now)
{
    double until, ms;

    if (job->phase == PHASE_RUNNING && job->deadline > 0)
        until = job->deadline;
    else if (job->phase == PHASE_GRACE)
        until = job->grace_until;
    else if (job->phase == PHASE_TERMINATING)
        until = job->kill_at;
    else
        return -1;
    ms = (until - now) * 1000.0;
    if (ms <= 0)
        return 0;
    /* round up: waking early would only cost another poll */
    return ms >= INT_MAX - 1 ? INT_MAX : (int)ms + 1;
}

static void handle_sig_pipe(struct job *job)
{
    unsigned char sigs[64];
    ssize_t n = read(sig_pipe[0], sigs, sizeof sigs);

    for (ssize_t i = 0; i < n; i++) {
        if (sigs[i] == SIGCHLD)
            reap_ranks(job);
        else
            on_caught_signal(job, sigs[i]);
    }
}

/*
 * Fork every rank.  The handled signals stay blocked meanwhile, so that no
 * child runs our handler before it has restored the defaults.
 */
static void start_ranks(struct job *job)
{
    sigprocmask(SIG_BLOCK, &handled_mask, NULL);
#ifdef __linux__
    /* adopt orphaned descendants of the ranks, see reap_strays() */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    fflush(NULL);
    for (int i = 0; i < job->opt->np; i++) {
        if (start_rank(job, i) != 0) {
            job->exit_code = EXIT_LAUNCHER;
            start_terminating(job, SIGTERM);
            break;
        }
    }
    sigprocmask(SIG_UNBLOCK, &handled_mask, NULL);
}

static void run_job(struct job *job)
{
    while (job->running > 0) {
        double now = now_s();
        int n;

        if (job->phase == PHASE_RUNNING && job->deadline > 0 &&
            now >= job->deadline) {
            on_timeout(job);
            continue;
        }
        if (job->phase == PHASE_TERMINATING && now >= job->kill_at) {
            on_grace_over(job);
            continue;
        }
        if (job->phase == PHASE_GRACE && now >= job->grace_until) {
            start_terminating(job, SIGTERM);
            continue;
        }
        job->pfds[0].fd = sig_pipe[0];
        job->pfds[0].events = POLLIN;
        job->pfds[0].revents = 0;
        n = collect_streams(job, 1);
        if (poll(job->pfds, (nfds_t)n, poll_timeout_ms(job, now)) < 0)
            continue; /* EINTR */
        /* output first, so a rank's last words come before our report */
        for (int i = 1; i < n; i++)
            if (job->pfds[i].revents != 0)
                stream_read(job->pstreams[i]);
        if (job->pfds[0].revents != 0)
            handle_sig_pipe(job);
    }
}

/*
 * As a subreaper, tutti-run inherits what the ranks' processes leave behind
 * when they die.  Those in a rank's group were sent SIGKILL with it; reap
 * them so that no zombie is left to an init that may not reap (containers).
 * Bounded: a process that left the rank's group may run on.
 */
static void reap_strays(void)
{
    double until = now_s() + 1.0;

    for (;;) {
        struct pollfd pfd = { .fd = sig_pipe[0], .events = POLLIN };
        unsigned char sigs[64];
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        double left;

        if (pid > 0)
            continue;
        if (pid < 0 && errno != EINTR)
            return; /* ECHILD: all gone */
        left = until - now_s();
        if (left <= 0)
            return;
        /* wait for the next SIGCHLD */
        if (poll(&pfd, 1, (int)(left * 1000.0) + 1) > 0)
            while (read(sig_pipe[0], sigs, sizeof sigs) > 0)
                ;
    }
}

/* True if @p rest is "g<16 hex digits>-r<digits>", what the shm transport
 * names a segment after "tutti-<job id>-": job "a" must not take the
 * names of a running job "a-b". */
static int job_shm_tail(const char *rest)
{
    if (rest[0] != 'g' || strspn(rest + 1, "0123456789abcdef") != 16 ||
        strncmp(rest + 17, "-r", 2) != 0 || rest[19] == '\0')
        return 0;
    return strspn(rest + 19, "0123456789") == strlen(rest + 19);
}

/* Remove /dev/shm/tutti-<job id>-g<key>-r<rank> (segments of ranks that
 * crashed in set-up; the library unlinks them once every peer mapped them). */
static void remove_job_shm(const char *job_id)
{
    char prefix[MAX_JOB_ID + 8];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "tutti-%s-", job_id);
    DIR *dir = opendir("/dev/shm");
    struct dirent *e;
    int removed = 0;

    if (dir == NULL)
        return; /* no such directory on this system: nothing to do */
    while ((e = readdir(dir)) != NULL) {
        char name[NAME_MAX + 2];

        if (strncmp(e->d_name, prefix, plen) != 0 ||
            !job_shm_tail(e->d_name + plen))
            continue;
        snprintf(name, sizeof name, "/%s", e->d_name);
        if (shm_unlink(name) == 0)
            removed++;
        else if (errno != ENOENT)
            fprintf(stderr, "tutti-run: cannot remove shared-memory segment "
                    "%s: %s\n", name, strerror(errno));
    }
    closedir(dir);
    if (removed > 0)
        fprintf(stderr, "tutti-run: removed %d shared-memory segment%s left "
                "by job %s\n", removed, removed == 1 ? "" : "s", job_id);
    /* The tcp transport's one-host rendezvous file, if task 0 died before
     * removing it. */
    clean_rendezvous(job_id);
}

/*
 * Die of the signal that stopped the job, so that a calling shell sees an
 * interrupted command (and, for SIGINT, stops its script or loop).
 */
static void die_of_signal(int sig)
{
    sigset_t one;

    signal(sig, SIG_DFL);
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}

int main(int argc, char **argv)
{
    struct options opt;
    struct job job;
    int rc, err;

    rc = parse_args(argc, argv, &opt);
    if (rc >= 0)
        return rc;
    rc = bind_init(&opt);
    if (rc >= 0) {
        bind_fini();
        return rc;
    }
    err = check_program(opt.argv[0]);
    if (err != 0) {
        fprintf(stderr, "tutti-run: cannot execute '%s': %s\n", opt.argv[0],
                strerror(err));
        bind_fini();
        return EXIT_EXEC;
    }

    memset(&job, 0, sizeof job);
    job.opt = &opt;
    job.exit_code = -1;
    rc = EXIT_LAUNCHER;
    if (spawn_init() != 0)
        goto out;
    if (opt.tag_output && ensure_fd_limit(opt.np) != 0)
        goto out_spawn_fini;
    job.ranks = calloc((size_t)opt.np, sizeof *job.ranks);
    job.pfds = calloc((size_t)opt.np * 2 + 1, sizeof *job.pfds);
    job.pstreams = calloc((size_t)opt.np * 2 + 1, sizeof *job.pstreams);
    if (job.ranks == NULL || job.pfds == NULL || job.pstreams == NULL) {
        fprintf(stderr, "tutti-run: out of memory\n");
        goto out_free;
    }
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "tutti-run: cannot create a pipe: %s\n",
                strerror(errno));
        goto out_free;
    }
    if (install_signals() != 0)
        goto out_restore_signals;

    if (opt.timeout > 0)
        job.deadline = now_s() + opt.timeout;
    if (clean_start(opt.job_id) != 0)
        fprintf(stderr, "tutti-run: warning: no watcher for the job's "
                "rendezvous file: %s\n", strerror(errno));
    if (opt.report_bindings)
        bind_report(&opt);
    start_ranks(&job);
    run_job(&job);
    reap_strays();
    drain_streams(&job);
    remove_job_shm(opt.job_id);
    rc = job.exit_code < 0 ? 0 : job.exit_code;

out_restore_signals:
    restore_signals();
    close(sig_pipe[0]);
    close(sig_pipe[1]);
out_free:
    free(job.pstreams);
    free(job.pfds);
    free(job.ranks);
out_spawn_fini:
    spawn_fini();
out:
    bind_fini();
    /* no core dump for SIGQUIT: exit 131 */
    if (job.caught_signal != 0 && job.caught_signal != SIGQUIT)
        die_of_signal(job.caught_signal);
    return rc;
}
