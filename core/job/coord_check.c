/*
 * The coordinator's checks of joins and proposals (coord_check.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "job/coord_check.h"
#include "job/job.h"

/* The first index of @p order (n entries) that makes it no permutation of
 * 0..n-1, or -1 if it is one. */
static int not_permutation(const int32_t *order, int n)
{
    unsigned char seen[TUTTI__MAX_MEMBERS] = {0};
    for (int i = 0; i < n; i++) {
        if (order[i] < 0 || order[i] >= n || seen[order[i]])
            return i;
        seen[order[i]] = 1;
    }
    return -1;
}

/* Writes why task @p task's join of group @p key is refused ("group 0x2a:
 * task 1's join: host name not NUL-terminated ..."); returns 0. */
static int join_refused(char *why, size_t len, uint64_t key, int task,
                        const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int join_refused(char *why, size_t len, uint64_t key, int task,
                        const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(why, len,
                     "group 0x%llx: task %d's join: ", (unsigned long long)key,
                     task);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < len)
        vsnprintf(why + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

/* Whether a join as the wire brought it is one a member sends: its
 * device as the frame's, every field in its range, every string ended
 * within its field.  0 with why (the field, its value, what was
 * expected); nothing of it is used before. */
int tutti__coord_join_ok(const tutti__ctrl_msg_t *msg,
                         const tutti__join_payload_t *j, char *why, size_t len)
{
    uint64_t key = msg->group_key;
    int task = msg->from_task;
    if (j->device_index != msg->device_index)
        return join_refused(why, len, key, task,
                            "device_index %d: expected "
                            "%d, the frame's device",
                            j->device_index, msg->device_index);
    if (j->device_index < 0)
        return join_refused(why, len, key, task,
                            "device_index %d: expected "
                            "at least 0",
                            j->device_index);
    if ((unsigned)j->device_type >= TUTTI_DEVICE_COUNT)
        return join_refused(why, len, key, task,
                            "device_type %d: expected "
                            "0..%d",
                            j->device_type, TUTTI_DEVICE_COUNT - 1);
    if (j->num_mods < 0 || j->num_mods > TUTTI__MAX_FINGERPRINTS)
        return join_refused(why, len, key, task,
                            "num_mods %d: expected "
                            "0..%d",
                            j->num_mods, TUTTI__MAX_FINGERPRINTS);
    for (int k = 0; k < j->num_mods; k++) {
        const tutti__fingerprint_t *f = &j->mods[k];
        if (memchr(f->name, '\0', sizeof(f->name)) == NULL ||
            memchr(f->version, '\0', sizeof(f->version)) == NULL)
            return join_refused(why, len, key, task,
                                "module %d: name or "
                                "version not NUL-terminated within its %zu "
                                "or %zu bytes",
                                k, sizeof(f->name), sizeof(f->version));
    }
    if (memchr(j->host, '\0', sizeof(j->host)) == NULL)
        return join_refused(why, len, key, task,
                            "host name not "
                            "NUL-terminated within its %zu bytes",
                            sizeof(j->host));
    if (j->numa_node < -1)
        return join_refused(why, len, key, task,
                            "numa_node %d: expected -1 "
                            "(unknown) or at least 0",
                            j->numa_node);
    if (j->has_order != 0 && j->has_order != 1)
        return join_refused(why, len, key, task,
                            "has_order %d: expected 0 "
                            "or 1",
                            j->has_order);
    if (j->device_order != TUTTI_ORDER_TASK &&
        j->device_order != TUTTI_ORDER_TOPOLOGY)
        return join_refused(why, len, key, task,
                            "device_order %d: expected "
                            "%d (task) or %d (topology)",
                            j->device_order, TUTTI_ORDER_TASK,
                            TUTTI_ORDER_TOPOLOGY);
    return 1;
}

/* What a caller may get wrong in a join (its member checked neither):
 * the group's size, and a ring_order that is no permutation. */
int tutti__coord_join_args_ok(const tutti__ctrl_msg_t *msg,
                              const tutti__join_payload_t *j, char *why,
                              size_t len)
{
    unsigned long long key = (unsigned long long)msg->group_key;
    int most = j->device_type == TUTTI_DEVICE_CUDA ? TUTTI__MAX_CUDA_MEMBERS
                                                   : TUTTI__MAX_MEMBERS;
    int bad;
    if (j->size < 1 || j->size > most) {
        snprintf(why, len,
                 "group 0x%llx: group size %d: expected 1..%d for "
                 "%s devices",
                 key, j->size, most, tutti__job_dev_name(j->device_type));
        return 0;
    }
    if (j->has_order && (bad = not_permutation(j->order, j->size)) >= 0) {
        snprintf(why, len,
                 "group 0x%llx: ring_order is not a permutation "
                 "of 0..%d: ring_order[%d] is %d",
                 key, j->size - 1, bad, j->order[bad]);
        return 0;
    }
    return 1;
}

/* Writes why the proposal in @p msg is refused ("instance 0x7 of group
 * 0x2a: task 1's proposal: root 9: expected 0..3 for broadcast");
 * returns 0. */
int tutti__coord_inst_refused(char *why, size_t len,
                              const tutti__ctrl_msg_t *msg, const char *fmt,
                              ...)
{
    va_list ap;
    int n = snprintf(why, len,
                     "instance 0x%llx of group 0x%llx: task %d's "
                     "proposal: ",
                     (unsigned long long)msg->instance_key,
                     (unsigned long long)msg->group_key, msg->from_task);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < len)
        vsnprintf(why + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

/* Whether proposal @p p (of the sender's member @p msg->device_index in
 * group @p f) is one a member of the group sends: its own rank, the
 * group's size, type and tasks, every field a value of its kind, the
 * count within what tutti_execute takes.  Members check their calls
 * (tutti__coll_check_instance); nothing outside reaches a module. */
int tutti__coord_inst_ok(const tutti__ctrl_msg_t *msg, const coord_formed_t *f,
                         const tutti__inst_payload_t *p, char *why, size_t len)
{
    tutti_collective_t c = (tutti_collective_t)p->collective;
    if (p->size != f->size)
        return tutti__coord_inst_refused(why, len, msg,
                                         "size %d: expected %d, the "
                                         "group's",
                                         p->size, f->size);
    if (p->rank < 0 || p->rank >= f->size)
        return tutti__coord_inst_refused(
            why, len, msg, "rank %d: expected 0..%d", p->rank, f->size - 1);
    const tutti_locality_t *at = &f->members[p->rank];
    if (at->task != msg->from_task || at->device_index != msg->device_index)
        return tutti__coord_inst_refused(
            why, len, msg,
            "rank %d: expected the sender's "
            "own; rank %d is task %d device %d, the sender "
            "task %d device %d",
            p->rank, p->rank, at->task, at->device_index, msg->from_task,
            msg->device_index);
    if (p->device_type != f->device_type)
        return tutti__coord_inst_refused(why, len, msg,
                                         "device_type %d: expected %d, the "
                                         "group's",
                                         p->device_type, f->device_type);
    if (p->num_tasks != f->num_tasks)
        return tutti__coord_inst_refused(why, len, msg,
                                         "num_tasks %d: expected %d, the "
                                         "group's",
                                         p->num_tasks, f->num_tasks);
    if ((unsigned)c >= TUTTI_COLL_COUNT)
        return tutti__coord_inst_refused(why, len, msg,
                                         "collective %d: expected 0..%d",
                                         p->collective, TUTTI_COLL_COUNT - 1);
    if ((unsigned)p->dtype >= TUTTI_DTYPE_COUNT)
        return tutti__coord_inst_refused(why, len, msg,
                                         "dtype %d: expected 0..%d", p->dtype,
                                         TUTTI_DTYPE_COUNT - 1);
    if ((unsigned)p->op >= TUTTI_OP_COUNT)
        return tutti__coord_inst_refused(why, len, msg, "op %d: expected 0..%d",
                                         p->op, TUTTI_OP_COUNT - 1);
    if (tutti_collective_rooted(c) && (p->root < 0 || p->root >= f->size))
        return tutti__coord_inst_refused(
            why, len, msg, "root %d: expected 0..%d for %s", p->root,
            f->size - 1, tutti_collective_name(c));
    if (p->count == (uint64_t)TUTTI_COUNT_PER_RANK) {
        if (c != TUTTI_COLL_ALLGATHER && c != TUTTI_COLL_REDUCE_SCATTER &&
            c != TUTTI_COLL_ALLTOALL)
            return tutti__coord_inst_refused(
                why, len, msg,
                "count per-rank: expected a "
                "count for %s (per-rank counts are for "
                "allgather, reduce_scatter and alltoall)",
                tutti_collective_name(c));
    } else if (p->count > SIZE_MAX / 8 / (size_t)f->size) {
        return tutti__coord_inst_refused(why, len, msg,
                                         "count %llu: expected at most "
                                         "%zu in a group of %d",
                                         (unsigned long long)p->count,
                                         SIZE_MAX / 8 / (size_t)f->size,
                                         f->size);
    }
    if (memchr(p->algorithm, '\0', sizeof(p->algorithm)) == NULL)
        return tutti__coord_inst_refused(why, len, msg,
                                         "algorithm not NUL-terminated "
                                         "within its %zu bytes",
                                         sizeof(p->algorithm));
    return 1;
}
