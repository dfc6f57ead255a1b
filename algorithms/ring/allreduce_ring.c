/*
 * RingAllreduce: allreduce around rings of all members, in subdivisions.
 * Cost: 2(n-1) steps, in which each member sends and receives 2(n-1)/n of
 * the buffer: bandwidth-optimal, with a latency that grows with n.
 * Limits: equal counts, CPU memory.
 *
 * The buffer is cut into S parts (subdivisions) of consecutive elements,
 * and each part runs its own ring allreduce around its own ring order of
 * the members.  Within a part the data is cut into one segment per member.
 * In the reduce-scatter phase (n-1 steps) each member passes a segment to
 * its right neighbour on that part's ring and receives one from its left,
 * reducing it on receipt with its own input; in the allgather phase (n-1
 * steps) the fully reduced segments travel on.  The first reduction of each
 * segment reads the member's send buffer directly, so an out-of-place call
 * needs no initial copy and no scratch buffer.  Large segments stream
 * through the transport in slot-sized fragments, so the receiver reduces
 * while the sender is still sending.
 *
 * Ring orders: the members are first put in host order (each host's
 * members together, hosts in the order of their lowest rank: rank order
 * where every host's ranks are consecutive), so the ring of stride 1
 * crosses each host boundary once however a launcher numbered the tasks.
 * Part s places the member at host-order index (shift + i * stride) mod n
 * at position i, so each member sends to the member stride places after
 * it in host order and receives from the one stride places before.
 * The strides are taken in the order 1, n-1, 2, n-2, 3, ... keeping those
 * coprime to n (so the ring visits every member) and distinct modulo n: the
 * forward ring, the reverse ring, then rings that skip members.  Distinct
 * strides use distinct peer pairs and directions, which spreads the traffic
 * over more channels.  When S exceeds the number of distinct strides (for 2
 * members there is one), strides repeat with shift 1, 2, ...: the same
 * channels, but each member finishes different segments.
 *
 * Parts advance in lockstep: step k+1 of every part is posted once every
 * part has finished step k, while within a step all parts' transfers are in
 * flight together.  Each peer channel delivers in order and is shared by
 * the parts whose rings use it; a part running ahead could put a message at
 * the head of a channel whose receiver has not posted that step yet, so
 * that the messages of other parts queued behind it, which the receiver is
 * waiting for, could not arrive.  In lockstep every channel carries steps
 * in order and the receiver has posted all of a step's receives before any
 * of that step's messages can reach the head, as with one ring.
 *
 * S comes from the rule parameter `subdivisions` (1..8; 0 or absent:
 * automatic, which is 1, see ring_auto_parts()), and never exceeds what
 * leaves every part at least one element per member (so a count below
 * 2n runs as one part, with empty segments when it is below n).
 * init_params decides it once and the plan (S, strides, shifts) reaches
 * every member in the details.
 */
#include <stdlib.h>
#include <string.h>

#include <tutti/module.h>

#include "ring.h"

#define RING_MAX_PARTS 8

/* The plan every member follows, written once by init_params. */
typedef struct {
    uint32_t nparts;
    uint32_t reserved;
    int32_t stride[RING_MAX_PARTS];
    int32_t shift[RING_MAX_PARTS];
} ring_plan_t;

/* One part (subdivision): its ring and its elements. */
typedef struct {
    int pos;            /* this member's position on the part's ring */
    int right, left;    /* ranks sent to and received from */
    size_t off;         /* first element of the part */
    size_t base, extra; /* segments of base elements, the first extra +1 */
    tutti_xfer_t sx, rx;
} ring_part_t;

typedef struct {
    const tutti_alg_instance_t *inst;
    size_t esize;
    int nparts;
    int step;           /* 0 .. 2(n-1), the same for every part */
    ring_part_t part[RING_MAX_PARTS];
} ring_state_t;

