/*
 * Point-to-point (tutti_isend, tutti_irecv and their blocking forms): a
 * message from one member to another, matched by sender and tag.
 *
 * Each (direction, peer, tag) is an instance of its own, kept in the
 * group's table under a key from 2^63 + 2^62 up (no host's key, no
 * blocking helper's) and resolved here, without the coordinator: only the
 * two ends take part.  Its n-th execution is the n-th message between the
 * two under that tag, so the sender's and the receiver's counts agree
 * without a word between them, messages under one tag arrive in the order
 * they were sent, and messages under distinct tags may be received in any
 * order (each its own instance, so none waits behind another).  On the
 * wire a message is keyed (P2P_WIRE | tag, n, tag): an instance per tag,
 * as the channels expect of what may be received out of order (they
 * buffer a message that arrives before its receive is posted only when a
 * receive of another instance waits behind it).  The implementation is the
 * core's own, one transfer per execution through the services every
 * module uses, so requests, waits, callbacks, time limits, the flight
 * recorder and the timeline treat a message as any other execution.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "exec/exec.h"

/* Table keys: P2P_KEYS | dir | peer << 32 | tag (peer below 2^29: no
 * group has half a billion members). */
#define P2P_KEYS (3ULL << 62)
#define P2P_RECV (1ULL << 61)
#define P2P_WIRE P2P_KEYS      /* with the tag: the instance key on the
                                  wire */

/* One direction, peer and tag: the transfer of its execution in flight
 * (executions of an instance run one at a time). */
typedef struct {
    int peer;
    uint32_t tag;
    int is_recv;
    tutti_xfer_t xfer;
} p2p_state_t;

/* exec->send_count holds the message's bytes. */
static tutti_status_t p2p_run(void *state, tutti_alg_exec_t *exec)
{
    p2p_state_t *s = state;
    const tutti_core_ops_t *core = exec->core;
    tutti_status_t st =
        s->is_recv ? core->recv(exec, s->peer, s->tag, exec->recvbuf,
                                exec->send_count, NULL, &s->xfer)
                   : core->send(exec, s->peer, s->tag, exec->sendbuf,
                                exec->send_count, &s->xfer);
    if (st != TUTTI_OK)
        return st;
    return core->test(exec, &s->xfer);
}

static tutti_status_t p2p_progress(void *state, tutti_alg_exec_t *exec)
{
    p2p_state_t *s = state;
    return exec->core->test(exec, &s->xfer);
}

static void p2p_fini(void *state)
{
    free(state);
}

static const tutti_alg_ops_t p2p_ops = {
    .size = sizeof(tutti_alg_ops_t), .run = p2p_run,
    .progress = p2p_progress, .fini_context = p2p_fini};

static const tutti_alg_impl_t p2p_impls[2] = {
    {.name = "send", .description = "the core's point-to-point send",
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &p2p_ops},
    {.name = "recv", .description = "the core's point-to-point receive",
     .device_types = TUTTI_DEVICE_BIT(TUTTI_DEVICE_CPU), .ops = &p2p_ops}};

/* Not in the registry: module is never read for these (no group state). */
static const tutti__impl_entry_t p2p_entries[2] = {
    {.impl = &p2p_impls[0], .module = SIZE_MAX},
    {.impl = &p2p_impls[1], .module = SIZE_MAX}};

/* The instance of (@p is_recv, @p peer, @p tag), made resolved on first
 * use. */
static tutti_status_t p2p_instance(tutti_group_t *g, int is_recv, int peer,
                                   uint32_t tag, tutti__instance_t **out)
{
    uint64_t key = P2P_KEYS | (is_recv ? P2P_RECV : 0) |
                   (uint64_t)peer << 32 | tag;
    tutti__instance_t *inst = tutti__instance_find(g, key);
    tutti_status_t st;
    if (inst != NULL) {
        *out = inst;
        return TUTTI_OK;
    }
    if (g->num_instances >= g->num_buckets &&
        (st = tutti__instance_table(g, 2 * g->num_buckets)) != TUTTI_OK)
        return st;
    inst = calloc(1, sizeof(*inst));
    p2p_state_t *s = calloc(1, sizeof(*s));
    if (inst == NULL || s == NULL) {
        free(inst);
        free(s);
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "group 0x%llx rank "
                            "%d: no memory for the %s of tag %u %s rank %d",
                            (unsigned long long)g->key, g->rank,
                            is_recv ? "receives" : "sends", tag,
                            is_recv ? "from" : "to", peer);
    }
    *s = (p2p_state_t){.peer = peer, .tag = tag, .is_recv = is_recv};
    inst->key = key;
    inst->impl = &p2p_entries[is_recv];
    inst->state = s;
    inst->resolved = 1;
    inst->mode = TUTTI__MODE_HOST;
    /* What the executor reads of the params: the key, and a count other
     * than 0 (each message's own length is in its execution). */
    inst->params.size = sizeof(inst->params);
    inst->params.instance_key = key;
    inst->params.collective = TUTTI_COLL_PERMUTE; /* read by nothing here */
    inst->params.count = 1;
    inst->alg = (tutti_alg_instance_t){
        .size = sizeof(inst->alg), .collective = TUTTI_COLL_PERMUTE,
        .dtype = TUTTI_UINT8, .count = 1, .rank = g->rank,
        .group_size = g->size, .num_tasks = g->num_tasks,
        .device_type = g->device_type, .instance_key = key,
        .localities = g->localities, .device_index = g->device_index};
    /* What messages, time limits and the flight recorder name it by. */
    snprintf(inst->algorithm, sizeof(inst->algorithm), "%s rank %d tag %u",
             is_recv ? "recv from" : "send to", peer, tag);
    tutti__instance_insert(g, inst);
    *out = inst;
    return TUTTI_OK;
}

