/*
 * Meeting through the application's store (store.h).  Keys: tutti/job_id
 * and tutti/secret (task 0's), tutti/host/T (task T's host name, as the
 * control plane's JOIN frames name it), and the transports' own below
 * tutti/ (tcp: tutti/tcp/rendezvous).  The secret is never logged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "job/store.h"

#define KEY_MAX 128
#define HOST_MAX 256

static void full_key(const char *key, char *buf, size_t len)
{
    snprintf(buf, len, "tutti/%s", key);
}

tutti_status_t tutti__store_set(const void *store, const char *key,
                                const void *value, size_t len)
{
    const tutti__store_t *s = store;
    char k[KEY_MAX];
    full_key(key, k, sizeof(k));
    int rc = s->user->set(s->user->user, k, value, len);
    if (rc != 0)
        return tutti__error(TUTTI_ERR_IO, "store", "the store's set of key "
                            "'%s' (%zu bytes) failed (it returned %d)", k,
                            len, rc);
    return TUTTI_OK;
}

tutti_status_t tutti__store_get(const void *store, const char *key,
                                void *buf, size_t cap, size_t *len_out,
                                double timeout)
{
    const tutti__store_t *s = store;
    char k[KEY_MAX];
    size_t len = 0;
    full_key(key, k, sizeof(k));
    int rc = s->user->get(s->user->user, k, buf, cap, &len,
                          timeout > 0 ? timeout : 0);
    if (rc == 1) /* recorded: each caller says what it waited for */
        return tutti__error_quiet(TUTTI_ERR_TIMEOUT, "key '%s' was not set "
                                  "in the store within %.1f s", k, timeout);
    if (rc != 0)
        return tutti__error(TUTTI_ERR_IO, "store", "the store's get of key "
                            "'%s' failed (it returned %d)", k, rc);
    if (len > cap)
        return tutti__error(TUTTI_ERR_PEER, "store", "key '%s' holds %zu "
                            "bytes; at most %zu expected", k, len, cap);
    *len_out = len;
    return TUTTI_OK;
}

/* A text value of at most @p cap - 1 bytes, ended, into @p buf. */
static tutti_status_t get_text(const tutti__store_t *s, const char *key,
                               char *buf, size_t cap, double deadline)
{
    size_t len = 0;
    tutti_status_t st = tutti__store_get(s, key, buf, cap - 1, &len,
                                         deadline - tutti__now());
    if (st == TUTTI_OK)
        buf[len] = '\0';
    return st;
}

