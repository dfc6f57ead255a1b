/*
 * The extension module tutti._tutti: errors, the Context type (a process's
 * place in a job, met through the environment or a Python store) and what
 * the package asks of libtutti itself (version, where it was loaded from);
 * the types of the other files (Group, Future, Memory) are added here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "tutti_py.h"

/* The type Context.join makes: tutti.Group, the package's subclass, once
 * the package registered it. */
static PyTypeObject *group_class = &tpy_group_type;

/* ---- Context ----------------------------------------------------------- */

static int ctx_init(tpy_context_t *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"store", "rank", "size", "config", "module_path",
                          "log_level", "job_id", NULL};
    PyObject *store = Py_None;
    int rank = -1, size = -1;
    const char *config = NULL, *module_path = NULL, *log_level = NULL,
               *job_id = NULL;
    if (self->ctx != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Context: already created");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$iizzzz", kwl, &store,
                                     &rank, &size, &config, &module_path,
                                     &log_level, &job_id))
        return -1;
    if (store != Py_None && (rank < 0 || size < 1 || rank >= size)) {
        PyErr_Format(PyExc_ValueError, "Context: a store needs rank and "
                     "size (0 <= rank < size); got rank %d, size %d", rank,
                     size);
        return -1;
    }
    if ((rank >= 0) != (size >= 0)) {
        PyErr_SetString(PyExc_ValueError, "Context: give rank and size "
                        "together, or neither (from the environment)");
        return -1;
    }
    if (store != Py_None && (self->store = tpy_store_new(store)) == NULL)
        return -1;
    tutti_context_params_t p;
    tutti_context_params_init(&p);
    p.config_path = config;
    p.module_path = module_path;
    p.log_level = log_level;
    p.task = rank;
    p.num_tasks = size;
    p.job_id = job_id;
    p.store = self->store ? tpy_store_c(self->store) : NULL;
    tutti_status_t st;
    tutti_context_t *ctx = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = tutti_context_create(&p, &ctx);
    Py_END_ALLOW_THREADS
    if (st != TUTTI_OK) {
        const char *se = tpy_store_error(self->store);
        if (*se != '\0') {
            char d[1536];
            snprintf(d, sizeof(d), "%s (%s)", tutti_last_error(), se);
            tpy_raise(st, d);
        } else {
            tpy_raise(st, NULL);
        }
        return -1;
    }
    self->ctx = ctx;
    return 0;
}

static int ctx_check(tpy_context_t *self, const char *call)
{
    if (self->ctx != NULL)
        return 0;
    PyErr_Format(PyExc_ValueError, "Context.%s: the context is closed",
                 call);
    return -1;
}

static PyObject *ctx_join(tpy_context_t *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"key", "size", "device", "index", "timeout",
                          NULL};
    unsigned long long key = 0;
    int size = -1, index = 0;
    const char *device = "cpu";
    double timeout = 0;
    if (ctx_check(self, "join") != 0 ||
        !PyArg_ParseTupleAndKeywords(args, kw, "|K$isid", kwl, &key, &size,
                                     &device, &index, &timeout))
        return NULL;
    tutti_group_params_t p;
    tutti_group_params_init(&p);
    if (tutti_device_type_parse(device, &p.device_type) != TUTTI_OK)
        return PyErr_Format(PyExc_ValueError, "Context.join: device '%s' "
                            "is neither cpu nor cuda", device);
    p.group_key = key;
    p.group_size = size > 0 ? size : tutti_context_num_tasks(self->ctx);
    p.device_index = index;
    p.timeout = timeout;
    tpy_group_t *g = (tpy_group_t *)group_class->tp_alloc(group_class, 0);
    if (g == NULL)
        return NULL;
    g->cuda_device = p.device_type == TUTTI_DEVICE_CUDA ? index : -1;
    Py_INCREF(self);
    g->context = self;
    g->pending = PyDict_New();
    g->lock = PyThread_allocate_lock();
    if (g->pending == NULL || g->lock == NULL) {
        Py_DECREF(g);
        return PyErr_NoMemory();
    }
    tutti_status_t st;
    tutti_group_t *grp = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = tutti_group_join(self->ctx, &p, &grp);
    Py_END_ALLOW_THREADS
    if (st != TUTTI_OK) {
        const char *se = tpy_store_error(self->store);
        char d[1536];
        snprintf(d, sizeof(d), "%s%s%s%s", tutti_last_error(),
                 *se ? " (" : "", se, *se ? ")" : "");
        Py_DECREF(g);
        return tpy_raise(st, d);
    }
    g->group = grp;
    self->groups++;
    g->rank = tutti_group_rank(grp);
    g->size = tutti_group_size(grp);
    return (PyObject *)g;
}

