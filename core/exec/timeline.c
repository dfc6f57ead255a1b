/* Timeline (see timeline.h): members' event buffers, the task's file, and
 * the services table that times phases and transfers. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/paths.h"
#include "exec/exec.h"
#include "exec/timeline.h"

enum { EV_JOIN, EV_RESOLVE, EV_EXEC, EV_PHASE, EV_SEND, EV_RECV };

/* One event; times in ns of tutti__timeline_now(). */
typedef struct {
    uint64_t begin, end;      /* end 0: not ended */
    uint64_t key;             /* instance key; join: the group's */
    uint64_t step;            /* execution, phase and transfer */
    uint64_t bytes;           /* execution: its input; transfer: its length;
                                 phase: bytes sent; join: the group's size */
    uint64_t bytes_in;        /* phase: bytes received */
    const char *algorithm;    /* execution, resolution (lives with the
                                 group), phase (its name, the module's), or
                                 NULL */
    int32_t peer;             /* transfer; join: the number of tasks */
    uint32_t tag;
    tutti_status_t status;    /* TUTTI_INPROGRESS until it ended */
    int kind;                 /* EV_* */
} event_t;

/* A transfer posted and not yet seen complete. */
typedef struct {
    const tutti_xfer_t *xfer;
    const tutti_alg_exec_t *exec;
    uint64_t seq;
} open_xfer_t;

struct tutti__timeline {
    tutti__timeline_file_t *file;  /* NULL once the file closed */
    tutti__timeline_t *next;       /* the file's members */
    event_t *ev;                   /* TUTTI__TIMELINE_EVENTS */
    uint64_t base;                 /* events before ev[0]: event ev[i] has
                                      sequence number base + i + 1 */
    uint32_t count;
    uint32_t num_open;
    uint32_t pending;              /* events in ev begun and not ended */
    uint64_t dropped;              /* since the last write */
    uint64_t first_drop;           /* when the first of them came */
    uint64_t written_at;           /* the last write (or the join) */
    int tid;
    size_t track;                  /* its entry in the file's tracks */
    char name[128];                /* "rank R (task:T/cpu:I)" */
    open_xfer_t open[TUTTI__TIMELINE_OPEN];
};

/* A track name given a tid, so that two members of a task never share one
 * at a time (tutti-perf --device cuda: rank r of a cpu and of a CUDA
 * group), while a member that joins again gets its track back. */
typedef struct {
    int tid;
    int live;                      /* a member writes to it */
    int named;                     /* tracks named in the file: 0, or the
                                      member's and lanes 1 .. named - 1 */
    char name[128];
} track_t;

struct tutti__timeline_file {
    pthread_mutex_t lock;          /* everything below, and writes */
    FILE *fp;
    char path[TUTTI__TIMELINE_PATH_MAX + 16];
    int task;
    int pid;                       /* task + 1 (Perfetto keeps 0) */
    long end_at;                   /* where the file's end begins */
    int any;                       /* an event written: commas before more */
    int failed;                    /* a write failed (said once) */
    uint64_t events, dropped;
    tutti__timeline_t *members;
    track_t *tracks;
    size_t num_tracks;
};

/* Lanes of one member when its events are written, and nesting depth. */
#define LANES 32
#define DEPTH 8
#define LANE_TID 1000000
#define RANK_TID 10000

static void write_member(tutti__timeline_file_t *f, tutti__timeline_t *t);

uint64_t tutti__timeline_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- recording ----------------------------------------------------------- */

/* A new event of @p kind from @p begin, or NULL (counted) when the buffer
 * is full; its sequence number in *seq_out (0 when dropped). */
static event_t *reserve(tutti__timeline_t *t, int kind, uint64_t begin,
                        uint64_t *seq_out)
{
    *seq_out = 0;
    if (t->count == TUTTI__TIMELINE_EVENTS) {
        if (t->dropped++ == 0)
            t->first_drop = begin;
        return NULL;
    }
    event_t *e = &t->ev[t->count++];
    *e = (event_t){.begin = begin, .status = TUTTI_INPROGRESS, .peer = -1,
                   .kind = kind};
    *seq_out = t->base + t->count;
    t->pending++;
    return e;
}

