"""torch.distributed with backend "tutti" across two hosts, under torchrun
(test_torch_hosts.py: 2 hosts x 2 processes, each host a network
namespace with its own hostname).

Checks the world (4 ranks, 2 on each host, the hostnames gathered through
the backend: two distinct ones, this rank's shared with its node's other
rank), then all_reduce (sum) of 0, 1, 7 and 1 Mi + 3 floats, broadcast
from every root, all_gather_into_tensor and all_to_all_single, each
against exact values computed here.  Prints "hosts_worker: rank R of N on
HOST: ok C checks (init S s, collectives S s)" or one "FAILED" line per
failed check and exits 1.
"""
import datetime
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401  (registers "tutti")
from checks import expect, report, say

NAME_LEN = 64  # bytes of a hostname gathered (padded with zeros)
COUNTS = (0, 1, 7, (1 << 20) + 3)


t0 = time.monotonic()
dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=60))
t1 = time.monotonic()
rank, n = dist.get_rank(), dist.get_world_size()
local = int(os.environ.get("LOCAL_WORLD_SIZE", "0"))
host = socket.gethostname()

def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def data(r, count, salt):
    """Rank @r's input: small integers, exact in float32 even summed."""
    return ((torch.arange(count, dtype=torch.int64) * (r + 1) + salt * r)
            % 1000).to(torch.float32)


# ---- the world: 4 ranks, 2 per host, 2 distinct hostnames ---------------
expect(n == 4, "world size %d, expected 4" % n)
expect(local == 2, "LOCAL_WORLD_SIZE %d, expected 2" % local)
name = torch.zeros(NAME_LEN, dtype=torch.uint8)
raw = host.encode()[:NAME_LEN]
name[:len(raw)] = torch.tensor(list(raw), dtype=torch.uint8)
names = torch.empty(n * NAME_LEN, dtype=torch.uint8)
dist.all_gather_into_tensor(names, name)
hosts = [bytes(names[r * NAME_LEN:(r + 1) * NAME_LEN].tolist())
         .rstrip(b"\0").decode() for r in range(n)]
expect(len(set(hosts)) == 2, "hosts %r: expected 2 distinct" % hosts)
node = rank // local if local else 0
expect(all(hosts[r] == host for r in range(n) if r // max(local, 1) ==
           node), "hosts %r: rank %d's node not on %s" % (hosts, rank, host))

# ---- all_reduce, broadcast, all_gather, all_to_all ----------------------
for count in COUNTS:
    tag = "count %d" % count
    ins = [data(r, count, 1) for r in range(n)]
    t = ins[rank].clone()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    want = sum(ins[1:], ins[0].clone())
    expect(same(t, want), "all_reduce sum " + tag)
    for root in range(n):
        t = ins[rank].clone() if rank == root else torch.full((count,), -1.)
        dist.broadcast(t, src=root)
        expect(same(t, ins[root]), "broadcast root %d %s" % (root, tag))
    out = torch.full((n * count,), -1.)
    dist.all_gather_into_tensor(out, ins[rank])
    expect(same(out, torch.cat(ins)), "all_gather_into_tensor " + tag)
    # rank r sends block j of its n * count elements to rank j
    big = [data(r, n * count, 2) for r in range(n)]
    out = torch.full((n * count,), -1.)
    dist.all_to_all_single(out, big[rank])
    want = torch.cat([big[j][rank * count:(rank + 1) * count]
                      for j in range(n)])
    expect(same(out, want), "all_to_all_single " + tag)

dist.barrier()
status = report("hosts_worker: rank %d of %d on %s" % (rank, n, host),
                " (init %.1f s, collectives %.1f s)" % (
                    t1 - t0, time.monotonic() - t1))
dist.destroy_process_group()
sys.exit(status)
