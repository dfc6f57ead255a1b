"""tutti.torch: importing it registers the backend "tutti" with
torch.distributed, a c10d::Backend over libtutti (the extension
tutti._torch, built when torch is installed where the package is built).

    import torch.distributed as dist
    import tutti.torch  # noqa: F401
    dist.init_process_group("tutti")    # torchrun, env://, tcp://, file://

Each process group meets through the Store torch hands its backend (no
Tutti environment needed) and runs every collective through the C
library; collectives return once complete (the Work is done, its future
set); send and recv return a Work pending until waited for.  CPU tensors,
and CUDA tensors of collectives where the backend was built with CUDA.

:func:`empty` and :func:`zeros` make CPU tensors in registered memory:
what a collective sends from them to another process of the host (the
shm transport; 4 KiB or more a message) is copied once, straight from
the tensor, where torch's own (private) memory is copied twice.

    t = tutti.torch.empty(1 << 20)      # float32, shared pages
    dist.all_reduce(t)
"""
import torch as _torch_mod
import torch.distributed as _dist

from tutti import _count
from tutti._tutti import Memory as _Memory

try:
    from tutti import _torch
except ImportError as e:  # pragma: no cover - a build without torch
    raise ImportError("tutti.torch: the extension tutti._torch was not "
                      "built (torch was not installed where tutti was "
                      "built: pip install torch, then reinstall tutti "
                      "with --no-build-isolation)") from e

BACKEND = "tutti"

if BACKEND not in _dist.Backend.backend_list:
    _dist.Backend.register_backend(BACKEND, _torch.create_backend,
                                   devices=["cpu"])


def empty(shape, dtype=_torch_mod.float32):
    """A CPU tensor of @shape and @dtype in registered memory, a new
    tutti.Memory of its own, freed when the tensor's storage goes
    (torch.frombuffer holds a reference to the Memory until then).

    What it gives: a message of 4 KiB or more that a collective of the
    "tutti" backend sends from it to another process of the host (the shm
    transport) is copied once, straight from this tensor, where private
    memory (torch.empty, numpy's arrays) is copied twice.  Tensors made
    from it by views keep that; copies (clone, .contiguous() of a strided
    view, operations' results) are private memory again.  Zero-filled."""
    n, dims = _count(shape, "tutti.torch.empty")
    mem = _Memory(max(n, 1) * dtype.itemsize)
    # torch.frombuffer takes no count of 0: one element, then sliced.
    t = _torch_mod.frombuffer(mem, dtype=dtype, count=max(n, 1))
    return t[:n].view(dims)


def zeros(shape, dtype=_torch_mod.float32):
    """:func:`empty`: registered memory comes zero-filled."""
    return empty(shape, dtype)