/* The event of @p seq, or NULL: dropped, or written since. */
static event_t *find(tutti__timeline_t *t, uint64_t seq)
{
    if (seq <= t->base || seq > t->base + t->count)
        return NULL;
    return &t->ev[seq - t->base - 1];
}

/* Ends event @p seq (if still held and open) at @p now with @p status. */
static event_t *finish(tutti__timeline_t *t, uint64_t seq, uint64_t now,
                       tutti_status_t status)
{
    event_t *e = find(t, seq);
    if (e == NULL || e->end != 0)
        return NULL;
    e->end = now > e->begin ? now : e->begin + 1; /* never 0 */
    e->status = status;
    t->pending--;
    return e;
}

void tutti__timeline_join(tutti__timeline_t *t, uint64_t begin, int size,
                          int num_tasks)
{
    uint64_t seq;
    event_t *e = reserve(t, EV_JOIN, begin, &seq);
    t->written_at = begin;
    if (e == NULL)
        return;
    e->bytes = (uint64_t)size;
    e->peer = num_tasks;
    finish(t, seq, tutti__timeline_now(), TUTTI_OK);
}

uint64_t tutti__timeline_resolve_begin(tutti__timeline_t *t,
                                       uint64_t instance_key)
{
    uint64_t seq;
    event_t *e = reserve(t, EV_RESOLVE, tutti__timeline_now(), &seq);
    if (e != NULL)
        e->key = instance_key;
    return seq;
}

void tutti__timeline_resolve_end(tutti__timeline_t *t, uint64_t seq,
                                 tutti_status_t status,
                                 const char *algorithm)
{
    event_t *e = finish(t, seq, tutti__timeline_now(), status);
    if (e != NULL)
        e->algorithm = algorithm;
}

uint64_t tutti__timeline_exec_begin(tutti__timeline_t *t, tutti_request_t *r)
{
    uint64_t seq;
    event_t *e = reserve(t, EV_EXEC, tutti__timeline_now(), &seq);
    r->tl_phase = 0;
    if (e == NULL)
        return 0;
    e->bytes = r->bytes; /* as checked at issue */
    e->key = r->inst->key;
    e->step = r->exec.step;
    e->algorithm = r->inst->algorithm;
    return seq;
}

/* Ends open transfer @p i at @p now with @p status and forgets it. */
static void close_open(tutti__timeline_t *t, uint32_t i, uint64_t now,
                       tutti_status_t status)
{
    finish(t, t->open[i].seq, now, status);
    t->open[i] = t->open[--t->num_open];
}

/* Written out between executions, with nothing in flight: every second,
 * or once half the buffer is used, so a long job drops nothing and a task
 * that dies keeps what it did up to about a second before. */
#define WRITE_EVERY_NS 1000000000u

void tutti__timeline_exec_end(tutti__timeline_t *t, tutti_request_t *r,
                              tutti_status_t status)
{
    uint64_t now = tutti__timeline_now();
    finish(t, r->tl_phase, now, TUTTI_OK);
    finish(t, r->tl_seq, now, status);
    r->tl_phase = 0;
    r->tl_seq = 0;
    /* An algorithm tests every transfer to completion before it ends:
     * what is left failed with the execution, or was never tested. */
    for (uint32_t i = 0; i < t->num_open;) {
        if (t->open[i].exec == &r->exec)
            close_open(t, i, now, TUTTI_INPROGRESS);
        else
            i++;
    }
    if (t->pending == 0 && t->file != NULL &&
        (t->count >= TUTTI__TIMELINE_EVENTS / 2 || t->dropped > 0 ||
         (t->count > 0 && now - t->written_at >= WRITE_EVERY_NS)))
        tutti__timeline_flush(t);
}

/* The request whose execution @p exec is (by construction: only
 * executions of traced members get these services). */
static tutti_request_t *request_of(tutti_alg_exec_t *exec)
{
    return (tutti_request_t *)((char *)exec -
                               offsetof(tutti_request_t, exec));
}

