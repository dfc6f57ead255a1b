/*
 * tutti.Group: one member of a group (Context.join) and its collectives,
 * and tutti.allreduce on the default group.  A call takes views of its
 * arrays, checks
 * their sizes against what the collective reads and writes (libtutti
 * trusts the pointers it is given), derives the instance key from its
 * parameters (the same on every member making the same call), and either
 * waits for the request, the GIL released, or hands it to a Future.
 */
#include <string.h>

#include "tutti_py.h"

/* ---- a call's parameters --------------------------------------------- */

typedef struct {
    const char *name;
    tutti_collective_t coll;
    PyObject *a, *out;       /* out NULL or None: in place on a */
    const char *dtype;
    tutti_op_t op;
    int root;
    double pre_scale, post_scale;
    const char *algorithm;
    double timeout;
    Py_ssize_t stream;
    int async_op;
    PyObject *permutation;   /* permute */
    PyObject *counts;        /* per-rank counts, or NULL */
    int per_rank;
    int result_on_root;      /* reduce, gather: None on other ranks */
} call_t;

static uint64_t fnv(uint64_t h, uint64_t v)
{
    h ^= v;
    return h * 0x100000001b3ULL;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

/* The instance key of a call: every parameter an instance fixes, hashed,
 * below 2^63 (the blocking helpers' keys are above). */
static uint64_t key_of(const tutti_instance_params_t *p, const int *perm,
                       int n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, 0x7079); /* "py": apart from other hosts' keys */
    h = fnv(h, (uint64_t)p->collective);
    h = fnv(h, (uint64_t)p->dtype);
    h = fnv(h, (uint64_t)p->count);
    h = fnv(h, (uint64_t)p->op);
    h = fnv(h, (uint64_t)(unsigned)p->root);
    h = fnv(h, bits_of(p->pre_scale));
    h = fnv(h, bits_of(p->post_scale));
    h = fnv_str(h, p->algorithm);
    for (int i = 0; perm != NULL && i < n; i++)
        h = fnv(h, (uint64_t)(unsigned)perm[i]);
    return h & ~(1ULL << 63);
}

/* @p seq as @p n integers >= 0 (and < @p below where > 0) into a new
 * array of @p elem bytes each (int or size_t). */
static void *int_list(PyObject *seq, int n, long long below, size_t elem,
                      const char *call, const char *arg)
{
    PyObject *fast = PySequence_Fast(seq, "");
    if (fast == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a sequence of %d "
                     "integers", call, arg, n);
        return NULL;
    }
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %zd entries; the group "
                     "has %d ranks", call, arg,
                     PySequence_Fast_GET_SIZE(fast), n);
        Py_DECREF(fast);
        return NULL;
    }
    char *out = PyMem_Calloc((size_t)n ? (size_t)n : 1, elem);
    for (int i = 0; out != NULL && i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if ((v == -1 && PyErr_Occurred()) || v < 0 ||
            (below > 0 && v >= below)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s: %s[%d] is not an integer "
                         "in 0..%lld", call, arg, i,
                         below > 0 ? below - 1 : (long long)PY_SSIZE_T_MAX);
            PyMem_Free(out);
            out = NULL;
        } else if (elem == sizeof(int)) {
            ((int *)out)[i] = (int)v;
        } else {
            ((size_t *)out)[i] = (size_t)v;
        }
    }
    if (out == NULL && !PyErr_Occurred())
        PyErr_NoMemory();
    Py_DECREF(fast);
    return out;
}

static int too_small(const char *call, const char *arg, size_t have,
                     size_t need, const char *why)
{
    PyErr_Format(PyExc_ValueError, "%s: %s holds %zu elements; %zu "
                 "needed (%s)", call, arg, have, need, why);
    return -1;
}

/* Counts and buffer sizes of call @p c on views @p a and @p o (o NULL:
 * in place) into @p p; -1 with an exception where they do not fit. */
