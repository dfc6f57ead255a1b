/*
 * A module that loads, runs and is wrong on purpose, for the conformance
 * kit's own test (tests/mp/test_conformance):
 *
 *   TestTailAllreduce  allreduce by direct exchange: at step k each member
 *                      sends its input to rank + k and reduces what rank - k
 *                      sent into its output.  The planted bug: it moves the
 *                      buffer in whole 8-byte words, so the last bytes % 8
 *                      bytes are never reduced (each member keeps its own
 *                      input there).
 *
 * Right for groups of one, for 8-byte dtypes and for counts whose bytes are
 * a multiple of 8; wrong for an odd count of float32, a count of int8 that
 * is not a multiple of 8, and so on: the kit must say which.
 *
 *   TestBlockingAllreduce  the same, but rank 0 of a group of several
 *                      blocks inside run from its second execution on,
 *                      out of reach of the core's time limit and abort:
 *                      the kit must end, naming the test, not hang.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tutti/module.h>

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t bytes, words; /* the buffer, and what the bug moves of it */
    unsigned char *input; /* this member's input (the output is reduced) */
    int step;
    tutti_xfer_t sent, received;
} tail_state_t;

static tutti_status_t tail_init(const tutti_alg_instance_t *inst,
                                const tutti_core_ops_t *core,
                                const void *details, size_t details_len,
                                void **state_out)
{
    tail_state_t *s = calloc(1, sizeof(*s));
    (void)details;
    (void)details_len;
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "TestTailAllreduce: memory");
    s->inst = inst;
    s->bytes = inst->count * tutti_dtype_size(inst->dtype);
    s->words = s->bytes & ~(size_t)7;
    s->input = malloc(s->bytes > 0 ? s->bytes : 1);
    if (s->input == NULL) {
        free(s);
        return core->error(TUTTI_ERR_NO_MEMORY, "TestTailAllreduce: memory");
    }
    *state_out = s;
    return TUTTI_OK;
}

static void tail_fini(void *state)
{
    tail_state_t *s = state;
    free(s->input);
    free(s);
}

/* Posts step s->step's send and receive. */
static tutti_status_t post(tail_state_t *s, tutti_alg_exec_t *x)
{
    int n = s->inst->group_size, r = s->inst->rank, k = s->step;
    tutti_recv_reduce_t red = {x->recvbuf};
    tutti_status_t st = x->core->send(x, (r + k) % n, (uint32_t)k, s->input,
                                      s->words, &s->sent);
    if (st != TUTTI_OK)
        return st;
    return x->core->recv(x, (r - k + n) % n, (uint32_t)k, x->recvbuf,
                         s->words, &red, &s->received);
}

static tutti_status_t tail_progress(void *state, tutti_alg_exec_t *x)
{
    tail_state_t *s = state;
    tutti_status_t st;
    while (s->step < s->inst->group_size) {
        if ((st = x->core->test(x, &s->sent)) != TUTTI_OK ||
            (st = x->core->test(x, &s->received)) != TUTTI_OK)
            return st;
        if (++s->step == s->inst->group_size)
            break;
        if ((st = post(s, x)) != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

static tutti_status_t tail_run(void *state, tutti_alg_exec_t *x)
{
    tail_state_t *s = state;
    tutti_status_t st;
    if (s->bytes > 0)
        memcpy(s->input, x->sendbuf, s->bytes);
    if (x->sendbuf != x->recvbuf && s->bytes > 0)
        memcpy(x->recvbuf, x->sendbuf, s->bytes);
    s->step = 1;
    if (s->inst->group_size == 1)
        return TUTTI_OK;
    if ((st = post(s, x)) != TUTTI_OK)
        return st;
    return tail_progress(s, x);
}

static tutti_status_t block_run(void *state, tutti_alg_exec_t *x)
{
    tail_state_t *s = state;
    while (s->inst->group_size > 1 && s->inst->rank == 0 && x->step >= 1) {
        struct timespec nap = {1, 0};
        nanosleep(&nap, NULL); /* forever */
    }
    return tail_run(state, x);
}

static const tutti_alg_ops_t block_ops = {
    .size = sizeof(tutti_alg_ops_t),
    .init_context = tail_init,
    .run = block_run,
    .progress = tail_progress,
    .fini_context = tail_fini,
};

static const tutti_alg_ops_t tail_ops = {
    .size = sizeof(tutti_alg_ops_t),
    .init_context = tail_init,
    .run = tail_run,
    .progress = tail_progress,
    .fini_context = tail_fini,
};

static const tutti_alg_impl_t impls[] = {
    {.name = "TestTailAllreduce",
     .description = "test: direct exchange allreduce that never reduces the "
                    "last bytes % 8 bytes (wrong)",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &tail_ops},
    {.name = "TestBlockingAllreduce",
     .description = "test: rank 0 blocks inside run from its second "
                    "execution on (wrong)",
     .collectives = TUTTI_COLL_BIT(TUTTI_COLL_ALLREDUCE),
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU),
     .ops = &block_ops},
};

TUTTI_MODULE_DEFINE("testtail", "1.0.0", impls);
