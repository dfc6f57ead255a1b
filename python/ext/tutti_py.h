/*
 * The tutti package's extension (tutti._tutti): the types it defines and
 * what its files share.  A thin layer over libtutti: Python objects in,
 * pointers and counts to tutti_execute(), statuses out as exceptions.
 * No collective logic lives here or in the package's Python.
 */
#ifndef TUTTI_PY_H
#define TUTTI_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <tutti/tutti.h>

/* ---- errors (errors.c) ---------------------------------------------- */

/** tutti.TuttiError, and its subclass for TUTTI_ERR_TIMEOUT (also a
 *  builtin TimeoutError). */
extern PyObject *tpy_error;
extern PyObject *tpy_timeout_error;

/** Raise the TuttiError of @p st with tutti_last_error()'s detail (or
 *  @p detail where not NULL); NULL, for returning. */
PyObject *tpy_raise(tutti_status_t st, const char *detail);

/** A timeout argument: None (or absent) as -1, else seconds >= 0; -1
 *  and an exception naming @p call otherwise. */
int tpy_parse_timeout(PyObject *obj, const char *call, double *t_out);

/* ---- contexts (module.c) -------------------------------------------- */

typedef struct tpy_store tpy_store_t;

typedef struct {
    PyObject_HEAD
    tutti_context_t *ctx;
    tpy_store_t *store;      /* the Python store it met through, or NULL */
    int aborted;             /* a KeyboardInterrupt aborted it */
    int groups;              /* joined and not left */
} tpy_context_t;

extern PyTypeObject tpy_context_type;

/* ---- stores (store.c) ----------------------------------------------- */

/** A tutti_store_t over a Python object with set(key, value) and
 *  get(key, timeout); NULL with an exception set. */
tpy_store_t *tpy_store_new(PyObject *obj);
const tutti_store_t *tpy_store_c(tpy_store_t *s);
/** The Python error a store call raised last, as text ("" if none). */
const char *tpy_store_error(const tpy_store_t *s);
void tpy_store_free(tpy_store_t *s);

/* ---- buffers (view.c) ----------------------------------------------- */

/** One array a collective reads or writes: host memory through the
 *  buffer protocol, host or CUDA memory through DLPack. */
typedef struct {
    void *ptr;
    size_t count;            /* elements */
    tutti_dtype_t dtype;
    int cuda_device;         /* -1: host memory */
    Py_buffer buf;           /* held while has_buf */
    int has_buf;
    PyObject *capsule;       /* the consumed DLPack capsule, or NULL */
    void *managed;           /* its DLManagedTensor (deleted at release) */
} tpy_view_t;

/**
 * Take a view of @p obj (argument @p arg of @p call, for messages):
 * C-contiguous, writable where @p writable, its dtype from the object or
 * @p dtype_name where not NULL (the same size as the object's elements:
 * "bfloat16" over uint16 numpy arrays).  @p stream: the CUDA stream handle
 * DLPack's producer orders its work for (0: none given).  0, or -1 with an
 * exception set.
 */
int tpy_view_get(PyObject *obj, const char *call, const char *arg,
                 int writable, const char *dtype_name, Py_ssize_t stream,
                 tpy_view_t *v);
void tpy_view_release(tpy_view_t *v);

/** The bytes an array spans, whatever its strides: host memory through
 *  the buffer protocol or DLPack (host 1), or DLPack's device memory
 *  (host 0; ptr and bytes not looked at, the capsule not taken). */
typedef struct {
    void *ptr;               /* its lowest byte */
    size_t bytes;            /* to the end of its highest element */
    int host;
} tpy_span_t;

/** @p obj's span, for @p call's messages; 0, or -1 with an exception. */
int tpy_view_span(PyObject *obj, const char *call, tpy_span_t *s);

/** Parse @p obj (a str, or None for @p dflt) as an op; -1 and an
 *  exception when it names none. */
int tpy_op_parse(PyObject *obj, const char *call, tutti_op_t dflt,
                 tutti_op_t *op_out);