static int shape_call(tpy_group_t *g, const call_t *c, tpy_view_t *a,
                      tpy_view_t *o, int sizes_only, const size_t *counts,
                      tutti_instance_params_t *p)
{
    size_t n = (size_t)g->size, ac = a->count;
    size_t oc = o ? o->count : ac;
    const char *oname = o ? "out" : "a (in place)";
    int on_root = g->rank == c->root;
    p->count = ac;
    switch (c->coll) {
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_BROADCAST:
    case TUTTI_COLL_PERMUTE:
        if (oc < ac)
            return too_small(c->name, oname, oc, ac, "as many as a");
        return 0;
    case TUTTI_COLL_REDUCE:
        if (on_root && oc < ac)
            return too_small(c->name, oname, oc, ac, "as many as a");
        return 0;
    case TUTTI_COLL_ALLGATHER:
        if (c->per_rank) {
            p->count = TUTTI_COUNT_PER_RANK;
            p->send_count = ac;
            p->recv_capacity = sizes_only ? 0 : oc;
            return 0;
        }
        if (o == NULL || oc / n < ac)
            return too_small(c->name, "out", o ? oc : 0, n * ac,
                             "group size x a's");
        return 0;
    case TUTTI_COLL_GATHER:
        if (on_root && (o == NULL || oc / n < ac))
            return too_small(c->name, "out", o ? oc : 0, n * ac,
                             "group size x a's, at the root");
        return 0;
    case TUTTI_COLL_REDUCE_SCATTER:
    case TUTTI_COLL_ALLTOALL:
        if (c->per_rank) {
            size_t sum = 0;
            for (size_t i = 0; i < n; i++)
                sum += counts[i];
            if (sum != ac) {
                PyErr_Format(PyExc_ValueError, "%s: a holds %zu elements; "
                             "the counts add up to %zu", c->name, ac, sum);
                return -1;
            }
            p->count = TUTTI_COUNT_PER_RANK;
            p->counts = counts;
            if (c->coll == TUTTI_COLL_REDUCE_SCATTER)
                return oc < counts[g->rank]
                           ? too_small(c->name, oname, oc, counts[g->rank],
                                       "counts[rank]")
                           : 0;
            p->recv_capacity = sizes_only ? 0 : oc;
            return 0;
        }
        if (ac % n != 0) {
            PyErr_Format(PyExc_ValueError, "%s: a holds %zu elements, not "
                         "a multiple of the group size %zu", c->name, ac, n);
            return -1;
        }
        p->count = ac / n;
        if (c->coll == TUTTI_COLL_ALLTOALL && oc < ac)
            return too_small(c->name, oname, oc, ac, "as many as a");
        if (oc < ac / n)
            return too_small(c->name, oname, oc, ac / n, "a's / size");
        return 0;
    default:
        PyErr_Format(PyExc_SystemError, "%s: collective %d", c->name,
                     (int)c->coll);
        return -1;
    }
}

/* The object a finished call returns. */
static PyObject *result_of(tpy_group_t *g, const call_t *c)
{
    if (c->result_on_root && g->rank != c->root)
        Py_RETURN_NONE;
    PyObject *r = c->out != NULL && c->out != Py_None ? c->out : c->a;
    Py_INCREF(r);
    return r;
}

static int check_device(tpy_group_t *g, const call_t *c, const tpy_view_t *v,
                        const char *arg)
{
    if (v->cuda_device == g->cuda_device)
        return 0;
    char where[32], group[32];
    snprintf(where, sizeof(where), v->cuda_device < 0 ? "host memory"
             : "cuda:%d", v->cuda_device);
    snprintf(group, sizeof(group), g->cuda_device < 0 ? "cpu" : "cuda:%d",
             g->cuda_device);
    PyErr_Format(PyExc_ValueError, "%s: %s lies in %s; the group is a %s "
                 "group (join one on that device, or use tutti's module "
                 "functions, which pick it)", c->name, arg, where, group);
    return -1;
}

