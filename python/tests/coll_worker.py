"""Every collective x dtype x op of the tutti package against numpy.

Run under a launcher (python -m tutti.run -n N, tutti-run, mpirun); every
rank makes every input itself (seeded by rank), so each knows the exact
result.  Integer inputs span their whole range (sums and products wrap);
floating inputs are small integers, so every reduction is exact whatever
the order of additions.  Sizes: 0, 1, 2, 7 (odd, some smaller than the
group) and 1001; in place and into out=, blocking and async.  Prints
"coll_worker: rank R: N checks, W wrong" and, at rank 0, the job's
totals (summed through the control plane); exits 1 if any was wrong.
"""
import os
import sys

import numpy as np

import tutti


def say(line):
    """One write per line: ranks' lines never interleave."""
    os.write(1, (line + "\n").encode())

DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
          "bfloat16", "float32", "float64"]
OPS = ["sum", "prod", "min", "max", "avg"]
SIZES = [0, 1, 2, 7, 1001]

g = tutti.init()
rank, n = g.rank, g.size
checks = 0
wrong = []


def np_dtype(dt):
    return np.uint16 if dt == "bfloat16" else np.dtype(dt)


def to_bf16(x):
    """float32 to bfloat16 bits, rounded to nearest even (no NaN here)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(b):
    return (np.asarray(b, np.uint32) << 16).view(np.float32)


def make(dt, count, r, salt, op=None):
    """Rank r's input: whole-range integers, small floats (1 and 2 for
    prod, so that products stay exact)."""
    rng = np.random.default_rng([r, count, salt, DTYPES.index(dt)])
    if dt in ("float16", "bfloat16", "float32", "float64"):
        if op == "prod":
            x = rng.integers(1, 3, count).astype(np.float32)
        else:
            x = rng.integers(-8, 9, count).astype(np.float32)
        return to_bf16(x) if dt == "bfloat16" else x.astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, count, dtype=dt,
                        endpoint=True)


def reduce_ref(dt, inputs, op):
    """The reduction of the inputs as libtutti defines it."""
    if dt == "bfloat16":
        vals = [from_bf16(x) for x in inputs]
        return to_bf16(reduce_ref("float32", vals, op))
    s = np.stack(inputs) if inputs[0].size else np.stack(inputs)
    with np.errstate(over="ignore"):
        if op == "sum":
            return np.add.reduce(s, axis=0, dtype=s.dtype)
        if op == "prod":
            return np.multiply.reduce(s, axis=0, dtype=s.dtype)
        if op == "min":
            return s.min(axis=0) if s.shape[1] else s[0]
        if op == "max":
            return s.max(axis=0) if s.shape[1] else s[0]
        total = np.add.reduce(s, axis=0, dtype=s.dtype)
        if s.dtype.kind == "f":
            return (total / s.dtype.type(len(inputs))).astype(s.dtype)
        q = total // len(inputs)
        if s.dtype.kind == "i":  # toward zero
            q = q + ((total < 0) & (total % len(inputs) != 0))
        return q.astype(s.dtype)


def check(what, got, want):
    global checks
    checks += 1
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want,
                                                      equal_nan=False):
        if len(wrong) < 20:
            wrong.append("%s: got %r, want %r" % (what, got.ravel()[:6],
                                                  want.ravel()[:6]))
        else:
            wrong.append(what)


def run(call, *args, async_op=False, **kw):
    """Call tutti's @call, blocking or through a Future."""
    fn = getattr(tutti, call)
    if async_op:
        return fn(*args, async_op=True, **kw).wait(timeout=60)
    return fn(*args, **kw)


