"""Which torch-neuronx profiling API is installed, and the arguments neuronexp hands to it.

Two APIs exist (see docs/neuron.md): the documented SDK 2.31+ one, `NeuronConfig` as the profiler's
`experimental_config` plus `NeuronProfiler(config).export_trace` as `on_trace_ready`; and the April-2026
TorchNeuron one, `NeuronProfiler(pytorch_activities=..., neuron_output_dir=...)`, a context manager that
drives the Neuron runtime capture itself. Everything here is plain Python over the imported module.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from neuronexp.config import ConfigError, NeuronProfilerConfig

DOCUMENTED = "neuronconfig-2.31"
LEGACY = "neuronprofiler-2026-04"
DEFAULT_NEFF_CACHE = "/tmp/neff_cache"  # where the troubleshooting guide says NEFFs are cached by default
LEGACY_PARAMS = ("pytorch_activities", "neuron_output_dir")


class NeuronApiMissing(RuntimeError):
    """Neither profiling API is present in the installed torch-neuronx."""


def installed_version(tnx: ModuleType | None = None) -> str:
    """The torch-neuronx version: package metadata first, then the module's `__version__`."""
    try:
        return importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(tnx, "__version__", "unknown"))


def _parameters(obj: Any) -> dict[str, inspect.Parameter] | None:
    """The callable's keyword parameters, or None when Python cannot see them (a C++ binding)."""
    try:
        return dict(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return None


def accepts(obj: Any, name: str) -> bool | None:
    """Whether `obj(...)` takes keyword `name`: True, False, or None when the signature is hidden."""
    params = _parameters(obj)
    if params is None:
        return None
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@dataclass
class NeuronApi:
    """The detected API: its kind, the profiling module and whether `correlate_device_time` is accepted."""

    kind: str
    module: ModuleType
    version: str
    correlate_supported: bool | None = None


def detect(tnx: ModuleType) -> NeuronApi:
    """Pick the documented API when present, else the April-2026 one.

    Raises:
        NeuronApiMissing: neither is there; the message names the installed version.
    """
    version = installed_version(tnx)
    try:
        profiling = importlib.import_module("torch_neuronx.profiling")
    except ImportError:
        profiling = None
    if profiling is not None and all(hasattr(profiling, n) for n in ("NeuronConfig", "ProfileMode", "NeuronProfiler")):
        if hasattr(profiling.NeuronProfiler, "export_trace"):
            return NeuronApi(DOCUMENTED, profiling, version, accepts(profiling.NeuronConfig, "correlate_device_time"))
    if profiling is not None and hasattr(profiling, "NeuronProfiler"):
        params = _parameters(profiling.NeuronProfiler)
        if params is not None and all(p in params for p in LEGACY_PARAMS):
            return NeuronApi(LEGACY, profiling, version, False)
    raise NeuronApiMissing(
        f"torch-neuronx {version} has neither torch_neuronx.profiling.NeuronConfig + NeuronProfiler(config)"
        ".export_trace (Neuron SDK 2.31+) nor NeuronProfiler(pytorch_activities=..., neuron_output_dir=...)"
        " (TorchNeuron, April 2026); install TorchNeuron from Neuron SDK 2.31-2.33 (docs/neuron.md)"
    )


def neff_cache_dir(cfg: NeuronProfilerConfig) -> str:
    return cfg.neff_cache_dir or os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR") or DEFAULT_NEFF_CACHE


def check_correlate(api: NeuronApi, cfg: NeuronProfilerConfig) -> None:
    """An explicit `correlate_device_time=true` the installed version does not accept is a config error.

    Raises:
        ConfigError: naming the key, the value and the installed version.
    """
    if cfg.correlate_device_time and api.correlate_supported is False:
        raise ConfigError(
            "profiler.neuron.correlate_device_time", True,
            f"not accepted by the installed torch-neuronx {api.version} ({api.kind} API); set it to null",
        )


def neuron_config_kwargs(api: NeuronApi, cfg: NeuronProfilerConfig, output_dir: str) -> dict[str, Any]:
    """Keyword arguments for `NeuronConfig(...)`, only the documented ones plus what the signature allows."""
    mode_enum = api.module.ProfileMode
    modes = []
    for mode in cfg.modes:
        name = getattr(mode, "value", str(mode))
        if not hasattr(mode_enum, name):
            have = ", ".join(m for m in ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY") if hasattr(mode_enum, m))
            raise ConfigError("profiler.neuron.modes", name, f"torch-neuronx {api.version} has no ProfileMode.{name}; it has {have}")
        modes.append(getattr(mode_enum, name))
    kwargs: dict[str, Any] = {"modes": modes, "profile_output_dir": output_dir}
    if cfg.capture_enabled_for_nc is not None:
        kwargs["capture_enabled_for_nc"] = str(cfg.capture_enabled_for_nc).replace(" ", "")
    if cfg.max_events_per_nc is not None:
        kwargs["max_events_per_nc"] = int(cfg.max_events_per_nc)
    if cfg.copy_neffs:
        kwargs["neff_cache_dir"] = neff_cache_dir(cfg)
    # Not in the official docs (seen in one third-party script): pass it only where the signature
    # shows it, and by default turn it on, since it is the only hope of device time in key_averages().
    if api.correlate_supported:
        kwargs["correlate_device_time"] = True if cfg.correlate_device_time is None else bool(cfg.correlate_device_time)
    elif api.correlate_supported is None and cfg.correlate_device_time is not None:
        kwargs["correlate_device_time"] = bool(cfg.correlate_device_time)  # asked for; a TypeError will say if not
    return kwargs


def build_neuron_config(api: NeuronApi, cfg: NeuronProfilerConfig, output_dir: str) -> Any:
    """`NeuronConfig(**kwargs)` for the documented API.

    Raises:
        ConfigError: the installed NeuronConfig rejects an argument neuronexp passed on the user's request.
    """
    kwargs = neuron_config_kwargs(api, cfg, output_dir)
    try:
        return api.module.NeuronConfig(**kwargs)
    except TypeError as exc:
        if "correlate_device_time" in kwargs and "correlate_device_time" in str(exc):
            raise ConfigError("profiler.neuron.correlate_device_time", kwargs["correlate_device_time"],
                              f"not accepted by the installed torch-neuronx {api.version}; set it to null") from None
        raise


def legacy_profiler_kwargs(cfg: NeuronProfilerConfig, output_dir: str) -> tuple[dict[str, Any], list[str]]:
    """Arguments for the April-2026 `NeuronProfiler`, and notes on the settings it cannot honour.

    neuronexp runs its own torch.profiler (with its schedule), so this profiler drives only the Neuron
    runtime capture: no `pytorch_activities`.
    """
    kwargs: dict[str, Any] = {"pytorch_activities": None, "neuron_output_dir": output_dir}
    if cfg.capture_enabled_for_nc is not None:
        kwargs["event_filters"] = {"nc": str(cfg.capture_enabled_for_nc).replace(" ", "").split(",")}
    notes = []
    if [getattr(m, "value", str(m)) for m in cfg.modes] != ["DEVICE", "RUNTIME"]:
        notes.append("profiler.neuron.modes is not honoured by the April-2026 NeuronProfiler (it captures the runtime defaults)")
    if cfg.max_events_per_nc is not None:
        notes.append("profiler.neuron.max_events_per_nc is not honoured by the April-2026 NeuronProfiler")
    return kwargs, notes