/* Run call @p c: views, checks, execute, then wait or a Future. */
static PyObject *run_call(tpy_group_t *g, const call_t *c)
{
    tpy_view_t v[2];
    int no_out = c->out == NULL || c->out == Py_None;
    int nv = 0, in_place = no_out || c->out == c->a;
    /* Per-rank allgather and alltoall without out: the sizes only. */
    int sizes_only = c->per_rank && no_out &&
                     (c->coll == TUTTI_COLL_ALLGATHER ||
                      c->coll == TUTTI_COLL_ALLTOALL);
    int *perm = NULL;
    size_t *counts = NULL;
    tutti_request_t *r = NULL;
    PyObject *result = NULL;
    tutti_instance_params_t p;

    if (g->group == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: the group was left", c->name);
        return NULL;
    }
    if (sizes_only && c->async_op) {
        PyErr_Format(PyExc_ValueError, "%s: async_op needs out= (the call "
                     "that learns the sizes is blocking)", c->name);
        return NULL;
    }
    int writes_a = in_place && !(c->coll == TUTTI_COLL_REDUCE &&
                                 g->rank != c->root) &&
                   !(c->coll == TUTTI_COLL_GATHER) && !sizes_only;
    if (tpy_view_get(c->a, c->name, "a", writes_a, c->dtype, c->stream,
                     &v[0]) != 0)
        return NULL;
    nv = 1;
    if (!in_place) {
        if (tpy_view_get(c->out, c->name, "out", 1, c->dtype, c->stream,
                         &v[1]) != 0)
            goto out;
        nv = 2;
        if (v[1].dtype != v[0].dtype) {
            PyErr_Format(PyExc_ValueError, "%s: out holds %s, a holds %s",
                         c->name, tutti_dtype_name(v[1].dtype),
                         tutti_dtype_name(v[0].dtype));
            goto out;
        }
    }
    for (int i = 0; i < nv; i++)
        if (check_device(g, c, &v[i], i ? "out" : "a") != 0)
            goto out;
    if (c->permutation != NULL &&
        (perm = int_list(c->permutation, g->size, g->size, sizeof(int),
                         c->name, "permutation")) == NULL)
        goto out;
    if (c->counts != NULL &&
        (counts = int_list(c->counts, g->size, 0, sizeof(size_t), c->name,
                           "counts")) == NULL)
        goto out;
    tutti_instance_params_init(&p);
    p.collective = c->coll;
    p.dtype = v[0].dtype;
    p.op = c->op;
    p.root = c->root;
    p.algorithm = c->algorithm;
    p.pre_scale = c->pre_scale;
    p.post_scale = c->post_scale;
    p.permutation = perm;
    p.timeout = c->timeout;
    p.stream = (void *)c->stream;
    if (shape_call(g, c, &v[0], nv > 1 ? &v[1] : NULL, sizes_only, counts,
                   &p) != 0)
        goto out;
    p.instance_key = key_of(&p, perm, g->size);
    void *recv = sizes_only ? NULL : nv > 1 ? v[1].ptr : v[0].ptr;
    /* A gather's other ranks write nothing; their sendbuf as recvbuf
     * would say their input sits at block rank of it. */
    if (c->coll == TUTTI_COLL_GATHER && no_out)
        recv = NULL;

    tpy_group_lock(g);
    tutti_status_t st = tutti_execute(g->group, &p, v[0].ptr, recv, &r);
    if (st != TUTTI_OK) {
        tpy_group_unlock(g);
        tpy_raise(st, NULL);
        goto out;
    }
    if (c->async_op) {
        PyObject *res = result_of(g, c);
        PyObject *keep = Py_BuildValue("(OOO)", c->a,
                                       c->out ? c->out : Py_None,
                                       c->counts ? c->counts : Py_None);
        tpy_future_t *f = NULL;
        if (keep != NULL)
            f = tpy_future_new(g, r, c->name, res, keep, v, nv, counts,
                               c->per_rank);
        Py_XDECREF(res);
        Py_XDECREF(keep);
        if (f == NULL) {
            /* Nothing may read the arrays after they are let go. */
            int intr;
            tpy_wait(g, r, -1, c->name, &intr);
            tutti_request_free(r);
            tpy_group_unlock(g);
            goto out;
        }
        nv = 0;
        counts = NULL;
        tutti_request_set_callback(r, tpy_future_on_complete, f);
        tpy_group_unlock(g);
        result = (PyObject *)f;
        goto out;
    }
    int interrupted;
    st = tpy_wait(g, r, -1, c->name, &interrupted);
    if (st == TUTTI_OK && sizes_only) {
        /* The counts each rank gives (sends this one). */
        tutti_request_info_t info;
        tutti_request_info(r, &info);
        result = PyTuple_New(g->size);
        for (int i = 0; result != NULL && i < g->size; i++)
            PyTuple_SET_ITEM(result, i, PyLong_FromSize_t(
                                 info.recv_counts ? info.recv_counts[i] : 0));
    } else if (st == TUTTI_OK) {
        result = result_of(g, c);
    } else if (!interrupted) {
        tpy_raise(st, NULL);
    }
    tutti_request_free(r);
    tpy_group_unlock(g);
out:
    for (int i = 0; i < nv; i++)
        tpy_view_release(&v[i]);
    PyMem_Free(perm);
    PyMem_Free(counts);
    if (g->completed != NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        tpy_group_drain(g);
        PyErr_Restore(type, value, tb);
    }
    return result;
}

