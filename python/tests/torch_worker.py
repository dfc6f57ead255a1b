"""torch.distributed with backend "tutti" against exact references and
against gloo in the same job, under torchrun (2 or 3 processes).

Every op the backend has runs on several dtypes and sizes; its result must
equal the reference computed here and gloo's result for the same call
(a gloo group made beside it).  Then point-to-point (send, recv, isend,
irecv, batch_isend_irecv, tags out of order), subgroups, async work and
futures, CUDA tensors where torch sees a GPU (a line says it skipped them
otherwise),
errors that name the rank, and DDP training of a small model that must
match gloo's bit for bit at 2 ranks.  Prints "torch_worker: rank R: ok N
checks" or one "FAILED" line per failed check and exits 1.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401  (registers "tutti")
from checks import expect, report, say

dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=60))
rank, n = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def make(dtype, count, r, salt):
    g = torch.Generator().manual_seed(1000 * r + 10 * count + salt)
    if dtype.is_floating_point:
        return torch.randint(-8, 9, (count,), generator=g).to(dtype)
    return torch.randint(0, 100, (count,), generator=g).to(dtype)


def both(fn):
    """fn(group) under tutti (the default group) and gloo."""
    return fn(None), fn(gloo)


DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64,
          torch.uint8, torch.float16, torch.bfloat16]
OPS = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT,
       "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}

for dt in DTYPES:
    for count in (0, 1, 7, 1000):
        tag = "%s count %d" % (dt, count)
        ins = [make(dt, count, r, 1) for r in range(n)]
        stack = torch.stack(ins) if count else torch.empty((n, 0), dtype=dt)
        for name, op in OPS.items():
            if dt in (torch.float16, torch.bfloat16) and name == "product":
                continue  # gloo has no half product to compare with
            want = {"sum": lambda s: s.sum(0, dtype=dt),
                    "product": lambda s: s.prod(0, dtype=dt),
                    "min": lambda s: s.min(0).values if count else s[0],
                    "max": lambda s: s.max(0).values if count else s[0]
                    }[name](stack).to(dt)

            def call(g):
                t = ins[rank].clone()
                dist.all_reduce(t, op=op, group=g)
                return t
            ours, theirs = both(call)
            if dt.is_floating_point or name != "sum" or count == 0:
                expect(same(ours, want), "all_reduce %s %s" % (name, tag))
            else:  # integer sums: the reference in the dtype (wraps)
                expect(same(ours, want), "all_reduce %s %s" % (name, tag))
            expect(same(ours, theirs), "all_reduce %s %s = gloo" % (name,
                                                                     tag))
            for root in (0, n - 1):
                t = ins[rank].clone()
                dist.reduce(t, dst=root, op=op)
                if rank == root:
                    expect(same(t, want), "reduce %s root %d %s" % (
                        name, root, tag))
        if dt.is_floating_point and dt not in (torch.float16,
                                               torch.bfloat16):
            t = ins[rank].clone()
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            expect(torch.allclose(t, stack.sum(0) / n), "avg %s" % tag)
            t = ins[rank].clone()
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
            expect(same(t, (stack * 2).sum(0).to(dt)), "premul_sum %s" % tag)
        for root in range(n):
            t = ins[rank].clone()
            dist.broadcast(t, src=root)
            expect(same(t, ins[root]), "broadcast root %d %s" % (root, tag))

        def ag(g):
            out = torch.empty(n * count, dtype=dt)
            dist.all_gather_into_tensor(out, ins[rank], group=g)
            return out
        ours, theirs = both(ag)
        expect(same(ours, stack.reshape(-1)), "all_gather_into_tensor " + tag)
        expect(same(ours, theirs), "all_gather_into_tensor = gloo " + tag)
        lst = [torch.empty(count, dtype=dt) for _ in range(n)]
        dist.all_gather(lst, ins[rank])
        expect(all(same(lst[r], ins[r]) for r in range(n)),
               "all_gather " + tag)
        outs = [torch.empty(count, dtype=dt) for _ in range(n)] \
            if rank == 0 else None
        dist.gather(ins[rank], outs, dst=0)
        if rank == 0:
            expect(all(same(outs[r], ins[r]) for r in range(n)),
                   "gather " + tag)
        big = [make(dt, count * n, r, 2) for r in range(n)]
        if dt not in (torch.uint8,):
            def rs(g):
                o = torch.empty(count, dtype=dt)
                dist.reduce_scatter_tensor(o, big[rank].clone(), group=g)
                return o
            ours, theirs = both(rs) if dt not in (torch.float16,
                                                  torch.bfloat16) \
                else (rs(None), None)
            want = torch.stack(big).sum(0, dtype=dt)[rank * count:
                                                     (rank + 1) * count]
            expect(same(ours, want.to(dt)), "reduce_scatter_tensor " + tag)
            if theirs is not None:
                expect(same(ours, theirs), "reduce_scatter_tensor = gloo " +
                       tag)
        o = torch.empty(count * n, dtype=dt)
        dist.all_to_all_single(o, big[rank])
        want = torch.cat([big[j][rank * count:(rank + 1) * count]
                          for j in range(n)])
        expect(same(o, want), "all_to_all_single " + tag)
        # split sizes: rank r sends (r + j) % 3 elements to rank j
        sizes = [[(r + j + count) % 3 for j in range(n)] for r in range(n)]
        src = [make(dt, sum(sizes[r]), r, 3) for r in range(n)]
        recv = [sizes[j][rank] for j in range(n)]
        o = torch.empty(sum(recv), dtype=dt)
        dist.all_to_all_single(o, src[rank], output_split_sizes=recv,
                               input_split_sizes=sizes[rank])
        want = torch.cat([src[j][sum(sizes[j][:rank]):
                                 sum(sizes[j][:rank + 1])]
                          for j in range(n)])
        expect(same(o, want), "all_to_all_single splits " + tag)
        outs = [torch.empty(count, dtype=dt) for _ in range(n)]
        dist.all_to_all(outs, [c.clone() for c in big[rank].split(count)]
                        if count else [torch.empty(0, dtype=dt)] * n)
        expect(all(same(outs[j], big[j][rank * count:(rank + 1) * count])
                   for j in range(n)), "all_to_all " + tag)
        o = torch.empty(count, dtype=dt)
        dist.scatter(o, [c.clone() for c in big[0].split(count)]
                     if rank == 0 and count else
                     ([torch.empty(0, dtype=dt)] * n if rank == 0 else None),
                     src=0)
        expect(same(o, big[0][rank * count:(rank + 1) * count]),
               "scatter " + tag)

# ---- the list forms: reduce_scatter and allreduce_coalesced -----------
blocks = [torch.arange(3, dtype=torch.float32) + 10 * j + r
          for r in range(n) for j in range(n)]
mine = [blocks[rank * n + j].clone() for j in range(n)]
o = torch.empty(3)
dist.reduce_scatter(o, mine)
expect(same(o, sum(blocks[r * n + rank] for r in range(n))),
       "reduce_scatter list %r" % o)
ts = [torch.full((2,), float(rank)), torch.full((5,), rank + 1.0)]
dist.all_reduce_coalesced(ts)
expect(same(ts[0], torch.full((2,), float(n * (n - 1) // 2))) and
       same(ts[1], torch.full((5,), float(n * (n + 1) // 2))),
       "all_reduce_coalesced %r" % ts)

# the coalesced all_gather forms, and reduce_scatter_tensor's (FSDP's)
ins = [torch.full((2,), rank + 1.0), torch.full((3,), 10.0 * rank)]
outs = [[torch.empty(2), torch.empty(3)] for _ in range(n)]  # [rank][input]
dist.all_gather_coalesced(outs, ins)
gouts = [[torch.empty(2), torch.empty(3)] for _ in range(n)]
dist.all_gather_coalesced(gouts, ins, group=gloo)
expect(all(same(outs[r][0], torch.full((2,), r + 1.0)) and
           same(outs[r][1], torch.full((3,), 10.0 * r)) and
           same(outs[r][0], gouts[r][0]) and same(outs[r][1], gouts[r][1])
           for r in range(n)), "all_gather_coalesced %r" % outs)
flat = [torch.empty(2 * n), torch.empty(3 * n)]
with dist._coalescing_manager(async_ops=False):
    for o, i in zip(flat, ins):
        dist.all_gather_into_tensor(o, i)
expect(same(flat[0], torch.cat([torch.full((2,), r + 1.0) for r in range(n)]))
       and same(flat[1], torch.cat([torch.full((3,), 10.0 * r)
                                    for r in range(n)])),
       "all_gather_into_tensor coalesced %r" % flat)
parts = [torch.empty(2), torch.empty(1)]
with dist._coalescing_manager(async_ops=False):
    for o, i in zip(parts, [torch.arange(2.0 * n) + rank,
                            torch.ones(n) * rank]):
        dist.reduce_scatter_tensor(o, i)
expect(same(parts[0], torch.arange(2.0 * rank, 2.0 * rank + 2) * n +
            n * (n - 1) / 2) and
       same(parts[1], torch.full((1,), n * (n - 1) / 2)),
       "reduce_scatter_tensor coalesced %r" % parts)

# ---- async work, futures, barrier ---------------------------------------
t = torch.ones(5) * (rank + 1)
w = dist.all_reduce(t, async_op=True)
expect(w.wait() and w.is_completed() and w.is_success(), "work wait")
fut = w.get_future()
expect(same(fut.value()[0], torch.full((5,), float(n * (n + 1) // 2))),
       "work future value")
got = []
fut.then(lambda f: got.append(f.value()[0].sum().item()))
expect(got == [5.0 * n * (n + 1) // 2], "future then %r" % got)
dist.barrier()

# ---- subgroups: ranks 0 and 1 (the third rank, if any, is not in it) --
sub = dist.new_group(ranks=[0, 1], backend="tutti")
if rank < 2:
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t, group=sub)
    expect(t.item() == 3.0, "subgroup all_reduce %r" % t)
    expect(dist.get_rank(sub) == rank and dist.get_world_size(sub) == 2,
           "subgroup rank and size")
dist.barrier()

# ---- point-to-point: send, recv, isend, irecv, batch_isend_irecv -------
nxt, prv = (rank + 1) % n, (rank - 1) % n
for dt in [torch.float32, torch.int64, torch.uint8, torch.bfloat16]:
    for count in [0, 1, 7, 100003]:
        tag = "%s x %d" % (dt, count)
        mine = make(dt, count, rank, 7)
        got = torch.empty(count, dtype=dt)
        if rank % 2 == 0:  # blocking calls, ordered so as not to deadlock
            dist.send(mine, nxt)
            dist.recv(got, prv)
        else:
            dist.recv(got, prv)
            dist.send(mine, nxt)
        expect(same(got, make(dt, count, prv, 7)), "send/recv " + tag)
        got = torch.empty(count, dtype=dt)
        ws = [dist.isend(mine, nxt, tag=3), dist.irecv(got, prv, tag=3)]
        for w in ws:
            w.wait()
        expect(all(w.is_completed() and w.is_success() for w in ws) and
               same(got, make(dt, count, prv, 7)), "isend/irecv " + tag)
got = torch.empty(1 << 20)
ops = [dist.P2POp(dist.isend, torch.full((1 << 20,), float(rank)), nxt),
       dist.P2POp(dist.irecv, got, prv)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
expect(same(got, torch.full((1 << 20,), float(prv))), "batch_isend_irecv")
# tags received in another order than sent; the future of an irecv
if rank == 0:
    a, b = torch.arange(300000.0), -torch.arange(300000.0)
    ws = [dist.isend(a, 1, tag=11), dist.isend(b, 1, tag=12)]
    for w in ws:
        w.wait()
elif rank == 1:
    b, a = torch.empty(300000), torch.empty(300000)
    w = dist.irecv(b, 0, tag=12)
    fut = w.get_future()
    w.wait()
    dist.recv(a, 0, tag=11)
    expect(same(a, torch.arange(300000.0)) and
           same(b, -torch.arange(300000.0)) and fut.done() and
           same(fut.value()[0], b), "tags out of order")
# a wait with a time limit gives up, the receive still pending; the
# message then comes and the same work completes, its future too
got = torch.zeros(3)
if rank == 0:
    w = dist.irecv(got, 1, tag=21)
    try:
        w.wait(datetime.timedelta(milliseconds=200))
        expect(False, "wait(200 ms) returned without a message")
    except Exception as e:  # noqa: BLE001
        expect("tutti: recv: rank 0: not complete within 200 ms"
               in str(e), "wait timeout: %s" % e)
    expect(not w.is_completed() and w.exception() is None,
           "pending after a timed-out wait")
    fut = w.get_future()
dist.barrier()
if rank == 1:
    dist.send(torch.full((3,), 21.0), 0, tag=21)
elif rank == 0:
    w.wait()
    expect(w.is_completed() and w.is_success() and
           same(got, torch.full((3,), 21.0)) and fut.done(),
           "completed after the timeout %r" % got)
for bad, want in [(lambda: dist.recv(torch.empty(1)),
                   "a receive from any source (src=None) is not supported"),
                  (lambda: dist.send(torch.empty(1), nxt, tag=-2),
                   "tag -2: expected a tag >= 0")]:
    try:
        bad()
        expect(False, "accepted: " + want)
    except Exception as e:  # noqa: BLE001
        expect(want in str(e) and ("rank %d" % rank) in str(e),
               "refused: %s" % e)
dist.barrier()

# ---- errors name the rank and what is wrong ----------------------------
try:
    dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.BAND)
    expect(False, "BAND accepted")
except Exception as e:  # noqa: BLE001
    expect("tutti: all_reduce: ReduceOp 5 (bitwise) is not supported"
           in str(e), "BAND: %s" % e)
try:
    dist.all_reduce(torch.ones(2, dtype=torch.int16))
    expect(False, "int16 accepted")
except Exception as e:  # noqa: BLE001
    expect("tensors of Short are not supported" in str(e), "int16: %s" % e)
# complex sums: torch hands the backend the real view (pairs of floats)
t = torch.tensor([1 + 2j, rank * 1j], dtype=torch.complex64)
dist.all_reduce(t)
expect(same(t, torch.tensor([n + 2j * n, 1j * n * (n - 1) / 2],
                            dtype=torch.complex64)), "complex sum %r" % t)
try:
    dist.all_reduce(torch.ones(4)[::2])
    expect(False, "strided accepted")
except Exception as e:  # noqa: BLE001
    expect("not contiguous" in str(e), "strided: %s" % e)

# A collective only rank 0 makes, in a group of 1 s timeout: it fails
# within the timeout, naming the rank and ERR_TIMEOUT (never a hang).
short = dist.new_group(backend="tutti", timeout=datetime.timedelta(seconds=1))
if rank == 0:
    import time
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1), group=short)
        expect(False, "a collective only rank 0 made completed")
    except Exception as e:  # noqa: BLE001
        expect("rank 0: ERR_TIMEOUT" in str(e), "timeout: %s" % e)
    expect(time.monotonic() - t0 < 20, "timeout kept")
dist.barrier()

# ---- CUDA tensors: each rank's GPU (its local rank's, modulo) ----------
if torch.cuda.is_available():
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)) %
                       torch.cuda.device_count())
    torch.cuda.set_device(dev)
    for count in [0, 1, 7, (1 << 20) + 3]:
        t = make(torch.float32, count, rank, 9).to(dev)
        dist.all_reduce(t)
        want = sum(make(torch.float32, count, r, 9) for r in range(n))
        expect(same(t.cpu(), want), "cuda all_reduce x %d" % count)
        t = make(torch.float32, count, rank, 9).to(dev)
        dist.broadcast(t, src=n - 1)
        expect(same(t.cpu(), make(torch.float32, count, n - 1, 9)),
               "cuda broadcast x %d" % count)
        o = torch.empty(n * count, device=dev)
        dist.all_gather_into_tensor(o, make(torch.float32, count, rank,
                                            9).to(dev))
        expect(same(o.cpu(), torch.cat([make(torch.float32, count, r, 9)
                                        for r in range(n)])),
               "cuda all_gather_into_tensor x %d" % count)
    say("torch_worker: rank %d: CUDA checked on %s" % (rank, dev))
else:
    say("torch_worker: rank %d: CUDA skipped: torch.cuda.is_available() "
        "is False (no GPU or driver here)" % rank)

# ---- DDP: a small model trained under tutti and under gloo ------------


def train(group):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 2))
    ddp = torch.nn.parallel.DistributedDataParallel(model,
                                                    process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for _ in range(5):
        x = torch.randn(4, 8, generator=g)
        loss = ddp(x).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


ours = train(dist.group.WORLD)
theirs = train(gloo)
if n == 2:
    expect(all(torch.equal(a, b) for a, b in zip(ours, theirs)),
           "DDP parameters equal gloo's bit for bit")
else:
    expect(all(torch.allclose(a, b, rtol=1e-5, atol=1e-6)
               for a, b in zip(ours, theirs)), "DDP parameters near gloo's")

dist.barrier()
status = report("torch_worker: rank %d" % rank)
dist.destroy_process_group()
sys.exit(status)
