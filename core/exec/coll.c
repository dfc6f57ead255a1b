/*
 * What each collective reads and writes: the checks of a call's arguments
 * against the collective, and the scaling the core applies around every
 * implementation (op avg, pre_scale, post_scale), so that no implementation
 * (ours, a third party's, a vendor library's) has to.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/coll.h"
#include "base/log.h"
#include "base/reduce.h"

/* A scale factor of 0 or 1 means none. */
static int scales(double f)
{
    return f != 0.0 && f != 1.0;
}

int tutti__coll_per_rank(const tutti_instance_params_t *p)
{
    return p->count == TUTTI_COUNT_PER_RANK;
}

static tutti_status_t check_permutation(const tutti_instance_params_t *p,
                                        int n, const char *call)
{
    unsigned char seen[256], *mark = seen;
    unsigned long long key = (unsigned long long)p->instance_key;
    tutti_status_t st = TUTTI_OK;

    if (p->permutation == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx: permute needs a permutation of %d "
                            "entries", call, key, n);
    if (n > (int)sizeof(seen) && (mark = calloc((size_t)n, 1)) == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "%s: instance "
                            "0x%llx: no memory to check a permutation of %d "
                            "entries", call, key, n);
    memset(mark, 0, n > (int)sizeof(seen) ? (size_t)n : sizeof(seen));
    for (int r = 0; r < n; r++) {
        int to = p->permutation[r];
        if (to < 0 || to >= n || mark[to]) {
            st = tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                              "0x%llx: permutation[%d] = %d: expected each "
                              "of 0..%d once", call, key, r, to, n - 1);
            break;
        }
        mark[to] = 1;
    }
    if (mark != seen)
        free(mark);
    return st;
}

tutti_status_t tutti__coll_check_instance(const tutti_instance_params_t *p,
                                          int group_size, const char *call)
{
    unsigned long long key = (unsigned long long)p->instance_key;
    tutti_collective_t c = p->collective;

    /* Each field named alone, as the caller wrote it, with its range. */
    if ((unsigned)c >= TUTTI_COLL_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx: collective %d is not a "
                            "tutti_collective_t; expected 0 to %d", call, key,
                            (int)c, TUTTI_COLL_COUNT - 1);
    if ((unsigned)p->dtype >= TUTTI_DTYPE_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx: dtype %d is not a tutti_dtype_t; "
                            "expected 0 to %d", call, key, (int)p->dtype,
                            TUTTI_DTYPE_COUNT - 1);
    if ((unsigned)p->op >= TUTTI_OP_COUNT)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx: op %d is not a tutti_op_t; expected 0 "
                            "to %d", call, key, (int)p->op,
                            TUTTI_OP_COUNT - 1);
    if (tutti_collective_rooted(c) && (p->root < 0 || p->root >= group_size))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec",
                            "%s: instance 0x%llx: %s root %d outside the "
                            "group's ranks 0..%d", call, key,
                            tutti_collective_name(c), p->root,
                            group_size - 1);
    if (tutti__coll_per_rank(p)) {
        if (c != TUTTI_COLL_ALLGATHER && c != TUTTI_COLL_REDUCE_SCATTER &&
            c != TUTTI_COLL_ALLTOALL)
            return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                                "0x%llx: %s has no per-rank counts (only "
                                "allgather, reduce_scatter and alltoall)",
                                call, key, tutti_collective_name(c));
    } else if (p->count > SIZE_MAX / 8 / (size_t)group_size) {
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx: count %zu too large", call, key,
                            p->count);
    }
    if (tutti_collective_reduces(c) &&
        (scales(p->pre_scale) || scales(p->post_scale)) &&
        !tutti_dtype_is_float(p->dtype))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx: pre_scale %g, post_scale %g: scaling "
                            "applies to floating types, not %s", call, key,
                            p->pre_scale, p->post_scale,
                            tutti_dtype_name(p->dtype));
    if (c == TUTTI_COLL_PERMUTE)
        return check_permutation(p, group_size, call);
    return TUTTI_OK;
}

/* Sum of @p n counts, or SIZE_MAX on overflow. */
static size_t sum_counts(const size_t *counts, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] > SIZE_MAX / 8 - total)
            return SIZE_MAX;
        total += counts[i];
    }
    return total;
}

/* Elements read from sendbuf and written to recvbuf by this member;
 * recvbuf's for per-rank allgather and alltoall is its capacity.  Per-rank
 * counts are the execution's, @p counts (the instance keeps none). */
