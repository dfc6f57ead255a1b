/*
 * tutti-run's command line: the options, their checks and messages, the
 * job id and secret the ranks get, and whether PROGRAM can be executed.
 */
#define _GNU_SOURCE /* strchrnul */

#ifdef HAVE_CONFIG_H
#include "tutti-build.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "../tool_util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define MAX_TIMEOUT_S 1e9

static const char usage_text[] =
    "Usage: tutti-run [OPTIONS] -n N PROGRAM [ARGS...]\n"
    "Start N processes (ranks) of PROGRAM on this host and wait for them.\n"
    "\n"
    "Options:\n"
    "  -n, --np N             number of ranks to start, 1 to 1024 (required)\n"
    "      --timeout SECONDS  stop the job after SECONDS (fractions allowed)\n"
    "                         and exit with status 124\n"
    "      --grace SECONDS    when a rank fails, give the others SECONDS to\n"
    "                         report and exit by themselves before they are\n"
    "                         stopped (default 0: stop them at once)\n"
    "      --tag-output       prefix every line a rank writes with \"[RANK] \"\n"
    "      --bind-to core|none\n"
    "                         core: rank i runs only on the i-th CPU\n"
    "                         tutti-run may run on; none: the ranks run\n"
    "                         where the system puts them.  Default: core\n"
    "                         when N is at most the number of those CPUs,\n"
    "                         else none (unpinned, small-message latency\n"
    "                         varied 50x from run to run)\n"
    "      --report-bindings  print each rank's CPUs on stderr before the\n"
    "                         ranks start\n"
    "      --job-id ID        job id for the ranks: 1 to 40 characters from\n"
    "                         A-Z a-z 0-9 _ - (default: generated)\n"
    "  -h, --help             print this help and exit\n"
    "  -V, --version          print the version and exit\n"
    "\n"
    "Options end at PROGRAM: everything after it is passed to PROGRAM.\n"
    "PROGRAM is searched for in PATH unless it contains a '/'.\n"
    "\n"
    "Environment of each rank:\n"
    "  TUTTI_RANK        its rank, 0 to N-1\n"
    "  TUTTI_SIZE        N\n"
    "  TUTTI_LOCAL_RANK  its rank on this host (the same as TUTTI_RANK)\n"
    "  TUTTI_LOCAL_SIZE  ranks on this host (the same as TUTTI_SIZE)\n"
    "  TUTTI_JOB_ID      the job id\n"
    "  TUTTI_JOB_SECRET  a random secret made for this job (the tcp\n"
    "                    transport refuses connections without it)\n"
    "  TUTTI_BIND        core or none: whether --bind-to pinned the rank\n"
    "\n"
    "When a rank exits with a non-zero status or is killed by a signal, the\n"
    "other ranks get SIGTERM and, 2 seconds later, SIGKILL.  SIGINT, SIGTERM,\n"
    "SIGHUP and SIGQUIT sent to tutti-run are passed on to the ranks.\n"
    "Afterwards /dev/shm/tutti-ID-* segments of the job and its tcp\n"
    "rendezvous file rdv-ID (in $XDG_RUNTIME_DIR/tutti, else\n"
    "${TMPDIR:-/tmp}/tutti-UID) are removed, the file even when tutti-run\n"
    "is killed.\n"
    "\n"
    "Exit status: 0 if every rank succeeded; else the status of the first\n"
    "rank that failed (128+N if signal N killed it); 124 on timeout; 125 if\n"
    "tutti-run itself failed; 127 if PROGRAM cannot be executed.\n";

/* --timeout and --grace: a number of seconds, or a message naming the
 * option. */
static bool seconds_option(const char *name, const char *arg, double *out)
{
    if (tool_parse_seconds(arg, MAX_TIMEOUT_S, out))
        return true;
    fprintf(stderr, "tutti-run: --%s expects a number of seconds greater "
            "than 0, got '%s'\n", name, arg);
    return false;
}

static bool valid_job_id(const char *s)
{
    size_t n = strlen(s);

    return n >= 1 && n <= MAX_JOB_ID &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_-") == n;
}

static void make_job_id(char *buf, size_t size)
{
    uint32_t r = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        if (read(fd, &r, sizeof r) != (ssize_t)sizeof r)
            r = 0;
        close(fd);
    }
    if (r == 0) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        r = (uint32_t)ts.tv_nsec ^ ((uint32_t)ts.tv_sec * 2654435761u);
    }
    snprintf(buf, size, "%jx-%08" PRIx32, (uintmax_t)getpid(), r);
}

/* A fresh secret for the job's connections (the tcp transport refuses
 * connections without it); 0, or -1 when /dev/urandom gives none. */
static int make_secret(char *buf, size_t size)
{
    unsigned char r[32];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, r, sizeof r) : -1;

    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)sizeof r || size < 2 * sizeof r + 1)
        return -1;
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(buf + 2 * i, 3, "%02x", r[i]);
    return 0;
}

enum {
    OPT_TIMEOUT = 256, OPT_TAG_OUTPUT, OPT_JOB_ID, OPT_GRACE, OPT_BIND_TO,
    OPT_REPORT_BINDINGS
};