static void xfer_posted(tutti_alg_exec_t *exec, int kind, int peer,
                        uint32_t tag, size_t len, tutti_xfer_t *xfer,
                        uint64_t begin)
{
    tutti_request_t *r = request_of(exec);
    tutti__timeline_t *t = r->group->tl;
    event_t *phase = find(t, r->tl_phase);
    uint64_t seq;
    if (r->tl_seq == 0) /* its execution was dropped: so is it */
        return;
    if (phase != NULL) {
        if (kind == EV_SEND)
            phase->bytes += len;
        else
            phase->bytes_in += len;
    }
    if (t->num_open == TUTTI__TIMELINE_OPEN) {
        if (t->dropped++ == 0)
            t->first_drop = begin;
        return;
    }
    event_t *e = reserve(t, kind, begin, &seq);
    if (e == NULL)
        return;
    e->key = exec->inst->instance_key;
    e->step = exec->step;
    e->bytes = len;
    e->peer = peer;
    e->tag = tag;
    t->open[t->num_open++] = (open_xfer_t){xfer, exec, seq};
}

static tutti_status_t traced_send(tutti_alg_exec_t *exec, int peer,
                                  uint32_t tag, const void *buf, size_t len,
                                  tutti_xfer_t *xfer)
{
    uint64_t begin = tutti__timeline_now();
    tutti_status_t st = tutti__core_ops.send(exec, peer, tag, buf, len, xfer);
    if (st == TUTTI_OK)
        xfer_posted(exec, EV_SEND, peer, tag, len, xfer, begin);
    return st;
}

static tutti_status_t traced_send_block(tutti_alg_exec_t *exec, int peer,
                                        uint32_t tag, const void *buf,
                                        size_t len, tutti_xfer_t *xfer)
{
    uint64_t begin = tutti__timeline_now();
    tutti_status_t st =
        tutti__core_ops.send_block(exec, peer, tag, buf, len, xfer);
    if (st == TUTTI_OK)
        xfer_posted(exec, EV_SEND, peer, tag, len, xfer, begin);
    return st;
}

static tutti_status_t traced_recv(tutti_alg_exec_t *exec, int peer,
                                  uint32_t tag, void *buf, size_t len,
                                  const tutti_recv_reduce_t *reduce,
                                  tutti_xfer_t *xfer)
{
    uint64_t begin = tutti__timeline_now();
    tutti_status_t st = tutti__core_ops.recv(exec, peer, tag, buf, len,
                                             reduce, xfer);
    if (st == TUTTI_OK)
        xfer_posted(exec, EV_RECV, peer, tag, len, xfer, begin);
    return st;
}

/* A transfer is complete when a test first says so; tests after that find
 * it no longer open. */
static tutti_status_t traced_test(tutti_alg_exec_t *exec, tutti_xfer_t *xfer)
{
    tutti_status_t st = tutti__core_ops.test(exec, xfer);
    if (st == TUTTI_INPROGRESS)
        return st;
    tutti__timeline_t *t = request_of(exec)->group->tl;
    for (uint32_t i = t->num_open; i-- > 0;) {
        if (t->open[i].xfer == xfer) {
            close_open(t, i, tutti__timeline_now(), st);
            break;
        }
    }
    return st;
}

/* The phase that was open ends and @p name begins (NULL: none). */
static void traced_phase(tutti_alg_exec_t *exec, const char *name)
{
    tutti_request_t *r = request_of(exec);
    tutti__timeline_t *t = r->group->tl;
    uint64_t now = tutti__timeline_now();
    finish(t, r->tl_phase, now, TUTTI_OK);
    r->tl_phase = 0;
    if (name == NULL || r->tl_seq == 0)
        return;
    event_t *e = reserve(t, EV_PHASE, now, &r->tl_phase);
    if (e == NULL)
        return;
    e->key = exec->inst->instance_key;
    e->step = exec->step;
    e->algorithm = name;
}

static tutti_core_ops_t traced_ops;
static pthread_once_t traced_once = PTHREAD_ONCE_INIT;

static void traced_init(void)
{
    traced_ops = tutti__core_ops;
    traced_ops.send = traced_send;
    traced_ops.send_block = traced_send_block;
    traced_ops.recv = traced_recv;
    traced_ops.test = traced_test;
    traced_ops.phase = traced_phase;
}

const tutti_core_ops_t *tutti__timeline_core_ops(void)
{
    pthread_once(&traced_once, traced_init);
    return &traced_ops;
}

/* ---- the file ------------------------------------------------------------ */

/* @p s as a JSON string. */
static void put_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

/* Microseconds with three decimals, exact: ts + dur is the end to the ns. */
static void put_us(FILE *fp, const char *key, uint64_t ns)
{
    fprintf(fp, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000,
            (unsigned)(ns % 1000));
}

