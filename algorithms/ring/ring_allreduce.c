/*
 * RingReduce: allreduce around a ring of all members.
 *
 * The buffer is cut into one segment per member.  In the reduce-scatter
 * phase (n-1 steps) each member passes a segment to its right neighbour and
 * receives one from its left, reducing it on receipt with its own input; in
 * the allgather phase (n-1 steps) the fully reduced segments travel on.  The
 * first reduction of each segment reads the member's send buffer directly,
 * so an out-of-place call needs no initial copy and no scratch buffer.  Large
 * segments stream through the transport in slot-sized fragments, so the
 * receiver reduces while the sender is still sending.
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "ring.h"

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t esize;
    size_t *seg_off;  /* in elements */
    size_t *seg_len;
    int step;         /* 0 .. 2(n-1) */
    tutti_xfer_t sx, rx;
} ring_state_t;

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

static tutti_status_t ring_init_context(const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        const void *details,
                                        size_t details_len, void **state_out)
{
    int n = inst->group_size;
    ring_state_t *s = calloc(1, sizeof(*s));
    (void)details;
    (void)details_len;
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "RingReduce: out of memory");
    s->seg_off = calloc((size_t)n, sizeof(size_t));
    s->seg_len = calloc((size_t)n, sizeof(size_t));
    if (s->seg_off == NULL || s->seg_len == NULL) {
        free(s->seg_off);
        free(s->seg_len);
        free(s);
        return core->error(TUTTI_ERR_NO_MEMORY, "RingReduce: out of memory");
    }
    s->inst = inst;
    s->esize = tutti_dtype_size(inst->dtype);
    size_t base = inst->count / (size_t)n, extra = inst->count % (size_t)n;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        s->seg_off[i] = off;
        s->seg_len[i] = base + ((size_t)i < extra ? 1 : 0);
        off += s->seg_len[i];
    }
    *state_out = s;
    return TUTTI_OK;
}

static void ring_fini_context(void *state)
{
    ring_state_t *s = state;
    if (s == NULL)
        return;
    free(s->seg_off);
    free(s->seg_len);
    free(s);
}

/* Posts the send and receive of the current step. */
static tutti_status_t post_step(ring_state_t *s, tutti_alg_exec_t *x)
{
    const tutti_alg_instance_t *in = s->inst;
    int n = in->group_size, r = in->rank, k = s->step;
    int reducing = k < n - 1;
    int send_seg, recv_seg;
    const char *src;
    char *out = x->recvbuf;
    tutti_status_t st;

    if (reducing) {
        send_seg = mod(r - k, n);
        recv_seg = mod(r - k - 1, n);
        src = k == 0 ? (const char *)x->sendbuf : out;
    } else {
        int j = k - (n - 1);
        send_seg = mod(r + 1 - j, n);
        recv_seg = mod(r - j, n);
        src = out;
    }
    size_t so = s->seg_off[send_seg] * s->esize;
    size_t ro = s->seg_off[recv_seg] * s->esize;
    st = x->core->send(x, mod(r + 1, n), (uint32_t)k, src + so,
                       s->seg_len[send_seg] * s->esize, &s->sx);
    if (st != TUTTI_OK)
        return st;
    tutti_recv_reduce_t red = {(const char *)x->sendbuf + ro};
    return x->core->recv(x, mod(r - 1, n), (uint32_t)k, out + ro,
                         s->seg_len[recv_seg] * s->esize,
                         reducing ? &red : NULL, &s->rx);
}

static tutti_status_t ring_progress(void *state, tutti_alg_exec_t *x)
{
    ring_state_t *s = state;
    int steps = 2 * (s->inst->group_size - 1);
    tutti_status_t st;

    if ((st = x->core->test(x, &s->sx)) != TUTTI_OK)
        return st;
    if ((st = x->core->test(x, &s->rx)) != TUTTI_OK)
        return st;
    if (++s->step == steps)
        return TUTTI_OK;
    st = post_step(s, x);
    return st == TUTTI_OK ? TUTTI_INPROGRESS : st;
}

static tutti_status_t ring_run(void *state, tutti_alg_exec_t *x)
{
    ring_state_t *s = state;
    const tutti_alg_instance_t *in = s->inst;

    if (in->count == 0)
        return TUTTI_OK;
    if (in->group_size == 1) {
        if (x->sendbuf != x->recvbuf)
            memcpy(x->recvbuf, x->sendbuf, in->count * s->esize);
        return TUTTI_OK;
    }
    s->step = 0;
    tutti_status_t st = post_step(s, x);
    return st == TUTTI_OK ? TUTTI_INPROGRESS : st;
}

const tutti_alg_ops_t tutti_alg_ring_reduce_ops = {
    sizeof(tutti_alg_ops_t), NULL, ring_init_context, ring_run, ring_progress,
    ring_fini_context,
};
