"""NVIDIA GPUs (and ROCm's, which torch.cuda drives too): the row, read without importing torch where it can be."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.backends.cuda.torch_build import cpu_only_build
from neuronexp.backends.info import BackendInfo, collect_cycles
from neuronexp.config import RunConfig


def visible_cuda_devices() -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as a list (set by Slurm --gpus, submitit, a launcher slot), None when unset."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return None if visible is None else [u for u in visible.split(",") if u]


def _units() -> list[str]:
    """The GPUs CUDA_VISIBLE_DEVICES names (Slurm --gpus, submitit_local's gpus_per_node), else every GPU."""
    if (visible := visible_cuda_devices()) is not None:
        return visible
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def _present() -> bool:
    if cpu_only_build() is not None:  # answered from torch's version file, without the seconds `import torch` takes
        return False
    import torch

    return bool(torch.cuda.is_available())  # counts devices; creates no CUDA context


def _build(cfg: RunConfig | None = None) -> Backend:
    from neuronexp.backends.cuda.cuda_backend import CudaBackend

    return CudaBackend()


def _check() -> None:
    if (cpu_only := cpu_only_build()) is not None:
        raise BackendUnavailable(f"CUDA is not available: the installed torch {cpu_only} is a CPU-only build")
    if not _present():
        _build()  # raises the backend's own message


def _placement(device: Any) -> str:
    index = getattr(device, "index", None) or 0
    visible = visible_cuda_devices() or []
    return f"cuda:{visible[index] if index < len(visible) else index}"


def _clean_up() -> None:
    import torch

    collect_cycles()
    torch.cuda.empty_cache()  # what the cell's allocations cached, for the next cell (and other processes)


def _started() -> bool:
    import torch

    maps = Path("/proc/self/maps").read_text() if os.path.exists("/proc/self/maps") else ""
    return "libcuda.so" in maps or bool(torch.cuda.is_initialized())


INFO = BackendInfo(
    name="cuda",
    unit="GPUs",
    build=_build,
    present=_present,
    check=_check,
    count_units=_units,
    visible_devices="CUDA_VISIBLE_DEVICES",
    placement=_placement,
    clean_up=_clean_up,
    peaks_key="cuda",
    runtime_started=_started,
    fork_refusal=(
        "CUDA was initialised in neuronexp's fork-server template, and a process forked after that cannot "
        "use CUDA; please report this with your torch version"
    ),
)
