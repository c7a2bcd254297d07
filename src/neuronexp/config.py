"""The run configuration schema (plain dataclasses) and the checks that run before any work starts.

Hydra registers these classes as `base_config` (see `cli.py`), so a wrong type or an unknown enum value
already fails at compose time; `validate()` adds the checks a type cannot express.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import MISSING


class ConfigError(ValueError):
    """A user mistake in the configuration: reported as one line, before any result is written."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        shown = "[" + ",".join(map(str, value)) + "]" if isinstance(value, (list, tuple)) else value
        super().__init__(f"{key}={shown}: {allowed}")


class DType(str, Enum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"
    float64 = "float64"
    int64 = "int64"
    int32 = "int32"
    bool = "bool"


class BackendName(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"
    neuron = "neuron"


class NeuronMode(str, Enum):
    """Members of `torch_neuronx.profiling.ProfileMode` (documented in the Neuron Explorer guide)."""

    DEVICE = "DEVICE"
    RUNTIME = "RUNTIME"
    CPU_UTIL = "CPU_UTIL"
    HOST_MEMORY = "HOST_MEMORY"


@dataclass
class ExtraInput:
    shape: list[int] = MISSING
    dtype: DType = DType.float32
    # Integer inputs (token ids, indices) are drawn from [0, high).
    high: int = 2


@dataclass
class InputConfig:
    shape: list[int] = field(default_factory=lambda: [1, 1024, 4096])
    dtype: DType = DType.bfloat16
    extra: list[ExtraInput] = field(default_factory=list)
    seed: int = 0


@dataclass
class ScheduleConfig:
    """torch.profiler.schedule: wait + warmup + active steps, repeated `repeat` times (one cycle each)."""

    wait: int = 2
    warmup: int = 1
    active: int = 1
    repeat: int = 1


@dataclass
class NeuronProfilerConfig:
    """Options of `torch_neuronx.profiling.NeuronConfig`; ignored on other backends."""

    modes: list[NeuronMode] = field(default_factory=lambda: [NeuronMode.DEVICE, NeuronMode.RUNTIME])
    # NeuronCores to capture, e.g. "0", "0,1" or "0,1,2-5"; null captures all.
    capture_enabled_for_nc: str | None = None
    max_events_per_nc: int | None = None
    # null: use it when the installed torch-neuronx accepts it (not in the official docs yet).
    correlate_device_time: bool | None = None
    # Copy the NEFFs into the profile folder so Neuron Explorer can open it stand-alone.
    copy_neffs: bool = True
    # The NEFF cache copied from when copy_neffs is on; null: $TORCH_NEURONX_NEFF_CACHE_DIR, else /tmp/neff_cache.
    neff_cache_dir: str | None = None
    # Post-process the capture with `neuron-explorer view` (when on PATH) into neuron_* Summary columns.
    explorer: bool = True
    explorer_timeout_s: float = 900.0


@dataclass
class ProfilerConfig:
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    record_shapes: bool = False
    with_stack: bool = False
    profile_memory: bool = False
    with_flops: bool = False
    export_trace: bool = True
    neuron: NeuronProfilerConfig = field(default_factory=NeuronProfilerConfig)


@dataclass
class TimingConfig:
    """The wall-clock pass, separate from the profiled one."""

    warmup: int = 10
    iters: int = 100
    # Stop sampling early after this many seconds (at least `min_iters` samples are still taken),
    # so large shapes on a slow CPU do not dominate a sweep. The sample count is recorded per cell.
    max_seconds: float = 5.0
    min_iters: int = 5


@dataclass
class CompileConfig:
    enabled: bool = False
    # null: "neuron" on Trainium, "inductor" elsewhere.
    backend: str | None = None
    mode: str | None = None
    fullgraph: bool = False
    dynamic: bool | None = False


@dataclass
class NeuronDeviceConfig:
    """NeuronCore selection, exported as NEURON_RT_* before the Neuron runtime starts."""

    visible_cores: str | None = None
    num_cores: int | None = None


@dataclass
class LauncherConfig:
    """Device slots for sweeps run by a parallel Hydra launcher (docs/slurm.md). Not part of a cell's run_id:
    where a cell ran is recorded in its row (`placement`), not in what it measured."""

    # Parallel device slots per host; each running cell owns one. hydra/launcher=parallel runs this many workers.
    devices: int = 1
    # Units per slot (NeuronCores, GPUs or CPU cores); null: 1 NeuronCore or GPU, or the CPU cores split evenly.
    per_device: int | None = None
    # The units to split, e.g. "0-31"; null: neuron.visible_cores or 0..devices*per_device-1 (Neuron),
    # CUDA_VISIBLE_DEVICES or every GPU (CUDA), the process's CPU affinity (CPU).
    pool: str | None = None
    # null: under a parallel launcher each cell runs in a fresh process on its slot (under the basic one, in its
    # one process); false: cells run warm in workers that keep a slot each; true: fresh processes, any launcher.
    isolate: bool | None = None
    # Node-local directory for the slot lock files; null: <tmp>/neuronexp-locks (shared by every sweep of the host).
    lock_dir: str | None = None


@dataclass
class RunConfig:
    module: Any = MISSING
    input: InputConfig = field(default_factory=InputConfig)
    backend: BackendName = BackendName.auto
    compile: CompileConfig = field(default_factory=CompileConfig)
    profiler: ProfilerConfig = field(default_factory=ProfilerConfig)
    timing: TimingConfig = field(default_factory=TimingConfig)
    neuron: NeuronDeviceConfig = field(default_factory=NeuronDeviceConfig)
    launcher: LauncherConfig = field(default_factory=LauncherConfig)
    # The module option that speedups are computed against in a sweep; null disables speedups.
    baseline: str | None = "rmsnorm_naive"


_CORE_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def validate_core_list(key: str, value: str | None) -> None:
    """A NeuronCore list is "0", "0,1" or "0,1,2-5" with ascending ranges."""
    if value is None:
        return
    text = str(value).replace(" ", "")
    if not _CORE_LIST.match(text):
        raise ConfigError(key, value, 'expected NeuronCore indices like "0", "0,1" or "0,1,2-5"')
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if hi and int(hi) < int(lo):
            raise ConfigError(key, value, f"range {part} runs backwards; write {hi}-{lo}")


def _positive(key: str, value: int, minimum: int = 1) -> None:
    if value < minimum:
        raise ConfigError(key, value, f"must be an integer >= {minimum}")


def _check_shape(key: str, shape: list[int]) -> None:
    if len(shape) == 0 or any(d < 1 for d in shape):
        raise ConfigError(key, list(shape), "must be a non-empty list of positive integers, e.g. [1,1024,4096]")


def validate(cfg: RunConfig) -> None:
    """Check what the schema types cannot: ranges, shapes, core lists and the module target."""
    _check_shape("input.shape", cfg.input.shape)
    if cfg.input.dtype in (DType.int64, DType.int32, DType.bool):
        raise ConfigError("input.dtype", cfg.input.dtype.value, "the first input must be a floating dtype")
    for i, extra in enumerate(cfg.input.extra):
        _check_shape(f"input.extra[{i}].shape", extra.shape)
        _positive(f"input.extra[{i}].high", extra.high)
    s = cfg.profiler.schedule
    _positive("profiler.schedule.wait", s.wait, 0)
    _positive("profiler.schedule.warmup", s.warmup, 0)
    _positive("profiler.schedule.active", s.active)
    _positive("profiler.schedule.repeat", s.repeat)
    _positive("timing.warmup", cfg.timing.warmup, 0)
    _positive("timing.iters", cfg.timing.iters)
    _positive("timing.min_iters", cfg.timing.min_iters)
    if cfg.timing.max_seconds <= 0:
        raise ConfigError("timing.max_seconds", cfg.timing.max_seconds, "must be > 0")
    nprof = cfg.profiler.neuron
    validate_core_list("profiler.neuron.capture_enabled_for_nc", nprof.capture_enabled_for_nc)
    if nprof.max_events_per_nc is not None:
        _positive("profiler.neuron.max_events_per_nc", nprof.max_events_per_nc)
    if not nprof.modes:
        raise ConfigError("profiler.neuron.modes", [], "list at least one of DEVICE, RUNTIME, CPU_UTIL, HOST_MEMORY")
    if nprof.explorer_timeout_s <= 0:
        raise ConfigError("profiler.neuron.explorer_timeout_s", nprof.explorer_timeout_s, "must be > 0 seconds")
    validate_core_list("neuron.visible_cores", cfg.neuron.visible_cores)
    if cfg.neuron.num_cores is not None:
        _positive("neuron.num_cores", cfg.neuron.num_cores, 0)
    _positive("launcher.devices", cfg.launcher.devices)
    if cfg.launcher.per_device is not None:
        _positive("launcher.per_device", cfg.launcher.per_device)
    validate_core_list("launcher.pool", cfg.launcher.pool)
    validate_module_target(cfg.module)


def validate_module_target(module: Any) -> None:
    """The module node must name an importable `_target_`; a class target must be an nn.Module."""
    import torch.nn as nn

    target = module.get("_target_") if isinstance(module, dict) else None
    if not target:
        raise ConfigError("module._target_", None, "set module=<option> or give a node with a _target_ that builds an nn.Module")
    obj = locate(str(target))
    if isinstance(obj, type) and not issubclass(obj, nn.Module):
        raise ConfigError("module._target_", target, f"{obj.__module__}.{obj.__qualname__} is not a torch.nn.Module")
    if not callable(obj):
        raise ConfigError("module._target_", target, "is not callable; name an nn.Module class or a factory function")


def locate(path: str) -> Any:
    """Import `pkg.mod.Name` (like hydra.utils.get_object) but fail with a ConfigError."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        mod_name = ".".join(parts[:split])
        try:
            obj: Any = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
                continue
            raise ConfigError("module._target_", path, f"importing {mod_name} failed: {exc}") from exc
        except Exception as exc:  # a user module that raises at import time
            raise ConfigError("module._target_", path, f"importing {mod_name} failed: {type(exc).__name__}: {exc}") from exc
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
        except AttributeError:
            raise ConfigError("module._target_", path, f"{mod_name} has no attribute {'.'.join(parts[split:])}") from None
        return obj
    raise ConfigError("module._target_", path, "cannot be imported; give a dotted path like mypkg.layers.MyLayer "
                      "importable from the working directory or experiments/")
