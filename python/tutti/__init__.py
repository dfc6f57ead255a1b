"""Tutti's collectives from Python.

A thin layer over libtutti (the extension tutti._tutti): every collective
runs in the C library on the memory of the arrays given, numpy arrays and
anything with the buffer protocol on the host, DLPack tensors on the host
or a CUDA device.  No collective logic lives in Python; what this module
adds is the default group and the allocation of outputs left to it.

    import numpy as np, tutti
    a = np.full(4, tutti.rank() + 1.0)
    tutti.allreduce(a)              # in place: every rank holds the sum

Run it with ``python -m tutti.run -n 2 script.py`` (or tutti-run, mpirun,
srun), or meet through a key-value store: ``tutti.init(store, rank=r,
size=n)`` with any object that has ``set(key, value)`` and ``get(key,
timeout)`` (the value as bytes, or None once the timeout passed).

Arrays from :func:`empty` and :func:`zeros` (numpy) and
``tutti.torch.empty`` (torch tensors) lie in registered memory: shared
pages that the other processes of the host read in place, so that a
message of 4 KiB or more between two processes of a host (the shm
transport) is copied once, straight from the sender's array, where
private memory (numpy's own arrays, torch's) is copied twice, through
shared slots.  They work in every collective as any other array; only
what a rank sends matters.  :func:`registered` says whether an array is
such memory.

    a = tutti.zeros(1 << 20, dtype="float32")   # a numpy array
    tutti.allreduce(a)

Every collective takes ``async_op=True`` to return a :class:`Future`
instead of waiting; waits release the GIL, and Ctrl-C interrupts one with
KeyboardInterrupt, the job aborted (every rank's call fails with
ERR_ABORTED naming the rank interrupted).  Errors raise
:class:`TuttiError` with ``status``, ``name`` and ``detail``.
"""
import atexit as _atexit
import ctypes as _ctypes
import os as _os


def _load_bundled():
    """A wheel's libtutti lies in _prefix/lib with the libraries it needs
    that a machine may lack: load those first, so that its references to
    them find them whatever the system has."""
    lib = _os.path.join(_os.path.dirname(__file__), "_prefix", "lib")
    if not _os.path.isdir(lib):
        return
    for stem in ("libyaml", "libltdl", "libsodium"):
        for name in sorted(_os.listdir(lib)):
            if name.startswith(stem) and ".so." in name:
                _ctypes.CDLL(_os.path.join(lib, name),
                             mode=_ctypes.RTLD_GLOBAL)
                break


_load_bundled()

from tutti import _tutti  # noqa: E402
from tutti._tutti import (Context, Future, Memory,  # noqa: E402,F401
                          TuttiError, TuttiTimeoutError, library_path,
                          status)

__version__ = "%d.%d.%d" % _tutti.version

__all__ = ["Context", "Group", "Future", "TuttiError", "TuttiTimeoutError",
           "init", "finalize", "is_initialized", "rank", "size", "group",
           "context", "allreduce", "reduce", "broadcast", "allgather",
           "allgatherv", "gather", "reduce_scatter", "alltoall", "permute",
           "barrier", "library_path", "status", "Memory", "empty", "zeros",
           "registered"]


