/*
 * Arrays as libtutti sees them: a pointer, an element count and a dtype.
 * Host memory comes through the buffer protocol (numpy, array, bytearray,
 * memoryview); objects without it (torch tensors, CuPy arrays) through
 * DLPack, whose CUDA memory goes the CUDA path.  Only C-contiguous arrays
 * are taken: a collective moves the elements in memory order.
 */
#include <string.h>

#include "tutti_py.h"

/* DLPack's ABI (dlpack.h, version 0.8 and later, unversioned capsules):
 * the layout every producer hands in a "dltensor" capsule. */
enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4 };

typedef struct {
    int32_t device_type;
    int32_t device_id;
} dl_device_t;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dl_dtype_t;

typedef struct {
    void *data;
    dl_device_t device;
    int32_t ndim;
    dl_dtype_t dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} dl_tensor_t;

typedef struct dl_managed {
    dl_tensor_t dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *self);
} dl_managed_t;

int tpy_op_parse(PyObject *obj, const char *call, tutti_op_t dflt,
                 tutti_op_t *op_out)
{
    if (obj == NULL || obj == Py_None) {
        *op_out = dflt;
        return 0;
    }
    const char *name = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (name == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: op must be a str (sum, prod, "
                     "min, max, avg), not %.80s", call,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (tutti_op_parse(name, op_out) != TUTTI_OK) {
        PyErr_Format(PyExc_ValueError, "%s: op '%.40s' is none of sum, "
                     "prod, min, max, avg", call, name);
        return -1;
    }
    return 0;
}

/* The dtype of a buffer's struct format ("<f", "=q", "e"...), or -1. */
static int dtype_of_format(const char *fmt, Py_ssize_t itemsize)
{
    if (fmt == NULL)
        return itemsize == 1 ? TUTTI_UINT8 : -1; /* plain bytes */
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    else if (*fmt == '>' || *fmt == '!')
        return -1;
    if (fmt[0] == '\0' || fmt[1] != '\0')
        return -1;
    int sized_int = strchr("bhilqn", fmt[0]) != NULL;
    int sized_uint = strchr("BHILQN", fmt[0]) != NULL;
    if (sized_int || sized_uint) {
        switch (itemsize) {
        case 1: return sized_int ? TUTTI_INT8 : TUTTI_UINT8;
        case 4: return sized_int ? TUTTI_INT32 : TUTTI_UINT32;
        case 8: return sized_int ? TUTTI_INT64 : TUTTI_UINT64;
        default: return -1; /* int16: tutti has none */
        }
    }
    switch (fmt[0]) {
    case 'c': return TUTTI_UINT8;
    case 'e': return TUTTI_FLOAT16;
    case 'f': return TUTTI_FLOAT32;
    case 'd': return TUTTI_FLOAT64;
    default: return -1;
    }
}

static int dtype_of_dl(dl_dtype_t t)
{
    if (t.lanes != 1)
        return -1;
    switch (t.code) {
    case DL_INT:
        return t.bits == 8 ? TUTTI_INT8 : t.bits == 32 ? TUTTI_INT32
               : t.bits == 64 ? TUTTI_INT64 : -1;
    case DL_UINT:
        return t.bits == 8 ? TUTTI_UINT8 : t.bits == 32 ? TUTTI_UINT32
               : t.bits == 64 ? TUTTI_UINT64 : -1;
    case DL_FLOAT:
        return t.bits == 16 ? TUTTI_FLOAT16 : t.bits == 32 ? TUTTI_FLOAT32
               : t.bits == 64 ? TUTTI_FLOAT64 : -1;
    case DL_BFLOAT:
        return t.bits == 16 ? TUTTI_BFLOAT16 : -1;
    default:
        return -1;
    }
}

/* @p v's dtype: the object's (@p found, or -1 with @p what naming it), or
 * @p dtype_name of the same element size. */
static int settle_dtype(tpy_view_t *v, int found, size_t itemsize,
                        const char *what, const char *dtype_name,
                        const char *call, const char *arg)
{
    if (dtype_name != NULL) {
        tutti_dtype_t d;
        if (tutti_dtype_parse(dtype_name, &d) != TUTTI_OK) {
            PyErr_Format(PyExc_ValueError, "%s: dtype '%.40s' is none of "
                         "int8, uint8, int32, uint32, int64, uint64, "
                         "float16, bfloat16, float32, float64", call,
                         dtype_name);
            return -1;
        }
        if (tutti_dtype_size(d) != itemsize) {
            PyErr_Format(PyExc_ValueError, "%s: dtype %s takes %zu bytes an "
                         "element; %s's elements (%s) take %zu", call,
                         dtype_name, tutti_dtype_size(d), arg, what,
                         itemsize);
            return -1;
        }
        v->dtype = d;
        return 0;
    }
    if (found < 0) {
        PyErr_Format(PyExc_TypeError, "%s: %s holds elements of type %s, "
                     "which tutti does not reduce or move (int8, uint8, "
                     "int32, uint32, int64, uint64, float16, bfloat16, "
                     "float32, float64; or give dtype=)", call, arg, what);
        return -1;
    }
    v->dtype = (tutti_dtype_t)found;
    return 0;
}

static int view_buffer(PyObject *obj, const char *call, const char *arg,
                       int writable, const char *dtype_name, tpy_view_t *v)
{
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS |
                (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &v->buf, flags) != 0) {
        /* Say which demand the object failed: the common mistakes are a
         * read-only array given to an in-place call and a strided view. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        Py_buffer probe;
        if (writable &&
            PyObject_GetBuffer(obj, &probe, PyBUF_C_CONTIGUOUS) == 0) {
            PyBuffer_Release(&probe);
            PyErr_Format(PyExc_ValueError, "%s: %s is read-only, and the "
                         "result is written into it (give out=, or a "
                         "writable array)", call, arg);
        } else {
            PyErr_Format(PyExc_ValueError, "%s: %s is not a C-contiguous "
                         "buffer (give numpy.ascontiguousarray(%s))", call,
                         arg, arg);
        }
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    v->has_buf = 1;
    size_t itemsize = (size_t)v->buf.itemsize;
    const char *fmt = v->buf.format ? v->buf.format : "B";
    int found = dtype_of_format(v->buf.format, v->buf.itemsize);
    char what[48] = "";
    if (found < 0 || dtype_name != NULL) /* for messages: not per call */
        snprintf(what, sizeof(what), "'%.16s' of %zu bytes", fmt, itemsize);
    if (settle_dtype(v, found, itemsize, what, dtype_name, call, arg) != 0)
        return -1;
    v->ptr = v->buf.buf;
    v->count = itemsize ? (size_t)v->buf.len / itemsize : 0;
    v->cuda_device = -1;
    return 0;
}

/* DLPack: the capsule consumed (renamed, its deleter ours to call). */
static int view_dlpack(PyObject *obj, const char *call, const char *arg,
                       const char *dtype_name, Py_ssize_t stream,
                       tpy_view_t *v)
{
    PyObject *cap = NULL, *fn = PyObject_GetAttrString(obj, "__dlpack__");
    if (fn == NULL)
        return -1;
    if (stream != 0) { /* keyword-only in the array API's protocol */
        PyObject *kw = Py_BuildValue("{s:n}", "stream", stream);
        PyObject *none = PyTuple_New(0);
        if (kw != NULL && none != NULL)
            cap = PyObject_Call(fn, none, kw);
        Py_XDECREF(kw);
        Py_XDECREF(none);
    } else {
        cap = PyObject_CallNoArgs(fn);
    }
    Py_DECREF(fn);
    if (cap == NULL)
        return -1;
    dl_managed_t *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m == NULL) {
        Py_DECREF(cap);
        PyErr_Format(PyExc_TypeError, "%s: %s.__dlpack__() gave no "
                     "'dltensor' capsule", call, arg);
        return -1;
    }
    PyCapsule_SetName(cap, "used_dltensor");
    v->capsule = cap;
    v->managed = m;
    dl_tensor_t *t = &m->dl_tensor;
    size_t n = 1;
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->strides != NULL && t->shape[i] > 1 &&
            t->strides[i] != expect) {
            PyErr_Format(PyExc_ValueError, "%s: %s is not C-contiguous "
                         "(dimension %d has stride %lld, expected %lld); "
                         "give %s.contiguous()", call, arg, i,
                         (long long)t->strides[i], (long long)expect, arg);
            return -1;
        }
        expect *= t->shape[i];
        n *= (size_t)t->shape[i];
    }
    char what[48];
    snprintf(what, sizeof(what), "DLPack code %u, %u bits x %u",
             t->dtype.code, t->dtype.bits, t->dtype.lanes);
    if (settle_dtype(v, dtype_of_dl(t->dtype), t->dtype.bits / 8u, what,
                     dtype_name, call, arg) != 0)
        return -1;
    switch (t->device.device_type) {
    case DL_CPU:
    case DL_CUDA_HOST:
        v->cuda_device = -1;
        break;
    case DL_CUDA:
        v->cuda_device = t->device.device_id;
        break;
    default:
        PyErr_Format(PyExc_ValueError, "%s: %s lies in memory of DLPack "
                     "device type %d; tutti takes host (1), CUDA (2) and "
                     "pinned host (3) memory", call, arg,
                     (int)t->device.device_type);
        return -1;
    }
    v->ptr = (char *)t->data + t->byte_offset;
    v->count = n;
    return 0;
}

