"""Execution backends: where a cell runs, how it synchronizes, what the profiler records there.

Each backend imports its vendor package (`torch_neuronx`) only inside its own module, so CPU CI needs none.
"""

from __future__ import annotations

from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.config import BackendName, ConfigError, NeuronDeviceConfig, NeuronProfilerConfig

__all__ = ["Backend", "BackendUnavailable", "available_backends", "resolve_backend"]


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
    for candidate in ("neuron", "cuda"):
        try:
            return _make(candidate, nd, np_)
        except BackendUnavailable:
            continue
    return _make("cpu", nd, np_)


def available_backends() -> list[str]:
    """Names of the backends that can run here (cpu is always one)."""
    names = []
    for name in ("neuron", "cuda", "cpu"):
        try:
            _make(name, NeuronDeviceConfig(), NeuronProfilerConfig())
            names.append(name)
        except BackendUnavailable:
            pass
    return names
