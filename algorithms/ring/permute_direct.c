/*
 * DirectPermute: each member sends its buffer straight to one rank and
 * receives one buffer from another, in one step: one send and one receive
 * of count elements per member.  Limits: equal counts, a permutation that
 * names every rank once, CPU memory.
 *
 * This is one step of PairwiseAlltoall (alltoall_pairwise.c), except that
 * the rank sent to and the rank received from may differ: a member sends
 * its buffer straight to rank permutation[rank] and receives from the rank
 * whose entry names it.  In place, the outgoing data is first copied to a
 * scratch buffer of count elements (made at init_context, only for a
 * member that does not map to itself).
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "ring.h"

#define IMPL "DirectPermute"

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t bytes;
    int to, from;
    void *scratch;
    tutti_xfer_t sx, rx;
} permute_state_t;

static tutti_status_t permute_init_context(const tutti_alg_instance_t *inst,
                                           const tutti_core_ops_t *core,
                                           const void *details,
                                           size_t details_len,
                                           void **state_out)
{
    int n = inst->group_size, r = inst->rank;
    permute_state_t *s;
    (void)details;
    (void)details_len;
    if (inst->permutation == NULL)
        return core->error(TUTTI_ERR_INVALID_ARG, IMPL ": instance 0x%llx: "
                           "no permutation (expected %d entries)",
                           (unsigned long long)inst->instance_key, n);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": out of memory");
    s->inst = inst;
    s->bytes = inst->count * tutti_dtype_size(inst->dtype);
    s->to = inst->permutation[r];
    s->from = -1;
    int named = 0; /* entries that name this rank */
    for (int i = 0; i < n; i++)
        if (inst->permutation[i] == r) {
            s->from = i;
            named++;
        }
    if (s->to < 0 || s->to >= n || named != 1) {
        int to = s->to;
        free(s);
        return core->error(TUTTI_ERR_INVALID_ARG, IMPL ": instance 0x%llx "
                           "rank %d: permutation[%d] = %d and %d entries name "
                           "rank %d: expected each of 0..%d once",
                           (unsigned long long)inst->instance_key, r, r, to,
                           named, r, n - 1);
    }
    /* Whether a call is in place is known only per call. */
    if (s->to != r && s->bytes > 0 &&
        (s->scratch = malloc(s->bytes)) == NULL) {
        size_t bytes = s->bytes;
        free(s);
        return core->error(TUTTI_ERR_NO_MEMORY, IMPL ": no memory for a "
                           "%zu-byte scratch buffer", bytes);
    }
    *state_out = s;
    return TUTTI_OK;
}

static void permute_fini_context(void *state)
{
    permute_state_t *s = state;
    if (s != NULL)
        free(s->scratch);
    free(s);
}

static tutti_status_t permute_progress(void *state, tutti_alg_exec_t *x)
{
    permute_state_t *s = state;
    tutti_status_t st;
    if ((st = x->core->test(x, &s->rx)) != TUTTI_OK)
        return st;
    return x->core->test(x, &s->sx);
}

static tutti_status_t permute_run(void *state, tutti_alg_exec_t *x)
{
    permute_state_t *s = state;
    const void *src = x->sendbuf;
    tutti_status_t st;

    if (s->bytes == 0)
        return TUTTI_OK;
    if (s->to == s->inst->rank) {
        if (x->sendbuf != x->recvbuf)
            memcpy(x->recvbuf, x->sendbuf, s->bytes);
        return TUTTI_OK;
    }
    if (x->sendbuf == x->recvbuf) {
        memcpy(s->scratch, x->sendbuf, s->bytes);
        src = s->scratch;
    }
    st = x->core->recv(x, s->from, 0, x->recvbuf, s->bytes, NULL, &s->rx);
    if (st == TUTTI_OK)
        st = tutti_alg_send_block(x, s->to, 0, src, s->bytes, &s->sx);
    return st != TUTTI_OK ? st : permute_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_ring_permute_direct_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = permute_init_context,
    .run = permute_run, .progress = permute_progress,
    .fini_context = permute_fini_context};