/* libtutti reads whole elements: a view must start on an element's
 * boundary (numpy's views at byte offsets need not). */
static int check_aligned(const tpy_view_t *v, const char *call,
                         const char *arg)
{
    size_t size = tutti_dtype_size(v->dtype);
    if (v->count == 0 || (uintptr_t)v->ptr % size == 0)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s starts at address %p, not on "
                 "a %zu-byte boundary as its %s elements must (copy it, or "
                 "numpy.require(%s, requirements='A'))", call, arg, v->ptr,
                 size, tutti_dtype_name(v->dtype), arg);
    return -1;
}

int tpy_view_get(PyObject *obj, const char *call, const char *arg,
                 int writable, const char *dtype_name, Py_ssize_t stream,
                 tpy_view_t *v)
{
    memset(v, 0, sizeof(*v));
    v->cuda_device = -1;
    int rc;
    if (PyObject_CheckBuffer(obj))
        rc = view_buffer(obj, call, arg, writable, dtype_name, v);
    else if (PyObject_HasAttrString(obj, "__dlpack__"))
        rc = view_dlpack(obj, call, arg, dtype_name, stream, v);
    else {
        PyErr_Format(PyExc_TypeError, "%s: %s (%.80s) is neither a buffer "
                     "(numpy array, bytearray, memoryview) nor a DLPack "
                     "tensor", call, arg, Py_TYPE(obj)->tp_name);
        rc = -1;
    }
    if (rc == 0)
        rc = check_aligned(v, call, arg);
    if (rc != 0)
        tpy_view_release(v);
    return rc;
}