static int gcd(int a, int b)
{
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* S when the rule leaves it open (subdivisions 0 or absent).  On the one
 * host measured (2 shared cores, 2 processes over shm, tutti-perf 1M..64M
 * float32 sum, medians of 3) S=2 was not consistently faster than S=1: its
 * time was 0.9x to 1.7x S=1's depending on size and run.  Every part of a
 * member is driven by the same thread, so on one host parts add no copy
 * or reduction bandwidth, and with 2 members all parts share one channel
 * pair.  Automatic S is therefore 1 for every size and group; the message
 * size and group size are the inputs for a rule where parts pay (members
 * on several hosts, whose rings then use different links). */
static uint64_t ring_auto_parts(size_t bytes, int n)
{
    (void)bytes;
    (void)n;
    return 1;
}

/* Writes the strides 1, n-1, 2, n-2, ... that are coprime to n and
 * distinct modulo n into @p out (at most @p max); returns how many. */
static int ring_strides(int n, int *out, int max)
{
    int m = 0;
    for (int d = 1; d <= n / 2 && m < max; d++) {
        if (gcd(d, n) != 1)
            continue;
        out[m++] = d;
        if (n - d != d && m < max)
            out[m++] = n - d;
    }
    if (m == 0)
        out[m++] = 1; /* n == 1: no communication, any ring */
    return m;
}

static tutti_status_t ring_init_params(const tutti_alg_instance_t *inst,
                                       const tutti_core_ops_t *core,
                                       void *details, size_t *len_out)
{
    int n = inst->group_size;
    size_t bytes = inst->count * tutti_dtype_size(inst->dtype);
    int strides[RING_MAX_PARTS];
    ring_plan_t plan;
    uint64_t parts;
    tutti_status_t st;

    if ((st = core->param_size(inst, "subdivisions", 0, &parts)) != TUTTI_OK)
        return st;
    if (parts > RING_MAX_PARTS)
        return core->error(TUTTI_ERR_CONFIG,
                           "RingAllreduce: subdivisions %llu: "
                           "expected 1..%d, or 0 for automatic",
                           (unsigned long long)parts, RING_MAX_PARTS);
    if (parts == 0)
        parts = ring_auto_parts(bytes, n);
    /* Every part needs at least one element per member. */
    uint64_t fit = n > 1 ? inst->count / (size_t)n : 1;
    if (parts > fit)
        parts = fit > 0 ? fit : 1;

    memset(&plan, 0, sizeof(plan));
    plan.nparts = (uint32_t)parts;
    int m = ring_strides(n, strides, RING_MAX_PARTS);
    for (int s = 0; s < (int)parts; s++) {
        plan.stride[s] = strides[s % m];
        plan.shift[s] = tutti_alg_ring_mod(s / m, n);
    }
    core->log(3, "RingAllreduce", "instance 0x%llx: %d members, %zu bytes, "
              "%u subdivisions", (unsigned long long)inst->instance_key, n,
              bytes, plan.nparts);
    memcpy(details, &plan, sizeof(plan));
    *len_out = sizeof(plan);
    return TUTTI_OK;
}

/* Checks a plan that came from init_params, possibly of another member. */
static tutti_status_t check_plan(const tutti_alg_instance_t *inst,
                                 const tutti_core_ops_t *core,
                                 const ring_plan_t *plan)
{
    int n = inst->group_size;
    if (plan->nparts < 1 || plan->nparts > RING_MAX_PARTS)
        return core->error(TUTTI_ERR_MODULE, "RingAllreduce: plan of %u "
                           "subdivisions, expected 1..%d", plan->nparts,
                           RING_MAX_PARTS);
    for (uint32_t s = 0; s < plan->nparts; s++) {
        int d = plan->stride[s], sh = plan->shift[s];
        if (d < 1 || (n > 1 && d >= n) || gcd(d, n) != 1 || sh < 0 ||
            sh >= n)
            return core->error(TUTTI_ERR_MODULE, "RingAllreduce: plan part %u "
                               "has stride %d and shift %d, not a ring of %d "
                               "members", s, d, sh, n);
    }
    return TUTTI_OK;
}

static tutti_status_t ring_init_context(const tutti_alg_instance_t *inst,
                                        const tutti_core_ops_t *core,
                                        const void *details,
                                        size_t details_len, void **state_out)
{
    int n = inst->group_size;
    ring_plan_t plan;
    tutti_status_t st;

    if (details_len != sizeof(plan))
        return core->error(TUTTI_ERR_MODULE,
                           "RingAllreduce: %zu bytes of plan, expected %zu",
                           details_len, sizeof(plan));
    memcpy(&plan, details, sizeof(plan));
    if ((st = check_plan(inst, core, &plan)) != TUTTI_OK)
        return st;
    ring_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return core->error(TUTTI_ERR_NO_MEMORY, "RingAllreduce: out of memory");
    int *order = calloc((size_t)n, sizeof(int));
    if (order == NULL) {
        free(s);
        return core->error(TUTTI_ERR_NO_MEMORY, "RingAllreduce: out of "
                           "memory for the ring of %d members", n);
    }
    /* Rings run over positions in host order, so each host's members sit
     * together and a ring of stride 1 crosses each host boundary once. */
    int me = tutti_alg_ring_host_order(inst, order);
    s->inst = inst;
    s->esize = tutti_dtype_size(inst->dtype);
    s->nparts = (int)plan.nparts;

    size_t pbase = inst->count / plan.nparts;
    size_t pextra = inst->count % plan.nparts;
    size_t off = 0;
    for (int i = 0; i < s->nparts; i++) {
        ring_part_t *p = &s->part[i];
        int d = plan.stride[i], sh = plan.shift[i];
        size_t len = pbase + ((size_t)i < pextra ? 1 : 0);
        p->off = off;
        p->base = len / (size_t)n;
        p->extra = len % (size_t)n;
        off += len;
        p->right = order[tutti_alg_ring_mod(me + d, n)];
        p->left = order[tutti_alg_ring_mod(me - d, n)];
        for (int j = 0, q = sh; j < n; j++, q = (q + d) % n) {
            if (q == me)
                p->pos = j;
        }
    }
    free(order);
    core->log(3, "RingAllreduce", "instance 0x%llx rank %d: ring 0 sends "
              "to %d, receives from %d", (unsigned long long)inst->instance_key,
              inst->rank, s->part[0].right, s->part[0].left);
    *state_out = s;
    return TUTTI_OK;
}

static void ring_fini_context(void *state)
{
    free(state);
}

/* First element of segment @p j of part @p p, and its length. */
static size_t seg_off(const ring_part_t *p, int j)
{
    size_t u = (size_t)j;
    return p->off + u * p->base + (u < p->extra ? u : p->extra);
}

static size_t seg_len(const ring_part_t *p, int j)
{
    return p->base + ((size_t)j < p->extra ? 1 : 0);
}

/* Posts the send and receive of part @p i at the current step.  Tags are
 * i * 2(n-1) + step: unique within the execution. */
static tutti_status_t post_step(ring_state_t *s, int i, tutti_alg_exec_t *x)
{
    const tutti_alg_instance_t *in = s->inst;
    ring_part_t *p = &s->part[i];
    int n = in->group_size, k = s->step, pos = p->pos;
    int reducing = k < n - 1;
    int send_seg, recv_seg;
    const char *src;
    char *out = x->recvbuf;
    uint32_t tag = (uint32_t)(i * 2 * (n - 1) + k);
    tutti_status_t st;

    if (reducing) {
        send_seg = tutti_alg_ring_mod(pos - k, n);
        recv_seg = tutti_alg_ring_mod(pos - k - 1, n);
        src = k == 0 ? (const char *)x->sendbuf : out;
    } else {
        int j = k - (n - 1);
        send_seg = tutti_alg_ring_mod(pos + 1 - j, n);
        recv_seg = tutti_alg_ring_mod(pos - j, n);
        src = out;
    }
    size_t so = seg_off(p, send_seg) * s->esize;
    size_t ro = seg_off(p, recv_seg) * s->esize;
    /* A reduced segment is summed on receipt; a finished one is stored. */
    st = (reducing ? x->core->send : tutti_alg_send_block)(
        x, p->right, tag, src + so, seg_len(p, send_seg) * s->esize, &p->sx);
    if (st != TUTTI_OK)
        return st;
    tutti_recv_reduce_t red = {(const char *)x->sendbuf + ro};
    return x->core->recv(x, p->left, tag, out + ro,
                         seg_len(p, recv_seg) * s->esize,
                         reducing ? &red : NULL, &p->rx);
}

static tutti_status_t post_all(ring_state_t *s, tutti_alg_exec_t *x)
{
    for (int i = 0; i < s->nparts; i++) {
        tutti_status_t st = post_step(s, i, x);
        if (st != TUTTI_OK)
            return st;
    }
    return TUTTI_INPROGRESS;
}

static tutti_status_t ring_progress(void *state, tutti_alg_exec_t *x)
{
    ring_state_t *s = state;
    int steps = 2 * (s->inst->group_size - 1), busy = 0;
    tutti_status_t st;

    /* Test every transfer, so each is seen complete as soon as it is. */
    for (int i = 0; i < s->nparts; i++) {
        if ((st = x->core->test(x, &s->part[i].sx)) == TUTTI_INPROGRESS)
            busy = 1;
        else if (st != TUTTI_OK)
            return st;
        if ((st = x->core->test(x, &s->part[i].rx)) == TUTTI_INPROGRESS)
            busy = 1;
        else if (st != TUTTI_OK)
            return st;
    }
    if (busy)
        return TUTTI_INPROGRESS;
    if (++s->step == steps)
        return TUTTI_OK;
    if (s->step == s->inst->group_size - 1)
        tutti_alg_exec_phase(x, "allgather");
    return post_all(s, x);
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
    tutti_alg_exec_phase(x, "reduce-scatter");
    return post_all(s, x);
}

const tutti_alg_ops_t tutti_alg_ring_allreduce_ops = {
    .size = sizeof(tutti_alg_ops_t), .init_params = ring_init_params,
    .init_context = ring_init_context, .run = ring_run,
    .progress = ring_progress, .fini_context = ring_fini_context};
