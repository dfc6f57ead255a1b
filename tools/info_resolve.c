/*
 * tutti-info --resolve: forks one process per task, each with its own
 * context (task i of T, a job id of this run), whose threads are the
 * group's members; every member runs the collective and checks its output
 * element by element against pattern.c, the reference tutti-perf uses.
 * Members write what they saw into a shared anonymous mapping; the parent
 * prints it in rank order once every task has ended.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "info_resolve.h"
#include "pattern.h"

/* The calls every member makes, in this order (instance key = index + 1). */
enum { CALL_OUT, CALL_IN, CALL_PER_RANK, CALLS };
static const char *const call_title[CALLS] = {"out of place", "in place",
                                              "per-rank counts"};

typedef struct {
    int ran;                 /* the member started this call */
    int finished;            /* ... and wrote what it found */
    int failed;              /* the call failed, or reported a wrong size */
    char impl[64];           /* what ran it, "" if unknown */
    unsigned long long step;
    size_t checked, wrong, first_wrong;
    double got, want;        /* at first_wrong */
    char error[320];
} call_rec_t;

/* One member's account, in memory shared by every task of the run. */
typedef struct {
    int done;                /* the member reached its end */
    int rank;                /* -1: never joined */
    int task, device_index, numa_node;
    char host[64];
    char gpu[24];            /* ", GPU <PCI bus id>" or "" */
    char error[320];         /* why it never joined */
    call_rec_t calls[CALLS];
} member_rec_t;

typedef struct {
    const info_resolve_t *r;
    tutti_context_t *ctx;
    int device_index;
    member_rec_t *rec;
    const int *perm;         /* permute: rank r sends to perm[r] */
    const size_t *counts;    /* per-rank counts, as tutti_pattern_t has them */
} member_t;

static int has_per_rank(tutti_collective_t coll)
{
    return coll == TUTTI_COLL_ALLGATHER ||
           coll == TUTTI_COLL_REDUCE_SCATTER || coll == TUTTI_COLL_ALLTOALL;
}

/* Members task @p t drives: as even as can be, the first tasks one more. */
static int members_of(const info_resolve_t *r, int t)
{
    return r->group_size / r->num_tasks + (t < r->group_size % r->num_tasks);
}

static int first_member_of(const info_resolve_t *r, int t)
{
    int m = 0;
    for (int k = 0; k < t; k++)
        m += members_of(r, k);
    return m;
}

/* Per-rank counts, uneven and some zero: allgather and reduce_scatter give
 * rank r (r mod 3) x count/2 elements; alltoall's rank s sends rank d
 * ((s + d) mod 3) x count/2. */
static size_t *make_counts(const info_resolve_t *r)
{
    size_t n = (size_t)r->group_size, half = r->count / 2;
    int a2a = r->coll == TUTTI_COLL_ALLTOALL;
    size_t *c = calloc(a2a ? n * n : n, sizeof(*c));
    if (c == NULL)
        return NULL;
    for (size_t s = 0; s < n; s++) {
        if (!a2a)
            c[s] = (s % 3) * half;
        else
            for (size_t d = 0; d < n; d++)
                c[s * n + d] = ((s + d) % 3) * half;
    }
    return c;
}

static tutti_pattern_t pattern_of(const info_resolve_t *r, int per_rank,
                                  const size_t *counts, const int *perm)
{
    tutti_pattern_t p = {r->coll, r->dtype, TUTTI_OP_SUM, r->group_size, 0,
                         per_rank ? TUTTI_COUNT_PER_RANK : r->count,
                         per_rank ? counts : NULL, perm, 0, 0};
    return p;
}

