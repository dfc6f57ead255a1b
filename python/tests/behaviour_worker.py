"""Futures, callbacks, errors and timeouts of the tutti package, two ranks.

Run under a launcher with -n 2.  Every rank prints "behaviour: rank R:
ok N checks" when all held, else "behaviour: rank R: FAILED <what>" for
each that did not, and exits 1.
"""
import sys
import time

import numpy as np

import tutti
from checks import expect, report, say

g = tutti.init()
rank, n = g.rank, g.size
ctx = g.context

def raises(exc, fn, *args, **kw):
    """The exception fn raised (asserting its type), or None."""
    try:
        fn(*args, **kw)
    except exc as e:
        expect(True, "")
        return e
    except Exception as e:  # noqa: BLE001
        expect(False, "%s raised %r, expected %s" % (fn, e, exc.__name__))
        return None
    expect(False, "%s raised nothing, expected %s" % (fn, exc.__name__))
    return None


# ---- futures and callbacks --------------------------------------------
a = np.full(3, rank + 1.0)
seen = []
f = tutti.allreduce(a, async_op=True)
f.add_done_callback(lambda fut: seen.append(("first", fut)))
expect(repr(f).startswith("<tutti.Future allreduce"), "repr %r" % f)
r = f.wait(timeout=30)
expect(r is a, "wait returns the array")
expect(np.array_equal(a, [3.0] * 3), "async allreduce %r" % a)
expect(f.done(), "done after wait")
expect(seen == [("first", f)], "callback ran once with the future: %r"
       % seen)
f.add_done_callback(lambda fut: seen.append("late"))
expect(seen[-1] == "late", "a callback added once done runs at once")
expect(f.exception() is None, "exception() of a success")

# A future dropped before completion still completes (its group holds it)
# and its callback runs once it is seen to (here: wait_all).
b = np.full(4, 1.0)
f = tutti.allreduce(b, async_op=True)
f.add_done_callback(lambda fut: seen.append("dropped"))
del f
g.wait_all(timeout=30)
expect("dropped" in seen, "a dropped future's callback ran: %r" % seen)
expect(np.array_equal(b, [2.0] * 4), "the dropped future's result %r" % b)

# Several in flight, waited out of order; allgatherv's counts on the
# future.
fs = [tutti.allreduce(np.full(2, float(i + rank)), async_op=True)
      for i in range(5)]
for i in reversed(range(5)):
    expect(np.array_equal(fs[i].wait(), [2.0 * i + 1] * 2),
           "in-flight future %d" % i)
# Many in flight at once, then wait_all: every result, every callback.
arrs = [np.full(3, float(i)) for i in range(500)]
done_count = [0]
for x in arrs:
    tutti.allreduce(x, async_op=True).add_done_callback(
        lambda fut: done_count.__setitem__(0, done_count[0] + 1))
g.wait_all(timeout=60)
expect(done_count[0] == 500, "500 callbacks: %d" % done_count[0])
expect(all(np.array_equal(x, [i * n] * 3) for i, x in enumerate(arrs)),
       "500 in-flight results")
mine = np.arange(rank + 1, dtype=np.int32)
out = np.zeros(3, np.int32)
f = tutti.allgatherv(mine, out, async_op=True)
expect(f.wait() is out and list(out) == [0, 0, 1], "allgatherv %r" % out)
expect(f.recv_counts == (1, 2), "recv_counts %r" % (f.recv_counts,))

# ---- a wait's own timeout: the future stays pending -------------------
g2 = ctx.join(2, timeout=30)
if rank == 0:
    f = g2.allreduce(np.ones(2), async_op=True)
    e = raises(TimeoutError, f.wait, timeout=0.05)
    expect(e is not None and "still pending" in str(e), "wait timeout %s"
           % e)
    expect(not f.done(), "still pending after a wait's timeout")
    expect(np.array_equal(f.wait(timeout=30), [2.0, 2.0]),
           "the result after waiting again")
else:
    time.sleep(0.5)
    g2.allreduce(np.ones(2))
g2.leave()
expect(g2.left, "left")
raises(ValueError, g2.allreduce, np.ones(1))

# ---- the GIL is released while a call waits: another thread runs ------
import threading  # noqa: E402

g4 = ctx.join(4, timeout=30)
if rank == 0:
    ticks = [0]
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)
    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.05)
    before = ticks[0]
    g4.allreduce(np.ones(2))  # rank 1 comes 0.5 s later
    during = ticks[0] - before
    stop.set()
    t.join()
    expect(during > 50, "another thread ran %d times during a 0.5 s wait"
           % during)
else:
    time.sleep(0.5)
    g4.allreduce(np.ones(2))
g4.leave()

