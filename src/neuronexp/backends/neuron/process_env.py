"""The process environment a Neuron cell needs before torch-neuronx compiles or the runtime starts (docs/neuron.md):
NEURON_RT_* are read when the runtime starts; NEURON_RT_INSPECT_ENABLE=1 conflicts with torch.profiler; the debug
variables change what the compiler writes into a NEFF; TORCH_NEURONX_NEFF_CACHE_DIR must name the NEFF cache before the
first compile, or the capture's NTFFs come without their NEFFs and Neuron Explorer cannot process them."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from neuronexp.backends.neuron.neff_cache import NEFF_CACHE_VAR, private_dirs, restore_env
from neuronexp.config import ConfigError, NeuronDeviceConfig, NeuronProfilerConfig, unit_set

INSPECT_ENABLE = "NEURON_RT_INSPECT_ENABLE"
# NEURON_FRAMEWORK_DEBUG is in the 2.31-2.33.0 "Source code and debug info" table, not in 2.33.1's short list.
NAME_VARS = ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NEURON_FRAMEWORK_DEBUG")
NKI_VAR = "NKI_DEBUG_INFO"
COMPILE_TIME_VARS = (*NAME_VARS, NKI_VAR)
PROCESS_DEBUG = "NEURONEXP_NEURON_DEBUG"  # the debug setting of this process's first Neuron cell


def inspect_conflict(environ: dict[str, str] | os._Environ[str] = os.environ) -> ConfigError | None:
    """The error for NEURON_RT_INSPECT_ENABLE switched on (the runtime reads 1/true, any case), else None."""
    value = environ.get(INSPECT_ENABLE)
    if value is None or value.strip().lower() not in ("1", "true"):
        return None
    return ConfigError(
        INSPECT_ENABLE,
        value,
        "conflicts with neuronexp's torch.profiler capture (Neuron Explorer docs: "
        '"Don\'t combine it with torch.profiler"); unset it, neuronexp captures through NeuronConfig '
        "(profiler.neuron.*)",
    )


def _within(current: str | None, wanted: str) -> bool:
    if not current:
        return False
    try:
        return unit_set(current) <= unit_set(wanted)
    except ValueError:
        return False


CORE_VARS = ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES")
DEFAULT_CORES = "1"  # one NeuronCore per cell unless asked otherwise (the runtime would reserve every one)
CORES_MARK = "NEURONEXP_NEURON_CORES_DEFAULT"  # set beside neuronexp's own default, so a later cell knows it


def _set_core_env(key: str, env: str, value: str, runtime_started: bool) -> list[str]:
    notes = []
    if runtime_started and os.environ.get(env) != value:
        notes.append(
            f"{key}={value} not applied: the Neuron runtime already started in this process with "
            f"{env}={os.environ.get(env) or 'unset'}; set {env} in the shell instead"
        )
    os.environ[env] = value
    return notes


def _in_force(key: str, env: str, value: str, before: str | None, runtime_started: bool) -> str:
    """The row's words for a core key: the value the runtime reads, which is the one it started with where it had
    started before the key could apply (the note says so too)."""
    if runtime_started and before != value:
        return f"{env}={before or 'unset'} (the runtime started before {key}={value} could apply)"
    return f"{env}={value} ({key})"


def apply_core_env(device_cfg: NeuronDeviceConfig, runtime_started: bool) -> tuple[list[str], str]:
    """Export neuron.visible_cores / neuron.num_cores, or, where neither they nor the environment choose, one
    NeuronCore (NEURON_RT_NUM_CORES=1: by default the runtime reserves, and the capture records, every core of the
    host). Notes for values the started runtime can no longer see, and the selection in words (the row's
    neuron_cores)."""
    notes: list[str] = []
    chosen = []
    for key, env, value in (
        ("neuron.visible_cores", "NEURON_RT_VISIBLE_CORES", device_cfg.visible_cores),
        ("neuron.num_cores", "NEURON_RT_NUM_CORES", device_cfg.num_cores),
    ):
        if value is None:
            continue
        value, before = str(value).replace(" ", ""), os.environ.get(env)
        if env == "NEURON_RT_VISIBLE_CORES" and _within(before, value):
            chosen.append(f"{env}={before} (a launcher slot within {key}={value})")
            continue  # already narrowed to part of these cores (a launcher slot, or the user): keep it
        notes += _set_core_env(key, env, value, runtime_started)
        chosen.append(_in_force(key, env, value, before, runtime_started))
    default = f"NEURON_RT_NUM_CORES={DEFAULT_CORES} (neuronexp's default: one NeuronCore per cell)"
    if chosen:
        return notes, ", ".join(chosen)
    given = [f"{env}={os.environ[env]}" for env in CORE_VARS if os.environ.get(env)]
    if given and given != [os.environ.get(CORES_MARK)]:
        return notes, ", ".join(given) + " (the environment)"  # a launcher's slot, or the user's shell
    notes += _set_core_env("neuron.num_cores (default)", "NEURON_RT_NUM_CORES", DEFAULT_CORES, runtime_started)
    os.environ[CORES_MARK] = f"NEURON_RT_NUM_CORES={DEFAULT_CORES}"
    return notes, default


@dataclass
class DebugInfo:
    """The compile-time variables one cell set, and what they replaced (restored when the cell ends)."""

    values: dict[str, str] = field(default_factory=dict)
    saved: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.values.items() if k in COMPILE_TIME_VARS) or "off"

    @property
    def neff_cache(self) -> str | None:
        return self.values.get(NEFF_CACHE_VAR)

    def restore(self) -> None:
        restore_env(self.saved)
        self.saved = {}


def apply_debug_info(device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> DebugInfo:
    """Set the compile-time debug variables and point the NEFF cache at a fresh folder, before any compile. The folder
    is new (made here, under profiler.neuron.neff_cache_dir when set), so no NEFF compiled without the names can be
    reused from it; TORCH_NEURONX_DEBUG_DIR moves into it too, since TorchNeuron keeps its compilation artifacts
    there."""
    info = DebugInfo()
    if not (device_cfg.debug_info or device_cfg.nki_debug_info):
        return info
    if device_cfg.debug_info:
        info.values.update({name: "1" for name in NAME_VARS})
    if device_cfg.nki_debug_info:
        info.values[NKI_VAR] = "True"  # the spelling the docs use
    parent = profiler_cfg.neff_cache_dir
    if parent:  # the key's folder passes the NEFF cache's rule (mkdtemp makes the fresh folder 0700, this user's)
        parent = str(private_dirs(Path(parent).expanduser().absolute(), (), "profiler.neuron.neff_cache_dir"))
    fresh = Path(tempfile.mkdtemp(prefix="neuronexp-neff-", dir=parent or None))
    info.values[NEFF_CACHE_VAR] = str(fresh)
    info.values["TORCH_NEURONX_DEBUG_DIR"] = str(fresh / "debug")
    info.saved = {k: os.environ.get(k) for k in info.values}
    os.environ.update(info.values)
    return info


def check_process_debug(device_cfg: NeuronDeviceConfig) -> None:
    """TorchNeuron reads the NEFF cache variable once per process, so the process's first Neuron cell fixes whether
    its NEFFs carry debug names: a later cell of the same process that asks otherwise is refused (ConfigError), not
    run with names it would not get. Recorded as "<pid>:<setting>", so a process forked or started from this one
    (a sweep's cell) starts afresh."""
    wanted = f"neuron.debug_info={device_cfg.debug_info},neuron.nki_debug_info={device_cfg.nki_debug_info}"
    pid, _, first = os.environ.get(PROCESS_DEBUG, "").partition(":")
    if pid == str(os.getpid()) and first != wanted:
        raise ConfigError(
            "neuron.debug_info",
            wanted,
            f"this process's first Neuron cell ran with {first}, and TorchNeuron reads its NEFF cache and the debug "
            "variables once per process: run the cell in a process of its own (a sweep runs each cell or comparison "
            "group in one; from Python, a new interpreter)",
        )
    os.environ[PROCESS_DEBUG] = f"{os.getpid()}:{wanted}"