def reductions():
    for dt in DTYPES:
        for op in OPS:
            for count in SIZES:
                ins = [make(dt, count, r, 1, op) for r in range(n)]
                want = reduce_ref(dt, ins, op)
                extra = {"dtype": "bfloat16"} if dt == "bfloat16" else {}
                tag = "%s %s count %d" % (dt, op, count)
                a = ins[rank].copy()
                run("allreduce", a, op, async_op=count == 7, **extra)
                check("allreduce in place " + tag, a, want)
                out = np.empty_like(a)
                r = run("allreduce", ins[rank], op, out=out, **extra)
                check("allreduce out " + tag, out, want)
                check("allreduce returns out " + tag, r is out, True)
                for root in (0, n - 1):
                    a = ins[rank].copy()
                    r = run("reduce", a, op, root, **extra)
                    if rank == root:
                        check("reduce root %d %s" % (root, tag), a, want)
                    else:
                        check("reduce non-root %s" % tag, r is None, True)
                        check("reduce input kept %s" % tag, a, ins[rank])
                # reduce_scatter: n blocks of count, block rank back.
                ins = [make(dt, count * n, r, 2, op) for r in range(n)]
                want = reduce_ref(dt, ins, op)
                got = run("reduce_scatter", ins[rank].copy(), None, op,
                          async_op=count == 2, **extra)
                check("reduce_scatter " + tag, got,
                      want[rank * count:(rank + 1) * count])
                # per-rank counts: rank r's block has (r + count) % 3
                counts = [(r + count) % 3 for r in range(n)]
                tot = sum(counts)
                ins = [make(dt, tot, r, 3, op) for r in range(n)]
                want = reduce_ref(dt, ins, op)
                got = run("reduce_scatter", ins[rank].copy(), None, op,
                          counts=counts, **extra)
                lo = sum(counts[:rank])
                check("reduce_scatter counts " + tag, got,
                      want[lo:lo + counts[rank]])
        # pre and post scale of floating reductions: exact here.
        if dt.startswith("float") or dt == "bfloat16":
            extra = {"dtype": "bfloat16"} if dt == "bfloat16" else {}
            ins = [make(dt, 9, r, 4) for r in range(n)]
            want = reduce_ref(dt, ins, "sum")
            a = ins[rank].copy()
            tutti.allreduce(a, pre_scale=2.0, post_scale=0.5, **extra)
            check("allreduce scaled %s" % dt, a, want)


def movements():
    for dt in DTYPES:
        extra = {"dtype": "bfloat16"} if dt == "bfloat16" else {}
        for count in SIZES:
            tag = "%s count %d" % (dt, count)
            ins = [make(dt, count, r, 5) for r in range(n)]
            for root in range(n):
                a = ins[rank].copy()
                run("broadcast", a, root, async_op=root == 1, **extra)
                check("broadcast root %d %s" % (root, tag), a, ins[root])
            got = run("allgather", ins[rank], async_op=count == 1, **extra)
            check("allgather " + tag, got, np.stack(ins))
            for root in (0, n - 1):
                got = run("gather", ins[rank], None, root, **extra)
                check("gather root %d %s" % (root, tag),
                      got if rank == root else None is got,
                      np.stack(ins) if rank == root else True)
            big = [make(dt, count * n, r, 6) for r in range(n)]
            got = run("alltoall", big[rank], **extra)
            check("alltoall " + tag, got, np.concatenate(
                [big[j][rank * count:(rank + 1) * count] for j in range(n)]))
            a = big[rank].copy()
            run("alltoall", a, a, **extra)
            check("alltoall in place " + tag, a, got)
            perm = [(r + 1) % n for r in range(n)]
            a = ins[rank].copy()
            run("permute", a, perm, async_op=count == 2, **extra)
            check("permute " + tag, a, ins[(rank - 1) % n])
            # per-rank counts
            mine = [(r * 3 + count) % 5 for r in range(n)]
            vins = [make(dt, mine[r], r, 7) for r in range(n)]
            got = run("allgatherv", vins[rank], **extra)
            check("allgatherv " + tag, got, np.concatenate(vins))
            sc = [[(r + j + count) % 4 for j in range(n)] for r in range(n)]
            sins = [make(dt, sum(sc[r]), r, 8) for r in range(n)]
            got = run("alltoall", sins[rank], counts=sc[rank], **extra)
            parts = []
            for j in range(n):
                lo = sum(sc[j][:rank])
                parts.append(sins[j][lo:lo + sc[j][rank]])
            check("alltoall counts " + tag, got, np.concatenate(parts))


reductions()
movements()
tutti.barrier()
total_checks = g.context.sum(checks)
total_wrong = g.context.sum(len(wrong))
for w in wrong[:20]:
    say("coll_worker: rank %d: WRONG %s" % (rank, w))
say("coll_worker: rank %d: %d checks, %d wrong" % (rank, checks,
                                                     len(wrong)))
if rank == 0:
    say("coll_worker: %d ranks: %d checks, %d wrong" % (n, total_checks,
                                                          total_wrong))
tutti.finalize()
sys.exit(1 if total_wrong else 0)
