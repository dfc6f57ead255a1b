/*
 * A Python key-value store as libtutti's tutti_store_t: any object with
 * set(key: str, value: bytes) and get(key: str, timeout: float) returning
 * the value (bytes-like) or None when the time passed first.  libtutti
 * calls these from the thread that creates the context or joins a group,
 * which has released the GIL; each call takes it back.
 */
#include <string.h>

#include "tutti_py.h"

struct tpy_store {
    tutti_store_t c;
    PyObject *obj;
    char error[512];         /* the last exception a call raised */
};

/* Keep the exception's text for the caller's message, and clear it. */
static void keep_error(tpy_store_t *s, const char *what, const char *key)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *t = text ? PyUnicode_AsUTF8(text) : NULL;
    snprintf(s->error, sizeof(s->error), "the store's %s('%s') raised "
             "%s: %s", what, key,
             type ? ((PyTypeObject *)type)->tp_name : "an exception",
             t ? t : "");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

static int store_set(void *user, const char *key, const void *value,
                     size_t len)
{
    tpy_store_t *s = user;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(s->obj, "set", "(sy#)", key,
                                      (const char *)value, (Py_ssize_t)len);
    int rc = 0;
    if (r == NULL) {
        keep_error(s, "set", key);
        rc = -1;
    }
    Py_XDECREF(r);
    PyGILState_Release(gil);
    return rc;
}

static int store_get(void *user, const char *key, void *buf, size_t cap,
                     size_t *len_out, double timeout)
{
    tpy_store_t *s = user;
    PyGILState_STATE gil = PyGILState_Ensure();
    int rc = 0;
    PyObject *r = PyObject_CallMethod(s->obj, "get", "(sd)", key, timeout);
    if (r == NULL) {
        keep_error(s, "get", key);
        rc = -1;
    } else if (r == Py_None) {
        rc = 1;
    } else {
        Py_buffer b;
        if (PyObject_GetBuffer(r, &b, PyBUF_SIMPLE) != 0) {
            PyErr_Clear();
            snprintf(s->error, sizeof(s->error), "the store's get('%s') "
                     "returned %.80s: expected bytes or None", key,
                     Py_TYPE(r)->tp_name);
            rc = -1;
        } else {
            size_t n = (size_t)b.len;
            memcpy(buf, b.buf, n < cap ? n : cap);
            *len_out = n;
            PyBuffer_Release(&b);
        }
    }
    Py_XDECREF(r);
    PyGILState_Release(gil);
    return rc;
}

tpy_store_t *tpy_store_new(PyObject *obj)
{
    if (!PyObject_HasAttrString(obj, "set") ||
        !PyObject_HasAttrString(obj, "get")) {
        PyErr_Format(PyExc_TypeError, "store (%.80s) needs methods "
                     "set(key, value) and get(key, timeout)",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    tpy_store_t *s = PyMem_RawCalloc(1, sizeof(*s));
    if (s == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    tutti_store_init(&s->c);
    s->c.user = s;
    s->c.set = store_set;
    s->c.get = store_get;
    Py_INCREF(obj);
    s->obj = obj;
    return s;
}

const tutti_store_t *tpy_store_c(tpy_store_t *s)
{
    return &s->c;
}

const char *tpy_store_error(const tpy_store_t *s)
{
    return s ? s->error : "";
}

void tpy_store_free(tpy_store_t *s)
{
    if (s == NULL)
        return;
    Py_XDECREF(s->obj);
    PyMem_RawFree(s);
}