/* A comma before every event but the file's first. */
static void begin_event(tutti__timeline_file_t *f)
{
    fputs(f->any ? ",\n" : "\n", f->fp);
    f->any = 1;
}

/* The name and place of the process (@p tid < 0) or of track @p tid. */
static void put_meta(tutti__timeline_file_t *f, int tid, const char *name,
                     int sort)
{
    const char *what = tid < 0 ? "process" : "thread";
    char id[32] = "";
    if (tid >= 0)
        snprintf(id, sizeof(id), ",\"tid\":%d", tid);
    begin_event(f);
    fprintf(f->fp, "{\"ph\":\"M\",\"pid\":%d%s,\"name\":\"%s_name\","
            "\"args\":{\"name\":", f->pid, id, what);
    put_string(f->fp, name);
    fprintf(f->fp, "}},\n{\"ph\":\"M\",\"pid\":%d%s,\"name\":\"%s_sort_"
            "index\",\"args\":{\"sort_index\":%d}}", f->pid, id, what, sort);
}

static void put_args(FILE *fp, const event_t *e)
{
    switch (e->kind) {
    case EV_JOIN:
        fprintf(fp, "\"group\":\"0x%" PRIx64 "\",\"size\":%" PRIu64
                ",\"tasks\":%d", e->key, e->bytes, (int)e->peer);
        break;
    case EV_RESOLVE:
        fprintf(fp, "\"instance\":\"0x%" PRIx64 "\"", e->key);
        if (e->algorithm != NULL && e->algorithm[0] != '\0') {
            fputs(",\"algorithm\":", fp);
            put_string(fp, e->algorithm);
        }
        break;
    case EV_EXEC:
        fprintf(fp, "\"instance\":\"0x%" PRIx64 "\",\"step\":%" PRIu64
                ",\"algorithm\":", e->key, e->step);
        put_string(fp, e->algorithm ? e->algorithm : "");
        fprintf(fp, ",\"bytes\":%" PRIu64, e->bytes);
        break;
    case EV_PHASE:
        fprintf(fp, "\"instance\":\"0x%" PRIx64 "\",\"step\":%" PRIu64
                ",\"sent\":%" PRIu64 ",\"received\":%" PRIu64, e->key,
                e->step, e->bytes, e->bytes_in);
        break;
    default:
        fprintf(fp, "\"peer\":%d,\"tag\":%" PRIu32 ",\"bytes\":%" PRIu64
                ",\"instance\":\"0x%" PRIx64 "\",\"step\":%" PRIu64,
                (int)e->peer, e->tag, e->bytes, e->key, e->step);
    }
    if (e->end == 0)
        fputs(",\"unfinished\":true", fp);
    else if (e->status == TUTTI_INPROGRESS)
        fputs(",\"status\":\"not seen complete\"", fp);
    else if (e->status != TUTTI_OK)
        fprintf(fp, ",\"status\":\"%s\"", tutti_status_name(e->status));
}

static void put_event(tutti__timeline_file_t *f, const event_t *e, int tid,
                      uint64_t end)
{
    static const char *const cats[] = {"group",    "resolution",
                                       "execution", "phase",
                                       "transfer", "transfer"};
    const char *name = e->kind == EV_JOIN      ? "join"
                       : e->kind == EV_RESOLVE ? "resolve"
                       : e->kind == EV_SEND    ? "send"
                       : e->kind == EV_RECV    ? "recv"
                       : e->algorithm && e->algorithm[0] ? e->algorithm
                       : e->kind == EV_PHASE             ? "phase"
                                                         : "execution";
    begin_event(f);
    fprintf(f->fp, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"cat\":\"%s\","
            "\"name\":", f->pid, tid, cats[e->kind]);
    put_string(f->fp, name);
    put_us(f->fp, "ts", e->begin);
    put_us(f->fp, "dur", end - e->begin);
    fputs(",\"args\":{", f->fp);
    put_args(f->fp, e);
    fputs("}}", f->fp);
}

/* The lane of [begin, end): the first whose open events it nests in (or
 * with none open), so that every lane nests as the viewers require. */
