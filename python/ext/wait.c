/*
 * Waiting and completions: the lock that lets one thread drive a group
 * member at a time, the wait every call ends in (slices of
 * tutti_request_wait_for() with the GIL released, signals looked at
 * between them, Ctrl-C aborting the job), and what happens when a
 * future's request completes: the C callback only queues it; once the
 * progressing thread is back in Python its outcome is recorded, its
 * arrays let go and its Python callbacks run.
 */
#include <string.h>

#include "tutti_py.h"

void tpy_group_lock(tpy_group_t *g)
{
    if (PyThread_acquire_lock(g->lock, NOWAIT_LOCK))
        return;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(g->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
}

void tpy_group_unlock(tpy_group_t *g)
{
    PyThread_release_lock(g->lock);
}

/* Slices of a wait: a Ctrl-C is seen within one. */
#define WAIT_SLICE 0.05

tutti_status_t tpy_wait(tpy_group_t *g, tutti_request_t *r, double timeout,
                        const char *call, int *interrupted)
{
    *interrupted = 0;
    /* A few tests first, the GIL kept: a small call's peer is often a
     * fraction of a microsecond away, less than giving the GIL up and
     * taking it back costs. */
    tutti_status_t st;
    for (int i = 0; i < 16; i++)
        if ((st = tutti_request_test(r)) != TUTTI_INPROGRESS)
            return st;
    double waited = 0;
    for (;;) {
        double slice = WAIT_SLICE;
        if (timeout >= 0 && timeout - waited < slice)
            slice = timeout - waited > 0 ? timeout - waited : 0;
        Py_BEGIN_ALLOW_THREADS
        st = tutti_request_wait_for(r, slice);
        Py_END_ALLOW_THREADS
        if (st != TUTTI_INPROGRESS)
            return st;
        waited += slice;
        if (PyErr_CheckSignals() != 0)
            break;
        if (timeout >= 0 && waited >= timeout)
            return TUTTI_INPROGRESS;
    }
    /* A signal handler raised (KeyboardInterrupt): abort the job, so that
     * no member waits for this one, and wait for the abort to end the
     * request, whose buffers the caller is about to let go. */
    char why[160];
    snprintf(why, sizeof(why), "rank %d of group: %s interrupted "
             "(KeyboardInterrupt or another signal's exception)", g->rank,
             call);
    *interrupted = 1;
    g->context->aborted = 1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    Py_BEGIN_ALLOW_THREADS
    tutti_abort(g->context->ctx, why);
    st = tutti_request_wait(r);
    Py_END_ALLOW_THREADS
    PyErr_Restore(type, value, tb);
    return st != TUTTI_OK ? st : TUTTI_ERR_ABORTED;
}

void tpy_group_drain(tpy_group_t *g)
{
    if (g->completed == NULL)
        return;
    tpy_group_lock(g);
    tpy_future_t *list = g->completed;
    g->completed = NULL;
    for (tpy_future_t *f = list; f != NULL; f = f->next_completed)
        if (f->request != NULL)
            tpy_future_settle(f, tutti_request_test(f->request));
    tpy_group_unlock(g);
    while (list != NULL) {
        tpy_future_t *f = list;
        list = f->next_completed;
        f->next_completed = NULL;
        f->in_completed = 0;
        /* The pending list's reference, moved here until the callbacks
         * ran (they may drop the caller's last one). */
        Py_INCREF(f);
        if (PyDict_DelItem(g->pending, (PyObject *)f) != 0)
            PyErr_Clear(); /* not there: taken out before */
        tpy_future_run_callbacks(f);
        Py_DECREF(f);
    }
}

void tpy_future_on_complete(tutti_request_t *r, tutti_status_t st,
                            void *arg)
{
    (void)r;
    (void)st;
    tpy_future_t *f = arg;
    if (f->in_completed)
        return;
    f->in_completed = 1;
    f->next_completed = f->group->completed;
    f->group->completed = f;
}

void tpy_future_settle(tpy_future_t *f, tutti_status_t st)
{
    if (f->request == NULL)
        return;
    f->status = st;
    if (st != TUTTI_OK) {
        tpy_raise(st, NULL);
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        f->error = value;
        Py_XDECREF(type);
        Py_XDECREF(tb);
    }
    if (f->want_counts) {
        tutti_request_info_t info;
        tutti_request_info(f->request, &info);
        f->recv_total = info.recv_total;
        if (info.recv_counts != NULL) {
            int n = f->group->size;
            f->recv_counts = PyTuple_New(n);
            for (int i = 0; f->recv_counts != NULL && i < n; i++)
                PyTuple_SET_ITEM(f->recv_counts, i,
                                 PyLong_FromSize_t(info.recv_counts[i]));
        }
    }
    tutti_request_free(f->request);
    f->request = NULL;
    for (int i = 0; i < f->nviews; i++)
        tpy_view_release(&f->views[i]);
    f->nviews = 0;
    PyMem_Free(f->counts);
    f->counts = NULL;
    Py_CLEAR(f->keep);
}

void tpy_future_run_callbacks(tpy_future_t *f)
{
    PyObject *cbs = f->callbacks;
    f->callbacks = Py_None; /* ran: later ones run at once */
    Py_INCREF(Py_None);
    if (cbs == NULL)
        return;
    if (cbs != Py_None) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cbs); i++) {
            PyObject *r = PyObject_CallOneArg(PyList_GET_ITEM(cbs, i),
                                              (PyObject *)f);
            if (r == NULL)
                PyErr_WriteUnraisable(PyList_GET_ITEM(cbs, i));
            Py_XDECREF(r);
        }
    }
    Py_DECREF(cbs);
}
