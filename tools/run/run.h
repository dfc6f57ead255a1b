/*
 * What the parts of tutti-run share: its limits and exit statuses, the
 * options, the job's state, and the functions one part offers another.
 */
#ifndef TUTTI_TOOLS_RUN_H
#define TUTTI_TOOLS_RUN_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define MAX_RANKS 1024
#define MAX_JOB_ID 40

#define EXIT_TIMEOUT 124
#define EXIT_LAUNCHER 125     /* tutti-run itself failed: usage, fork, ... */
#define EXIT_EXEC 127

enum bind_to {
    BIND_DEFAULT,             /* not given: core when every rank gets a CPU
                                 of its own, else none (bind_init) */
    BIND_CORE,                /* rank i on the i-th CPU tutti-run may use */
    BIND_NONE,
};

struct options {
    int np;
    double timeout;           /* seconds; 0: none */
    double grace;             /* after a failure, seconds the others get to
                                 exit by themselves; 0: stop them at once */
    bool tag_output;
    enum bind_to bind_to;
    bool report_bindings;
    char job_id[MAX_JOB_ID + 1];
    char secret[65];          /* TUTTI_JOB_SECRET: 256 random bits, hex */
    char **argv;              /* PROGRAM and its arguments */
};

/* Buffered writer for forwarded output; tutti-run is the only writer. */
struct outbuf {
    int fd;
    bool broken;              /* a write failed (EPIPE...): discard the rest */
    size_t len;
    char data[65536];
};

/* One output pipe of a rank (--tag-output). */
struct stream {
    int fd;                   /* read end, -1 when closed */
    int rank;
    struct outbuf *out;
    char *line;               /* the incomplete line received so far */
    size_t len, cap;
};

struct rank {
    pid_t pid;
    bool running;
    struct stream out, err;
};

enum phase {
    PHASE_RUNNING,            /* all is well */
    PHASE_GRACE,              /* a rank failed; the others may still report
                                 (--grace); SIGTERM at grace_until */
    PHASE_TERMINATING,        /* ranks were signalled; SIGKILL at kill_at */
    PHASE_KILLING,            /* SIGKILL was sent; waiting for the rest */
};

struct job {
    const struct options *opt;
    struct rank *ranks;
    int started;              /* ranks[0 .. started-1] were forked */
    int running;
    enum phase phase;
    int term_signal;          /* what was sent when terminating began */
    double deadline;          /* --timeout expiry, monotonic; 0: none */
    double kill_at;
    double grace_until;
    int exit_code;            /* -1 until the first failure decides it */
    int caught_signal;        /* signal that stopped tutti-run, or 0 */
    struct pollfd *pfds;
    struct stream **pstreams; /* pfds[i] belongs to pstreams[i] (i >= 1) */
};

/* ---- run_args.c ------------------------------------------------------- */

/* Fills @opt from the command line.  Returns -1 to go on, or the status
 * tutti-run should exit with: 0 after --help or --version, EXIT_LAUNCHER
 * for a bad command line or when no job secret can be made. */
int parse_args(int argc, char **argv, struct options *opt);
/* Returns an errno value when PROGRAM certainly cannot be executed, else 0. */
int check_program(const char *prog);

/* ---- run_bind.c ------------------------------------------------------- */

/* Reads the CPUs tutti-run may run on and settles opt->bind_to.  Returns
 * -1 to go on, or EXIT_LAUNCHER after saying why on stderr (--bind-to core
 * with more ranks than CPUs). */
int bind_init(struct options *opt);
/* --report-bindings: one line per rank on stderr. */
void bind_report(const struct options *opt);
/* In the forked child of rank @rank: sets TUTTI_BIND and, with core
 * binding, pins the process to its CPU.  Returns 0, or -1 after saying why
 * on stderr. */
int bind_rank(const struct options *opt, int rank);
/* Frees what bind_init read. */
void bind_fini(void);

/* ---- run_output.c ----------------------------------------------------- */

/* Where the ranks' stdout and stderr lines go (--tag-output). */
extern struct outbuf out_stdout, out_stderr;

/* Reads what the stream's pipe holds and forwards its complete lines. */
void stream_read(struct stream *s);
/* Fills job->pfds with the open streams after @first entries; returns the
 * number of entries. */
int collect_streams(struct job *job, int first);
/* After the last rank: forwards what is left in the pipes, then closes
 * them and frees the streams' lines. */
void drain_streams(struct job *job);

/* ---- run_signals.c ---------------------------------------------------- */

/* The self-pipe: the handler writes each caught signal's number as a byte
 * to sig_pipe[1]; the main loop reads sig_pipe[0].  main creates it. */
extern int sig_pipe[2];
/* The signals that arrive through sig_pipe (blocked while forking). */
extern sigset_t handled_mask;

/* Returns 0, or -1 after saying why on stderr. */
int install_signals(void);
/* Puts back the dispositions and the mask tutti-run started with. */
void restore_signals(void);
/* "SIGTERM" for SIGTERM; "SIGRT" or "unknown" for others. */
const char *signal_name(int sig);

/* ---- run_spawn.c ------------------------------------------------------ */

/* Before the first rank: notes the launcher's pid and whether its stdin
 * is a terminal, and opens /dev/null for the ranks' stdin.  Returns 0, or
 * -1 after saying why on stderr. */
int spawn_init(void);
/* Closes the /dev/null spawn_init opened. */
void spawn_fini(void);
/* Raises the soft open-file limit where @np ranks' pipes need more
 * (--tag-output); the ranks get the old one back.  Returns 0, or -1 after
 * saying why on stderr. */
int ensure_fd_limit(int np);
/* Forks rank @i of the job; the caller blocks handled_mask meanwhile.
 * Returns 0, or -1 after saying why on stderr. */
int start_rank(struct job *job, int i);

/* ---- run_clean.c ------------------------------------------------------ */

/* Starts the watcher that removes the job's tcp rendezvous file when
 * tutti-run ends, even by SIGKILL.  Returns 0, or -1 (the job runs
 * without it). */
int clean_start(const char *job_id);
/* Tells the watcher a rank's pid, to wait for it. */
void clean_note_rank(pid_t pid);
/* Removes the job's tcp rendezvous file if its writer is gone. */
void clean_rendezvous(const char *job_id);

/* ---- every part ------------------------------------------------------- */

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
