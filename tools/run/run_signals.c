/*
 * tutti-run's signal handling: the signals it handles reach its main loop
 * as bytes written to a self-pipe; the ranks get the original dispositions
 * and mask back before they exec.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

struct sigslot {
    int sig;
    bool installed;
    struct sigaction old;     /* restored in the ranks before exec */
};

static struct sigslot sigslots[] = {
    { .sig = SIGCHLD }, { .sig = SIGINT },  { .sig = SIGTERM },
    { .sig = SIGHUP },  { .sig = SIGQUIT }, { .sig = SIGPIPE },
};
#define NUM_SIGSLOTS (sizeof sigslots / sizeof sigslots[0])

int sig_pipe[2] = { -1, -1 };
static sigset_t orig_mask;    /* the mask tutti-run started with */
sigset_t handled_mask;        /* signals that arrive through sig_pipe */

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    /* A full pipe already holds a wake-up; losing this byte is fine for
     * SIGCHLD and at worst delays a repeated SIGINT. */
    ssize_t r = write(sig_pipe[1], &b, 1);
    (void)r;
    errno = saved;
}

const char *signal_name(int sig)
{
    switch (sig) {
#define SIGNAME(s) case s: return #s;
    SIGNAME(SIGHUP) SIGNAME(SIGINT) SIGNAME(SIGQUIT) SIGNAME(SIGILL)
    SIGNAME(SIGTRAP) SIGNAME(SIGABRT) SIGNAME(SIGBUS) SIGNAME(SIGFPE)
    SIGNAME(SIGKILL) SIGNAME(SIGUSR1) SIGNAME(SIGSEGV) SIGNAME(SIGUSR2)
    SIGNAME(SIGPIPE) SIGNAME(SIGALRM) SIGNAME(SIGTERM) SIGNAME(SIGCHLD)
    SIGNAME(SIGCONT) SIGNAME(SIGSTOP) SIGNAME(SIGTSTP) SIGNAME(SIGTTIN)
    SIGNAME(SIGTTOU) SIGNAME(SIGURG) SIGNAME(SIGXCPU) SIGNAME(SIGXFSZ)
    SIGNAME(SIGVTALRM) SIGNAME(SIGPROF) SIGNAME(SIGSYS)
#ifdef SIGSTKFLT
    SIGNAME(SIGSTKFLT)
#endif
#ifdef SIGPWR
    SIGNAME(SIGPWR)
#endif
#ifdef SIGWINCH
    SIGNAME(SIGWINCH)
#endif
#undef SIGNAME
    }
#ifdef SIGRTMIN
    if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        return "SIGRT";
#endif
    return "unknown";
}

/*
 * Route the signals tutti-run handles into sig_pipe.  SIGINT, SIGHUP,
 * SIGQUIT and SIGTERM stay ignored when tutti-run started with them ignored
 * (nohup, a background job of a non-interactive shell), as a shell would.
 */
int install_signals(void)
{
    sigprocmask(SIG_SETMASK, NULL, &orig_mask);
    sigemptyset(&handled_mask);
    for (size_t i = 0; i < NUM_SIGSLOTS; i++) {
        struct sigslot *s = &sigslots[i];
        struct sigaction act;

        if (sigaction(s->sig, NULL, &s->old) != 0)
            goto err;
        memset(&act, 0, sizeof act);
        sigemptyset(&act.sa_mask);
        if (s->sig == SIGPIPE) {
            /* write errors on closed output are handled where they occur */
            act.sa_handler = SIG_IGN;
        } else if (s->sig != SIGCHLD && s->old.sa_handler == SIG_IGN) {
            continue;
        } else {
            act.sa_handler = on_signal;
            act.sa_flags = SA_RESTART | (s->sig == SIGCHLD ? SA_NOCLDSTOP : 0);
        }
        if (sigaction(s->sig, &act, NULL) != 0)
            goto err;
        s->installed = true;
        if (act.sa_handler == on_signal)
            sigaddset(&handled_mask, s->sig);
    }
    /* tutti-run needs these even if its parent blocked them */
    sigprocmask(SIG_UNBLOCK, &handled_mask, NULL);
    return 0;

err:
    fprintf(stderr, "tutti-run: cannot set up signal handling: %s\n",
            strerror(errno));
    return -1;
}

void restore_signals(void)
{
    for (size_t i = 0; i < NUM_SIGSLOTS; i++)
        if (sigslots[i].installed)
            sigaction(sigslots[i].sig, &sigslots[i].old, NULL);
    sigprocmask(SIG_SETMASK, &orig_mask, NULL);
}