static int place(uint64_t ends[LANES][DEPTH], int depth[LANES], int *used,
                 uint64_t begin, uint64_t end)
{
    for (int l = 0; l < LANES; l++) {
        while (depth[l] > 0 && ends[l][depth[l] - 1] <= begin)
            depth[l]--;
        if (depth[l] == 0 ||
            (depth[l] < DEPTH && ends[l][depth[l] - 1] >= end)) {
            ends[l][depth[l]++] = end;
            if (l >= *used)
                *used = l + 1;
            return l;
        }
    }
    return LANES - 1; /* more at once than lanes: drawn overlapping */
}

/* The file's end, from f->end_at; the file is whole JSON after it. */
static void put_end(tutti__timeline_file_t *f)
{
    f->end_at = ftell(f->fp);
    fprintf(f->fp, "\n],\"otherData\":{\"format\":\"tutti timeline 1\","
            "\"task\":%d,\"events\":%" PRIu64 ",\"dropped\":%" PRIu64
            ",\"member_capacity\":%u}}\n", f->task, f->events, f->dropped,
            TUTTI__TIMELINE_EVENTS);
    long len = ftell(f->fp);
    if ((fflush(f->fp) != 0 || len < 0 ||
         ftruncate(fileno(f->fp), (off_t)len) != 0) && !f->failed) {
        f->failed = 1;
        tutti__log(TUTTI_LOG_WARN, "timeline", "writing %s: %s", f->path,
                   strerror(errno));
    }
}

/* Writes @p t's events, those not ended as unfinished at now, and empties
 * its buffer; the file's lock held. */
static void write_member(tutti__timeline_file_t *f, tutti__timeline_t *t)
{
    uint64_t ends[LANES][DEPTH], now = tutti__timeline_now();
    int depth[LANES] = {0}, used = 1;
    char lane[sizeof(t->name) + 24];

    track_t *track = &f->tracks[t->track];

    if (t->count == 0 && t->dropped == 0)
        return;
    fseek(f->fp, f->end_at, SEEK_SET);
    if (track->named == 0) {
        put_meta(f, t->tid, t->name, t->tid);
        track->named = 1;
    }
    for (uint32_t i = 0; i < t->count; i++) {
        const event_t *e = &t->ev[i];
        uint64_t end = e->end ? e->end : now > e->begin ? now : e->begin;
        int l = place(ends, depth, &used, e->begin, end);
        put_event(f, e, t->tid + l * LANE_TID, end);
    }
    for (int l = track->named; l < used; l++) {
        snprintf(lane, sizeof(lane), "%s lane %d", t->name, l);
        put_meta(f, t->tid + l * LANE_TID, lane, t->tid + l * LANE_TID);
        track->named = l + 1;
    }
    if (t->dropped > 0) {
        begin_event(f);
        fprintf(f->fp, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,"
                "\"cat\":\"timeline\",\"name\":\"timeline full: %" PRIu64
                " events dropped\"", f->pid, t->tid, t->dropped);
        put_us(f->fp, "ts", t->first_drop);
        fprintf(f->fp, ",\"args\":{\"dropped\":%" PRIu64 "}}", t->dropped);
    }
    f->events += t->count;
    f->dropped += t->dropped;
    put_end(f);
    t->base += t->count;
    t->count = 0;
    t->dropped = 0;
    t->num_open = 0; /* their events were written unfinished */
    t->pending = 0;
    t->written_at = now;
}

tutti_status_t tutti__timeline_open(const char *pattern, int task,
                                    tutti__timeline_file_t **file_out)
{
    tutti__timeline_file_t *f = calloc(1, sizeof(*f));
    char name[32];
    if (f == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "timeline", "no memory "
                            "for the timeline");
    char why[128];
    tutti__task_path(pattern, task, ".json", f->path, sizeof(f->path));
    if ((f->fp = tutti__task_file_open(f->path, 0, why, sizeof(why))) ==
        NULL) {
        tutti_status_t st = tutti__error(TUTTI_ERR_IO, "timeline", "cannot "
                                         "create timeline file %s (setting "
                                         "timeline '%s'): %s", f->path,
                                         pattern, why);
        free(f);
        return st;
    }
    pthread_mutex_init(&f->lock, NULL);
    f->task = task;
    f->pid = task + 1;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f->fp);
    snprintf(name, sizeof(name), "task %d", task);
    put_meta(f, -1, name, task);
    put_end(f);
    *file_out = f;
    return TUTTI_OK;
}