void tpy_view_release(tpy_view_t *v)
{
    if (v->has_buf) {
        PyBuffer_Release(&v->buf);
        v->has_buf = 0;
    }
    if (v->managed != NULL) {
        dl_managed_t *m = v->managed;
        v->managed = NULL;
        if (m->deleter != NULL)
            m->deleter(m);
    }
    Py_CLEAR(v->capsule);
}

/* The bytes a strided array spans: from its lowest element to the end of
 * its highest (0 when it has none).  @p strides in units of @p unit. */
static void span_of(char *start, int ndim, const Py_ssize_t *shape,
                    const Py_ssize_t *strides, Py_ssize_t unit,
                    Py_ssize_t itemsize, tpy_span_t *s)
{
    Py_ssize_t lo = 0, hi = itemsize;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0)
            hi = lo = 0;
        if (hi == lo)
            break;
        Py_ssize_t reach = (shape[i] - 1) * strides[i] * unit;
        if (reach < 0)
            lo += reach;
        else
            hi += reach;
    }
    s->ptr = start + lo;
    s->bytes = (size_t)(hi - lo);
}

static int span_buffer(PyObject *obj, const char *call, tpy_span_t *s)
{
    Py_buffer b;
    (void)call; /* the exporter's own error names what it lacks */
    if (PyObject_GetBuffer(obj, &b, PyBUF_STRIDES) != 0)
        return -1;
    if (b.strides == NULL || b.ndim == 0) {
        s->ptr = b.buf;
        s->bytes = (size_t)b.len;
    } else {
        span_of(b.buf, b.ndim, b.shape, b.strides, 1, b.itemsize, s);
    }
    s->host = 1;
    PyBuffer_Release(&b);
    return 0;
}