static int random_hex(char *buf, size_t bytes)
{
    unsigned char r[32];
    size_t done = 0;
    if (bytes > sizeof(r))
        return -1;
    while (done < bytes) {
        ssize_t n = getrandom(r + done, bytes - done, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    for (size_t i = 0; i < bytes; i++)
        snprintf(buf + 2 * i, 3, "%02x", r[i]);
    explicit_bzero(r, sizeof(r));
    return 0;
}

/* Task 0: the job id (made where none was given) and the secret. */
static tutti_status_t publish_job(tutti__store_t *s, tutti__bootstrap_t *b)
{
    tutti_status_t st;
    if (b->job_id[0] == '\0') {
        char hex[17];
        if (random_hex(hex, 8) != 0)
            return tutti__error(TUTTI_ERR_IO, "store", "no random bytes for "
                                "a job id: %s", strerror(errno));
        snprintf(b->job_id, sizeof(b->job_id), "s%s", hex);
        b->job_source = "the store (made by task 0)";
    }
    if (random_hex(s->secret, TUTTI__STORE_SECRET / 2) != 0)
        return tutti__error(TUTTI_ERR_IO, "store", "no random bytes for the "
                            "job's secret: %s", strerror(errno));
    if ((st = tutti__store_set(s, "job_id", b->job_id,
                               strlen(b->job_id))) != TUTTI_OK)
        return st;
    return tutti__store_set(s, "secret", s->secret, TUTTI__STORE_SECRET);
}

/* Another task: task 0's job id (the same as its own, where it has one)
 * and secret. */
static tutti_status_t learn_job(tutti__store_t *s, tutti__bootstrap_t *b,
                                double deadline)
{
    char job[TUTTI_BOOTSTRAP_JOB_MAX + 1];
    tutti_status_t st = get_text(s, "job_id", job, sizeof(job), deadline);
    if (st == TUTTI_ERR_TIMEOUT)
        return tutti__error(st, "store", "task %d: task 0 never appeared in "
                            "the store (no key 'tutti/job_id' within %.1f "
                            "s)", b->task, s->timeout);
    if (st != TUTTI_OK)
        return st;
    if (b->job_id[0] != '\0' && strcmp(b->job_id, job) != 0)
        return tutti__error(TUTTI_ERR_MISMATCH, "store", "task %d has job id "
                            "'%s' (%s), task 0 published '%s' in the store",
                            b->task, b->job_id, b->job_source, job);
    if (b->job_id[0] == '\0') {
        snprintf(b->job_id, sizeof(b->job_id), "%s", job);
        b->job_source = "the store (made by task 0)";
    }
    st = get_text(s, "secret", s->secret, sizeof(s->secret), deadline);
    if (st == TUTTI_OK && strlen(s->secret) != TUTTI__STORE_SECRET)
        st = tutti__error(TUTTI_ERR_PEER, "store", "key 'tutti/secret' holds "
                          "%zu characters; task 0 writes %d",
                          strlen(s->secret), TUTTI__STORE_SECRET);
    return st;
}

/* Every task's host: which share this one's, and whether any is missing
 * (all of them named). */
static tutti_status_t learn_hosts(tutti__store_t *s, tutti__bootstrap_t *b,
                                  double deadline)
{
    char mine[HOST_MAX], other[HOST_MAX], key[32], missing[256] = "";
    size_t at = 0;
    int nmissing = 0, local = 0, local_task = 0;
    tutti_status_t st, first = TUTTI_OK;

    if (gethostname(mine, sizeof(mine)) != 0)
        return tutti__error(TUTTI_ERR_IO, "store", "gethostname: %s",
                            strerror(errno));
    mine[sizeof(mine) - 1] = '\0';
    snprintf(key, sizeof(key), "host/%d", b->task);
    if ((st = tutti__store_set(s, key, mine, strlen(mine))) != TUTTI_OK)
        return st;
    for (int t = 0; t < b->num_tasks; t++) {
        snprintf(key, sizeof(key), "host/%d", t);
        st = get_text(s, key, other, sizeof(other), deadline);
        if (st == TUTTI_ERR_TIMEOUT) {
            if (nmissing++ < 16 && at < sizeof(missing))
                at += (size_t)snprintf(missing + at, sizeof(missing) - at,
                                       "%s%d", nmissing > 1 ? ", " : "", t);
            continue;
        }
        if (st != TUTTI_OK) {
            if (first == TUTTI_OK)
                first = st;
            continue;
        }
        if (strcmp(other, mine) == 0) {
            if (t < b->task)
                local_task++;
            local++;
        }
    }
    if (nmissing > 0)
        return tutti__error(TUTTI_ERR_TIMEOUT, "store", "task %d of %d: "
                            "task%s %s%s never appeared in the store (no key "
                            "'tutti/host/%s' within %.1f s)", b->task,
                            b->num_tasks, nmissing > 1 ? "s" : "", missing,
                            nmissing > 16 ? " and more" : "",
                            nmissing > 1 ? "<task>" : missing, s->timeout);
    if (first != TUTTI_OK)
        return first;
    b->local_task = local_task;
    b->local_num_tasks = local;
    return TUTTI_OK;
}

tutti_status_t tutti__store_meet(tutti__store_t *s, tutti__bootstrap_t *b)
{
    double deadline = tutti__now() + s->timeout;
    tutti_status_t st = b->task == 0 ? publish_job(s, b)
                                     : learn_job(s, b, deadline);
    if (st == TUTTI_OK)
        st = learn_hosts(s, b, deadline);
    if (st == TUTTI_OK)
        tutti__log(TUTTI_LOG_DEBUG, "store", "task %d of %d met through the "
                   "store: job '%s', %d task(s) on this host", b->task,
                   b->num_tasks, b->job_id, b->local_num_tasks);
    return st;
}

void tutti__store_clear(tutti__store_t *s)
{
    explicit_bzero(s->secret, sizeof(s->secret));
}
