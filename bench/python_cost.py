"""The cost of a collective called from Python: in-place float32 allreduce
through the tutti package (numpy arrays) or through mpi4py (the peer),
one rank program of bench/python-cost.

    python_cost.py tutti|tutti-group|mpi4py [SIZES...]

Rank 0 prints "python_cost,<lib>,<bytes>,<median us>,<min us>": per call,
the median and the best of 7 rounds, each round timed between two
barriers-free loops of the same length on every rank.
"""
import sys
import time

import numpy as np

lib = sys.argv[1]
sizes = [int(s) for s in sys.argv[2:]] or [8, 32768, 2097152, 16777216]

if lib.startswith("tutti"):
    import tutti
    g = tutti.init()
    rank = g.rank
    call = tutti.allreduce if lib == "tutti" else g.allreduce
    barrier = tutti.barrier
else:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()

    def call(a):
        comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
    barrier = comm.Barrier

for size in sizes:
    a = np.ones(size // 4, np.float32)
    iters = max(20, min(20000, 400_000_000 // max(size, 1)))
    for _ in range(max(2, iters // 10)):
        call(a)
    rounds = []
    for _ in range(7):
        barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call(a)
        rounds.append((time.perf_counter() - t0) / iters * 1e6)
    rounds.sort()
    if rank == 0:
        print("python_cost,%s,%d,%.3f,%.3f" % (lib, size, rounds[3],
                                               rounds[0]), flush=True)
if lib.startswith("tutti"):
    tutti.finalize()