void tutti__timeline_close(tutti__timeline_file_t *f)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    for (tutti__timeline_t *t = f->members; t != NULL; t = t->next) {
        write_member(f, t);
        t->file = NULL;
    }
    pthread_mutex_unlock(&f->lock);
    if (fclose(f->fp) != 0 && !f->failed)
        tutti__log(TUTTI_LOG_WARN, "timeline", "closing %s: %s", f->path,
                   strerror(errno));
    pthread_mutex_destroy(&f->lock);
    free(f->tracks);
    free(f);
}

/* The track of a member named @p name: the one of that name no member
 * holds (it joins again), else a new one of tid rank + 1 (Perfetto keeps
 * tid 0), moved on by RANK_TID while another track has that tid, and
 * named after @p group too when another member holds @p name.  Its index
 * in f->tracks, or -1 without memory; the file's lock held. */
static long take_track(tutti__timeline_file_t *f, int rank, uint64_t group,
                       const char *name)
{
    int tid = rank + 1, held = 0;
    for (size_t i = 0; i < f->num_tracks; i++) {
        if (strcmp(f->tracks[i].name, name) != 0)
            continue;
        if (!f->tracks[i].live) {
            f->tracks[i].live = 1;
            return (long)i;
        }
        held = 1;
    }
    for (size_t i = 0; i < f->num_tracks; i++) {
        if (f->tracks[i].tid == tid) {
            tid += RANK_TID;
            i = (size_t)-1; /* again from the first */
        }
    }
    track_t *grown = realloc(f->tracks, (f->num_tracks + 1) * sizeof(*grown));
    if (grown == NULL)
        return -1;
    f->tracks = grown;
    track_t *k = &grown[f->num_tracks];
    *k = (track_t){.tid = tid, .live = 1};
    if (held)
        snprintf(k->name, sizeof(k->name), "%s group 0x%" PRIx64, name,
                 group);
    else
        snprintf(k->name, sizeof(k->name), "%s", name);
    return (long)f->num_tracks++;
}

tutti_status_t tutti__timeline_member(tutti__timeline_file_t *f,
                                      uint64_t group_key, int rank,
                                      const char *device,
                                      tutti__timeline_t **member_out)
{
    tutti__timeline_t *t = calloc(1, sizeof(*t));
    char name[sizeof(t->name) - 32];
    long track = -1;
    if (t != NULL)
        t->ev = malloc(TUTTI__TIMELINE_EVENTS * sizeof(event_t));
    if (t != NULL && t->ev != NULL) {
        snprintf(name, sizeof(name), "rank %d (%s)", rank, device);
        pthread_mutex_lock(&f->lock);
        if ((track = take_track(f, rank, group_key, name)) >= 0) {
            t->track = (size_t)track;
            t->tid = f->tracks[track].tid;
            snprintf(t->name, sizeof(t->name), "%s", f->tracks[track].name);
            t->file = f;
            t->next = f->members;
            f->members = t;
        }
        pthread_mutex_unlock(&f->lock);
    }
    if (track < 0) {
        if (t != NULL)
            free(t->ev);
        free(t);
        return tutti__error(TUTTI_ERR_NO_MEMORY, "timeline", "group 0x%llx "
                            "rank %d: no memory for %u timeline events",
                            (unsigned long long)group_key, rank,
                            TUTTI__TIMELINE_EVENTS);
    }
    *member_out = t;
    return TUTTI_OK;
}

void tutti__timeline_flush(tutti__timeline_t *t)
{
    tutti__timeline_file_t *f = t->file;
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    write_member(f, t);
    pthread_mutex_unlock(&f->lock);
}

void tutti__timeline_leave(tutti__timeline_t *t)
{
    if (t == NULL)
        return;
    tutti__timeline_file_t *f = t->file;
    if (f != NULL) {
        pthread_mutex_lock(&f->lock);
        write_member(f, t);
        f->tracks[t->track].live = 0;
        for (tutti__timeline_t **pp = &f->members; *pp; pp = &(*pp)->next) {
            if (*pp == t) {
                *pp = t->next;
                break;
            }
        }
        pthread_mutex_unlock(&f->lock);
    }
    free(t->ev);
    free(t);
}
