"""The table of backends: one row per backend, saying what the rest of neuronexp knows of it without building it.

The stages outside backends/ read these rows and never name a backend themselves (tests/architecture checks it),
so adding a backend means its module (a `Backend` subclass) and one row here. Reading a row imports no torch and
starts no device runtime: the sweep reads the table while planning, and the fork server's template before torch.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from dataclasses import dataclass
from glob import glob
from pathlib import Path
from typing import Any, Callable

from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.config import BackendName, NeuronDeviceConfig, NeuronProfilerConfig, RunConfig, format_units, parse_units


def _nothing(*_: Any) -> None:
    return None


def _never() -> bool:
    return False


def _no_units(selection: str | None, wanted: int) -> list[str]:
    return []


@dataclass(frozen=True, kw_only=True)
class BackendInfo:
    """One backend, as the sweep, the cell and the analysis see it."""

    name: str  # its `backend=` value, the row's `backend`, a device slot's kind, its slot locks' prefix
    unit: str  # what its device slots are made of, plural, for messages: "GPUs"
    build: Callable[[NeuronDeviceConfig, NeuronProfilerConfig], Backend]  # imports its vendor packages
    present: Callable[[], bool]  # backend=auto's probe: cheap, and it starts no device runtime
    check: Callable[[], None] = _nothing  # the launching process's cheap check: raises BackendUnavailable/ConfigError
    # The pool probe: the units this process may use, None where counting them would start the device runtime; then
    # `assumed_units(selection in the config, units the slots need)` are split.
    count_units: Callable[[], list[str] | None]
    assumed_units: Callable[[str | None, int], list[str]] = _no_units
    visible_devices: str | None = None  # the variable its runtime reads its device selection from, once, at start
    unit_ranges: bool = False  # that variable takes a range ("4-5"): a slot's units must be contiguous
    slot_overrides: tuple[str, ...] = ()  # variables a slot's selection replaces: dropped from a slotted cell's env
    drop_config_selection: Callable[[RunConfig], None] = _nothing  # a slotted cell: the slot placed it, not the config
    on_host: bool = False  # its units are the host's cores, which its slots pin their processes to
    placement: Callable[[Any], str]  # the row's `placement` for this process running a cell on `device`
    inference_mode: bool = True  # False: its tensors reject torch.inference_mode (XLA), so no_grad instead
    clean_up: Callable[[], None] = _nothing  # after a cell, so that the next cell of the process starts clean
    # Its rows' `platform` in analysis/peaks.yaml, the published roofs its cells are held against; None: nothing is
    # published, the host's roofs are measured (cell.probe).
    peaks_key: str | None = None
    runtime_started: Callable[[], bool] = _never  # in this process: a process forked from it could not use the device
    fork_refusal: str = ""  # why its cells are then refused by the fork server
    unpaired: str | None = None  # why its cells cannot be timed together in one process (sweep.pairing)


# --- the host CPU -------------------------------------------------------------------------------------------------

def host_cpus() -> list[int]:
    """The cores this process may run on (its affinity: a Slurm job sees only its allocation)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _build_cpu(device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> Backend:
    from neuronexp.backends.cpu import CpuBackend

    return CpuBackend()


# No clean-up after a cell: on the host, reference counting frees what a cell held, and a full collection would
# cost ~0.2 s a cell.
CPU = BackendInfo(
    name="cpu", unit="CPU cores", build=_build_cpu, present=lambda: True,
    count_units=lambda: [str(c) for c in host_cpus()], on_host=True,
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
    import torch

    return bool(torch.cuda.is_available())  # counts devices; creates no CUDA context


def _build_cuda(device_cfg: NeuronDeviceConfig | None = None,
                profiler_cfg: NeuronProfilerConfig | None = None) -> Backend:
    from neuronexp.backends.cuda import CudaBackend

    return CudaBackend()


def _cuda_check() -> None:
    if not _cuda_present():
        _build_cuda()  # raises the backend's own message


def _cuda_placement(device: Any) -> str:
    index = getattr(device, "index", None) or 0
    visible = visible_cuda_devices() or []
    return f"cuda:{visible[index] if index < len(visible) else index}"


def _cuda_clean_up() -> None:
    import torch

    gc.collect()  # device memory held by reference cycles (compiled graphs) must be back before the next cell
    torch.cuda.empty_cache()


def _cuda_started() -> bool:
    import torch

    maps = Path("/proc/self/maps").read_text() if os.path.exists("/proc/self/maps") else ""
    return "libcuda.so" in maps or bool(torch.cuda.is_initialized())


CUDA = BackendInfo(
    name="cuda", unit="GPUs", build=_build_cuda, present=_cuda_present, check=_cuda_check, count_units=_cuda_units,
    visible_devices="CUDA_VISIBLE_DEVICES", placement=_cuda_placement, clean_up=_cuda_clean_up, peaks_key="cuda",
    runtime_started=_cuda_started,
    fork_refusal=("CUDA was initialised in neuronexp's fork-server template, and a process forked after that cannot "
                  "use CUDA; please report this with your torch version"),
)


# --- AWS Trainium (NeuronCores) -------------------------------------------------------------------------------------

def _build_neuron(device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> Backend:
    from neuronexp.backends.neuron import NeuronBackend

    return NeuronBackend(device_cfg, profiler_cfg)


def _neuron_present() -> bool:
    # Assumed where torch-neuronx is installed and /dev/neuron* exists: asking the runtime would start it.
    return importlib.util.find_spec("torch_neuronx") is not None and bool(glob("/dev/neuron*"))


def _neuron_check() -> None:
    if importlib.util.find_spec("torch_neuronx") is None:
        from neuronexp.backends.neuron import INSTALL_HINT

        raise BackendUnavailable(INSTALL_HINT)
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
    # The runtime starts at a process's first device use, not at `import torch_neuronx`.
    loaded = sys.modules.get("torch_neuronx")
    return bool(getattr(loaded, "is_neuron_runtime_initialized", _never)()) if loaded else False


NEURON = BackendInfo(
    name="neuron", unit="NeuronCores", build=_build_neuron, present=_neuron_present, check=_neuron_check,
    count_units=lambda: None, assumed_units=_neuron_units,
    # An index or an inclusive range (Neuron runtime configuration guide); the slot's range says how many cores too.
    visible_devices="NEURON_RT_VISIBLE_CORES", unit_ranges=True, slot_overrides=("NEURON_RT_NUM_CORES",),
    # Device memory held by reference cycles (compiled graphs) must be back before the next cell.
    drop_config_selection=_neuron_unpin, placement=_neuron_placement, inference_mode=False, clean_up=gc.collect,
    peaks_key="neuron", runtime_started=_neuron_started,
    fork_refusal=("the Neuron runtime started in neuronexp's fork-server template, so a forked cell would not get its "
                  "slot's NeuronCores; please report this with your torch-neuronx version"),
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
