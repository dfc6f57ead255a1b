/*
 * The chunk pipeline of the tree module's HierarchicalTreeBroadcast and
 * TreeReduce (internal to alg_tree.so).  The buffer travels in chunks,
 * several in flight, one per lane: chunk c works on lane c % lanes, so a
 * member forwards one chunk while the next arrives.  Each member posts its
 * sends in chunk order (next_send), so every channel carries chunks in
 * order and the receive a channel's head waits for is always posted.
 *
 * The pipeline keeps each lane's chunk and phase; what a lane does with
 * its chunk (receive, reduce, forward) and the transfers it holds are the
 * algorithm's, in a function that advances one lane.  The two loops over
 * the lanes below take that function and are always inlined into the
 * algorithm's run and progress, so each lane step is a direct call.
 */
#ifndef TUTTI_ALG_TREE_LANES_H
#define TUTTI_ALG_TREE_LANES_H

#include <stddef.h>

#include <tutti/module.h>

#include "tree_plan.h"

#define TUTTI_ALG_TREE_LANES 8

/* A lane's phases: receiving its chunk, ready to send it (once it is
 * next_send), sending it, past the last chunk. */
enum {
    TUTTI_ALG_TREE_LANE_RECV,
    TUTTI_ALG_TREE_LANE_READY,
    TUTTI_ALG_TREE_LANE_SEND,
    TUTTI_ALG_TREE_LANE_DONE
};

typedef struct {
    size_t chunk;          /* chunk index this lane works on */
    int phase;             /* TUTTI_ALG_TREE_LANE_* */
} tutti_alg_tree_lane_t;

typedef struct {
    size_t bytes, chunk_bytes, nchunks;
    size_t next_send;      /* the next chunk whose sends may be posted */
    int lanes;             /* chunk c works on lane c % lanes */
    tutti_alg_tree_lane_t lane[TUTTI_ALG_TREE_LANES];
} tutti_alg_tree_lanes_t;

/** Advances (or, from tutti_alg_tree_lanes_start(), begins) lane @p lane
 *  of the algorithm's @p state as far as it can go now: TUTTI_OK or
 *  TUTTI_INPROGRESS, or an error of the core's as it is. */
typedef tutti_status_t (*tutti_alg_tree_lane_cb_t)(void *state, int lane,
                                                   tutti_alg_exec_t *x);

/** Cuts @p inst's buffer into chunks of @p plan's chunk bytes rounded down
 *  to whole elements, and gives every chunk a lane, at most
 *  TUTTI_ALG_TREE_LANES (init_context). */
void tutti_alg_tree_lanes_init(tutti_alg_tree_lanes_t *p,
                               const tutti_alg_instance_t *inst,
                               const tutti_alg_tree_plan_t *plan);

/** Bytes of chunk @p c: chunk_bytes, less for the last one. */
static inline size_t tutti_alg_tree_chunk_len(const tutti_alg_tree_lanes_t *p,
                                              size_t c)
{
    size_t off = c * p->chunk_bytes;
    return p->bytes - off < p->chunk_bytes ? p->bytes - off : p->chunk_bytes;
}

/** Starts a run: lane i takes chunk i, and @p begin starts each lane.
 *  Returns the first error of @p begin as it is. */
static inline __attribute__((always_inline)) tutti_status_t
tutti_alg_tree_lanes_start(tutti_alg_tree_lanes_t *p, void *state,
                           tutti_alg_exec_t *x, tutti_alg_tree_lane_cb_t begin)
{
    p->next_send = 0;
    for (int i = 0; i < p->lanes; i++) {
        p->lane[i].chunk = (size_t)i;
        tutti_status_t st = begin(state, i, x);
        if (st != TUTTI_OK)
            return st;
    }
    return TUTTI_OK;
}

/** One pass of @p step over every lane: TUTTI_OK once every lane is past
 *  the last chunk, TUTTI_INPROGRESS, or the first error of @p step. */
static inline __attribute__((always_inline)) tutti_status_t
tutti_alg_tree_lanes_progress(tutti_alg_tree_lanes_t *p, void *state,
                              tutti_alg_exec_t *x,
                              tutti_alg_tree_lane_cb_t step)
{
    size_t start = p->next_send;
    int done = 0;
    /* From the lane of the next chunk to send, so that one pass can post
     * several chunks in their order. */
    for (int i = 0; i < p->lanes; i++) {
        int lane = (int)((start + (size_t)i) % (size_t)p->lanes);
        tutti_status_t st = step(state, lane, x);
        if (st != TUTTI_OK && st != TUTTI_INPROGRESS)
            return st;
        done += p->lane[lane].phase == TUTTI_ALG_TREE_LANE_DONE;
    }
    return done == p->lanes ? TUTTI_OK : TUTTI_INPROGRESS;
}

#endif
