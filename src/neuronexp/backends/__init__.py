"""Execution backends: where a cell runs, how it synchronizes, what the profiler records there. One folder per
backend (cpu/, cuda/, neuron/): its row in backends.table says what the other stages know of it, its options
included; each imports its vendor package (`torch_neuronx`) only inside its folder, so CPU CI needs none."""

from __future__ import annotations

from neuronexp.backends.base import Backend, BackendUnavailable, DeviceFill
from neuronexp.backends.table import BACKENDS, HOST, backend_info, named_backend
from neuronexp.config import BackendName, ConfigError, RunConfig

__all__ = [
    "BACKENDS",
    "HOST",
    "Backend",
    "DeviceFill",
    "backend_info",
    "backend_kind",
    "check_available",
    "check_options",
    "named_backend",
    "resolve_backend",
]


def resolve_backend(name: BackendName | str, config: RunConfig | None = None) -> Backend:
    """Build the requested backend with its options from `config` (default: the schema's); `auto` tries the table's
    backends in order (neuron, then cuda, then cpu). Raises ConfigError where the requested backend is not usable on
    this machine (the reason says why)."""
    cfg = config or RunConfig()
    if (info := named_backend(name)) is not None:
        try:
            return info.build(cfg)
        except BackendUnavailable as exc:
            raise ConfigError("backend", info.name, f"{exc}; use backend=auto or backend={HOST.name}") from None
    for candidate in BACKENDS[:-1]:
        try:
            return candidate.build(cfg)
        except BackendUnavailable:
            continue
    return BACKENDS[-1].build(cfg)


def check_options(cfg: RunConfig) -> None:
    """Every backend's checks of its own options, on every config whatever its backend: plain values, no torch.
    Raises ConfigError, naming the key, the value and what is allowed."""
    for info in BACKENDS:
        info.check_options(cfg)


def backend_kind(name: BackendName | str) -> str:
    """The backend a cell will run on, decided without starting a device runtime in this process: the named one,
    or for `auto` the first of the table whose cheap probe (BackendInfo.present) finds it here."""
    if (info := named_backend(name)) is not None:
        return info.name
    return next((candidate.name for candidate in BACKENDS[:-1] if candidate.present()), BACKENDS[-1].name)


def check_available(name: BackendName | str) -> None:
    """A cheap check, for validating a sweep in the launching process before any cell runs. It starts no device runtime:
    the Neuron runtime reads its core selection once, when it starts, so starting it here would pin every later
    in-process cell to the defaults. Each cell still builds its backend in full (resolve_backend) and fails cleanly if,
    e.g., no NeuronCore is visible. Raises ConfigError where the backend cannot run here."""
    value = BackendName(name).value
    try:
        backend_info(backend_kind(name)).check()
    except BackendUnavailable as exc:
        raise ConfigError("backend", value, f"{exc}; use backend=auto or backend={HOST.name}") from None
