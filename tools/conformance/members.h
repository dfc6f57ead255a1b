/*
 * Groups for tutti-conformance, the tests and the workers they start
 * (header-only, static): a worker's context, joining a group, the
 * parameters of an instance, one execution waited for, and the members of
 * a group run as threads of this process.
 * The public API only and no CMocka, so that the workers and the
 * differential client use them too: callers check what is returned.
 */
#ifndef TUTTI_CONFORMANCE_MEMBERS_H
#define TUTTI_CONFORMANCE_MEMBERS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tutti/tutti.h>

/* A context from the environment alone, as a launcher set it up; NULL if
 * there is none, saying why on stderr after @p who, the status as
 * @p status_text writes it. */
static inline tutti_context_t *
test_context_from_env(const char *who,
                      const char *(*status_text)(tutti_status_t))
{
    tutti_context_t *ctx;
    tutti_status_t st = tutti_context_create(NULL, &ctx);
    if (st == TUTTI_OK)
        return ctx;
    fprintf(stderr, "%s: %s: %s\n", who, status_text(st), tutti_last_error());
    return NULL;
}

/* Joins group @p key as the member of device @p index in a group of
 * @p size; @p timeout 0 keeps the default.  tutti_group_join's status. */
static inline tutti_status_t test_join(tutti_context_t *ctx, uint64_t key,
                                       int size, int index, double timeout,
                                       tutti_group_t **g_out)
{
    tutti_group_params_t gp;
    tutti_group_params_init(&gp);
    gp.group_key = key;
    gp.group_size = size;
    gp.device_index = index;
    gp.timeout = timeout;
    return tutti_group_join(ctx, &gp, g_out);
}

/* The defaults, then instance @p key: @p count elements of @p dtype for
 * @p coll. */
static inline void test_params(tutti_instance_params_t *p, uint64_t key,
                               tutti_collective_t coll, tutti_dtype_t dtype,
                               size_t count)
{
    tutti_instance_params_init(p);
    p->instance_key = key;
    p->collective = coll;
    p->dtype = dtype;
    p->count = count;
}

/* Executes @p p and waits for it; the status of whichever failed. */
static inline tutti_status_t test_exec_wait(tutti_group_t *g,
                                            const tutti_instance_params_t *p,
                                            const void *send, void *recv)
{
    tutti_request_t *r;
    tutti_status_t st = tutti_execute(g, p, send, recv, &r);
    if (st == TUTTI_OK) {
        st = tutti_request_wait(r);
        tutti_request_free(r);
    }
    return st;
}

#define TEST_MAX_THREADS 64

/* Runs @p fn on @p n threads, the i-th given @p args + i x @p stride
 * bytes, and waits for them all.  0, or -1 if not all could start (those
 * that did are waited for). */
static inline int test_threads(int n, void *(*fn)(void *), void *args,
                               size_t stride)
{
    pthread_t t[TEST_MAX_THREADS];
    int started = 0;
    while (started < n && started < TEST_MAX_THREADS &&
           pthread_create(&t[started], NULL, fn,
                          (char *)args + (size_t)started * stride) == 0)
        started++;
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    return started == n ? 0 : -1;
}

#endif
