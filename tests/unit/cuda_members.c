/*
 * What the CUDA unit tests share (cuda_members.h): members as threads,
 * device memory of the double, the fixture.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "cuda_members.h"
#include "device/device.h"
#include "fake_cuda.h"
#include "members.h"

static test_tmp_t log_dir; /* mod_group's lines (TUTTI_TEST_GROUP_LOG) */
const char *group_log = log_dir.path;

static void *cm_main(void *arg)
{
    cm_t *m = arg;
    tutti_group_params_t gp;
    tutti_group_t *g;
    tutti_group_params_init(&gp);
    gp.group_key = m->key;
    gp.group_size = m->size;
    gp.device_type = TUTTI_DEVICE_CUDA;
    gp.device_index = m->device;
    gp.device_order = m->order;
    gp.timeout = 20;
    m->join_st = tutti_group_join(m->ctx, &gp, &g);
    if (m->join_st != TUTTI_OK) {
        snprintf(m->join_err, sizeof(m->join_err), "%s", tutti_last_error());
        return NULL;
    }
    m->rank = tutti_group_rank(g);
    CHECK(m, fake_cuda_current_device() == m->device,
          "the join made device %d current, not %d",
          fake_cuda_current_device(), m->device);
    int err = fake_cuda_ops()->stream_create(&m->stream);
    CHECK(m, err == 0, "stream_create: %d", err);
    if (m->run && err == 0)
        m->run(m, g);
    tutti_group_leave(g);
    if (m->stream)
        fake_cuda_ops()->stream_destroy(m->stream);
    return NULL;
}

/* Runs @p fn on @p n members of CUDA group @p key, member i on device
 * @p devices[i] (NULL: i); fails the test on a failed join or check. */
void run_members(tutti_context_t *ctx, uint64_t key, int n,
                        const int *devices, tutti_device_order_t order,
                        cm_fn fn, const void *arg, cm_t *m)
{
    static atomic_int shared;
    atomic_store(&shared, 0);
    for (int i = 0; i < n; i++) {
        memset(&m[i], 0, sizeof(m[i]));
        m[i].ctx = ctx;
        m[i].key = key;
        m[i].size = n;
        m[i].device = devices ? devices[i] : i;
        m[i].order = order;
        m[i].run = fn;
        m[i].arg = arg;
        m[i].shared = &shared;
    }
    assert_int_equal(test_threads(n, cm_main, m, sizeof(m[0])), 0);
    for (int i = 0; i < n; i++) {
        if (m[i].join_st != TUTTI_OK)
            fail_msg("member %d: join: %s: %s", i,
                     tutti_status_name(m[i].join_st), m[i].join_err);
        if (m[i].fail[0])
            fail_msg("member %d (rank %d): %s", i, m[i].rank, m[i].fail);
    }
    /* The members left: their instances' stages went with them. */
    assert_int_equal(fake_cuda_live(), 0);
}

/* Device memory of the calling thread's current device. */
void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    if (fake_cuda_ops()->dev_alloc(bytes, &p) != 0)
        return NULL;
    memset(p, 0xee, bytes);
    return p;
}

void dev_free(void *p)
{
    if (p)
        fake_cuda_ops()->dev_free(p);
}

/* Executes @p p on the member's stream and waits; the first failing
 * status. */
tutti_status_t exec_wait(cm_t *m, tutti_group_t *g,
                                tutti_instance_params_t *p, const void *send,
                                void *recv)
{
    p->stream = m->stream;
    return test_exec_wait(g, p, send, recv);
}

/* ---- fixture -------------------------------------------------------------- */

int cuda_setup(void **state)
{
    tutti_context_params_t cp;
    tutti_context_t *ctx;
    if (test_tmpdir(log_dir.dir, sizeof(log_dir.dir), "cuda") != 0)
        return -1;
    test_tmpfile(log_dir.path, sizeof(log_dir.path), log_dir.dir,
                 "group.log", "");
    setenv("TUTTI_TEST_GROUP_LOG", group_log, 1);
    tutti__cuda_use(fake_cuda_ops());
    test_one_task_params(&cp, CONF, GOOD_DIR, "off");
    if (tutti_context_create(&cp, &ctx) != TUTTI_OK) {
        fprintf(stderr, "context: %s\n", tutti_last_error());
        return -1;
    }
    *state = ctx;
    return 0;
}

int cuda_teardown(void **state)
{
    tutti_context_destroy(*state);
    test_rmtree(log_dir.dir);
    return 0;
}
