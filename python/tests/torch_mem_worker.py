"""torch.distributed with backend "tutti" on tensors of registered memory
(tutti.torch.empty) against exact references, under torchrun.

all_reduce, all_gather_into_tensor, broadcast from the first and the last
rank and all_to_all_single, on float32 (small integers: sums exact) and
int64 (sums wrap), of 1, 4099 and 1 Mi + 3 elements a rank (16 KiB and
more go by single copy from registered memory between the processes of a
host).  Prints "torch_mem_worker: rank R: ok N checks" or the failures,
and exits 1 on any.
"""
import datetime
import sys

import torch
import torch.distributed as dist

import tutti
import tutti.torch
from checks import expect, report

DTYPES = [torch.float32, torch.int64]
SIZES = [1, 4099, (1 << 20) + 3]

dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=120))
rank, n = dist.get_rank(), dist.get_world_size()


def make(dtype, count, r, salt):
    g = torch.Generator().manual_seed(1000 * r + 10 * count + salt)
    if dtype.is_floating_point:
        return torch.randint(-8, 9, (count,), generator=g).to(dtype)
    return torch.randint(-2**60, 2**60, (count,), generator=g,
                         dtype=dtype)


def filled(x):
    """x copied into a new tensor of registered memory."""
    t = tutti.torch.empty(x.shape, x.dtype)
    t.copy_(x)
    return t


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


for dt in DTYPES:
    for count in SIZES:
        tag = "%s x %d" % (dt, count)
        ins = [make(dt, count, r, 1) for r in range(n)]
        stack = torch.stack(ins)

        t = filled(ins[rank])
        expect(tutti.registered(t), "registered(tutti.torch.empty) " + tag)
        expect(not tutti.registered(torch.empty(count, dtype=dt)),
               "registered(torch.empty) is False " + tag)
        dist.all_reduce(t)
        expect(same(t, stack.sum(0, dtype=dt)), "all_reduce " + tag)

        out = tutti.torch.empty((n * count,), dt)
        dist.all_gather_into_tensor(out, filled(ins[rank]))
        expect(same(out, stack.reshape(-1)), "all_gather_into_tensor " + tag)

        for root in sorted({0, n - 1}):
            t = filled(ins[rank])
            dist.broadcast(t, src=root)
            expect(same(t, ins[root]), "broadcast src %d %s" % (root, tag))

        blocks = [make(dt, count * n, r, 2) for r in range(n)]
        out = tutti.torch.empty((count * n,), dt)
        dist.all_to_all_single(out, filled(blocks[rank]))
        want = torch.cat([blocks[r][rank * count:(rank + 1) * count]
                          for r in range(n)])
        expect(same(out, want), "all_to_all_single " + tag)

dist.destroy_process_group()
sys.exit(report("torch_mem_worker: rank %d" % rank))
