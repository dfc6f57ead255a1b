/*
 * BruckAlltoall: latency-optimal alltoall for small blocks, for any group
 * size.  Cost: ceil(log2 n) exchanges of about n/2 blocks each, where the
 * pairwise exchange takes n-1 steps of one block (8 members: 3 instead of
 * 7); every block is copied a few more times on the way, so it pays only
 * while a step's latency outweighs copying n blocks.  Limits: equal
 * counts, CPU memory; a scratch of 2n blocks.
 *
 * First the member rotates its blocks into the scratch: slot i holds the
 * block for rank (r + i) mod n.  At step k (distance d = 2^k) it packs the
 * slots whose index has bit k set, sends them to rank r + d, receives the
 * same slots from rank r - d and unpacks them into place: a block moves by
 * d when bit k of its slot is set, so after every step slot i holds the
 * block rank (r - i) mod n sent to r, which the last pass writes where it
 * belongs in recvbuf.  Everything is read from sendbuf before anything is
 * written to recvbuf, so in place costs nothing more.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "tree.h"
#include "tree_fold.h"

#define IMPL "BruckAlltoall"

typedef struct {
    char *scratch;      /* slot blocks (n), then the packed send (n / 2
                           rounded up) and receive (as many) */
    const tutti_alg_instance_t *inst;
    size_t block;       /* bytes of one block */
    int steps, step;    /* ceil(log2 n); the one in flight */
    tutti_xfer_t sx, rx;
} bruck_state_t;
_Static_assert(offsetof(bruck_state_t, scratch) == 0,
               "tutti_alg_tree_scratch_fini frees the first member");

static tutti_status_t bruck_init_context(const tutti_alg_instance_t *inst,
                                         const tutti_core_ops_t *core,
                                         const void *details,
                                         size_t details_len, void **state_out)
{
    size_t block = inst->count * tutti_dtype_size(inst->dtype);
    size_t n = (size_t)inst->group_size;
    bruck_state_t *s = tutti_alg_tree_state_new(
        core, IMPL, sizeof(*s), block * (n + 2 * ((n + 1) / 2)), "scratch");
    (void)details;
    (void)details_len;
    if (s == NULL)
        return TUTTI_ERR_NO_MEMORY;
    s->inst = inst;
    s->block = block;
    while ((1 << s->steps) < inst->group_size)
        s->steps++;
    *state_out = s;
    return TUTTI_OK;
}

static char *slot(const bruck_state_t *s, int i)
{
    return s->scratch + (size_t)i * s->block;
}

static char *packed(const bruck_state_t *s, int which)
{
    size_t half = ((size_t)s->inst->group_size + 1) / 2;
    return slot(s, s->inst->group_size) + (size_t)which * half * s->block;
}

/* Packs the slots with bit @p k set into @p buf (or, @p out 0, unpacks
 * @p buf into them); returns how many. */
static size_t pack(bruck_state_t *s, int k, char *buf, int out)
{
    size_t m = 0;
    for (int i = 0; i < s->inst->group_size; i++) {
        if (!((i >> k) & 1))
            continue;
        if (out)
            memcpy(buf + m * s->block, slot(s, i), s->block);
        else
            memcpy(slot(s, i), buf + m * s->block, s->block);
        m++;
    }
    return m;
}

/* Packs and posts step s->step. */
static tutti_status_t post(bruck_state_t *s, tutti_alg_exec_t *x)
{
    int n = s->inst->group_size, r = s->inst->rank, d = 1 << s->step;
    size_t m = pack(s, s->step, packed(s, 0), 1);
    tutti_status_t st = tutti_alg_send_block(x, (r + d) % n,
                                             (uint32_t)s->step, packed(s, 0),
                                             m * s->block, &s->sx);
    if (st == TUTTI_OK)
        st = x->core->recv(x, (r - d % n + n) % n, (uint32_t)s->step,
                           packed(s, 1), m * s->block, NULL, &s->rx);
    return st;
}

static tutti_status_t bruck_progress(void *state, tutti_alg_exec_t *x)
{
    bruck_state_t *s = state;
    int n = s->inst->group_size, r = s->inst->rank;
    tutti_status_t st;
    while (s->step < s->steps) {
        if ((st = x->core->test(x, &s->sx)) != TUTTI_OK ||
            (st = x->core->test(x, &s->rx)) != TUTTI_OK)
            return st;
        pack(s, s->step, packed(s, 1), 0);
        if (++s->step < s->steps && (st = post(s, x)) != TUTTI_OK)
            return st;
    }
    for (int i = 0; i < n; i++)
        memcpy((char *)x->recvbuf + (size_t)((r - i + n) % n) * s->block,
               slot(s, i), s->block);
    return TUTTI_OK;
}

static tutti_status_t bruck_run(void *state, tutti_alg_exec_t *x)
{
    bruck_state_t *s = state;
    int n = s->inst->group_size, r = s->inst->rank;
    if (s->block == 0) /* every member has nothing: no message at all */
        return TUTTI_OK;
    for (int i = 0; i < n; i++)
        memcpy(slot(s, i),
               (const char *)x->sendbuf + (size_t)((r + i) % n) * s->block,
               s->block);
    s->step = 0;
    if (s->steps > 0) {
        tutti_status_t st = post(s, x);
        if (st != TUTTI_OK)
            return st;
    }
    return bruck_progress(s, x);
}

const tutti_alg_ops_t tutti_alg_tree_alltoall_bruck_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_context = bruck_init_context,
    .run = bruck_run, .progress = bruck_progress,
    .fini_context = tutti_alg_tree_scratch_fini};