/* Bytes rank @p rank holds at once for the largest of its calls. */
static size_t member_bytes(const info_resolve_t *r, int rank,
                           const size_t *counts)
{
    size_t es = tutti_dtype_size(r->dtype), most;
    tutti_pattern_t eq = pattern_of(r, 0, NULL, NULL);
    most = tutti_pattern_in_count(&eq, rank) + tutti_pattern_out_count(&eq, rank);
    if (tutti_pattern_inplace_count(&eq, rank) > most)
        most = tutti_pattern_inplace_count(&eq, rank);
    if (has_per_rank(r->coll)) {
        tutti_pattern_t pr = pattern_of(r, 1, counts, NULL);
        size_t n = tutti_pattern_in_count(&pr, rank) +
                   tutti_pattern_out_count(&pr, rank);
        most = n > most ? n : most;
    }
    return most * es;
}

/* The largest exact integer a sum must fit: the pattern's sums reach
 * 5 x members (pattern.c); 0: no limit below 2^24. */
static long exact_limit(tutti_dtype_t dtype)
{
    switch (dtype) {
    case TUTTI_INT8: return 127;
    case TUTTI_UINT8: return 255;
    case TUTTI_BFLOAT16: return 256;
    case TUTTI_FLOAT16: return 2048;
    default: return 0;
    }
}

int info_resolve_check(const info_resolve_t *r)
{
    int n = r->group_size;
    long limit = exact_limit(r->dtype);

    if (n > INFO_RESOLVE_MAX_MEMBERS) {
        fprintf(stderr, "tutti-info: --resolve with --group-size %d: expected "
                "at most %d members\n", n, INFO_RESOLVE_MAX_MEMBERS);
        return -1;
    }
    if (tutti_collective_reduces(r->coll) && limit != 0 && 5L * n > limit) {
        fprintf(stderr, "tutti-info: --resolve checks sums of up to 5 per "
                "member exactly: %d members reach %ld, more than %s holds "
                "exactly (%ld); use at most %ld members or a wider --dtype\n",
                n, 5L * n, tutti_dtype_name(r->dtype), limit, limit / 5);
        return -1;
    }
    /* Bounds the sums below as well. */
    if (r->count > INFO_RESOLVE_MAX_BYTES) {
        fprintf(stderr, "tutti-info: --resolve of %zu elements per rank: "
                "expected buffers of at most %zu bytes in all; use a smaller "
                "--size\n", r->count, INFO_RESOLVE_MAX_BYTES);
        return -1;
    }
    size_t *counts = has_per_rank(r->coll) ? make_counts(r) : NULL;
    size_t total = 0;
    if (has_per_rank(r->coll) && counts == NULL) {
        fprintf(stderr, "tutti-info: cannot allocate the per-rank counts\n");
        return -1;
    }
    for (int rank = 0; rank < n; rank++)
        total += member_bytes(r, rank, counts);
    free(counts);
    if (total > INFO_RESOLVE_MAX_BYTES) {
        fprintf(stderr, "tutti-info: --resolve of %s with %zu elements per "
                "rank in a group of %d needs %zu bytes of buffers: expected "
                "at most %zu; use a smaller --size or --group-size\n",
                tutti_collective_name(r->coll), r->count, n, total,
                INFO_RESOLVE_MAX_BYTES);
        return -1;
    }
    return 0;
}

static char *alloc_bytes(size_t bytes)
{
    size_t cap = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, cap ? cap : 64);
}

/* Instance parameters of call @p which for rank @p rank. */
static void params_of(const member_t *m, int which, const tutti_pattern_t *pat,
                      int rank, tutti_instance_params_t *ip)
{
    int n = m->r->group_size;
    tutti_instance_params_init(ip);
    ip->instance_key = (uint64_t)which + 1;
    ip->collective = pat->coll;
    ip->dtype = pat->dtype;
    ip->count = pat->count;
    ip->op = pat->op;
    ip->root = pat->root;
    ip->permutation = m->perm;
    if (which != CALL_PER_RANK)
        return;
    switch (pat->coll) {
    case TUTTI_COLL_ALLGATHER:
        ip->send_count = m->counts[rank];
        ip->recv_capacity = tutti_pattern_out_count(pat, rank);
        break;
    case TUTTI_COLL_REDUCE_SCATTER:
        ip->counts = m->counts;
        break;
    default: /* alltoall: this rank's row */
        ip->counts = m->counts + (size_t)rank * (size_t)n;
        ip->recv_capacity = tutti_pattern_out_count(pat, rank);
        break;
    }
}

