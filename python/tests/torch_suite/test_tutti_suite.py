"""torch's own distributed test suite against the backend "tutti".

Not part of make check: a measurement, run by ./run next to this file,
which sets BACKEND=tutti, WORLD_SIZE and TEMP_DIR and calls pytest here.
The tests are the installed torch's DistributedTest._DistTestBase (the
class torch's test/distributed/test_distributed_spawn.py runs for gloo,
nccl and ucc), spawned one process per rank. Importing tutti.torch at
the top registers the backend in this process and, since each spawned
rank imports this module to find the test class, in every rank too.

The suite gates tests on sets of backend names (common_distributed's
DistTestCases); a plugin is in none of them. Before the suite's module
is imported (its decorators read the sets then) "tutti" is added to
  plugin  so require_backend_is_available() treats it as available;
  ddp     so the DistributedDataParallel tests run (on CPU).
The CUDA sets (gpu, cuda, subgroup) are left alone, and so are the
skip_collective sets: what tutti lacks (a receive from any source, say)
is run and fails, which is what a measurement should show.

TUTTI_SUITE_UNGATE=1 also runs the CPU tests the suite keeps for a
named backend although tutti has the op (UNGATE below: all_to_all kept
for MPI, Work.get_future for mpi/nccl/gloo, all_reduce_coalesced and a
few more for gloo). Off by default: those are no longer torch's verdict.
"""
import os

import pytest

if os.environ.get("BACKEND") != "tutti":
    pytest.skip("run python/tests/torch_suite/run (needs BACKEND=tutti, "
                "WORLD_SIZE, TEMP_DIR)", allow_module_level=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import tutti.torch  # noqa: E402,F401  (registers the backend "tutti")
from torch.testing._internal.common_distributed import (  # noqa: E402
    DistTestCases)

for _feature in ("plugin", "ddp"):
    DistTestCases.backend_feature[_feature].add("tutti")

from torch.testing._internal.distributed.distributed_test import (  # noqa
    DistributedTest, TestDistBackend)

assert dist.is_available()

# (skip reason, test name prefix) pairs that TUTTI_SUITE_UNGATE lifts.
# The gate is the outermost decorator of each, so clearing its flag
# leaves the runtime checks under it (world size, GPUs) in place.
UNGATE = [
    ("Only MPI supports CPU all_to_all_single", "test_all_to_all_single"),
    ("Only MPI supports all_to_all", "test_all_to_all"),
    # (test_accumulate_gradients_no_sync* share the reason but build
    # their model only for named backends, so they stay skipped.)
    ("get_future is only supported on mpi, nccl and gloo",
     "test_get_future"),
    ("Test requires backend tutti to be one of {'gloo'}",
     "test_all_reduce_coalesced_"),
    ("Test requires backend tutti to be one of {'gloo'}",
     "test_scatter_object_list"),
    ("Test requires backend tutti to be one of {'gloo'}",
     "test_grads_same_across_ranks_with_no_sync"),
]
if os.environ.get("TUTTI_SUITE_UNGATE") == "1":
    for _name, _fn in vars(DistributedTest._DistTestBase).items():
        _why = getattr(_fn, "__unittest_skip_why__", None)
        if any(_why == w and _name.startswith(p) for w, p in UNGATE):
            _fn.__unittest_skip__ = False


class TestTuttiSuite(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()
