/*
 * tutti-run's output: with --tag-output every line a rank writes reaches
 * tutti-run's stdout or stderr through a pipe, prefixed with "[RANK] ".
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define LINE_MAX_BYTES 65536  /* longer lines are split (--tag-output) */

struct outbuf out_stdout = { .fd = STDOUT_FILENO };
struct outbuf out_stderr = { .fd = STDERR_FILENO };

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);

        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* someone made our output non-blocking */
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                poll(&pfd, 1, -1);
                continue;
            }
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void out_flush(struct outbuf *o)
{
    if (o->len > 0 && !o->broken && write_all(o->fd, o->data, o->len) != 0)
        o->broken = true;
    o->len = 0;
}

static void out_put(struct outbuf *o, const char *p, size_t n)
{
    while (n > 0) {
        size_t k = sizeof o->data - o->len;

        if (k == 0) {
            out_flush(o);
            continue;
        }
        if (k > n)
            k = n;
        memcpy(o->data + o->len, p, k);
        o->len += k;
        p += k;
        n -= k;
    }
}

/*
 * Forward the pending line plus data[0..n) as one tagged line.  A newline
 * is added when missing (end of output, over-long line), so that every line
 * of the output starts with its tag.
 */
static void stream_emit(struct stream *s, const char *data, size_t n)
{
    char prefix[16];
    int k = snprintf(prefix, sizeof prefix, "[%d] ", s->rank);

    out_put(s->out, prefix, (size_t)k);
    out_put(s->out, s->line, s->len);
    out_put(s->out, data, n);
    if (n == 0 || data[n - 1] != '\n')
        out_put(s->out, "\n", 1);
    s->len = 0;
}

/*
 * Add data[0..n), which holds no newline, to the stream's current line.
 * A line longer than LINE_MAX_BYTES is forwarded in pieces of that size.
 */
static void stream_keep(struct stream *s, const char *data, size_t n)
{
    while (n > 0) {
        size_t k;

        if (s->len == LINE_MAX_BYTES)
            stream_emit(s, "", 0); /* full, and more is coming */
        k = LINE_MAX_BYTES - s->len;
        if (k > n)
            k = n;
        if (s->len + k > s->cap) {
            size_t cap = s->cap ? s->cap : 256;
            char *p;

            while (cap < s->len + k)
                cap *= 2;
            p = realloc(s->line, cap);
            if (p == NULL) {
                stream_emit(s, data, k); /* no memory: split here */
                data += k;
                n -= k;
                continue;
            }
            s->line = p;
            s->cap = cap;
        }
        memcpy(s->line + s->len, data, k);
        s->len += k;
        data += k;
        n -= k;
    }
}

static void stream_close(struct stream *s)
{
    if (s->fd < 0)
        return;
    if (s->len > 0)
        stream_emit(s, "", 0); /* the last line had no newline */
    out_flush(s->out);
    close(s->fd);
    s->fd = -1;
}

void stream_read(struct stream *s)
{
    static char chunk[65536];
    ssize_t n = read(s->fd, chunk, sizeof chunk);
    const char *p = chunk;

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        stream_close(s);
        return;
    }
    while (n > 0) {
        const char *nl = memchr(p, '\n', (size_t)n);
        size_t k;

        if (nl == NULL) {
            stream_keep(s, p, (size_t)n);
            break;
        }
        k = (size_t)(nl - p);
        stream_keep(s, p, k);
        stream_emit(s, "\n", 1);
        p += k + 1;
        n -= (ssize_t)k + 1;
    }
    out_flush(s->out);
}

/* Fill job->pfds with the open streams after @first entries. */
int collect_streams(struct job *job, int first)
{
    int n = first;

    for (int i = 0; i < job->started; i++) {
        struct stream *ss[2] = { &job->ranks[i].out, &job->ranks[i].err };

        for (int k = 0; k < 2; k++) {
            if (ss[k]->fd < 0)
                continue;
            job->pfds[n].fd = ss[k]->fd;
            job->pfds[n].events = POLLIN;
            job->pfds[n].revents = 0;
            job->pstreams[n] = ss[k];
            n++;
        }
    }
    return n;
}

/* After the last rank: forward what is left in the pipes, then close. */
void drain_streams(struct job *job)
{
    /* bounded, in case a process that left the rank's group keeps writing */
    double until = now_s() + 1.0;

    for (;;) {
        int n = collect_streams(job, 0);

        if (n == 0 || now_s() > until || poll(job->pfds, (nfds_t)n, 0) <= 0)
            break;
        for (int i = 0; i < n; i++)
            if (job->pfds[i].revents != 0)
                stream_read(job->pstreams[i]);
    }
    for (int i = 0; i < job->started; i++) {
        stream_close(&job->ranks[i].out);
        stream_close(&job->ranks[i].err);
        free(job->ranks[i].out.line);
        free(job->ranks[i].err.line);
    }
}
