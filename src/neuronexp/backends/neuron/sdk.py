"""Which torch-neuronx profiling API is installed, and the arguments neuronexp hands to it.

Two APIs exist (see docs/neuron.md): the documented SDK 2.31+ one, `NeuronConfig` as the profiler's
`experimental_config` plus `NeuronProfiler(config).export_trace` as `on_trace_ready`; and the April-2026
TorchNeuron one, `NeuronProfiler(pytorch_activities=..., neuron_output_dir=...)`, a context manager that
drives the Neuron runtime capture itself. Everything here is plain Python over the imported module.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from glob import glob
from types import ModuleType
from typing import Any

from neuronexp.backends.base import BackendUnavailable
from neuronexp.config import ConfigError, NeuronProfilerConfig

DOCUMENTED = "neuronconfig-2.31"
LEGACY = "neuronprofiler-2026-04"
LEGACY_PARAMS = ("pytorch_activities", "neuron_output_dir")
CORRELATE = "correlate_device_time"
# What the row's neuron_correlate_device_time says: True given (GIVEN), then, once profiled, TAKEN when device time
# appeared through the profiler and IGNORED when none did (sources.correlate_outcome); False given (profiler.neuron.
# correlate_device_time=false); not given (the installed NeuronConfig has no such parameter, or the April-2026 API);
# given where the signature could not be read, rejected with a TypeError, and the config built again without it.
GIVEN, TAKEN, IGNORED = "given", "taken", "ignored"
OFF, NOT_PASSED, REFUSED = "off", "not_passed", "refused"
# PyPI's torch-neuronx is a 2022 placeholder whose import raises this; the real package is on the Neuron repository.
PLACEHOLDER_TEXT = "WRONG PACKAGE"
INSTALL_HINT = (
    "torch-neuronx is not installed; on a Trn2/Trn3 instance install TorchNeuron, the torch-neuronx family "
    "matching your PyTorch, from the Neuron package repository (pip install -e .[neuron], see docs/neuron.md)"
)


class NeuronApiMissing(RuntimeError):
    """Neither profiling API is present in the installed torch-neuronx."""


def installed_version(tnx: ModuleType | None = None) -> str:
    """The torch-neuronx version: package metadata first, then the module's `__version__`."""
    try:
        return importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(tnx, "__version__", "unknown"))


def _release(version: str) -> tuple[int, ...]:
    m = re.match(r"^(\d+(?:\.\d+)*)", version)
    return tuple(int(x) for x in m[1].split(".")) if m else ()


def family_problem(tnx: ModuleType, version: str, torch_version: str) -> str | None:
    """Why this torch-neuronx is not TorchNeuron for the installed torch, or None (also when it cannot be told).

    TorchNeuron versions read <torch major>.<torch minor>.<backend release>.<patch> (2.14.3.0 pairs with PyTorch 2.14);
    the PyTorch/XLA-based library reads <torch version>.<neuron version> (2.9.0.2.15.32035) and has a
    `torch_neuronx.xla_impl` module. The April-2026 source (0.1.0) is neither, and passes."""
    tnx_rel, torch_rel = _release(version), _release(torch_version)
    want = "the torch-neuronx family matching torch"
    if len(torch_rel) >= 2:
        want = f"torch-neuronx=={torch_rel[0]}.{torch_rel[1]}.*"
    xla_era = "torch_neuronx.xla_impl" in sys.modules or hasattr(tnx, "xla_impl")
    if xla_era or (len(tnx_rel) >= 5 and (1, 0) <= tnx_rel[:2] <= (2, 9)):
        return (
            f"torch-neuronx {version} is the PyTorch/XLA-based library (PyTorch <= 2.9), not TorchNeuron; "
            f"install {want} (TorchNeuron; Neuron SDK 2.33 pairs it with PyTorch 2.13 and 2.14)"
        )
    if len(tnx_rel) == 4 and tnx_rel[:2] >= (2, 10) and len(torch_rel) >= 2 and tnx_rel[:2] != torch_rel[:2]:
        return (
            f"torch-neuronx {version} is built for PyTorch {tnx_rel[0]}.{tnx_rel[1]} but torch {torch_version} "
            f"is installed; install {want}, the family matching your PyTorch"
        )
    return None


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
    """Pick the documented API when present, else the April-2026 one; NeuronApiMissing where neither is there (the
    message names the installed version)."""
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


def neuron_present() -> bool:
    """Whether torch-neuronx is installed and a Neuron device file exists (asking the runtime would start it)."""
    return importlib.util.find_spec("torch_neuronx") is not None and bool(glob("/dev/neuron*"))


def runtime_started() -> bool:
    """Whether the Neuron runtime started in this process. `import torch` may have loaded torch-neuronx (its
    `torch.backends` entry point); the runtime starts lazily (first device use), so the environment still applies."""
    loaded = sys.modules.get("torch_neuronx")
    return bool(getattr(loaded, "is_neuron_runtime_initialized", lambda: False)()) if loaded else False


def check_installed() -> None:
    """Raises BackendUnavailable: torch-neuronx not installed, or PyPI's placeholder (1.0, what `pip install .[neuron]`
    finds without the Neuron repository). Told without importing it (it imports torch)."""
    if importlib.util.find_spec("torch_neuronx") is None:
        raise BackendUnavailable(INSTALL_HINT)
    if placeholder := placeholder_problem(installed_version(), ""):
        raise BackendUnavailable(placeholder)


