"""Execution backends: where a cell runs, how it synchronizes, what the profiler records there.

Each backend imports its vendor package (`torch_neuronx`) only inside its own module, so CPU CI needs none.
"""

from __future__ import annotations

import importlib.util
from glob import glob

from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.config import BackendName, ConfigError, NeuronDeviceConfig, NeuronProfilerConfig

__all__ = ["AUTO_ORDER", "Backend", "BackendUnavailable", "backend_kind", "check_available", "resolve_backend"]

# What backend=auto tries, in order (the one place this order is written).
AUTO_ORDER = ("neuron", "cuda", "cpu")


def _make(name: str, neuron_device: NeuronDeviceConfig, neuron_profiler: NeuronProfilerConfig) -> Backend:
    if name == "cpu":
        from neuronexp.backends.cpu import CpuBackend

        return CpuBackend()
    if name == "cuda":
        from neuronexp.backends.cuda import CudaBackend

        return CudaBackend()
    from neuronexp.backends.neuron import NeuronBackend

    return NeuronBackend(neuron_device, neuron_profiler)


def resolve_backend(
    name: BackendName | str,
    neuron_device: NeuronDeviceConfig | None = None,
    neuron_profiler: NeuronProfilerConfig | None = None,
) -> Backend:
    """Build the requested backend; `auto` picks neuron, then cuda, then cpu.

    Raises:
        ConfigError: the requested backend is not usable on this machine (the reason says why).
    """
    name = BackendName(name).value
    nd, np_ = neuron_device or NeuronDeviceConfig(), neuron_profiler or NeuronProfilerConfig()
    if name != "auto":
        try:
            return _make(name, nd, np_)
        except BackendUnavailable as exc:
            raise ConfigError("backend", name, f"{exc}; use backend=auto or backend=cpu") from None
    for candidate in AUTO_ORDER[:-1]:
        try:
            return _make(candidate, nd, np_)
        except BackendUnavailable:
            continue
    return _make(AUTO_ORDER[-1], nd, np_)


def backend_kind(name: BackendName | str) -> str:
    """The device kind a cell will run on, decided without starting a device runtime in this process.

    The same order as `resolve_backend("auto")` (AUTO_ORDER), from cheap probes: a NeuronCore is assumed
    where torch-neuronx is installed and /dev/neuron* exists; CUDA is asked for its device count only.
    """
    name = BackendName(name).value
    if name != "auto":
        return name
    for candidate in AUTO_ORDER:
        if candidate == "neuron" and importlib.util.find_spec("torch_neuronx") is not None and glob("/dev/neuron*"):
            return candidate
        if candidate == "cuda":
            import torch

            if torch.cuda.is_available():  # counts devices; creates no CUDA context
                return candidate
    return AUTO_ORDER[-1]


def check_available(name: BackendName | str) -> None:
    """A cheap check, for validating a sweep in the launching process before any cell runs.

    It starts no device runtime: the Neuron runtime reads its core selection once, when it starts, so
    starting it here would pin every later in-process cell to the defaults. Each cell still builds its
    backend in full (resolve_backend) and fails cleanly if, e.g., no NeuronCore is visible.

    Raises:
        ConfigError: the backend cannot run here.
    """
    import torch

    name = BackendName(name).value
    if name == "neuron" and importlib.util.find_spec("torch_neuronx") is None:
        from neuronexp.backends.neuron import INSTALL_HINT

        raise ConfigError("backend", name, f"{INSTALL_HINT}; use backend=auto or backend=cpu")
    if backend_kind(name) == "neuron":
        from neuronexp.backends.neuron.process_env import inspect_conflict

        conflict = inspect_conflict()
        if conflict is not None:
            raise conflict
    if name == "cuda" and not torch.cuda.is_available():
        resolve_backend(name)  # raises the CUDA backend's own message