/* Runs call @p which once and checks every element of the output. */
static void run_call(member_t *m, tutti_group_t *g, int which,
                     const tutti_pattern_t *pat)
{
    call_rec_t *c = &m->rec->calls[which];
    int rank = m->rec->rank, inplace = which == CALL_IN;
    size_t es = tutti_dtype_size(pat->dtype);
    size_t out_n = tutti_pattern_out_count(pat, rank);
    size_t recv_n = inplace ? tutti_pattern_inplace_count(pat, rank) : out_n;
    char *recv = alloc_bytes(recv_n * es);
    char *send = inplace ? recv : alloc_bytes(tutti_pattern_in_count(pat, rank) * es);
    tutti_instance_params_t ip;
    tutti_request_t *req;
    tutti_request_info_t info;
    tutti_status_t st;

    c->ran = 1;
    if (recv == NULL || send == NULL) {
        /* The others wait for this member until the timeout, then fail
         * naming it. */
        c->failed = 1;
        snprintf(c->error, sizeof(c->error), "cannot allocate %zu bytes of "
                 "buffers", (recv_n + tutti_pattern_in_count(pat, rank)) * es);
        goto out;
    }
    /* A value no result holds, so an element left unwritten counts wrong. */
    memset(recv, 0xa5, recv_n * es);
    tutti_pattern_fill(pat, rank,
                       inplace ? recv + tutti_pattern_in_offset(pat, rank) * es
                               : send);
    params_of(m, which, pat, rank, &ip);
    if ((st = tutti_execute(g, &ip, send, recv, &req)) == TUTTI_OK) {
        st = tutti_request_wait(req);
        tutti_request_info(req, &info);
        snprintf(c->impl, sizeof(c->impl), "%s", info.algorithm);
        c->step = (unsigned long long)info.step;
        if (st == TUTTI_OK && which == CALL_PER_RANK &&
            info.recv_total != out_n) {
            c->failed = 1;
            snprintf(c->error, sizeof(c->error), "request info gives "
                     "recv_total %zu: expected %zu", info.recv_total, out_n);
        }
        tutti_request_free(req);
    }
    if (st != TUTTI_OK) {
        c->failed = 1;
        snprintf(c->error, sizeof(c->error), "%s: %s", tutti_strerror(st),
                 tutti_last_error());
        goto out;
    }
    char *res = recv + (inplace ? tutti_pattern_out_offset(pat, rank) : 0) * es;
    c->checked = out_n;
    c->wrong = tutti_pattern_check(pat, rank, res, &c->first_wrong);
    if (c->wrong != 0) {
        c->got = tutti_pattern_get(res, pat->dtype, c->first_wrong);
        c->want = tutti_pattern_expected(pat, rank, c->first_wrong);
    }
out:
    c->finished = 1;
    if (send != recv)
        free(send);
    free(recv);
}

