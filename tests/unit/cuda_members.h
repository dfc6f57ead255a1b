/*
 * What the CUDA unit tests share (test_cuda_exec.c, test_cuda_device.c):
 * CUDA group members run as threads of this process under the double of
 * the CUDA operations (fake_cuda.h), checks made in those threads and
 * reported by the main one, device memory of the double, and the fixture
 * (a context of one task on the shipped config and the good test modules,
 * mod_group's log file).
 */
#ifndef TUTTI_TEST_CUDA_MEMBERS_H
#define TUTTI_TEST_CUDA_MEMBERS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <tutti/tutti.h>

#include "test_util.h"

#define GOOD_DIR TUTTI_TEST_BUILDDIR "/tests/modules/good"
#define CONF TUTTI_TEST_SRCDIR "/conf/tutti.yaml"
#define MAX_MEMBERS 4
#define COUNT 5

typedef struct cm cm_t;
typedef void (*cm_fn)(cm_t *m, tutti_group_t *g);

struct cm {
    tutti_context_t *ctx;
    uint64_t key;
    int size, device;
    tutti_device_order_t order;
    cm_fn run;
    const void *arg;
    atomic_int *shared;     /* a word the members of a test share */
    tutti_status_t join_st;
    char join_err[512];
    int rank;
    void *stream;
    char fail[512];         /* the first failed check, "" if none */
    uint64_t out[4];        /* what the scenario leaves to assert on */
};

/* A check inside a member's thread (CMocka's asserts may not jump across
 * threads): the first failure is kept for the main thread to report. */
#define CHECK(m, cond, ...)                                                    \
    do {                                                                       \
        if (!(cond) && (m)->fail[0] == '\0') {                                 \
            int n_ = snprintf((m)->fail, sizeof((m)->fail), "line %d: ",       \
                              __LINE__);                                       \
            snprintf((m)->fail + n_, sizeof((m)->fail) - (size_t)n_,           \
                     __VA_ARGS__);                                             \
        }                                                                      \
    } while (0)

/** One call of a collective to check against a host computation. */
typedef struct {
    const char *what;
    tutti_collective_t coll;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int in_place;
    double pre_scale, post_scale;
} coll_case_t;

/** mod_group's log (TUTTI_TEST_GROUP_LOG), made by the fixture. */
extern const char *group_log;

/** Runs @p fn on @p n members of CUDA group @p key, member i on device
 *  @p devices[i] (NULL: i); fails the test on a failed join or check. */
void run_members(tutti_context_t *ctx, uint64_t key, int n,
                 const int *devices, tutti_device_order_t order, cm_fn fn,
                 const void *arg, cm_t *m);
/** Device memory of the calling thread's current device (0xee bytes). */
void *dev_alloc(size_t bytes);
void dev_free(void *p);
/** Executes @p p on the member's stream and waits; the first failing
 *  status. */
tutti_status_t exec_wait(cm_t *m, tutti_group_t *g,
                         tutti_instance_params_t *p, const void *send,
                         void *recv);
/** CMocka group fixture: the context in *state, the double in place. */
int cuda_setup(void **state);
int cuda_teardown(void **state);

#endif