/* Checks a call of @p call and issues its execution. */
static tutti_status_t p2p_post(tutti_group_t *g, int is_recv,
                               const void *sbuf, void *rbuf, size_t count,
                               tutti_dtype_t dtype, int peer, uint32_t tag,
                               const char *call, tutti_request_t **out)
{
    tutti_status_t st = tutti__group_check(g, call);
    if (st != TUTTI_OK)
        return st;
    if (out == NULL)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: request_out "
                            "is NULL", call);
    size_t esize = tutti_dtype_size(dtype);
    if (esize == 0)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: dtype %d is "
                            "not a tutti_dtype_t; expected 0 to %d", call,
                            (int)dtype, TUTTI_DTYPE_COUNT - 1);
    if (peer < 0 || peer >= g->size || peer == g->rank)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: group 0x%llx "
                            "rank %d: peer %d: expected another rank of the "
                            "group, 0 to %d (a message to itself, or from "
                            "any source, is not supported)", call,
                            (unsigned long long)g->key, g->rank, peer,
                            g->size - 1);
    if (count > SIZE_MAX / esize)
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: count %zu of "
                            "%s overflows a size_t of bytes", call, count,
                            tutti_dtype_name(dtype));
    if (count > 0 && (is_recv ? rbuf == NULL : sbuf == NULL))
        return tutti__error(TUTTI_ERR_INVALID_ARG, "exec", "%s: buf is NULL "
                            "for %zu elements", call, count);
    if (g->cuda != NULL)
        return tutti__error(TUTTI_ERR_UNSUPPORTED, "exec", "%s: group 0x%llx "
                            "is a CUDA group: point-to-point runs on cpu "
                            "groups only", call, (unsigned long long)g->key);
    tutti__group_check_health(g);
    if (g->failed != TUTTI_OK)
        return tutti__error(g->failed, "exec", "group 0x%llx rank %d failed "
                            "earlier and must be left: %s",
                            (unsigned long long)g->key, g->rank, g->failure);
    /* NULL: gcc cannot tell that p2p_instance sets it whenever it
     * returns TUTTI_OK (its errors come from tutti__error). */
    tutti__instance_t *inst = NULL;
    if ((st = p2p_instance(g, is_recv, peer, tag, &inst)) != TUTTI_OK)
        return st;
    tutti_request_t *r = tutti__request_get(g);
    if (r == NULL)
        return tutti__error(TUTTI_ERR_NO_MEMORY, "exec", "group 0x%llx: no "
                            "memory for a request of %s", (unsigned long
                            long)g->key, call);
    r->inst = inst;
    r->priority = 0;
    r->timeout = g->timeout;
    r->link.instance_key = P2P_WIRE | tag;
    r->link.algorithm = inst->algorithm;
    r->exec = (tutti_alg_exec_t){
        .size = sizeof(r->exec), .core = g->core_ops, .inst = &inst->alg,
        .sendbuf = sbuf, .recvbuf = rbuf, .step = inst->next_step++,
        .core_private = &r->link, .send_count = count * esize,
        .recv_total = is_recv ? count : 0};
    tutti__request_enqueue(g, r, count * esize);
    *out = r;
    return TUTTI_OK;
}

tutti_status_t tutti_isend(tutti_group_t *group, const void *buf,
                           size_t count, tutti_dtype_t dtype, int peer,
                           uint32_t tag, tutti_request_t **request_out)
{
    return p2p_post(group, 0, buf, NULL, count, dtype, peer, tag,
                    "tutti_isend", request_out);
}

tutti_status_t tutti_irecv(tutti_group_t *group, void *buf, size_t count,
                           tutti_dtype_t dtype, int peer, uint32_t tag,
                           tutti_request_t **request_out)
{
    return p2p_post(group, 1, NULL, buf, count, dtype, peer, tag,
                    "tutti_irecv", request_out);
}

/* A message, waited for. */
static tutti_status_t p2p_blocking(tutti_group_t *g, int is_recv,
                                   const void *sbuf, void *rbuf, size_t count,
                                   tutti_dtype_t dtype, int peer, uint32_t tag,
                                   const char *call)
{
    tutti_request_t *r = NULL;
    tutti_status_t st = p2p_post(g, is_recv, sbuf, rbuf, count, dtype, peer,
                                 tag, call, &r);
    if (st != TUTTI_OK)
        return st;
    st = tutti_request_wait(r);
    tutti_request_free(r);
    return st;
}

tutti_status_t tutti_send(tutti_group_t *group, const void *buf, size_t count,
                          tutti_dtype_t dtype, int peer, uint32_t tag)
{
    return p2p_blocking(group, 0, buf, NULL, count, dtype, peer, tag,
                        "tutti_send");
}

tutti_status_t tutti_recv(tutti_group_t *group, void *buf, size_t count,
                          tutti_dtype_t dtype, int peer, uint32_t tag)
{
    return p2p_blocking(group, 1, NULL, buf, count, dtype, peer, tag,
                        "tutti_recv");
}