/* One member: join, make every call, leave. */
static void *member_main(void *arg)
{
    member_t *m = arg;
    const info_resolve_t *r = m->r;
    member_rec_t *rec = m->rec;
    tutti_group_params_t gp;
    tutti_group_t *g;
    tutti_locality_t loc;
    tutti_status_t st;

    tutti_group_params_init(&gp);
    gp.group_key = 0x696e666fULL; /* "info" */
    gp.group_size = r->group_size;
    gp.device_index = m->device_index;
    gp.timeout = r->timeout;
    if ((st = tutti_group_join(m->ctx, &gp, &g)) != TUTTI_OK) {
        snprintf(rec->error, sizeof(rec->error), "joining the group: %s: %s",
                 tutti_strerror(st), tutti_last_error());
        rec->done = 1;
        return NULL;
    }
    rec->rank = tutti_group_rank(g);
    if (tutti_group_locality(g, rec->rank, &loc) == TUTTI_OK) {
        const char *host = tutti_group_host(g, loc.host);
        rec->task = loc.task;
        rec->device_index = loc.device_index;
        rec->numa_node = loc.numa_node;
        snprintf(rec->host, sizeof(rec->host), "%s", host ? host : "?");
    }
    const char *bus = tutti_group_pci_bus_id(g, rec->rank);
    if (bus != NULL && bus[0] != '\0')
        snprintf(rec->gpu, sizeof(rec->gpu), ", GPU %s", bus);
    tutti_pattern_t eq = pattern_of(r, 0, NULL, m->perm);
    run_call(m, g, CALL_OUT, &eq);
    run_call(m, g, CALL_IN, &eq);
    if (has_per_rank(r->coll)) {
        tutti_pattern_t pr = pattern_of(r, 1, m->counts, m->perm);
        run_call(m, g, CALL_PER_RANK, &pr);
    }
    tutti_group_leave(g);
    rec->done = 1;
    return NULL;
}

/* Task @p task's process: its context, one thread per member it drives.
 * Returns the process's exit status. */
static int run_task(const info_resolve_t *r, int task, const char *job,
                    member_rec_t *recs, const int *perm, const size_t *counts)
{
    tutti_context_params_t cp = *r->cp;
    tutti_context_t *ctx;
    int k = members_of(r, task), first = first_member_of(r, task), rc = 0;
    member_t m[INFO_RESOLVE_MAX_MEMBERS];
    pthread_t th[INFO_RESOLVE_MAX_MEMBERS];

    cp.task = task;
    cp.num_tasks = r->num_tasks;
    cp.job_id = job;
    tutti_status_t st = tutti_context_create(&cp, &ctx);
    if (st != TUTTI_OK) {
        for (int i = 0; i < k; i++) {
            snprintf(recs[first + i].error, sizeof(recs[first + i].error),
                     "creating task %d's context: %s: %s", task,
                     tutti_strerror(st), tutti_last_error());
            recs[first + i].done = 1;
        }
        return 1;
    }
    for (int i = 0; i < k; i++) {
        m[i] = (member_t){r, ctx, i, &recs[first + i], perm, counts};
        if (pthread_create(&th[i], NULL, member_main, &m[i]) != 0) {
            /* The members started already time out waiting for it. */
            snprintf(recs[first + i].error, sizeof(recs[first + i].error),
                     "task %d cannot start a thread for device %d", task, i);
            recs[first + i].done = 1;
            k = i;
            rc = 1;
        }
    }
    for (int i = 0; i < k; i++)
        pthread_join(th[i], NULL);
    tutti_context_destroy(ctx);
    return rc;
}

/* A random TUTTI_JOB_SECRET for the run's tasks, for the tcp transport
 * where it is listed, unless the environment gives a secret already. */
static void set_secret(void)
{
    unsigned char b[32];
    char hex[65];
    int fd;

    if (getenv("TUTTI_JOB_SECRET") != NULL ||
        getenv("TUTTI_SECRET_FILE") != NULL)
        return;
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* tcp, if listed, then says that no secret is set */
    if (read(fd, b, sizeof(b)) == (ssize_t)sizeof(b)) {
        for (size_t i = 0; i < sizeof(b); i++)
            snprintf(hex + 2 * i, 3, "%02x", b[i]);
        setenv("TUTTI_JOB_SECRET", hex, 1);
    }
    close(fd);
}

/* Removes what a task of job @p job killed in set-up may leave behind:
 * shared-memory segments /dev/shm/tutti-<job>-... and the tcp rendezvous
 * file.  Returns the number of segments removed. */