static tutti_status_t io_elems(const tutti_instance_params_t *p,
                               const size_t *counts, int rank, int n,
                               size_t *in_out, size_t *out_out)
{
    size_t c = p->count, in = c, out = c;
    int root = rank == p->root;

    if (tutti__coll_per_rank(p)) {
        if (p->collective != TUTTI_COLL_ALLGATHER && counts == NULL)
            return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "instance "
                                "0x%llx: %s with per-rank counts needs "
                                "counts (%d entries)",
                                (unsigned long long)p->instance_key,
                                tutti_collective_name(p->collective), n);
        switch (p->collective) {
        case TUTTI_COLL_ALLGATHER:
            in = p->send_count;
            out = p->recv_capacity;
            break;
        case TUTTI_COLL_REDUCE_SCATTER:
            in = sum_counts(counts, n);
            out = counts[rank];
            break;
        default: /* alltoall */
            in = sum_counts(counts, n);
            out = p->recv_capacity;
            break;
        }
        if (in == SIZE_MAX || in > SIZE_MAX / 8 || out > SIZE_MAX / 8)
            return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "instance "
                                "0x%llx: counts too large",
                                (unsigned long long)p->instance_key);
        *in_out = in;
        *out_out = out;
        return TUTTI_OK;
    }
    switch (p->collective) {
    case TUTTI_COLL_REDUCE:
        out = root ? c : 0;
        break;
    case TUTTI_COLL_GATHER:
        out = root ? c * (size_t)n : 0;
        break;
    case TUTTI_COLL_ALLGATHER:
        out = c * (size_t)n;
        break;
    case TUTTI_COLL_REDUCE_SCATTER:
        in = c * (size_t)n;
        break;
    case TUTTI_COLL_ALLTOALL:
        in = out = c * (size_t)n;
        break;
    default:
        break;
    }
    *in_out = in;
    *out_out = out;
    return TUTTI_OK;
}

/* io_elems, but what this member reads of sendbuf: a broadcast's non-root
 * ranks read nothing; only the root's sendbuf. */
static tutti_status_t member_elems(const tutti_instance_params_t *p,
                                   const size_t *counts, int rank, int n,
                                   size_t *in_out, size_t *out_out)
{
    tutti_status_t st = io_elems(p, counts, rank, n, in_out, out_out);
    if (st == TUTTI_OK && p->collective == TUTTI_COLL_BROADCAST &&
        rank != p->root)
        *in_out = 0;
    return st;
}

void tutti__coll_fixed_elems(const tutti_instance_params_t *p, int rank,
                             int group_size, size_t *in_out, size_t *out_out)
{
    /* Without per-rank counts io_elems reads no counts and cannot fail. */
    *in_out = *out_out = 0;
    if (!tutti__coll_per_rank(p))
        member_elems(p, NULL, rank, group_size, in_out, out_out);
}

tutti_status_t tutti__coll_check_exec(const tutti_instance_params_t *p,
                                      int rank, int group_size,
                                      const void *sendbuf, const void *recvbuf,
                                      const char *call, uint64_t *bytes_out)
{
    size_t in = 0, out = 0, esize = tutti_dtype_size(p->dtype);
    tutti_status_t st = member_elems(p, p->counts, rank, group_size, &in,
                                     &out);
    int query = tutti__coll_per_rank(p) && recvbuf == NULL &&
                p->recv_capacity == 0 &&
                (p->collective == TUTTI_COLL_ALLGATHER ||
                 p->collective == TUTTI_COLL_ALLTOALL);

    if (st != TUTTI_OK)
        return st;
    if ((in > 0 && sendbuf == NULL) || (out > 0 && recvbuf == NULL && !query))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: instance "
                            "0x%llx (%s) rank %d: NULL %s for %zu elements",
                            call, (unsigned long long)p->instance_key,
                            tutti_collective_name(p->collective), rank,
                            in > 0 && sendbuf == NULL ? "sendbuf" : "recvbuf",
                            in > 0 && sendbuf == NULL ? in : out);
    *bytes_out = (uint64_t)in * esize;
    return TUTTI_OK;
}

size_t tutti__coll_recv_total(const tutti_instance_params_t *p, int rank,
                              int group_size)
{
    size_t in = 0, out = 0;
    if (tutti__coll_per_rank(p) && p->collective != TUTTI_COLL_REDUCE_SCATTER)
        return 0; /* the implementation says */
    if (io_elems(p, p->counts, rank, group_size, &in, &out) != TUTTI_OK)
        return 0;
    return out;
}

