/* The correctness matrix (see check_common.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_common.h"
#include "../../tools/pattern.h"

const size_t tutti_check_counts[] = {0, 1, 3, 1023, (1u << 20) + 3};
const int tutti_check_num_counts = 5;

#define MAX_COUNT ((1u << 20) + 3)

typedef struct {
    tutti_group_t *g;
    FILE *log;
    char *in, *out;
    uint64_t key;
    tutti_check_result_t res;
} checker_t;

static void one(checker_t *c, tutti_collective_t coll, tutti_dtype_t dtype,
                tutti_op_t op, size_t count, int root, int in_place)
{
    int rank = tutti_group_rank(c->g), n = tutti_group_size(c->g);
    size_t bytes = count * tutti_dtype_size(dtype), first = 0;
    tutti_instance_params_t p;
    tutti_request_t *req;
    tutti_status_t st;

    tutti_instance_params_init(&p);
    p.instance_key = ++c->key;
    p.collective = coll;
    p.dtype = dtype;
    p.op = op;
    p.count = count;
    p.root = root;
    tutti_pattern_t pat = {coll, dtype, op, n, root, count, NULL, NULL, 0, 0};
    tutti_pattern_fill(&pat, rank, c->in);
    memset(c->out, 0x5a, bytes + 64);
    void *send = c->in, *recv = in_place ? c->in : c->out;
    st = tutti_execute(c->g, &p, send, recv, &req);
    if (st == TUTTI_OK) {
        st = tutti_request_wait(req);
        tutti_request_free(req);
    }
    c->res.checks++;
    const char *what = tutti_collective_name(coll);
    if (st != TUTTI_OK) {
        fprintf(c->log, "rank %d: %s %s %s count %zu root %d %s: %s: %s\n",
                rank, what, tutti_dtype_name(dtype), tutti_op_name(op), count,
                root, in_place ? "in-place" : "out-of-place",
                tutti_strerror(st), tutti_last_error());
        c->res.failures++;
        return;
    }
    size_t wrong = tutti_pattern_check(&pat, rank, recv, &first);
    /* Nothing past the output may be written. */
    int overrun = !in_place && (unsigned char)c->out[bytes] != 0x5a;
    if (wrong == 0 && !overrun)
        return;
    fprintf(c->log, "rank %d: %s %s %s count %zu root %d %s: %zu wrong "
            "elements (first at %zu: got %g, want %g)%s\n", rank, what,
            tutti_dtype_name(dtype), tutti_op_name(op), count, root,
            in_place ? "in-place" : "out-of-place", wrong, first,
            wrong ? tutti_pattern_get(recv, dtype, first) : 0.0,
            tutti_pattern_expected(&pat, rank, first),
            overrun ? "; wrote past the output" : "");
    c->res.failures++;
}

/* The device resolver's table: ranks in task-then-device order, every
 * member on this one host, a NUMA node for each (or -1: unknown). */
static int check_localities(tutti_group_t *g, FILE *log)
{
    char host[64];
    tutti_locality_t prev = {-1, -1, -1, -1}, loc;
    int bad = 0;
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    for (int r = 0; r < tutti_group_size(g); r++) {
        if (tutti_group_locality(g, r, &loc) != TUTTI_OK ||
            loc.task < prev.task ||
            (loc.task == prev.task && loc.device_index <= prev.device_index) ||
            loc.host != 0 || loc.numa_node < -1) {
            fprintf(log, "rank %d: locality task %d device %d host %d numa "
                    "%d out of order or wrong\n", r, loc.task,
                    loc.device_index, loc.host, loc.numa_node);
            bad++;
        }
        prev = loc;
    }
    const char *name = tutti_group_host(g, 0);
    if (name == NULL || strcmp(name, host) != 0 ||
        tutti_group_host(g, 1) != NULL) {
        fprintf(log, "host 0 is '%s', this host is '%s'\n",
                name ? name : "(none)", host);
        bad++;
    }
    return bad;
}

tutti_check_result_t tutti_check_matrix(tutti_group_t *g, FILE *log)
{
    checker_t c = {g, log, NULL, NULL, 0, {0, 0}};
    c.res.checks = 1;
    c.res.failures = check_localities(g, log);
    size_t cap = (size_t)MAX_COUNT * 8 + 64;
    c.in = malloc(cap);
    c.out = malloc(cap);
    if (c.in == NULL || c.out == NULL) {
        fprintf(log, "cannot allocate test buffers\n");
        c.res.failures = 1;
        goto out;
    }
    for (int d = 0; d < TUTTI_DTYPE_COUNT; d++) {
        for (int k = 0; k < tutti_check_num_counts; k++) {
            size_t count = tutti_check_counts[k];
            for (int op = 0; op <= TUTTI_OP_MAX; op++)
                for (int ip = 0; ip < 2; ip++)
                    one(&c, TUTTI_COLL_ALLREDUCE, (tutti_dtype_t)d,
                        (tutti_op_t)op, count, 0, ip);
            for (int root = 0; root < tutti_group_size(g); root++)
                one(&c, TUTTI_COLL_BROADCAST, (tutti_dtype_t)d, TUTTI_OP_SUM,
                    count, root, root % 2);
        }
    }
out:
    free(c.in);
    free(c.out);
    return c.res;
}