static int remove_leftovers(const char *job)
{
    char prefix[96], name[NAME_MAX + 2];
    size_t plen = (size_t)snprintf(prefix, sizeof(prefix), "tutti-%s-", job);
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int removed = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, plen) != 0)
            continue;
        snprintf(name, sizeof(name), "/%s", e->d_name);
        removed += shm_unlink(name) == 0;
    }
    if (d != NULL)
        closedir(d);
    snprintf(name, sizeof(name), "/tmp/tutti-rdv-%s", job);
    unlink(name);
    return removed;
}

static int by_rank(const void *a, const void *b)
{
    const member_rec_t *x = a, *y = b;
    /* Members that never joined go last, in member order (stable enough:
     * their ranks are all -1 and qsort may reorder them; they say which
     * task and device they are). */
    int rx = x->rank < 0 ? INT_MAX : x->rank, ry = y->rank < 0 ? INT_MAX : y->rank;
    return (rx > ry) - (rx < ry);
}

/* What the per-rank call gives each rank. */
static void per_rank_doc(const info_resolve_t *r, char *buf, size_t len)
{
    size_t half = r->count / 2;
    if (r->coll == TUTTI_COLL_ALLTOALL)
        snprintf(buf, len, "rank s sends rank d ((s + d) mod 3) x %zu "
                 "elements", half);
    else if (r->coll == TUTTI_COLL_REDUCE_SCATTER)
        snprintf(buf, len, "rank r's block holds (r mod 3) x %zu elements",
                 half);
    else
        snprintf(buf, len, "rank r gives (r mod 3) x %zu elements", half);
}

static void print_header(const info_resolve_t *r, const char *job)
{
    int lo = members_of(r, r->num_tasks - 1), hi = members_of(r, 0);
    char each[48];

    if (lo == hi)
        snprintf(each, sizeof(each), "%d member%s each", hi,
                 hi == 1 ? "" : "s");
    else
        snprintf(each, sizeof(each), "%d or %d members each", hi, lo);
    printf("resolving %s (%s%s%s, %zu bytes: %zu elements per rank) in a "
           "group of %d members over %d task%s (%s), job %s:\n",
           tutti_collective_name(r->coll), tutti_dtype_name(r->dtype),
           tutti_collective_reduces(r->coll) ? ", sum" : "",
           tutti_collective_rooted(r->coll) ? ", root 0" : "",
           r->count * tutti_dtype_size(r->dtype), r->count, r->group_size,
           r->num_tasks, r->num_tasks == 1 ? "" : "s", each, job);
}

