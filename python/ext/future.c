/*
 * tutti.Future: an execution started with async_op=True.  It keeps the
 * arrays the execution reads and writes until it completes; wait() waits
 * (the GIL released, a timeout, Ctrl-C), done() looks without blocking,
 * callbacks run once it completed, in the thread that saw it complete,
 * when that thread is back in Python.  Its group holds every pending
 * future, so one dropped early still completes and runs its callbacks.
 */
#include <string.h>

#include "tutti_py.h"

tpy_future_t *tpy_future_new(tpy_group_t *g, tutti_request_t *r,
                             const char *call, PyObject *result,
                             PyObject *keep, tpy_view_t *views, int nviews,
                             size_t *counts, int want_counts)
{
    tpy_future_t *f = PyObject_New(tpy_future_t, &tpy_future_type);
    if (f == NULL)
        return NULL;
    Py_INCREF(g);
    f->group = g;
    f->request = r;
    f->call = call;
    f->status = TUTTI_INPROGRESS;
    f->error = NULL;
    Py_XINCREF(result);
    f->result = result;
    Py_XINCREF(keep);
    f->keep = keep;
    f->callbacks = NULL;
    f->recv_counts = NULL;
    f->recv_total = 0;
    f->nviews = nviews;
    memset(f->views, 0, sizeof(f->views));
    for (int i = 0; i < nviews; i++)
        f->views[i] = views[i];
    f->counts = counts;
    f->want_counts = want_counts;
    f->next_completed = NULL;
    f->in_completed = 0;
    if (PyDict_SetItem(g->pending, (PyObject *)f, Py_None) != 0) {
        /* Not yet owning the views: the caller releases them. */
        f->nviews = 0;
        f->counts = NULL;
        f->request = NULL;
        Py_DECREF(f);
        return NULL;
    }
    return f;
}

/* Wait for @p f at most @p timeout seconds (< 0: no limit); 0 when it
 * finished, 1 when the time passed, -1 with an exception. */
static int future_wait(tpy_future_t *f, double timeout)
{
    tpy_group_t *g = f->group;
    int rc = 0;
    if (f->request != NULL) {
        tpy_group_lock(g);
        if (f->request != NULL) {
            int intr;
            tutti_status_t st = tpy_wait(g, f->request, timeout, f->call,
                                         &intr);
            if (intr) {
                PyObject *type, *value, *tb;
                PyErr_Fetch(&type, &value, &tb);
                tpy_future_settle(f, st);
                PyErr_Restore(type, value, tb);
                rc = -1;
            } else if (st == TUTTI_INPROGRESS) {
                rc = 1;
            } else {
                tpy_future_settle(f, st);
            }
        }
        tpy_group_unlock(g);
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    tpy_group_drain(g);
    PyErr_Restore(type, value, tb);
    return rc;
}

/* wait(timeout=None)'s arguments, then the wait: 0 once finished, -1
 * with an exception (TimeoutError when the time passed first). */
static int wait_call(tpy_future_t *f, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"timeout", NULL};
    PyObject *to = NULL;
    double t;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwl, &to) ||
        tpy_parse_timeout(to, "Future.wait", &t) != 0)
        return -1;
    int rc = future_wait(f, t);
    if (rc > 0)
        PyErr_Format(PyExc_TimeoutError, "%s: not complete after %g s "
                     "(still pending: wait again)", f->call, t);
    return rc == 0 ? 0 : -1;
}

static PyObject *f_wait(tpy_future_t *f, PyObject *args, PyObject *kw)
{
    if (wait_call(f, args, kw) != 0)
        return NULL;
    if (f->error != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(f->error), f->error);
        return NULL;
    }
    Py_INCREF(f->result);
    return f->result;
}

static PyObject *f_done(tpy_future_t *f, PyObject *unused)
{
    (void)unused;
    if (f->request != NULL && future_wait(f, 0) < 0)
        return NULL;
    return PyBool_FromLong(f->request == NULL);
}

static PyObject *f_exception(tpy_future_t *f, PyObject *args, PyObject *kw)
{
    if (wait_call(f, args, kw) != 0)
        return NULL;
    PyObject *e = f->error ? f->error : Py_None;
    Py_INCREF(e);
    return e;
}

static PyObject *f_add_done_callback(tpy_future_t *f, PyObject *fn)
{
    if (!PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "add_done_callback: %.80s is "
                            "not callable", Py_TYPE(fn)->tp_name);
    if (f->callbacks == Py_None) { /* completed, callbacks ran: now */
        PyObject *r = PyObject_CallOneArg(fn, (PyObject *)f);
        if (r == NULL)
            PyErr_WriteUnraisable(fn);
        Py_XDECREF(r);
        Py_RETURN_NONE;
    }
    if (f->callbacks == NULL && (f->callbacks = PyList_New(0)) == NULL)
        return NULL;
    if (PyList_Append(f->callbacks, fn) != 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *f_get_recv_counts(tpy_future_t *f, void *c)
{
    (void)c;
    PyObject *r = f->recv_counts ? f->recv_counts : Py_None;
    Py_INCREF(r);
    return r;
}

static PyObject *f_get_call(tpy_future_t *f, void *c)
{
    (void)c;
    return PyUnicode_FromString(f->call);
}

static PyObject *f_repr(tpy_future_t *f)
{
    return PyUnicode_FromFormat("<tutti.Future %s %s>", f->call,
                                f->request ? "pending"
                                : f->error ? "failed" : "done");
}

static void future_dealloc(tpy_future_t *f)
{
    /* Pending futures are held by their group: one freed has finished,
     * unless its creation failed half-way. */
    for (int i = 0; i < f->nviews; i++)
        tpy_view_release(&f->views[i]);
    PyMem_Free(f->counts);
    Py_CLEAR(f->error);
    Py_CLEAR(f->result);
    Py_CLEAR(f->keep);
    Py_CLEAR(f->callbacks);
    Py_CLEAR(f->recv_counts);
    Py_CLEAR(f->group);
    PyObject_Free(f);
}

static PyMethodDef future_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))f_wait,
     METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None): the result once complete (the output array, or "
     "None where the call gives none); raises the execution's TuttiError, "
     "or TimeoutError when the time passed first (still pending)."},
    {"result", (PyCFunction)(void (*)(void))f_wait,
     METH_VARARGS | METH_KEYWORDS, "result(timeout=None): as wait()."},
    {"done", (PyCFunction)f_done, METH_NOARGS,
     "True once complete (progresses the group without blocking)."},
    {"exception", (PyCFunction)(void (*)(void))f_exception,
     METH_VARARGS | METH_KEYWORDS,
     "exception(timeout=None): the TuttiError the execution failed with, "
     "or None."},
    {"add_done_callback", (PyCFunction)f_add_done_callback, METH_O,
     "add_done_callback(fn): fn(future) once complete (at once if it is)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef future_getset[] = {
    {"recv_counts", (getter)f_get_recv_counts, NULL,
     "per-rank counts' result: the elements from (of) each rank", NULL},
    {"call", (getter)f_get_call, NULL, "the collective's name", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tpy_future_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tutti._tutti.Future",
    .tp_basicsize = sizeof(tpy_future_t),
    .tp_dealloc = (destructor)future_dealloc,
    .tp_repr = (reprfunc)f_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An execution started with async_op=True.",
    .tp_methods = future_methods,
    .tp_getset = future_getset,
};