int tutti__coll_prepared(const tutti_instance_params_t *p)
{
    if (tutti__coll_per_rank(p) && p->collective == TUTTI_COLL_ALLTOALL)
        return 1;
    return tutti_collective_reduces(p->collective) && scales(p->pre_scale);
}

int tutti__coll_postscaled(const tutti_instance_params_t *p)
{
    return tutti_collective_reduces(p->collective) &&
           (p->op == TUTTI_OP_AVG || scales(p->post_scale));
}

/* Makes @p stage hold at least @p bytes; it only grows. */
static tutti_status_t stage_reserve(const tutti_instance_params_t *p,
                                    tutti__stage_t *stage, size_t bytes,
                                    const char *what)
{
    if (stage->len >= bytes)
        return TUTTI_OK;
    void *buf = realloc(stage->buf, bytes);
    if (buf == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "instance 0x%llx: "
                            "no memory for %zu bytes of %s",
                            (unsigned long long)p->instance_key, bytes, what);
    stage->buf = buf;
    stage->len = bytes;
    return TUTTI_OK;
}

/* 1 if this member's recvbuf is an output it may use before the result
 * lands there: the whole input fits where the result goes. */
static int output_takes_input(const tutti_instance_params_t *p, int rank)
{
    switch (p->collective) {
    case TUTTI_COLL_ALLREDUCE:
        return 1;
    case TUTTI_COLL_REDUCE:
        return rank == p->root;
    default:
        return 0;
    }
}

tutti_status_t tutti__coll_prepare_plan(const tutti_instance_params_t *p,
                                        int rank, int group_size,
                                        const tutti_alg_exec_t *x,
                                        tutti__prep_t *plan_out,
                                        size_t *elems_out)
{
    size_t in = 0, out = 0;
    int in_place = x->sendbuf == x->recvbuf;
    tutti_status_t st;

    *plan_out = TUTTI__PREP_NONE;
    *elems_out = 0;
    if (tutti__coll_per_rank(p) && p->collective == TUTTI_COLL_ALLTOALL &&
        in_place && x->sendbuf != NULL) {
        /* The blocks leave and arrive in other layouts: the input moves
         * aside first, so the implementation sees an out-of-place call. */
        if ((st = io_elems(p, x->counts, rank, group_size, &in, &out)) !=
            TUTTI_OK)
            return st;
        *plan_out = TUTTI__PREP_COPY_TO_STAGE;
        *elems_out = in;
        return TUTTI_OK;
    }
    if (!tutti_collective_reduces(p->collective) || !scales(p->pre_scale))
        return TUTTI_OK;
    if ((st = io_elems(p, x->counts, rank, group_size, &in, &out)) !=
        TUTTI_OK)
        return st;
    if (in == 0)
        return TUTTI_OK;
    *elems_out = in;
    if (in_place && p->collective == TUTTI_COLL_REDUCE_SCATTER)
        *plan_out = TUTTI__PREP_SCALE_TO_RECV; /* input may be overwritten */
    else if (output_takes_input(p, rank))
        *plan_out = TUTTI__PREP_SCALE_TO_RECV; /* then reduce in place */
    else
        /* reduce_scatter out of place, a reduce's other ranks (whose one
         * buffer is only an input, in place or not): scale aside. */
        *plan_out = TUTTI__PREP_SCALE_TO_STAGE;
    return TUTTI_OK;
}

tutti_status_t tutti__coll_prepare(const tutti_instance_params_t *p,
                                   int rank, int group_size,
                                   tutti__stage_t *stage, tutti_alg_exec_t *x)
{
    size_t in = 0, esize = tutti_dtype_size(p->dtype);
    tutti__prep_t plan;
    tutti_status_t st;
    void *dst;

    if ((st = tutti__coll_prepare_plan(p, rank, group_size, x, &plan,
                                       &in)) != TUTTI_OK)
        return st;
    if (plan == TUTTI__PREP_NONE)
        return TUTTI_OK;
    if (plan == TUTTI__PREP_COPY_TO_STAGE) {
        if ((st = stage_reserve(p, stage, in * esize, "alltoall input")) !=
            TUTTI_OK)
            return st;
        if (in > 0)
            memcpy(stage->buf, x->sendbuf, in * esize);
        x->sendbuf = stage->buf;
        return TUTTI_OK;
    }
    if (plan == TUTTI__PREP_SCALE_TO_RECV) {
        dst = x->recvbuf;
    } else {
        if ((st = stage_reserve(p, stage, in * esize, "pre-scaled input")) !=
            TUTTI_OK)
            return st;
        dst = stage->buf;
    }
    if (tutti__scale(p->dtype, dst, x->sendbuf, in, p->pre_scale) != 0)
        return tutti__error(TUTTI_ERR_INTERNAL, "exec", "instance 0x%llx: "
                            "no scaling kernel for %s",
                            (unsigned long long)p->instance_key,
                            tutti_dtype_name(p->dtype));
    x->sendbuf = dst;
    return TUTTI_OK;
}

