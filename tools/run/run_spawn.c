/*
 * Starting tutti-run's ranks: fork one process per rank, each in its own
 * process group, with its rank in the environment, pinned to its CPU with
 * --bind-to core and, with --tag-output, its stdout and stderr on pipes to
 * tutti-run; then exec PROGRAM.
 */
#define _GNU_SOURCE /* pipe2 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run.h"

static pid_t launcher_pid;
static int devnull_fd = -1;
static bool stdin_is_tty;
static bool fd_limit_raised;
static struct rlimit orig_fd_limit;

static void set_env_int(const char *name, int value)
{
    char buf[16];

    snprintf(buf, sizeof buf, "%d", value);
    setenv(name, buf, 1);
}

/* In the forked child: become rank @rank and exec PROGRAM. */
static void __attribute__((noreturn))
exec_rank(const struct options *opt, int rank, int out_w, int err_w)
{
    restore_signals();
    /* its own process group, so that terminating the rank reaches its
     * children too; the parent does the same to close the race */
    setpgid(0, 0);
#ifdef __linux__
    /* die with the launcher, even if it is SIGKILLed; it may have died
     * before this line already */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != launcher_pid)
        _exit(EXIT_EXEC);
#endif
    /* Only rank 0 reads our input.  Not from a terminal: in a background
     * process group that read would stop the rank (SIGTTIN). */
    if (rank != 0 || stdin_is_tty)
        dup2(devnull_fd, STDIN_FILENO);
    if (out_w >= 0) {
        dup2(out_w, STDOUT_FILENO);
        dup2(err_w, STDERR_FILENO);
    }
    if (fd_limit_raised)
        setrlimit(RLIMIT_NOFILE, &orig_fd_limit);
    set_env_int("TUTTI_RANK", rank);
    set_env_int("TUTTI_SIZE", opt->np);
    set_env_int("TUTTI_LOCAL_RANK", rank);
    set_env_int("TUTTI_LOCAL_SIZE", opt->np);
    setenv("TUTTI_JOB_ID", opt->job_id, 1);
    setenv("TUTTI_JOB_SECRET", opt->secret, 1);
    if (bind_rank(opt, rank) != 0)
        _exit(EXIT_LAUNCHER);

    execvp(opt->argv[0], opt->argv);
    fprintf(stderr, "tutti-run: cannot execute '%s': %s\n", opt->argv[0],
            strerror(errno));
    _exit(EXIT_EXEC);
}

static void stream_init(struct stream *s, int fd, int rank,
                        struct outbuf *out)
{
    s->fd = fd;
    s->rank = rank;
    s->out = out;
}

/* --tag-output keeps two pipes per rank open in the launcher. */
int ensure_fd_limit(int np)
{
    rlim_t need = (rlim_t)np * 2 + 16;
    struct rlimit lim;

    if (getrlimit(RLIMIT_NOFILE, &orig_fd_limit) != 0 ||
        orig_fd_limit.rlim_cur == RLIM_INFINITY ||
        orig_fd_limit.rlim_cur >= need)
        return 0;
    lim = orig_fd_limit;
    lim.rlim_cur = need;
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need) {
        fprintf(stderr, "tutti-run: --tag-output with %d ranks needs %ju open "
                "files, but the hard limit is %ju; raise it (ulimit -Hn)\n",
                np, (uintmax_t)need, (uintmax_t)lim.rlim_max);
        return -1;
    }
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
        fprintf(stderr, "tutti-run: cannot raise the open-file limit to %ju: "
                "%s\n", (uintmax_t)need, strerror(errno));
        return -1;
    }
    fd_limit_raised = true;
    return 0;
}

/* Fork one rank.  Signals in handled_mask are blocked by the caller. */
int start_rank(struct job *job, int i)
{
    const struct options *opt = job->opt;
    struct rank *r = &job->ranks[i];
    int out_p[2] = { -1, -1 }, err_p[2] = { -1, -1 };
    pid_t pid;

    if (opt->tag_output &&
        (pipe2(out_p, O_CLOEXEC) != 0 || pipe2(err_p, O_CLOEXEC) != 0)) {
        fprintf(stderr, "tutti-run: cannot start rank %d: pipe: %s\n", i,
                strerror(errno));
        goto err_close_pipes;
    }
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tutti-run: cannot start rank %d: fork: %s\n", i,
                strerror(errno));
        goto err_close_pipes;
    }
    if (pid == 0)
        exec_rank(opt, i, out_p[1], err_p[1]);

    /* EACCES: the child has exec'd, after its own setpgid */
    setpgid(pid, pid);
    clean_note_rank(pid);
    r->pid = pid;
    r->running = true;
    job->running++;
    job->started++;
    stream_init(&r->out, out_p[0], i, &out_stdout);
    stream_init(&r->err, err_p[0], i, &out_stderr);
    if (opt->tag_output) {
        close(out_p[1]);
        close(err_p[1]);
    }
    return 0;

err_close_pipes:
    for (int k = 0; k < 2; k++) {
        if (out_p[k] >= 0)
            close(out_p[k]);
        if (err_p[k] >= 0)
            close(err_p[k]);
    }
    return -1;
}

/* Make sure fds 0-2 are open, so pipes never land on them. */
static int open_devnull(void)
{
    for (;;) {
        int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

        if (fd < 0) {
            fprintf(stderr, "tutti-run: cannot open /dev/null: %s\n",
                    strerror(errno));
            return -1;
        }
        if (fd > STDERR_FILENO) {
            devnull_fd = fd;
            return 0;
        }
        /* filled a closed standard descriptor: keep it there */
        fcntl(fd, F_SETFD, 0);
    }
}

/* Before the first rank: what exec_rank needs to know of the launcher. */
int spawn_init(void)
{
    launcher_pid = getpid();
    stdin_is_tty = isatty(STDIN_FILENO);
    return open_devnull();
}

void spawn_fini(void)
{
    close(devnull_fd);
}
