/*
 * Registered memory for Python: tutti._tutti.Memory, bytes of
 * tutti_mem_alloc (shared pages the other processes of the host read in
 * place) behind the buffer protocol, so that numpy.frombuffer and
 * torch.frombuffer make arrays over them; and mem_registered, whether an
 * array lies in registered memory.
 */
#include "tutti_py.h"

typedef struct {
    PyObject_HEAD
    void *ptr;               /* tutti_mem_alloc's, NULL if it failed */
    Py_ssize_t nbytes;       /* as asked (the mapping is whole pages) */
    Py_ssize_t exports;      /* buffers given out and not released */
    PyObject *weakrefs;
} mem_t;

static PyObject *mem_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"nbytes", NULL};
    PyObject *arg;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:Memory", kwl, &arg))
        return NULL;
    PyObject *n = PyNumber_Index(arg);
    if (n == NULL)
        return NULL;
    Py_ssize_t size = PyLong_AsSsize_t(n);
    if (size == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            Py_DECREF(n);
            return NULL;
        }
        PyErr_Clear(); /* past Py_ssize_t either way: refused below */
        size = 0;
    }
    if (size <= 0) {
        PyErr_Format(PyExc_ValueError, "Memory: nbytes is %S: expected "
                     "1 to %zd bytes", n, PY_SSIZE_T_MAX);
        Py_DECREF(n);
        return NULL;
    }
    Py_DECREF(n);
    mem_t *self = (mem_t *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    void *p = NULL;
    tutti_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = tutti_mem_alloc((size_t)size, &p);
    Py_END_ALLOW_THREADS
    if (st != TUTTI_OK) {
        Py_DECREF(self);
        return tpy_raise(st, NULL);
    }
    self->ptr = p;
    self->nbytes = (Py_ssize_t)size;
    return (PyObject *)self;
}

static void mem_dealloc(mem_t *self)
{
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    /* A buffer holds a reference, so none is out by now; were one out
     * (an exporter's bug), its pages stay mapped rather than vanish
     * under it.  tutti_mem_free fails only for a pointer it did not
     * give, and logs that itself. */
    if (self->ptr != NULL && self->exports == 0) {
        void *p = self->ptr;
        Py_BEGIN_ALLOW_THREADS
        (void)tutti_mem_free(p);
        Py_END_ALLOW_THREADS
    }
    self->ptr = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int mem_getbuffer(mem_t *self, Py_buffer *view, int flags)
{
    if (PyBuffer_FillInfo(view, (PyObject *)self, self->ptr, self->nbytes,
                          0, flags) != 0)
        return -1;
    self->exports++;
    return 0;
}

static void mem_releasebuffer(mem_t *self, Py_buffer *view)
{
    (void)view;
    self->exports--;
}

static PyBufferProcs mem_as_buffer = {
    .bf_getbuffer = (getbufferproc)mem_getbuffer,
    .bf_releasebuffer = (releasebufferproc)mem_releasebuffer,
};

static Py_ssize_t mem_len(mem_t *self)
{
    return self->nbytes;
}

static PySequenceMethods mem_as_sequence = {
    .sq_length = (lenfunc)mem_len,
};

static PyObject *mem_repr(mem_t *self)
{
    return PyUnicode_FromFormat("<tutti._tutti.Memory of %zd bytes at %p>",
                                self->nbytes, self->ptr);
}

static PyObject *mem_get_nbytes(mem_t *self, void *c)
{
    (void)c;
    return PyLong_FromSsize_t(self->nbytes);
}

static PyObject *mem_get_address(mem_t *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyObject *mem_get_exports(mem_t *self, void *c)
{
    (void)c;
    return PyLong_FromSsize_t(self->exports);
}

static PyGetSetDef mem_getset[] = {
    {"nbytes", (getter)mem_get_nbytes, NULL, "the bytes asked for (the "
     "mapping behind them is whole pages)", NULL},
    {"address", (getter)mem_get_address, NULL, "where the bytes start",
     NULL},
    {"exports", (getter)mem_get_exports, NULL, "buffers of it given out "
     "and not yet released", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tpy_mem_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tutti._tutti.Memory",
    .tp_basicsize = sizeof(mem_t),
    .tp_dealloc = (destructor)mem_dealloc,
    .tp_repr = (reprfunc)mem_repr,
    .tp_as_sequence = &mem_as_sequence,
    .tp_as_buffer = &mem_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory(nbytes): nbytes of registered memory "
              "(tutti_mem_alloc: shared pages, zero-filled), a writable "
              "buffer of bytes.  A message of 16 KiB or more sent from it "
              "to a process of the same host is copied once, straight from "
              "it, where private memory is copied twice.  Freed when the "
              "last object over it (memoryview, numpy array, torch tensor) "
              "goes; free no memory a pending collective reads.",
    .tp_getset = mem_getset,
    .tp_weaklistoffset = offsetof(mem_t, weakrefs),
    .tp_new = mem_new,
};

PyObject *tpy_mem_registered(PyObject *m, PyObject *obj)
{
    (void)m;
    tpy_span_t s;
    if (tpy_view_span(obj, "mem_registered", &s) != 0)
        return NULL;
    return PyBool_FromLong(s.host && tutti_mem_registered(s.ptr, s.bytes));
}