/* ---- the methods ----------------------------------------------------- */

#define COMMON_KW "dtype", "pre_scale", "post_scale", "algorithm", \
                  "timeout", "stream", "async_op"
#define COMMON_FMT "zddzdnp"
#define COMMON_ARGS(c) &(c).dtype, &(c).pre_scale, &(c).post_scale, \
                       &(c).algorithm, &(c).timeout, &(c).stream, \
                       &(c).async_op

static void call_init(call_t *c, const char *name, tutti_collective_t coll)
{
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->coll = coll;
}

static PyObject *g_allreduce(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "op", "out", COMMON_KW, NULL};
    call_t c;
    PyObject *op = NULL;
    call_init(&c, "allreduce", TUTTI_COLL_ALLREDUCE);
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (kw == NULL && nargs >= 1 && nargs <= 2) {
        /* allreduce(a) and allreduce(a, op): the common call, without
         * the general parser's cost (a tenth of an 8-byte call's). */
        c.a = PyTuple_GET_ITEM(args, 0);
        op = nargs > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
    } else if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O" COMMON_FMT,
                                            kwl, &c.a, &op, &c.out,
                                            COMMON_ARGS(c))) {
        return NULL;
    }
    if (tpy_op_parse(op, c.name, TUTTI_OP_SUM, &c.op) != 0)
        return NULL;
    return run_call(g, &c);
}

static PyObject *g_reduce(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "op", "root", "out", COMMON_KW, NULL};
    call_t c;
    PyObject *op = NULL;
    call_init(&c, "reduce", TUTTI_COLL_REDUCE);
    c.result_on_root = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Oi$O" COMMON_FMT, kwl,
                                     &c.a, &op, &c.root, &c.out,
                                     COMMON_ARGS(c)) ||
        tpy_op_parse(op, c.name, TUTTI_OP_SUM, &c.op) != 0)
        return NULL;
    return run_call(g, &c);
}

static PyObject *g_broadcast(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "root", "out", COMMON_KW, NULL};
    call_t c;
    call_init(&c, "broadcast", TUTTI_COLL_BROADCAST);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i$O" COMMON_FMT, kwl,
                                     &c.a, &c.root, &c.out, COMMON_ARGS(c)))
        return NULL;
    return run_call(g, &c);
}

