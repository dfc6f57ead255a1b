"""One rank program of bench/torch_compare: torch.distributed collectives
through backend "tutti" and through gloo in the same job, alternating per
round, float32, in place where the op is.

    torch_compare.py ROUNDS SIZE...

Rank 0 prints "torch_compare,<round>,<backend>,<op>,<bytes>,<us per call>"
(the median of 5 timed loops of the same length on every rank).
"""
import statistics
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

rounds = int(sys.argv[1])
sizes = [int(s) for s in sys.argv[2:]]
dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
groups = {"tutti": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}


def ops(nbytes, g):
    """op name -> a call of it on nbytes (nccl-tests' sizes: the
    allgather's and the reduce_scatter's and the alltoall's whole)."""
    c = max(1, nbytes // 4)
    a = torch.ones(c)
    big = torch.ones(c - c % n or n)
    part = torch.ones(len(big) // n)
    return {
        "all_reduce": lambda: dist.all_reduce(a, group=g),
        "broadcast": lambda: dist.broadcast(a, src=0, group=g),
        "all_gather_into_tensor":
            lambda: dist.all_gather_into_tensor(big, part, group=g),
        "reduce_scatter_tensor":
            lambda: dist.reduce_scatter_tensor(part, big, group=g),
        "all_to_all_single":
            lambda: dist.all_to_all_single(big.clone(), big, group=g),
    }


for r in range(rounds):
    for name in ("tutti", "gloo") if r % 2 == 0 else ("gloo", "tutti"):
        g = groups[name]
        for size in sizes:
            for op, call in ops(size, g).items():
                iters = max(5, min(2000, 20_000_000 // max(size, 1)))
                for _ in range(max(2, iters // 10)):
                    call()
                loops = []
                for _ in range(5):
                    dist.barrier(group=g)
                    t0 = time.perf_counter()
                    for _ in range(iters):
                        call()
                    loops.append((time.perf_counter() - t0) / iters * 1e6)
                if rank == 0:
                    print("torch_compare,%d,%s,%s,%d,%.3f" % (
                        r, name, op, size, statistics.median(loops)),
                        flush=True)
dist.destroy_process_group()