void tutti__coll_postscale_span(const tutti_instance_params_t *p, int rank,
                                const tutti_alg_exec_t *x, size_t *off_out,
                                size_t *count_out)
{
    size_t out = p->count, off = 0;
    *off_out = *count_out = 0;
    if (!tutti_collective_reduces(p->collective) || x->recvbuf == NULL)
        return;
    if (p->collective == TUTTI_COLL_REDUCE && rank != p->root)
        return;
    if (p->collective == TUTTI_COLL_REDUCE_SCATTER) {
        if (tutti__coll_per_rank(p)) {
            out = x->counts[rank];
            off = sum_counts(x->counts, rank);
        } else {
            off = p->count * (size_t)rank;
        }
        if (x->sendbuf != x->recvbuf)
            off = 0; /* out of place: the result starts recvbuf */
    }
    *off_out = off;
    *count_out = out;
}

tutti_status_t tutti__coll_postscale(const tutti_instance_params_t *p,
                                     int rank, int group_size,
                                     const tutti_alg_exec_t *x)
{
    size_t esize = tutti_dtype_size(p->dtype), out = 0, off = 0;
    int rc = 0;

    tutti__coll_postscale_span(p, rank, x, &off, &out);
    if (out == 0)
        return TUTTI_OK;
    char *buf = (char *)x->recvbuf + off * esize;
    /* avg divides (exact whenever the quotient is representable), then
     * post_scale multiplies: two roundings, not one by n's inverse. */
    if (p->op == TUTTI_OP_AVG)
        rc = tutti__divide(p->dtype, buf, out, group_size);
    if (rc == 0 && scales(p->post_scale))
        rc = tutti__scale(p->dtype, buf, buf, out, p->post_scale);
    if (rc != 0)
        return tutti__error(TUTTI_ERR_INTERNAL, "exec", "instance 0x%llx: "
                            "no avg or scaling kernel for %s",
                            (unsigned long long)p->instance_key,
                            tutti_dtype_name(p->dtype));
    return TUTTI_OK;
}

tutti_status_t tutti__coll_layout(const tutti_instance_params_t *p,
                                  const size_t *counts, int rank,
                                  int group_size, int in_place,
                                  size_t *in_off, size_t *in, size_t *out_off,
                                  size_t *out)
{
    tutti_status_t st = io_elems(p, counts, rank, group_size, in, out);
    if (st != TUTTI_OK)
        return st;
    *in_off = *out_off = 0;
    if (!in_place)
        return TUTTI_OK;
    int per_rank = tutti__coll_per_rank(p);
    switch (p->collective) {
    case TUTTI_COLL_REDUCE_SCATTER:
        /* The inputs fill the buffer; the result lands at block r. */
        *out_off = per_rank ? sum_counts(counts, rank)
                            : p->count * (size_t)rank;
        break;
    case TUTTI_COLL_ALLGATHER:
        if (per_rank)
            return tutti__error(TUTTI_ERR_UNSUPPORTED, "exec", "instance "
                                "0x%llx: allgather with per-rank counts in "
                                "place on CUDA memory through a host "
                                "implementation: its input's place is known "
                                "only after the exchange; call it out of "
                                "place", (unsigned long long)p->instance_key);
        /* the input sits at block r, as a gather's */
        __attribute__((fallthrough));
    case TUTTI_COLL_GATHER:
        *in_off = p->count * (size_t)rank;
        break;
    default:
        break;
    }
    return TUTTI_OK;
}

tutti_status_t tutti__coll_prepare_pooled(const tutti_instance_params_t *p,
                                          int rank, int group_size,
                                          tutti__stage_t **pool,
                                          tutti__stage_t **taken,
                                          tutti_alg_exec_t *x)
{
    tutti__stage_t *s = *pool;
    if (s != NULL)
        *pool = s->next;
    else if ((s = calloc(1, sizeof(*s))) == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "instance 0x%llx: "
                            "no memory for a stage buffer",
                            (unsigned long long)p->instance_key);
    s->next = NULL;
    *taken = s;
    return tutti__coll_prepare(p, rank, group_size, s, x);
}