/* DLPack: the device asked first (memory of a GPU is not taken, so that
 * no stream is synchronized for nothing), then the capsule consumed and
 * given back at once. */
static int span_dlpack(PyObject *obj, const char *call, tpy_span_t *s)
{
    int kind = DL_CPU;
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (dev == NULL) {
        PyErr_Clear(); /* the protocol's older producers lack it */
    } else {
        int ok = PyArg_ParseTuple(dev, "i|i", &kind, &(int){0});
        Py_DECREF(dev);
        if (!ok)
            return -1;
    }
    memset(s, 0, sizeof(*s));
    if (kind != DL_CPU && kind != DL_CUDA_HOST)
        return 0;
    PyObject *cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
    if (cap == NULL)
        return -1;
    dl_managed_t *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m == NULL) {
        Py_DECREF(cap);
        PyErr_Format(PyExc_TypeError, "%s: %.80s.__dlpack__() gave no "
                     "'dltensor' capsule", call, Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyCapsule_SetName(cap, "used_dltensor");
    dl_tensor_t *t = &m->dl_tensor;
    Py_ssize_t shape[64], strides[64], expect = 1;
    int rc = 0;
    if (t->ndim < 0 || t->ndim > 64) {
        PyErr_Format(PyExc_ValueError, "%s: the %.80s has %d dimensions "
                     "(at most 64 taken)", call, Py_TYPE(obj)->tp_name,
                     (int)t->ndim);
        rc = -1;
        goto out_delete;
    }
    for (int i = t->ndim - 1; i >= 0; i--) {
        shape[i] = (Py_ssize_t)t->shape[i];
        strides[i] = t->strides ? (Py_ssize_t)t->strides[i] : expect;
        expect *= shape[i];
    }
    Py_ssize_t itemsize = (t->dtype.bits * t->dtype.lanes + 7) / 8;
    span_of((char *)t->data + t->byte_offset, t->ndim, shape, strides,
            itemsize, itemsize, s);
    s->host = t->device.device_type == DL_CPU ||
              t->device.device_type == DL_CUDA_HOST;
out_delete:
    if (m->deleter != NULL)
        m->deleter(m);
    Py_DECREF(cap);
    return rc;
}

int tpy_view_span(PyObject *obj, const char *call, tpy_span_t *s)
{
    memset(s, 0, sizeof(*s));
    if (PyObject_CheckBuffer(obj))
        return span_buffer(obj, call, s);
    if (PyObject_HasAttrString(obj, "__dlpack__"))
        return span_dlpack(obj, call, s);
    PyErr_Format(PyExc_TypeError, "%s: %.80s is neither a buffer (numpy "
                 "array, bytearray, memoryview) nor a DLPack tensor", call,
                 Py_TYPE(obj)->tp_name);
    return -1;
}
