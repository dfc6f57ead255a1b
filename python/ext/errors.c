/*
 * The package's exceptions (tutti.TuttiError, tutti.TuttiTimeoutError)
 * raised from a status and libtutti's detail, and the timeout argument
 * every wait takes.
 */
#include "tutti_py.h"

PyObject *tpy_error;
PyObject *tpy_timeout_error;

PyObject *tpy_raise(tutti_status_t st, const char *detail)
{
    const char *d = detail ? detail : tutti_last_error();
    if (d == NULL || *d == '\0')
        d = tutti_strerror(st);
    PyObject *cls = st == TUTTI_ERR_TIMEOUT ? tpy_timeout_error : tpy_error;
    PyObject *msg = PyUnicode_FromFormat("%s: %s", tutti_status_name(st), d);
    if (msg == NULL)
        return NULL;
    PyObject *e = PyObject_CallOneArg(cls, msg);
    Py_DECREF(msg);
    if (e == NULL)
        return NULL;
    PyObject *name = PyUnicode_FromString(tutti_status_name(st));
    PyObject *code = PyLong_FromLong((long)st);
    PyObject *dt = PyUnicode_FromString(d);
    if (name && code && dt) {
        PyObject_SetAttrString(e, "status", code);
        PyObject_SetAttrString(e, "name", name);
        PyObject_SetAttrString(e, "detail", dt);
    }
    Py_XDECREF(name);
    Py_XDECREF(code);
    Py_XDECREF(dt);
    PyErr_SetObject(cls, e);
    Py_DECREF(e);
    return NULL;
}

int tpy_parse_timeout(PyObject *obj, const char *call, double *t_out)
{
    *t_out = -1;
    if (obj == NULL || obj == Py_None)
        return 0;
    double t = PyFloat_AsDouble(obj);
    if (t == -1 && PyErr_Occurred())
        return -1;
    if (!(t >= 0)) {
        PyErr_Format(PyExc_ValueError, "%s: timeout is %R: expected "
                     "seconds >= 0, or None", call, obj);
        return -1;
    }
    *t_out = t;
    return 0;
}