def placeholder_problem(version: str, error: str) -> str | None:
    """The one-line reason when the installed torch-neuronx is PyPI's placeholder (version 1.0, whose import raises
    "WRONG PACKAGE. Please install the package from Neuron Repository"), else None."""
    if PLACEHOLDER_TEXT not in error and version != "1.0":
        return None
    return (
        f"torch-neuronx {version} is PyPI's 2022 placeholder (its import raises {PLACEHOLDER_TEXT!r}), not "
        "TorchNeuron: pip uninstall torch-neuronx, then on a Trn2/Trn3 instance install the torch-neuronx family "
        "matching your PyTorch with --extra-index-url https://pip.repos.neuron.amazonaws.com (docs/neuron.md, Install)"
    )


def check_correlate(api: NeuronApi, cfg: NeuronProfilerConfig) -> None:
    """An explicit `correlate_device_time=true` the installed version does not accept is a config error (ConfigError
    naming the key, the value and the installed version)."""
    if cfg.correlate_device_time and api.correlate_supported is False:
        raise ConfigError(
            "profiler.neuron.correlate_device_time",
            True,
            f"not accepted by the installed torch-neuronx {api.version} ({api.kind} API); set it to null",
        )


def neuron_config_kwargs(
    api: NeuronApi, cfg: NeuronProfilerConfig, output_dir: str, neff_cache: str | None
) -> dict[str, Any]:
    """Keyword arguments for `NeuronConfig(...)`: the documented ones, `neff_cache_dir` the cache pinned for the cell
    (None: not passed), and `correlate_device_time` where the installed signature has it."""
    mode_enum = api.module.ProfileMode
    modes = []
    for mode in cfg.modes:
        name = getattr(mode, "value", str(mode))
        if not hasattr(mode_enum, name):
            have = ", ".join(m for m in ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY") if hasattr(mode_enum, m))
            raise ConfigError(
                "profiler.neuron.modes", name, f"torch-neuronx {api.version} has no ProfileMode.{name}; it has {have}"
            )
        modes.append(getattr(mode_enum, name))
    kwargs: dict[str, Any] = {"modes": modes, "profile_output_dir": output_dir}
    if cfg.capture_enabled_for_nc is not None:
        kwargs["capture_enabled_for_nc"] = str(cfg.capture_enabled_for_nc).replace(" ", "")
    if cfg.max_events_per_nc is not None:
        kwargs["max_events_per_nc"] = int(cfg.max_events_per_nc)
    if neff_cache is not None:
        kwargs["neff_cache_dir"] = neff_cache
    # True by default wherever the installed NeuronConfig takes it (the study's own configuration; a signature Python
    # cannot read is tried), the user's false as False.
    if api.kind == DOCUMENTED and api.correlate_supported is not False:
        kwargs[CORRELATE] = True if cfg.correlate_device_time is None else bool(cfg.correlate_device_time)
    return kwargs


def build_neuron_config(
    api: NeuronApi, cfg: NeuronProfilerConfig, output_dir: str, neff_cache: str | None
) -> tuple[Any, str]:
    """`NeuronConfig(**kwargs)` for the documented API, and what became of `correlate_device_time` (GIVEN, OFF,
    NOT_PASSED or REFUSED). Raises ConfigError where the installed NeuronConfig rejects correlate_device_time=true
    that the user asked for."""
    kwargs = neuron_config_kwargs(api, cfg, output_dir, neff_cache)
    state = NOT_PASSED if CORRELATE not in kwargs else GIVEN if kwargs[CORRELATE] else OFF
    try:
        return api.module.NeuronConfig(**kwargs), state
    except TypeError as exc:
        if CORRELATE not in kwargs or CORRELATE not in str(exc):
            raise
        if cfg.correlate_device_time:
            raise ConfigError(
                "profiler.neuron.correlate_device_time",
                True,
                f"not accepted by the installed torch-neuronx {api.version}; set it to null",
            ) from None
    del kwargs[CORRELATE]  # a hidden signature that turned it down: the documented arguments alone
    return api.module.NeuronConfig(**kwargs), REFUSED


def legacy_profiler_kwargs(cfg: NeuronProfilerConfig, output_dir: str) -> tuple[dict[str, Any], list[str]]:
    """Arguments for the April-2026 `NeuronProfiler`, and notes on the settings it cannot honour. neuronexp runs its own
    torch.profiler (with its schedule), so this profiler drives only the Neuron runtime capture: no
    `pytorch_activities`."""
    kwargs: dict[str, Any] = {"pytorch_activities": None, "neuron_output_dir": output_dir}
    if cfg.capture_enabled_for_nc is not None:
        kwargs["event_filters"] = {"nc": str(cfg.capture_enabled_for_nc).replace(" ", "").split(",")}
    notes = []
    if [getattr(m, "value", str(m)) for m in cfg.modes] != ["DEVICE", "RUNTIME"]:
        notes.append(
            "profiler.neuron.modes is not honoured by the April-2026 NeuronProfiler (it captures the runtime defaults)"
        )
    if cfg.max_events_per_nc is not None:
        notes.append("profiler.neuron.max_events_per_nc is not honoured by the April-2026 NeuronProfiler")
    return kwargs, notes
