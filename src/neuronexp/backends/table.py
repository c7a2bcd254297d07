"""The table of backends: one row per backend, saying what the rest of neuronexp knows of it without building it.

The stages outside backends/ read these rows and never name a backend themselves (tests/architecture checks it),
so adding a backend means its module (a `Backend` subclass) and one row here. Reading a row imports no torch and
starts no device runtime: the sweep reads the table while planning, and the fork server's template before torch.
"""

from __future__ import annotations

import gc
import importlib.metadata
import importlib.util
import os
import sys
from glob import glob
from pathlib import Path
from typing import Any

from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.backends.info import BackendInfo, never_started
from neuronexp.backends.torch_build import cpu_only_build
from neuronexp.config import BackendName, NeuronDeviceConfig, NeuronProfilerConfig, RunConfig, format_units, parse_units
from neuronexp.host.threads import host_cpus


def _collect() -> None:
    gc.collect()  # device memory held by reference cycles (compiled graphs) must be back before the next cell


# --- the host CPU -------------------------------------------------------------------------------------------------


def _build_cpu(device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> Backend:
    from neuronexp.backends.cpu import CpuBackend

    return CpuBackend()


# No clean-up after a cell: on the host, reference counting frees what a cell held, and a full collection would
# cost ~0.2 s a cell.
CPU = BackendInfo(
    name="cpu",
    unit="CPU cores",
    build=_build_cpu,
    present=lambda: True,
    count_units=lambda: [str(c) for c in host_cpus()],
    on_host=True,
    placement=lambda device: f"cpu:{format_units(host_cpus())}",
)


# --- NVIDIA GPUs ----------------------------------------------------------------------------------------------------


def visible_cuda_devices() -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as a list (set by Slurm --gpus, submitit, a launcher slot), None when unset."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return None if visible is None else [u for u in visible.split(",") if u]


def _cuda_units() -> list[str]:
    """The GPUs CUDA_VISIBLE_DEVICES names (Slurm --gpus, submitit_local's gpus_per_node), else every GPU."""
    visible = visible_cuda_devices()
    if visible is not None:
        return visible
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def _cuda_present() -> bool:
    if cpu_only_build() is not None:  # answered from torch's version file, without the seconds `import torch` takes
        return False
    import torch

    return bool(torch.cuda.is_available())  # counts devices; creates no CUDA context


def _build_cuda(
    device_cfg: NeuronDeviceConfig | None = None, profiler_cfg: NeuronProfilerConfig | None = None
) -> Backend:
    from neuronexp.backends.cuda import CudaBackend

    return CudaBackend()


def _cuda_check() -> None:
    cpu_only = cpu_only_build()
    if cpu_only is not None:
        raise BackendUnavailable(f"CUDA is not available: the installed torch {cpu_only} is a CPU-only build")
    if not _cuda_present():
        _build_cuda()  # raises the backend's own message


def _cuda_placement(device: Any) -> str:
    index = getattr(device, "index", None) or 0
    visible = visible_cuda_devices() or []
    return f"cuda:{visible[index] if index < len(visible) else index}"


def _cuda_clean_up() -> None:
    import torch

    _collect()
    torch.cuda.empty_cache()  # what the cell's allocations cached, for the next cell (and other processes)


def _cuda_started() -> bool:
    import torch

    maps = Path("/proc/self/maps").read_text() if os.path.exists("/proc/self/maps") else ""
    return "libcuda.so" in maps or bool(torch.cuda.is_initialized())


CUDA = BackendInfo(
    name="cuda",
    unit="GPUs",
    build=_build_cuda,
    present=_cuda_present,
    check=_cuda_check,
    count_units=_cuda_units,
    visible_devices="CUDA_VISIBLE_DEVICES",
    placement=_cuda_placement,
    clean_up=_cuda_clean_up,
    peaks_key="cuda",
    runtime_started=_cuda_started,
    fork_refusal=(
        "CUDA was initialised in neuronexp's fork-server template, and a process forked after that cannot "
        "use CUDA; please report this with your torch version"
    ),
)


# --- AWS Trainium (NeuronCores) -------------------------------------------------------------------------------------


def _build_neuron(device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> Backend:
    from neuronexp.backends.neuron import NeuronBackend

    return NeuronBackend(device_cfg, profiler_cfg)


def _neuron_present() -> bool:
    # Assumed where torch-neuronx is installed and /dev/neuron* exists: asking the runtime would start it.
    return importlib.util.find_spec("torch_neuronx") is not None and bool(glob("/dev/neuron*"))


NEURON_INSTALL_HINT = (
    "torch-neuronx is not installed; on a Trn2/Trn3 instance install TorchNeuron, the torch-neuronx family "
    "matching your PyTorch, from the Neuron package repository (pip install -e .[neuron], see docs/neuron.md)"
)


def _neuron_check() -> None:
    if importlib.util.find_spec("torch_neuronx") is None:  # said here: the backend's package imports torch
        raise BackendUnavailable(NEURON_INSTALL_HINT)
    try:
        version = importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        version = ""
    if version == "1.0":  # PyPI's placeholder, what `pip install .[neuron]` finds without the Neuron repository
        from neuronexp.backends.neuron.api import placeholder_problem

        raise BackendUnavailable(str(placeholder_problem(version, "")))
    from neuronexp.backends.neuron.process_env import inspect_conflict

    conflict = inspect_conflict()
    if conflict is not None:
        raise conflict


def _neuron_units(selection: str | None, wanted: int) -> list[str]:
    """neuron.visible_cores, else NEURON_RT_VISIBLE_CORES, else the first `wanted` cores (counting the cores would
    start the runtime here and reserve every one of them)."""
    cores = selection or os.environ.get("NEURON_RT_VISIBLE_CORES")
    return parse_units(cores) if cores else [str(i) for i in range(wanted)]


def _neuron_unpin(cfg: RunConfig) -> None:
    cfg.neuron.visible_cores = cfg.neuron.num_cores = None


def _neuron_placement(device: Any) -> str:
    cores = os.environ.get("NEURON_RT_VISIBLE_CORES")
    num = os.environ.get("NEURON_RT_NUM_CORES")
    return f"neuron:{cores}" if cores else f"neuron:any{num}" if num else "neuron:all"


def _neuron_started() -> bool:
    # torch-neuronx registers a `torch.backends` entry point, so `import torch` may already have loaded it; the
    # runtime itself starts lazily (first device use), which is what lets the environment still apply.
    loaded = sys.modules.get("torch_neuronx")
    return bool(getattr(loaded, "is_neuron_runtime_initialized", never_started)()) if loaded else False


NEURON = BackendInfo(
    name="neuron",
    unit="NeuronCores",
    build=_build_neuron,
    present=_neuron_present,
    check=_neuron_check,
    count_units=lambda: None,
    assumed_units=_neuron_units,
    # An index or an inclusive range (Neuron runtime configuration guide); the slot's range says how many cores too.
    visible_devices="NEURON_RT_VISIBLE_CORES",
    unit_ranges=True,
    slot_overrides=("NEURON_RT_NUM_CORES",),
    drop_config_selection=_neuron_unpin,
    placement=_neuron_placement,
    inference_mode=False,
    clean_up=_collect,
    peaks_key="neuron",
    runtime_started=_neuron_started,
    fork_refusal=(
        "the Neuron runtime started in neuronexp's fork-server template, so a forked cell would not get its "
        "slot's NeuronCores; please report this with your torch-neuronx version"
    ),
    unpaired="the Neuron backend's capture is set up once per process",
)

# backend=auto tries them in this order. The last is always there: the host, where a cell whose backend could not
# start is placed.
BACKENDS: tuple[BackendInfo, ...] = (NEURON, CUDA, CPU)
HOST = BACKENDS[-1]


def backend_info(name: str) -> BackendInfo:
    """The row of backend `name` (a `backend=` value other than auto, a row's `backend`, a slot's kind)."""
    for info in BACKENDS:
        if info.name == name:
            return info
    raise KeyError(f"no backend {name!r}; the table has {', '.join(b.name for b in BACKENDS)}")


def named_backend(name: BackendName | str) -> BackendInfo | None:
    """The row of the backend a config names; None for backend=auto, which only the cell's machine decides."""
    value = BackendName(name).value
    return None if value == BackendName.auto.value else backend_info(value)