# ---- an execution's time limit: TuttiTimeoutError ----------------------
g3 = ctx.join(3, timeout=30)
if rank == 0:
    t0 = time.time()
    e = raises(tutti.TuttiTimeoutError, g3.allreduce, np.ones(1),
               timeout=0.5)
    expect(time.time() - t0 < 10, "time limit kept")
    expect(e is not None and e.name == "ERR_TIMEOUT" and
           e.status == tutti.status["ERR_TIMEOUT"] and
           isinstance(e, TimeoutError) and isinstance(e, tutti.TuttiError)
           and str(e).startswith("ERR_TIMEOUT: ") and len(e.detail) > 20,
           "timeout error %r" % e)
tutti.barrier()
g3.leave()

# ---- errors of arguments: raised before anything moves ----------------
x = np.arange(8.0)
e = raises(ValueError, tutti.allreduce, x[::2])
expect(e and "not a C-contiguous" in str(e), "strided: %s" % e)
ro = np.ones(2)
ro.flags.writeable = False
e = raises(ValueError, tutti.allreduce, ro)
expect(e and "read-only" in str(e), "read-only: %s" % e)
e = raises(ValueError, tutti.allreduce, x, out=np.empty(3))
expect(e and "out holds 3 elements; 8 needed" in str(e), "small: %s" % e)
e = raises(ValueError, tutti.allreduce, x, out=np.empty(8, np.float32))
expect(e and "out holds float32, a holds float64" in str(e), "dtype: %s"
       % e)
e = raises(ValueError, tutti.allreduce, x, "xor")
expect(e and "op 'xor'" in str(e), "op: %s" % e)
e = raises(TypeError, tutti.allreduce, np.ones(2, np.int16))
expect(e and "does not reduce or move" in str(e), "int16: %s" % e)
e = raises(ValueError, tutti.permute, x, [0])
expect(e and "permutation has 1 entries" in str(e), "perm: %s" % e)
raw = np.zeros(9, np.uint8)
e = raises(ValueError, tutti.allreduce, raw[1:].view(np.uint64))
expect(e and "not on a 8-byte boundary" in str(e), "unaligned: %s" % e)
e = raises(ValueError, tutti.reduce_scatter, np.ones(3 * n + 1))
expect(e and "not a multiple of the group size" in str(e), "rs: %s" % e)
e = raises(TypeError, tutti.allreduce, object())
expect(e and "neither a buffer" in str(e), "object: %s" % e)
e = raises(ValueError, tutti.allreduce, np.ones(2), dtype="bfloat16")
expect(e and "dtype bfloat16 takes 2 bytes" in str(e), "dtype=: %s" % e)
e = raises(tutti.TuttiError, tutti.allreduce, np.ones(2, np.int32),
           pre_scale=2.0)
expect(e and e.name == "ERR_INVALID_ARG", "integer pre_scale: %r" % e)

# ---- buffers that are not numpy arrays --------------------------------
import array  # noqa: E402

ar = array.array("d", [rank, 1.5])
tutti.allreduce(ar)
expect(list(ar) == [sum(range(n)), 1.5 * n], "array.array %r" % ar)
ba = bytearray([rank + 1] * 3)
tutti.allreduce(ba, "max")
expect(list(ba) == [n] * 3, "bytearray %r" % ba)

# ---- DLPack: an object with no buffer protocol, only __dlpack__ ------


class DLOnly:
    """Host memory seen through DLPack alone (as a torch CPU tensor is)."""

    def __init__(self, a, device=(1, 0)):
        self.a = a
        self.device = device

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.device


d = np.arange(6, dtype=np.float32) * (rank + 1)
r = tutti.allreduce(DLOnly(d))
expect(isinstance(r, DLOnly) and np.array_equal(
    d, np.arange(6, dtype=np.float32) * sum(range(1, n + 1))),
    "DLPack allreduce %r" % d)
out = np.zeros((n, 2), np.int64)
tutti.allgather(DLOnly(np.array([rank, 7])), out=DLOnly(out))
expect(out.tolist() == [[r, 7] for r in range(n)], "DLPack allgather %r"
       % out)
e = raises(ValueError, tutti.allreduce, DLOnly(np.ones((4, 4))[:, 1]))
expect(e and "not C-contiguous" in str(e), "DLPack strided: %s" % e)
# A tensor said to be on a GPU: the CUDA group's join fails on a host
# without one (here), naming why; on a GPU host the CUDA path runs it.
try:
    tutti.allreduce(DLOnly(np.ones(2), device=(2, 0)))
    cuda_ran = True
except tutti.TuttiError as e:
    cuda_ran = False
    expect(e.name == "ERR_UNSUPPORTED" and "cuda" in e.detail.lower(),
           "CUDA tensor on a host without a GPU: %r" % e)
except ValueError as e:  # a GPU host: the memory is not the GPU's
    cuda_ran = True
    expect("cuda" in str(e), "CUDA tensor of host memory: %s" % e)

tutti.barrier()
status = report("behaviour: rank %d" % rank)
tutti.finalize()
sys.exit(status)
