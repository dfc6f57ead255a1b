"""Collectives on arrays of registered memory (tutti.empty) against numpy.

Run under a launcher (python -m tutti.run -n N); every rank makes every
input itself (seeded by rank), so each knows the exact result.  allreduce
(in place and into out=), allgather, broadcast from the first and the
last rank, alltoall, on float32 (small integers: sums exact) and int64
(the whole range: sums wrap), of 1, 4099 and 1 Mi + 3 elements a rank
(4 KiB and more go by single copy from registered memory between the
processes of a host); then members mixing registered and private memory,
and an async call whose array is dropped before the wait.  Prints
"mem_worker: rank R: ok N checks" or the failures, and exits 1 on any.
"""
import gc
import sys

import numpy as np

import tutti
from checks import expect, report

DTYPES = ["float32", "int64"]
SIZES = [1, 4099, (1 << 20) + 3]

g = tutti.init()
rank, n = g.rank, g.size


def make(dt, count, r, salt):
    rng = np.random.default_rng([r, count, salt, DTYPES.index(dt)])
    if dt == "float32":
        return rng.integers(-8, 9, count).astype(np.float32)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, count, dtype=dt, endpoint=True)


def filled(x):
    """x copied into a new array of registered memory."""
    a = tutti.empty(x.shape, x.dtype)
    a[...] = x
    return a


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.array_equal(a, b)


for dt in DTYPES:
    for count in SIZES:
        tag = "%s x %d" % (dt, count)
        ins = [make(dt, count, r, 1) for r in range(n)]
        with np.errstate(over="ignore"):
            total = np.add.reduce(np.stack(ins), axis=0, dtype=dt)

        a = filled(ins[rank])
        expect(tutti.registered(a), "registered(tutti.empty) " + tag)
        expect(type(a) is np.ndarray and a.dtype == np.dtype(dt) and
               a.shape == (count,), "tutti.empty's array " + tag)
        expect(not tutti.registered(np.empty(count, dt)),
               "registered(numpy.empty) is False " + tag)
        tutti.allreduce(a)
        expect(same(a, total), "allreduce in place " + tag)

        a = filled(ins[rank])
        out = tutti.empty(count, dt)
        tutti.allreduce(a, out=out)
        expect(same(out, total) and same(a, ins[rank]),
               "allreduce out= " + tag)

        out = tutti.empty((n, count), dt)
        tutti.allgather(filled(ins[rank]), out)
        expect(same(out, np.stack(ins)), "allgather " + tag)

        for root in sorted({0, n - 1}):
            a = filled(ins[rank])
            tutti.broadcast(a, root)
            expect(same(a, ins[root]), "broadcast root %d %s" % (root, tag))

        # Block j of rank r's input to rank j: blocks of count elements.
        blocks = [make(dt, count * n, r, 2) for r in range(n)]
        out = tutti.alltoall(filled(blocks[rank]))
        want = np.concatenate([blocks[r][rank * count:(rank + 1) * count]
                               for r in range(n)])
        expect(same(out, want), "alltoall " + tag)
        out = tutti.empty(count * n, dt)
        tutti.alltoall(filled(blocks[rank]), out)
        expect(same(out, want), "alltoall out= " + tag)

# Members mixing registered and private memory: even ranks send from
# tutti.empty, odd ranks from numpy's own arrays.
count = SIZES[-1]
ins = [make("float32", count, r, 3) for r in range(n)]
a = filled(ins[rank]) if rank % 2 == 0 else ins[rank].copy()
tutti.allreduce(a)
expect(same(a, np.add.reduce(np.stack(ins), axis=0)), "mixed allreduce")

# An async call keeps its arrays (and their Memory) until it is done,
# whoever else drops them.
fut = tutti.allreduce(filled(ins[rank]), async_op=True)
gc.collect()
res = fut.wait()
expect(tutti.registered(res) and
       same(res, np.add.reduce(np.stack(ins), axis=0)),
       "async allreduce of a dropped array")

sys.exit(report("mem_worker: rank %d" % rank))
