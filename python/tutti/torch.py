"""tutti.torch: importing it registers the backend "tutti" with
torch.distributed, a c10d::Backend over libtutti (the extension
tutti._torch, built when torch is installed where the package is built).

    import torch.distributed as dist
    import tutti.torch  # noqa: F401
    dist.init_process_group("tutti")    # torchrun, env://, tcp://, file://

Each process group meets through the Store torch hands its backend (no
Tutti environment needed) and runs every collective through the C
library; calls return once complete (the Work is done, its future set).
CPU tensors; send and recv are not there yet.
"""
import torch.distributed as _dist

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
