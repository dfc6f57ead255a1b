/*
 * The blocking helpers (tutti.h): one instance per distinct call, keyed by
 * a hash of its arguments with the top bit set, executed and waited for.
 */
#include <string.h>

#include "exec/exec.h"

/* Instance keys of the helpers: a hash of the arguments, top bit set so
 * they stay apart from keys hosts choose (tutti_execute refuses keys from
 * 2^63 up; the helpers take the internal path), the next bit clear: keys
 * from 2^63 + 2^62 up are point-to-point's (p2p.c). */
static uint64_t helper_key(const tutti_instance_params_t *p)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    uint64_t parts[5] = {(uint64_t)p->collective, (uint64_t)p->dtype,
                         (uint64_t)p->count, (uint64_t)p->op,
                         (uint64_t)(unsigned)p->root};
    for (int i = 0; i < 5; i++) {
        h ^= parts[i];
        h *= 0x100000001b3ULL;
    }
    return (h & ~(1ULL << 62)) | (1ULL << 63);
}

/* The helper @p call: its errors name it. */
static tutti_status_t run_blocking(tutti_group_t *g, const char *call,
                                   tutti_instance_params_t *p,
                                   const void *sendbuf, void *recvbuf)
{
    tutti_request_t *r;
    tutti_status_t st = tutti__group_check(g, call);
    if (st != TUTTI_OK)
        return st;
    p->instance_key = helper_key(p);
    st = tutti__execute(g, p, sendbuf, recvbuf, call, &r);
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_free(r);
    return st;
}

/* Every blocking helper with a count per rank. */
static tutti_status_t run_simple(tutti_group_t *g, const char *call,
                                 tutti_collective_t coll, const void *sendbuf,
                                 void *recvbuf, size_t count,
                                 tutti_dtype_t dtype, tutti_op_t op, int root)
{
    tutti_instance_params_t p;
    tutti_instance_params_init(&p);
    p.collective = coll;
    p.count = count;
    p.dtype = dtype;
    p.op = op;
    p.root = root;
    return run_blocking(g, call, &p, sendbuf, recvbuf);
}

tutti_status_t tutti_allreduce(tutti_group_t *g, const void *sendbuf,
                               void *recvbuf, size_t count,
                               tutti_dtype_t dtype, tutti_op_t op)
{
    return run_simple(g, "tutti_allreduce", TUTTI_COLL_ALLREDUCE, sendbuf,
                      recvbuf, count, dtype, op, 0);
}

tutti_status_t tutti_broadcast(tutti_group_t *g, void *buf, size_t count,
                               tutti_dtype_t dtype, int root)
{
    return run_simple(g, "tutti_broadcast", TUTTI_COLL_BROADCAST, buf, buf,
                      count, dtype, TUTTI_OP_SUM, root);
}

tutti_status_t tutti_reduce(tutti_group_t *g, const void *sendbuf,
                            void *recvbuf, size_t count, tutti_dtype_t dtype,
                            tutti_op_t op, int root)
{
    return run_simple(g, "tutti_reduce", TUTTI_COLL_REDUCE, sendbuf, recvbuf,
                      count, dtype, op, root);
}

tutti_status_t tutti_allgather(tutti_group_t *g, const void *sendbuf,
                               void *recvbuf, size_t count,
                               tutti_dtype_t dtype)
{
    return run_simple(g, "tutti_allgather", TUTTI_COLL_ALLGATHER, sendbuf,
                      recvbuf, count, dtype, TUTTI_OP_SUM, 0);
}

tutti_status_t tutti_gather(tutti_group_t *g, const void *sendbuf,
                            void *recvbuf, size_t count, tutti_dtype_t dtype,
                            int root)
{
    return run_simple(g, "tutti_gather", TUTTI_COLL_GATHER, sendbuf, recvbuf,
                      count, dtype, TUTTI_OP_SUM, root);
}

tutti_status_t tutti_reduce_scatter(tutti_group_t *g, const void *sendbuf,
                                    void *recvbuf, size_t count,
                                    tutti_dtype_t dtype, tutti_op_t op)
{
    return run_simple(g, "tutti_reduce_scatter", TUTTI_COLL_REDUCE_SCATTER,
                      sendbuf, recvbuf, count, dtype, op, 0);
}

tutti_status_t tutti_alltoall(tutti_group_t *g, const void *sendbuf,
                              void *recvbuf, size_t count,
                              tutti_dtype_t dtype)
{
    return run_simple(g, "tutti_alltoall", TUTTI_COLL_ALLTOALL, sendbuf,
                      recvbuf, count, dtype, TUTTI_OP_SUM, 0);
}

tutti_status_t tutti_allgatherv(tutti_group_t *g, const void *sendbuf,
                                size_t send_count, void *recvbuf,
                                size_t recv_capacity, tutti_dtype_t dtype,
                                size_t *recv_counts_out,
                                size_t *recv_total_out)
{
    tutti_instance_params_t p;
    tutti_request_t *r;
    tutti_request_info_t info;

    tutti_status_t st = tutti__group_check(g, "tutti_allgatherv");
    if (st != TUTTI_OK)
        return st;
    tutti_instance_params_init(&p);
    p.collective = TUTTI_COLL_ALLGATHER;
    p.count = TUTTI_COUNT_PER_RANK;
    p.dtype = dtype;
    p.send_count = send_count;
    p.recv_capacity = recv_capacity;
    p.instance_key = helper_key(&p);
    st = tutti__execute(g, &p, sendbuf, recvbuf, "tutti_allgatherv", &r);
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_info(r, &info);
    if ((st == TUTTI_OK || st == TUTTI_ERR_TOO_SMALL) && info.recv_counts) {
        if (recv_counts_out)
            memcpy(recv_counts_out, info.recv_counts,
                   (size_t)g->size * sizeof(size_t));
        if (recv_total_out)
            *recv_total_out = info.recv_total;
    }
    tutti_request_free(r);
    return st;
}

tutti_status_t tutti_barrier(tutti_group_t *g)
{
    unsigned char in = 0, out;
    return run_simple(g, "tutti_barrier", TUTTI_COLL_ALLREDUCE, &in, &out, 1,
                      TUTTI_UINT8, TUTTI_OP_MAX, 0);
}