/* getopt_long returned '?' for argv[optind - 1]. */
static void report_bad_option(char **argv)
{
    const char *arg = argv[optind - 1];
    int namelen = (int)strcspn(arg, "=");

    /* optopt: 0 for an unknown long option; the option's value for a flag
     * given "=VALUE"; else the unknown short option */
    if (optopt == 0)
        fprintf(stderr, "tutti-run: unknown option '%.*s'; see tutti-run "
                "--help\n", namelen, arg);
    else if (optopt >= 256 || optopt == 'h' || optopt == 'V')
        fprintf(stderr, "tutti-run: option '%.*s' takes no argument; see "
                "tutti-run --help\n", namelen, arg);
    else
        fprintf(stderr, "tutti-run: unknown option '-%c'; see tutti-run "
                "--help\n", optopt);
}

/* Returns -1 to go on, or the status tutti-run should exit with. */
int parse_args(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        { "np", required_argument, NULL, 'n' },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "grace", required_argument, NULL, OPT_GRACE },
        { "tag-output", no_argument, NULL, OPT_TAG_OUTPUT },
        { "job-id", required_argument, NULL, OPT_JOB_ID },
        { "bind-to", required_argument, NULL, OPT_BIND_TO },
        { "report-bindings", no_argument, NULL, OPT_REPORT_BINDINGS },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    const char *job_id = NULL;
    int c;

    memset(opt, 0, sizeof *opt);
    opterr = 0;
    /* '+': stop at PROGRAM so its options pass through; ':': report a
     * missing argument apart from an unknown option */
    while ((c = getopt_long(argc, argv, "+:n:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!tool_parse_count(optarg, MAX_RANKS, &opt->np)) {
                fprintf(stderr, "tutti-run: -n expects a number between 1 "
                        "and %d, got '%s'\n", MAX_RANKS, optarg);
                return EXIT_LAUNCHER;
            }
            break;
        case OPT_TIMEOUT:
            if (!seconds_option("timeout", optarg, &opt->timeout))
                return EXIT_LAUNCHER;
            break;
        case OPT_GRACE:
            if (!seconds_option("grace", optarg, &opt->grace))
                return EXIT_LAUNCHER;
            break;
        case OPT_TAG_OUTPUT:
            opt->tag_output = true;
            break;
        case OPT_BIND_TO:
            if (strcmp(optarg, "core") == 0) {
                opt->bind_to = BIND_CORE;
            } else if (strcmp(optarg, "none") == 0) {
                opt->bind_to = BIND_NONE;
            } else {
                fprintf(stderr, "tutti-run: --bind-to expects core or none, "
                        "got '%s'\n", optarg);
                return EXIT_LAUNCHER;
            }
            break;
        case OPT_REPORT_BINDINGS:
            opt->report_bindings = true;
            break;
        case OPT_JOB_ID:
            if (!valid_job_id(optarg)) {
                fprintf(stderr, "tutti-run: --job-id expects 1 to %d "
                        "characters from A-Z a-z 0-9 _ -, got '%s'\n",
                        MAX_JOB_ID, optarg);
                return EXIT_LAUNCHER;
            }
            job_id = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return fflush(stdout) == 0 ? 0 : EXIT_LAUNCHER;
        case 'V':
            puts("tutti-run " PACKAGE_VERSION);
            return fflush(stdout) == 0 ? 0 : EXIT_LAUNCHER;
        case ':':
            fprintf(stderr, "tutti-run: option '%s' needs an argument; see "
                    "tutti-run --help\n", argv[optind - 1]);
            return EXIT_LAUNCHER;
        default:
            report_bad_option(argv);
            return EXIT_LAUNCHER;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "tutti-run: missing PROGRAM; see tutti-run --help\n");
        return EXIT_LAUNCHER;
    }
    if (opt->np == 0) {
        fprintf(stderr, "tutti-run: missing -n N, the number of ranks; see "
                "tutti-run --help\n");
        return EXIT_LAUNCHER;
    }
    opt->argv = argv + optind;
    if (job_id != NULL)
        snprintf(opt->job_id, sizeof opt->job_id, "%s", job_id);
    else
        make_job_id(opt->job_id, sizeof opt->job_id);
    if (make_secret(opt->secret, sizeof opt->secret) != 0) {
        fprintf(stderr, "tutti-run: cannot read 32 bytes from /dev/urandom "
                "for TUTTI_JOB_SECRET: %s\n", strerror(errno));
        return EXIT_LAUNCHER;
    }
    return -1;
}

/*
 * Tell, before starting anything, whether PROGRAM certainly cannot be
 * executed, so that a typo gives one message instead of one per rank.
 * Returns an errno value, or 0 when execvp may succeed (the ranks then
 * report any remaining failure themselves).
 */
int check_program(const char *prog)
{
    const char *path = getenv("PATH");
    struct stat st;
    int found = ENOENT;

    if (prog[0] == '\0')
        return ENOENT;
    if (strchr(prog, '/') != NULL) {
        if (stat(prog, &st) != 0)
            return errno;
        if (S_ISDIR(st.st_mode))
            return EISDIR;
        return access(prog, X_OK) == 0 ? 0 : errno;
    }
    if (path == NULL)
        return 0; /* execvp falls back to a built-in path */
    for (const char *p = path;; p++) {
        const char *colon = strchrnul(p, ':');
        int dirlen = (int)(colon - p);
        char cand[PATH_MAX];
        int n;

        /* an empty element means the current directory */
        n = dirlen == 0 ? snprintf(cand, sizeof cand, "./%s", prog)
                        : snprintf(cand, sizeof cand, "%.*s/%s", dirlen, p, prog);
        if (n < 0 || (size_t)n >= sizeof cand)
            return 0; /* cannot tell; leave it to execvp */
        if (stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
            if (access(cand, X_OK) == 0)
                return 0;
            found = EACCES;
        }
        if (*colon == '\0')
            break;
        p = colon;
    }
    return found;
}