static PyObject *g_allgather(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "out", COMMON_KW, NULL};
    call_t c;
    call_init(&c, "allgather", TUTTI_COLL_ALLGATHER);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$" COMMON_FMT, kwl, &c.a,
                                     &c.out, COMMON_ARGS(c)))
        return NULL;
    return run_call(g, &c);
}

static PyObject *g_allgatherv(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "out", COMMON_KW, NULL};
    call_t c;
    call_init(&c, "allgatherv", TUTTI_COLL_ALLGATHER);
    c.per_rank = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$" COMMON_FMT, kwl, &c.a,
                                     &c.out, COMMON_ARGS(c)))
        return NULL;
    return run_call(g, &c);
}

static PyObject *g_gather(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "out", "root", COMMON_KW, NULL};
    call_t c;
    call_init(&c, "gather", TUTTI_COLL_GATHER);
    c.result_on_root = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|i$" COMMON_FMT, kwl,
                                     &c.a, &c.out, &c.root, COMMON_ARGS(c)))
        return NULL;
    return run_call(g, &c);
}

static PyObject *g_reduce_scatter(tpy_group_t *g, PyObject *args,
                                  PyObject *kw)
{
    static char *kwl[] = {"a", "out", "op", "counts", COMMON_KW, NULL};
    call_t c;
    PyObject *op = NULL;
    call_init(&c, "reduce_scatter", TUTTI_COLL_REDUCE_SCATTER);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O" COMMON_FMT, kwl,
                                     &c.a, &c.out, &op, &c.counts,
                                     COMMON_ARGS(c)) ||
        tpy_op_parse(op, c.name, TUTTI_OP_SUM, &c.op) != 0)
        return NULL;
    if (c.counts == Py_None)
        c.counts = NULL;
    c.per_rank = c.counts != NULL;
    return run_call(g, &c);
}

static PyObject *g_alltoall(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "out", "counts", COMMON_KW, NULL};
    call_t c;
    call_init(&c, "alltoall", TUTTI_COLL_ALLTOALL);
    c.out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O" COMMON_FMT, kwl, &c.a,
                                     &c.out, &c.counts, COMMON_ARGS(c)))
        return NULL;
    if (c.counts == Py_None)
        c.counts = NULL;
    c.per_rank = c.counts != NULL;
    if (!c.per_rank && c.out == Py_None) {
        PyErr_SetString(PyExc_TypeError, "alltoall: out is needed (out=a: "
                        "in place)");
        return NULL;
    }
    return run_call(g, &c);
}

static PyObject *g_permute(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"a", "permutation", "out", COMMON_KW, NULL};
    call_t c;
    call_init(&c, "permute", TUTTI_COLL_PERMUTE);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O" COMMON_FMT, kwl,
                                     &c.a, &c.permutation, &c.out,
                                     COMMON_ARGS(c)))
        return NULL;
    return run_call(g, &c);
}

static PyObject *g_barrier(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"timeout", NULL};
    call_t c;
    unsigned char byte = 0;
    call_init(&c, "barrier", TUTTI_COLL_ALLREDUCE);
    c.op = TUTTI_OP_MAX;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$d", kwl, &c.timeout))
        return NULL;
    c.a = PyMemoryView_FromMemory((char *)&byte, 1, PyBUF_WRITE);
    if (c.a == NULL)
        return NULL;
    PyObject *r = run_call(g, &c);
    Py_DECREF(c.a);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* Wait for every pending future of the group, in the order started,
 * then run their callbacks. */
