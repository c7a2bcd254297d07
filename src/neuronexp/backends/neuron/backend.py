"""AWS Trainium through TorchNeuron (the `neuron` PrivateUse1 device of torch-neuronx).

Written against the documented API (Neuron Explorer capture guides, SDK 2.31-2.33), with the April-2026
TorchNeuron profiler as a fallback; neuronexp.backends.neuron.api detects which one is installed. Not verified
on hardware here: docs/neuron.md lists what is and is not, scripts/neuron_smoke.py checks it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, NoReturn

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

import neuronexp.backends.neuron.api as neuron_api
from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.backends.neuron.checks import SavedTraceProxy, dynamo_counts, memory_columns, reset_peak_memory
from neuronexp.backends.neuron.outcome import Observed, profile_columns
from neuronexp.backends.neuron.process_env import apply_core_env, apply_debug_info, inspect_conflict
from neuronexp.backends.table import NEURON
from neuronexp.backends.table import NEURON_INSTALL_HINT as INSTALL_HINT
from neuronexp.config import CompileConfig, ConfigError, NeuronDeviceConfig, NeuronProfilerConfig, ScheduleConfig
from neuronexp.config.neuron import check_neuron_compile

PROFILE_DIR = "neuron_profile"
# The Neuron driver's instance type (neuron-sysfs-user-guide; documented values "Inf1, Inf2, Trn1").
SYSFS_INSTANCE_TYPE = "/sys/devices/virtual/neuron_device/neuron0/info/architecture/instance_type"


class NeuronBackend(Backend):
    name = "neuron"
    device_row_type = DeviceType.PrivateUse1
    timing_method = "wallclock+sync"
    device_time_source = "profiler_device_events"
    # The troubleshooting guide: warm up 3+ iterations or the profile shows compilation, not execution.
    min_warmup_calls = 3
    # Every profiled step is a device capture here (expensive): the profiling guide's 2/1/1/1.
    default_schedule = ScheduleConfig(wait=2, warmup=1, active=1, repeat=1)
    # The tensor device. The tests run this class over a stand-in torch_neuronx with CPU tensors by
    # setting it to "cpu" (tests/helpers/neuron_standin); nothing in the package changes it.
    device_type = "neuron"

    def __init__(self, device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> None:
        self.device_cfg, self.profiler_cfg = device_cfg, profiler_cfg
        # Before the import and the first device query or compile: read once, when the runtime starts / compiles.
        started = NEURON.runtime_started()
        self.notes: list[str] = apply_core_env(device_cfg, started)
        self.debug = apply_debug_info(device_cfg, profiler_cfg, started)
        self.notes += self.debug.notes
        try:
            self.tnx = importlib.import_module("torch_neuronx")
        except ImportError:
            self._give_up(BackendUnavailable(INSTALL_HINT))
        version = neuron_api.installed_version(self.tnx)
        problem = neuron_api.family_problem(self.tnx, version, torch.__version__)
        if problem:
            self._give_up(BackendUnavailable(problem))
        if not hasattr(torch, "neuron") or not torch.neuron.is_available():
            self._give_up(BackendUnavailable("torch-neuronx is installed but no NeuronCore is visible to this process"))
        conflict = inspect_conflict()
        if conflict:
            self._give_up(conflict)
        try:
            self.api = neuron_api.detect(self.tnx)
            neuron_api.check_correlate(self.api, profiler_cfg)
        except neuron_api.NeuronApiMissing as exc:
            self._give_up(BackendUnavailable(str(exc)))
        except ConfigError as exc:
            self._give_up(exc)
        self.device = torch.device(self.device_type)
        self._config: Any = None
        self.neffs_from: tuple[str, str] | None = None
        self.observed = Observed()
        self.compile_counts: dict[str, int] | None = None

    def _give_up(self, error: Exception) -> NoReturn:
        self.finish()
        if self.debug.neff_cache and not any(Path(self.debug.neff_cache).iterdir()):
            os.rmdir(self.debug.neff_cache)  # made a moment ago by this backend, and still empty
        raise error

    def prepare(self) -> None:
        clear = getattr(self.tnx, "clear_op_tracking", None)
        if clear is not None:
            clear()  # fallback ops are counted per process; count this cell's only
        reset_peak_memory(self.tnx)

    def finish(self) -> None:
        self.debug.restore()  # the next cell of this process compiles without this one's debug variables

    def check_compile(self, compile_cfg: CompileConfig) -> None:
        if compile_cfg.enabled:
            self.compile_counts = dynamo_counts()  # called just before torch.compile: the cell's own counts start here
        if not compile_cfg.enabled or (compile_cfg.backend or self.compile_backend()) != "neuron":
            return
        check_neuron_compile(compile_cfg)
        if not compile_cfg.fullgraph:
            self.notes.append(
                "compile.fullgraph=false: graph breaks run eagerly; the TorchNeuron torch.compile "
                "reference recommends fullgraph=true on Neuron"
            )

    def device_name(self) -> str:
        try:
            return str(torch.neuron.get_device_properties(0).name)  # type: ignore[attr-defined]  # torch-neuronx adds it
        except Exception:  # not every torch-neuronx version has device properties
            return "neuron"

    # The runtime's own statistic (the neuron branch's memory columns): the cell's peak, not one call's.
    memory_method = "neuron max_memory_allocated since the cell started (its inputs and weights included)"

    def call_memory(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        out = fn()
        return out, memory_columns(self.tnx)["neuron_max_memory_allocated_bytes"]

    def peak_hint(self) -> dict[str, Any]:
        """The instance type (sysfs, as the Neuron driver reports it) and the logical core config: they pick the
        peaks.yaml row of one logical NeuronCore (scope neuroncore)."""
        try:
            instance = Path(SYSFS_INSTANCE_TYPE).read_text().strip() or None
        except OSError:
            instance = None
        lnc = os.environ.get("NEURON_LOGICAL_NC_CONFIG", "").strip()
        return {"instance_type": instance, "lnc": int(lnc) if lnc.isdigit() else None, "scope": "neuroncore"}

    def synchronize(self) -> None:
        # Execution is asynchronous: without this the profiler step closes before the NEFFs ran.
        torch.neuron.synchronize()  # type: ignore[attr-defined]  # registered by torch-neuronx

    def activities(self) -> list[ProfilerActivity]:
        if self.api.kind == neuron_api.LEGACY:
            # The April-2026 NeuronProfiler starts the runtime capture itself; PrivateUse1 would start a
            # second one through the Kineto hook of the same version.
            return [ProfilerActivity.CPU]
        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def compile_backend(self) -> str:
        return "neuron"

    def profile_root(self, out_dir: Path) -> Path:
        return (out_dir / PROFILE_DIR).resolve()

    def neuron_config(self, out_dir: Path) -> Any:
        if self._config is None:
            # Built after the warm-up, so the NEFF cache can be the folder the first compile filled.
            self.neffs_from = neuron_api.neff_cache_dir(self.profiler_cfg) if self.profiler_cfg.copy_neffs else None
            self._config = neuron_api.build_neuron_config(self.api, self.profiler_cfg, str(self.profile_root(out_dir)))
        return self._config

    def profiler_kwargs(self, out_dir: Path) -> dict[str, Any]:
        if self.api.kind == neuron_api.LEGACY:
            return {}
        return {"experimental_config": self.neuron_config(out_dir)}

    def profile_session(self, out_dir: Path) -> AbstractContextManager[Any]:
        if self.api.kind != neuron_api.LEGACY:
            return nullcontext()
        kwargs, notes = neuron_api.legacy_profiler_kwargs(self.profiler_cfg, str(self.profile_root(out_dir)))
        self.notes.extend(notes)
        return self.api.module.NeuronProfiler(**kwargs)

    def trace_handlers(self, out_dir: Path) -> list[Callable[[Any], None]]:
        handlers: list[Callable[[Any], None]] = [self.observed.record]
        if self.api.kind == neuron_api.DOCUMENTED:
            export = self.api.module.NeuronProfiler(self.neuron_config(out_dir)).export_trace
            handlers.insert(0, lambda prof: self._export(export, prof, out_dir))
        return handlers

    def _export(self, export: Callable[[Any], None], prof: Any, out_dir: Path) -> None:
        # neuronexp's own handler has saved this cycle's trace already, and Kineto saves a cycle only
        # once ("Trace is already saved"); a failed export must not cost the cell its measurements.
        try:
            export(SavedTraceProxy(prof, out_dir))
        except Exception as exc:
            self.notes.append(f"NeuronProfiler.export_trace failed ({type(exc).__name__}: {str(exc)[:160]})")

    def device_op_times(self) -> dict[str, float]:
        return dict(self.observed.filled)

    def after_profile(self, out_dir: Path) -> dict[str, Any]:
        return profile_columns(self, out_dir)

    def correlate_state(self) -> str:
        if self.api.kind == neuron_api.LEGACY or self.api.correlate_supported is False:
            return "not_accepted"
        passed = self.profiler_cfg.correlate_device_time
        return "not_passed" if passed is None else str(passed).lower()