static PyObject *ctx_abort(tpy_context_t *self, PyObject *args)
{
    const char *reason = NULL;
    if (ctx_check(self, "abort") != 0 ||
        !PyArg_ParseTuple(args, "|z", &reason))
        return NULL;
    self->aborted = 1;
    tutti_abort(self->ctx, reason);
    Py_RETURN_NONE;
}

static PyObject *ctx_sum(tpy_context_t *self, PyObject *arg)
{
    unsigned long long v = PyLong_AsUnsignedLongLongMask(arg);
    uint64_t sum = 0;
    tutti_status_t st;
    if (ctx_check(self, "sum") != 0 || PyErr_Occurred())
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = tutti_context_sum(self->ctx, v, &sum);
    Py_END_ALLOW_THREADS
    if (st != TUTTI_OK)
        return tpy_raise(st, NULL);
    return PyLong_FromUnsignedLongLong(sum);
}

static void ctx_destroy(tpy_context_t *self)
{
    tutti_context_t *ctx = self->ctx;
    self->ctx = NULL;
    if (ctx != NULL) {
        Py_BEGIN_ALLOW_THREADS
        tutti_context_destroy(ctx);
        Py_END_ALLOW_THREADS
    }
    tpy_store_free(self->store);
    self->store = NULL;
}

static PyObject *ctx_close(tpy_context_t *self, PyObject *unused)
{
    (void)unused;
    if (self->groups > 0)
        return PyErr_Format(PyExc_ValueError, "Context.close: %d group%s "
                            "still joined (leave them first)", self->groups,
                            self->groups > 1 ? "s are" : " is");
    ctx_destroy(self);
    Py_RETURN_NONE;
}

static void ctx_dealloc(tpy_context_t *self)
{
    ctx_destroy(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ctx_get_rank(tpy_context_t *self, void *c)
{
    (void)c;
    return ctx_check(self, "rank") ? NULL
           : PyLong_FromLong(tutti_context_task(self->ctx));
}

static PyObject *ctx_get_size(tpy_context_t *self, void *c)
{
    (void)c;
    return ctx_check(self, "size") ? NULL
           : PyLong_FromLong(tutti_context_num_tasks(self->ctx));
}

static PyObject *ctx_get_aborted(tpy_context_t *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->aborted);
}

static PyObject *ctx_get_closed(tpy_context_t *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->ctx == NULL);
}