static PyObject *g_wait_all(tpy_group_t *g, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"timeout", NULL};
    double timeout;
    PyObject *to = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwl, &to) ||
        tpy_parse_timeout(to, "wait_all", &timeout) != 0)
        return NULL;
    PyObject *snapshot = PyDict_Keys(g->pending); /* in start order */
    if (snapshot == NULL)
        return NULL;
    int rc = 0;
    const char *late = NULL;
    tpy_group_lock(g);
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(snapshot); i++) {
        tpy_future_t *f = (tpy_future_t *)PyList_GET_ITEM(snapshot, i);
        if (f->request == NULL)
            continue;
        int intr;
        tutti_status_t st = tpy_wait(g, f->request, timeout, f->call, &intr);
        if (st == TUTTI_INPROGRESS) { /* timeout passed: 0 for the rest */
            late = f->call;
            timeout = 0;
            continue;
        }
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        tpy_future_settle(f, st);
        PyErr_Restore(type, value, tb);
        if (intr)
            rc = -1;
    }
    tpy_group_unlock(g);
    Py_DECREF(snapshot);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    tpy_group_drain(g);
    PyErr_Restore(type, value, tb);
    if (rc != 0)
        return NULL;
    if (late != NULL)
        return PyErr_Format(PyExc_TimeoutError, "wait_all: %s (and maybe "
                            "others) not complete in time (still pending)",
                            late);
    Py_RETURN_NONE;
}

/* The default group's allreduce, tutti.allreduce: the common call
 * allreduce(a[, op]) on host memory goes straight to the group's method
 * (no Python frame: a third of an 8-byte call); anything else to the
 * package's Python function, which finds the group (a GPU's for a CUDA
 * tensor) and makes the call. */
static tpy_group_t *default_group;
static PyObject *allreduce_fallback;

PyObject *tpy_default_allreduce(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (default_group != NULL && default_group->group != NULL &&
        kw == NULL && nargs >= 1 && nargs <= 2 &&
        PyObject_CheckBuffer(PyTuple_GET_ITEM(args, 0)))
        return g_allreduce(default_group, args, NULL);
    if (allreduce_fallback == NULL)
        return PyErr_Format(PyExc_RuntimeError, "tutti.allreduce: the "
                            "package did not set its fallback");
    return PyObject_Call(allreduce_fallback, args, kw);
}

PyObject *tpy_set_defaults(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *g, *fallback;
    if (!PyArg_ParseTuple(args, "OO", &g, &fallback))
        return NULL;
    if (g != Py_None && !PyObject_TypeCheck(g, &tpy_group_type))
        return PyErr_Format(PyExc_TypeError, "_set_defaults: %.80s is not "
                            "a Group", Py_TYPE(g)->tp_name);
    Py_XINCREF(g == Py_None ? NULL : g);
    Py_XDECREF(default_group);
    default_group = g == Py_None ? NULL : (tpy_group_t *)g;
    Py_INCREF(fallback);
    Py_XDECREF(allreduce_fallback);
    allreduce_fallback = fallback;
    Py_RETURN_NONE;
}

/* Leave the group: its pending futures are waited for first. */
static void group_leave(tpy_group_t *g)
{
    if (g->group == NULL)
        return;
    tpy_group_lock(g);
    PyObject *snapshot = g->pending ? PyDict_Keys(g->pending) : NULL;
    Py_ssize_t n = snapshot ? PyList_GET_SIZE(snapshot) : 0;
    if (snapshot == NULL)
        PyErr_Clear(); /* no memory: leave without waiting on futures */
    for (Py_ssize_t i = 0; i < n; i++) {
        tpy_future_t *f = (tpy_future_t *)PyList_GET_ITEM(snapshot, i);
        if (f->request != NULL) {
            int intr;
            tpy_future_settle(f, tpy_wait(g, f->request, -1, f->call,
                                          &intr));
            if (intr)
                PyErr_Clear();
        }
    }
    tutti_group_t *grp = g->group;
    g->group = NULL;
    g->context->groups--;
    Py_BEGIN_ALLOW_THREADS
    tutti_group_leave(grp);
    Py_END_ALLOW_THREADS
    tpy_group_unlock(g);
    tpy_group_drain(g);
    /* Futures not queued (none should be) lose the pending list's hold. */
    Py_XDECREF(snapshot);
    if (g->pending != NULL)
        PyDict_Clear(g->pending);
}