def _shape(a):
    s = getattr(a, "shape", None)
    return tuple(s) if s is not None else (len(memoryview(a).cast("B"))
                                           // memoryview(a).itemsize,)


def _empty_like(a, shape, call):
    """An uninitialised array of a's type and dtype with @shape."""
    new_empty = getattr(a, "new_empty", None)  # torch.Tensor
    if new_empty is not None:
        return new_empty(shape)
    if type(a).__module__ == "numpy":
        import numpy
        return numpy.empty(shape, dtype=a.dtype)
    raise TypeError("%s: cannot make the output for a %s: give out="
                    % (call, type(a).__name__))


class Group(_tutti.Group):
    """A member of a group of devices (:meth:`Context.join`).

    Its methods run the collectives; see the module functions of the same
    names, which call them on the default group.  Outputs left to the
    call are allocated here with a's type and dtype."""

    __slots__ = ()

    def allgather(self, a, out=None, **kw):
        if out is None:
            out = _empty_like(a, (self.size,) + _shape(a), "allgather")
        return super().allgather(a, out, **kw)

    def gather(self, a, out=None, root=0, **kw):
        if out is None and self.rank == root:
            out = _empty_like(a, (self.size,) + _shape(a), "gather")
        return super().gather(a, out, root, **kw)

    def reduce_scatter(self, a, out=None, op="sum", *, counts=None, **kw):
        if out is None:
            s = _shape(a)
            if counts is not None:
                shape = (counts[self.rank],)
            elif s and s[0] % self.size == 0:
                shape = (s[0] // self.size,) + s[1:]
            else:
                n = 1
                for d in s:
                    n *= d
                shape = (n // self.size,)
            out = _empty_like(a, shape, "reduce_scatter")
        return super().reduce_scatter(a, out, op, counts=counts, **kw)

    def alltoall(self, a, out=None, *, counts=None, **kw):
        if out is None and counts is None:
            out = _empty_like(a, _shape(a), "alltoall")
        elif out is None:
            recv = super().alltoall(a, None, counts=counts,
                                    dtype=kw.get("dtype"),
                                    timeout=kw.get("timeout", 0))
            out = _empty_like(a, (sum(recv),), "alltoall")
        return super().alltoall(a, out, counts=counts, **kw)

    def allgatherv(self, a, out=None, **kw):
        if out is None:
            recv = super().allgatherv(a, None, dtype=kw.get("dtype"),
                                      timeout=kw.get("timeout", 0))
            out = _empty_like(a, (sum(recv),), "allgatherv")
        return super().allgatherv(a, out, **kw)


_tutti._set_group_class(Group)

# The default groups' keys: one per device, every task a member.
_KEY_CPU = 0x7475747469
_KEY_CUDA = 0x7475747469 + 1

_context = None
_group = None
_cuda_groups = {}
_HOST_TYPES = {bytearray, memoryview, bytes}


def init(store=None, rank=None, size=None, **kwargs):
    """Join the job (from the environment, or through @store with @rank and
    @size) and its default group, every task one member.  Called on first
    use with no arguments.  Keyword arguments go to :class:`Context`
    (config, module_path, log_level, job_id).  Returns the default
    group."""
    global _context, _group
    if _group is not None:
        if store is None and rank is None and size is None and not kwargs:
            return _group
        raise RuntimeError("tutti.init: already initialized (call "
                           "tutti.finalize() first)")
    if (rank is None) != (size is None):
        raise ValueError("tutti.init: give rank and size together")
    ctx = Context(store, rank=-1 if rank is None else rank,
                  size=-1 if size is None else size, **kwargs)
    _group = ctx.join(_KEY_CPU)
    _context = ctx
    _tutti._set_defaults(_group, _allreduce)
    return _group


def is_initialized():
    """Whether init() ran (and finalize() did not since)."""
    return _group is not None


def finalize():
    """Leave the default groups (waiting for their pending futures) and
    close the context.  Runs at exit."""
    global _context, _group
    for g in list(_cuda_groups.values()):
        g.leave()
    _cuda_groups.clear()
    _tutti._set_defaults(None, _allreduce)
    if _group is not None:
        _group.leave()
    _group = None
    if _context is not None:
        _context.close()
    _context = None


_atexit.register(finalize)


def group():
    """The default group (init() on first use)."""
    return _group if _group is not None else init()


def context():
    """The default group's Context."""
    return group().context


def rank():
    """This task's rank in the default group."""
    return group().rank


def size():
    """The number of tasks in the default group."""
    return group().size


def _group_of(a):
    """The default group of a's device: the cpu group for host memory, a
    CUDA group (joined on first use, one member per task) for a DLPack
    tensor on a GPU."""
    g = _group if _group is not None else init()
    t = type(a)
    if t in _HOST_TYPES:
        return g
    if t.__module__ == "numpy" and t.__name__ == "ndarray":
        _HOST_TYPES.add(t)  # host memory always: no more looking
        return g
    dev = getattr(a, "__dlpack_device__", None)
    if dev is None:
        return g
    kind, index = dev()
    if kind != 2:  # kDLCUDA
        return g
    cg = _cuda_groups.get(index)
    if cg is None:
        cg = _context.join(_KEY_CUDA + index, device="cuda", index=index)
        _cuda_groups[index] = cg
    return cg


def _allreduce(a, op="sum", *, out=None, **kw):
    """tutti.allreduce's calls that the extension does not make itself
    (no group yet, a DLPack tensor, keywords)."""
    return _group_of(a).allreduce(a, op, out=out, **kw)


# tutti.allreduce is the extension's: the common call allreduce(a[, op])
# on host memory skips a Python frame (8-byte calls are a third cheaper).
allreduce = _tutti.allreduce
_tutti._set_defaults(None, _allreduce)


def reduce(a, op="sum", root=0, *, out=None, **kw):
    """Reduce @a to rank @root (in place there unless @out); returns the
    result at the root, None elsewhere."""
    return _group_of(a).reduce(a, op, root, out=out, **kw)


def broadcast(a, root=0, *, out=None, **kw):
    """Rank @root's @a to every rank, in place unless @out."""
    return _group_of(a).broadcast(a, root, out=out, **kw)


def allgather(a, out=None, **kw):
    """Every rank's @a, stacked in rank order: shape (size,) + a.shape."""
    return _group_of(a).allgather(a, out, **kw)


def allgatherv(a, out=None, **kw):
    """Every rank's @a, of any length, concatenated in rank order (1-D).
    Without @out, a first exchange learns the lengths (on every rank:
    give out on all ranks or on none)."""
    return _group_of(a).allgatherv(a, out, **kw)


def gather(a, out=None, root=0, **kw):
    """Every rank's @a stacked at rank @root; None on the others."""
    return _group_of(a).gather(a, out, root, **kw)


def reduce_scatter(a, out=None, op="sum", *, counts=None, **kw):
    """Reduce @a (size blocks, or blocks of @counts elements) and give
    rank r block r."""
    return _group_of(a).reduce_scatter(a, out, op, counts=counts, **kw)


def alltoall(a, out=None, *, counts=None, **kw):
    """Block j of @a (equal blocks, or @counts[j] elements) to rank j;
    the result holds the blocks from every rank in rank order."""
    return _group_of(a).alltoall(a, out, counts=counts, **kw)


def permute(a, permutation, *, out=None, **kw):
    """Send @a to rank permutation[rank]; receive (in place unless @out)
    from the rank that names this one."""
    return _group_of(a).permute(a, permutation, out=out, **kw)


def barrier(*, timeout=0):
    """Return once every rank of the default group called it."""
    return group().barrier(timeout=timeout)


# ---- registered memory ------------------------------------------------

def _count(shape, call):
    """The elements of @shape (an int or a sequence of ints >= 0) and
    shape as a tuple."""
    import operator
    try:
        dims = (operator.index(shape),)
    except TypeError:
        dims = tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in dims):
        raise ValueError("%s: shape %r has a negative dimension"
                         % (call, shape))
    n = 1
    for d in dims:
        n *= d
    return n, dims


def empty(shape, dtype="float32"):
    """A numpy array of @shape and @dtype in registered memory, a new
    :class:`Memory` of its own (kept alive by the array: ``a.base`` is a
    memoryview of it), freed when the last array over it goes.

    What it gives: a message of 4 KiB or more that a collective sends
    from it to another process of the host (the shm transport) goes as a
    descriptor, and the receiver copies it, or reduces it into its own
    data, straight from this array: one copy where private memory takes
    two.  Receive buffers gain nothing from it.  Private memory (numpy's
    own arrays, ``numpy.empty``) cannot be shared this way: allocate the
    arrays you send here instead.  Other transports (tcp, threads of one
    process) move it as any memory.

    The pages are zero-filled (empty and zeros give the same) and whole
    (a small array still takes a page).  Do not let an array go while an
    async collective reads it (its Future keeps it)."""
    import numpy
    dt = numpy.dtype(dtype)
    n, dims = _count(shape, "tutti.empty")
    # A page even for no elements: the array's address is then
    # registered memory too, as the other sizes'.
    mem = Memory(max(n, 1) * dt.itemsize)
    return numpy.frombuffer(mem, dt, count=max(n, 1))[:n].reshape(dims)


def zeros(shape, dtype="float32"):
    """:func:`empty`: registered memory comes zero-filled."""
    return empty(shape, dtype)


def registered(a):
    """Whether the bytes of @a (a numpy array or other buffer, or a DLPack
    tensor such as a torch tensor) lie in registered memory (:func:`empty`,
    ``tutti.torch.empty``, a :class:`Memory`): True for views of it,
    False for private memory (``numpy.empty``, ``torch.empty``) and GPU
    memory."""
    detach = getattr(a, "detach", None)  # torch: no DLPack of grad tensors
    if detach is not None and getattr(a, "requires_grad", False):
        a = detach()
    return _tutti.mem_registered(a)