/* ---- registered memory (mem.c) ------------------------------------- */

/** tutti._tutti.Memory: bytes of tutti_mem_alloc behind the buffer
 *  protocol, freed with the object. */
extern PyTypeObject tpy_mem_type;

/** tutti._tutti.mem_registered(obj): whether obj's bytes lie in one
 *  registered region (tutti_mem_registered). */
PyObject *tpy_mem_registered(PyObject *m, PyObject *obj);

/* ---- groups (group.c), waits and completions (wait.c), futures
 *      (future.c) -------------------------- */

typedef struct tpy_future tpy_future_t;

typedef struct {
    PyObject_HEAD
    tpy_context_t *context;  /* referenced */
    tutti_group_t *group;    /* NULL once left */
    PyThread_type_lock lock; /* one thread drives the member at a time */
    int rank, size;
    int cuda_device;         /* -1: a cpu group */
    PyObject *pending;       /* dict: the futures not yet finished, in
                                the order started (values None) */
    tpy_future_t *completed; /* completions seen by the progressing thread,
                                finished when it is back in Python */
} tpy_group_t;

extern PyTypeObject tpy_group_type;

/** tutti.allreduce (the default group's), and the package's setting of
 *  that group and of the Python function for the other calls. */
PyObject *tpy_default_allreduce(PyObject *m, PyObject *args, PyObject *kw);
PyObject *tpy_set_defaults(PyObject *m, PyObject *args);

/** Take @p g's lock, the GIL released while another thread holds it. */
void tpy_group_lock(tpy_group_t *g);
void tpy_group_unlock(tpy_group_t *g);

/**
 * Wait for @p r of @p g (lock held) at most @p timeout seconds (< 0: no
 * limit), the GIL released, in slices between which signals are looked
 * at.  A KeyboardInterrupt (or another signal handler's exception) aborts
 * the job naming @p call, waits for the request to fail, and returns
 * TUTTI_ERR_ABORTED with the exception set (*interrupted 1).  Returns the
 * request's status, or TUTTI_INPROGRESS when the time passed first.
 */
tutti_status_t tpy_wait(tpy_group_t *g, tutti_request_t *r, double timeout,
                        const char *call, int *interrupted);

/** Finish the futures completed while the group was progressed (their
 *  callbacks run); lock not held. */
void tpy_group_drain(tpy_group_t *g);

struct tpy_future {
    PyObject_HEAD
    tpy_group_t *group;      /* referenced */
    tutti_request_t *request;/* NULL once finished */
    const char *call;        /* the collective, for messages */
    tutti_status_t status;   /* INPROGRESS until finished */
    PyObject *error;         /* the exception, once failed */
    PyObject *result;        /* what wait() returns */
    PyObject *keep;          /* objects the execution reads until done */
    PyObject *callbacks;     /* list, or NULL */
    PyObject *recv_counts;   /* per-rank counts' result (tuple), or NULL */
    size_t recv_total;
    tpy_view_t views[2];
    int nviews;
    size_t *counts;          /* per-rank counts read until done */
    int want_counts;         /* record recv_counts at completion */
    tpy_future_t *next_completed;
    int in_completed;
};

extern PyTypeObject tpy_future_type;

/** A pending future of @p g for request @p r (takes the views). */
tpy_future_t *tpy_future_new(tpy_group_t *g, tutti_request_t *r,
                             const char *call, PyObject *result,
                             PyObject *keep, tpy_view_t *views, int nviews,
                             size_t *counts, int want_counts);
/** Record a completed request's outcome in @p f and free the request
 *  (lock held; no Python code runs). */
void tpy_future_settle(tpy_future_t *f, tutti_status_t st);
/** Run @p f's callbacks (lock not held). */
void tpy_future_run_callbacks(tpy_future_t *f);
/** The C completion callback: queue @p arg's future on its group. */
void tpy_future_on_complete(tutti_request_t *r, tutti_status_t st,
                            void *arg);

#endif