static PyMethodDef ctx_methods[] = {
    {"join", (PyCFunction)(void (*)(void))ctx_join,
     METH_VARARGS | METH_KEYWORDS,
     "join(key=0, *, size=None, device='cpu', index=0, timeout=0): join "
     "group key as this task's device index; size: members (default: one "
     "per task).  Blocks until every member joined."},
    {"abort", (PyCFunction)ctx_abort, METH_VARARGS,
     "abort(reason=None): every pending and later execution of the job "
     "fails with ERR_ABORTED naming this rank and the reason."},
    {"sum", (PyCFunction)ctx_sum, METH_O,
     "sum(value): value summed over the job's tasks through the control "
     "plane (modulo 2**64): a check, not a data path."},
    {"close", (PyCFunction)ctx_close, METH_NOARGS,
     "Destroy the context (its groups must have been left)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef ctx_getset[] = {
    {"rank", (getter)ctx_get_rank, NULL, "this task's index in the job",
     NULL},
    {"size", (getter)ctx_get_size, NULL, "the number of tasks", NULL},
    {"closed", (getter)ctx_get_closed, NULL, "True once closed", NULL},
    {"aborted", (getter)ctx_get_aborted, NULL, "True once this process "
     "aborted the job (abort(), or Ctrl-C in a wait)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tpy_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tutti._tutti.Context",
    .tp_basicsize = sizeof(tpy_context_t),
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Context(store=None, *, rank=-1, size=-1, config=None, "
              "module_path=None, log_level=None, job_id=None): this "
              "process's place in a job, from the environment (tutti-run, "
              "mpirun, Slurm) or met through store (rank and size given).",
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
    .tp_init = (initproc)ctx_init,
    .tp_new = PyType_GenericNew,
};

/* ---- module functions -------------------------------------------------- */

static PyObject *m_library_path(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    Dl_info info;
    if (dladdr((void *)tutti_context_create, &info) == 0 ||
        info.dli_fname == NULL)
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(info.dli_fname);
}

static PyObject *m_set_group_class(PyObject *m, PyObject *cls)
{
    (void)m;
    if (!PyType_Check(cls) ||
        !PyType_IsSubtype((PyTypeObject *)cls, &tpy_group_type))
        return PyErr_Format(PyExc_TypeError, "_set_group_class: %.80s is "
                            "not a subclass of Group",
                            Py_TYPE(cls)->tp_name);
    Py_INCREF(cls);
    group_class = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"allreduce", (PyCFunction)(void (*)(void))tpy_default_allreduce,
     METH_VARARGS | METH_KEYWORDS,
     "allreduce(a, op='sum', *, out=None, **kw): reduce a over the ranks "
     "of the default group with op (sum, prod, min, max, avg), in place "
     "unless out is given; returns the result (a or out).  Keywords of "
     "every collective: dtype (read a's elements as this type, of the same "
     "size: 'bfloat16' over uint16), pre_scale and post_scale (floating "
     "reductions), algorithm, timeout (seconds without progress), stream "
     "(CUDA), async_op (return a Future)."},
    {"_set_defaults", tpy_set_defaults, METH_VARARGS,
     "_set_defaults(group, fallback): the default group (or None) and the "
     "Python allreduce for the calls allreduce does not make itself."},
    {"_set_group_class", m_set_group_class, METH_O,
     "The Group subclass Context.join makes (the package's)."},
    {"mem_registered", tpy_mem_registered, METH_O,
     "mem_registered(a): whether the bytes of a (a buffer, or a DLPack "
     "tensor) lie in registered memory (Memory, tutti_mem_register): "
     "False for private memory, such as numpy's own arrays, and for "
     "device memory."},
    {"library_path", m_library_path, METH_NOARGS,
     "The file libtutti was loaded from."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "tutti._tutti",
    "libtutti's host API for Python (the package tutti wraps it).", -1,
    module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__tutti(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyType_Ready(&tpy_context_type) < 0 ||
        PyType_Ready(&tpy_group_type) < 0 ||
        PyType_Ready(&tpy_future_type) < 0 ||
        PyType_Ready(&tpy_mem_type) < 0)
        goto err;
    tpy_error = PyErr_NewExceptionWithDoc(
        "tutti.TuttiError", "A Tutti call failed: status (the number), name "
        "('ERR_TIMEOUT') and detail (what failed, with the values "
        "involved).", PyExc_RuntimeError, NULL);
    PyObject *bases = tpy_error ? PyTuple_Pack(2, tpy_error,
                                               PyExc_TimeoutError) : NULL;
    tpy_timeout_error = bases ? PyErr_NewExceptionWithDoc(
        "tutti.TuttiTimeoutError", "ERR_TIMEOUT: a member, peer or key "
        "did not come in time.", bases, NULL) : NULL;
    Py_XDECREF(bases);
    if (tpy_timeout_error == NULL)
        goto err;
    Py_INCREF(tpy_error);
    Py_INCREF(tpy_timeout_error);
    if (PyModule_AddObject(m, "TuttiError", tpy_error) != 0 ||
        PyModule_AddObject(m, "TuttiTimeoutError", tpy_timeout_error) != 0)
        goto err;
    Py_INCREF(&tpy_context_type);
    Py_INCREF(&tpy_group_type);
    Py_INCREF(&tpy_future_type);
    Py_INCREF(&tpy_mem_type);
    if (PyModule_AddObject(m, "Context", (PyObject *)&tpy_context_type) ||
        PyModule_AddObject(m, "Group", (PyObject *)&tpy_group_type) ||
        PyModule_AddObject(m, "Future", (PyObject *)&tpy_future_type) ||
        PyModule_AddObject(m, "Memory", (PyObject *)&tpy_mem_type))
        goto err;
    PyObject *ver = Py_BuildValue("(iii)", TUTTI_VERSION_MAJOR,
                                  TUTTI_VERSION_MINOR, TUTTI_VERSION_PATCH);
    if (ver == NULL || PyModule_AddObject(m, "version", ver) != 0)
        goto err;
    PyObject *statuses = PyDict_New();
#define TPY_STATUS_(name, value, text)                                       \
    if (statuses) {                                                          \
        PyObject *v_ = PyLong_FromLong(value);                               \
        if (v_ == NULL || PyDict_SetItemString(statuses, #name, v_) != 0)    \
            Py_CLEAR(statuses);                                              \
        Py_XDECREF(v_);                                                      \
    }
    TUTTI_STATUS_LIST(TPY_STATUS_)
#undef TPY_STATUS_
    if (statuses == NULL || PyModule_AddObject(m, "status", statuses) != 0)
        goto err;
    return m;
err:
    Py_DECREF(m);
    return NULL;
}