static PyObject *g_leave(tpy_group_t *g, PyObject *unused)
{
    (void)unused;
    group_leave(g);
    Py_RETURN_NONE;
}

static PyObject *g_enter(tpy_group_t *g, PyObject *unused)
{
    (void)unused;
    Py_INCREF(g);
    return (PyObject *)g;
}

static PyObject *g_exit(tpy_group_t *g, PyObject *args)
{
    (void)args;
    group_leave(g);
    Py_RETURN_FALSE;
}

static void group_dealloc(tpy_group_t *g)
{
    group_leave(g);
    PyErr_Clear();
    Py_CLEAR(g->pending);
    Py_CLEAR(g->context);
    if (g->lock != NULL)
        PyThread_free_lock(g->lock);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *g_get_rank(tpy_group_t *g, void *c)
{
    (void)c;
    return PyLong_FromLong(g->rank);
}

static PyObject *g_get_size(tpy_group_t *g, void *c)
{
    (void)c;
    return PyLong_FromLong(g->size);
}

static PyObject *g_get_device(tpy_group_t *g, void *c)
{
    (void)c;
    if (g->cuda_device < 0)
        return PyUnicode_FromString("cpu");
    return PyUnicode_FromFormat("cuda:%d", g->cuda_device);
}

static PyObject *g_get_context(tpy_group_t *g, void *c)
{
    (void)c;
    Py_INCREF(g->context);
    return (PyObject *)g->context;
}

static PyObject *g_get_left(tpy_group_t *g, void *c)
{
    (void)c;
    return PyBool_FromLong(g->group == NULL);
}

#define M(name, fn, doc)                                                     \
    {name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,    \
     doc}

static PyMethodDef group_methods[] = {
    M("allreduce", g_allreduce, "allreduce(a, op='sum', *, out=None, ...)"),
    M("reduce", g_reduce, "reduce(a, op='sum', root=0, *, out=None, ...)"),
    M("broadcast", g_broadcast, "broadcast(a, root=0, *, out=None, ...)"),
    M("allgather", g_allgather, "allgather(a, out, ...)"),
    M("allgatherv", g_allgatherv, "allgatherv(a, out=None, ...)"),
    M("gather", g_gather, "gather(a, out, root=0, ...)"),
    M("reduce_scatter", g_reduce_scatter,
      "reduce_scatter(a, out, op='sum', *, counts=None, ...)"),
    M("alltoall", g_alltoall, "alltoall(a, out, *, counts=None, ...)"),
    M("permute", g_permute, "permute(a, permutation, *, out=None, ...)"),
    M("barrier", g_barrier, "barrier(*, timeout=0)"),
    {"wait_all", (PyCFunction)(void (*)(void))g_wait_all,
     METH_VARARGS | METH_KEYWORDS,
     "wait_all(timeout=None): wait for every pending future of the group "
     "(their errors stay on them) and run their callbacks; TimeoutError "
     "when the time passed first."},
    {"leave", (PyCFunction)g_leave, METH_NOARGS,
     "Leave the group (its pending futures are waited for first)."},
    {"__enter__", (PyCFunction)g_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)g_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef group_getset[] = {
    {"rank", (getter)g_get_rank, NULL, "this member's rank", NULL},
    {"size", (getter)g_get_size, NULL, "the number of members", NULL},
    {"device", (getter)g_get_device, NULL, "'cpu' or 'cuda:N'", NULL},
    {"context", (getter)g_get_context, NULL, "the Context joined", NULL},
    {"left", (getter)g_get_left, NULL, "True once left", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tpy_group_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tutti._tutti.Group",
    .tp_basicsize = sizeof(tpy_group_t),
    .tp_dealloc = (destructor)group_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A member of a group of devices (Context.join); its methods "
              "run the collectives.",
    .tp_methods = group_methods,
    .tp_getset = group_getset,
};