/* Prints every rank's line for every call; returns 0 if all went right. */
static int report(const info_resolve_t *r, member_rec_t *recs)
{
    int n = r->group_size, failed = 0, calls = 0;
    size_t checked = 0, wrong = 0;
    char doc[128];

    qsort(recs, (size_t)n, sizeof(*recs), by_rank);
    for (int i = 0; i < n; i++) {
        const member_rec_t *m = &recs[i];
        if (m->rank < 0) {
            printf("  task %d cpu:%d: %s\n", m->task, m->device_index,
                   m->error[0] ? m->error : "no report");
            failed++;
        }
    }
    for (int w = 0; w < CALLS; w++) {
        int any = 0;
        for (int i = 0; i < n; i++)
            any |= recs[i].calls[w].ran;
        if (!any)
            continue;
        if (w == CALL_PER_RANK) {
            per_rank_doc(r, doc, sizeof(doc));
            printf("%s (instance %d, count = TUTTI_COUNT_PER_RANK; %s):\n",
                   call_title[w], w + 1, doc);
        } else {
            printf("%s (instance %d):\n", call_title[w], w + 1);
        }
        for (int i = 0; i < n; i++) {
            const member_rec_t *m = &recs[i];
            const call_rec_t *c = &m->calls[w];
            if (m->rank < 0)
                continue;
            calls++;
            printf("  rank %d: task %d cpu:%d, host %s, NUMA node %d%s: ",
                   m->rank, m->task, m->device_index, m->host, m->numa_node,
                   m->gpu);
            if (!c->finished) {
                printf("no report (%s)\n", m->done ? "the call was not made"
                       : c->ran ? "its task ended during the call"
                                : "its task ended before the call");
                failed++;
                continue;
            }
            if (c->impl[0] != '\0')
                printf("ran %s (step %llu): ", c->impl, c->step);
            if (c->failed && c->checked == 0) {
                printf("failed: %s\n", c->error);
                failed++;
                continue;
            }
            printf("%zu checked, %zu wrong", c->checked, c->wrong);
            if (c->wrong != 0)
                printf(" (first at element %zu: %g, expected %g)",
                       c->first_wrong, c->got, c->want);
            printf("%s%s\n", c->failed ? "; " : "", c->failed ? c->error : "");
            failed += c->failed;
            checked += c->checked;
            wrong += c->wrong;
        }
    }
    printf("checked %zu elements in %d executions (ranks x calls): %zu "
           "wrong, %d failed\n", checked, calls, wrong, failed);
    return failed != 0 || wrong != 0;
}

int info_resolve(const info_resolve_t *r)
{
    int n = r->group_size, T = r->num_tasks, rc = 0;
    size_t maplen = (size_t)n * sizeof(member_rec_t);
    char job[48];
    pid_t pids[INFO_RESOLVE_MAX_MEMBERS];
    int *perm = malloc((size_t)n * sizeof(*perm));
    size_t *counts = has_per_rank(r->coll) ? make_counts(r) : NULL;
    member_rec_t *recs = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (perm == NULL || (has_per_rank(r->coll) && counts == NULL) ||
        recs == MAP_FAILED) {
        fprintf(stderr, "tutti-info: --resolve cannot allocate its "
                "records: %s\n", strerror(errno));
        free(perm);
        free(counts);
        if (recs != MAP_FAILED)
            munmap(recs, maplen);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        perm[i] = (i + 1) % n;
        recs[i].rank = -1;
    }
    for (int t = 0; t < T; t++)
        for (int i = 0; i < members_of(r, t); i++) {
            recs[first_member_of(r, t) + i].task = t;
            recs[first_member_of(r, t) + i].device_index = i;
        }
    snprintf(job, sizeof(job), "info-%ld", (long)getpid());
    set_secret();
    print_header(r, job);
    fflush(stdout);
    fflush(stderr);
    for (int t = 0; t < T; t++) {
        pids[t] = fork();
        if (pids[t] == 0)
            _exit(run_task(r, t, job, recs, perm, counts));
        if (pids[t] < 0) {
            /* The tasks started time out waiting for this one. */
            fprintf(stderr, "tutti-info: cannot start task %d: %s\n", t,
                    strerror(errno));
            rc = 1;
        }
    }
    /* Reaped as they end, in any order: a task that died stays a zombie
     * until then, and its peers would take it for alive. */
    for (;;) {
        int status, t = 0;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0)
            break; /* ECHILD: every task has ended */
        while (t < T && pids[t] != pid)
            t++;
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "tutti-info: task %d (pid %ld) ended by signal "
                    "%d (%s)\n", t, (long)pid, WTERMSIG(status),
                    strsignal(WTERMSIG(status)));
            rc = 1;
        } else if (WEXITSTATUS(status) != 0) {
            rc = 1;
        }
    }
    int left = remove_leftovers(job);
    if (left > 0)
        fprintf(stderr, "tutti-info: removed %d shared-memory segment%s left "
                "by job %s\n", left, left == 1 ? "" : "s", job);
    rc |= report(r, recs);
    munmap(recs, maplen);
    free(perm);
    free(counts);
    return rc;
}
