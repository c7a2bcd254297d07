"""AWS Trainium through TorchNeuron (the `neuron` PrivateUse1 device of torch-neuronx).

Written against the documented API (Neuron Explorer capture guides, SDK 2.31-2.33), with the April-2026 TorchNeuron
profiler as a fallback; neuronexp.backends.neuron.sdk detects which one is installed. Not verified on hardware here:
docs/neuron.md lists what is and is not, scripts/neuron_smoke.py checks it."""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

import neuronexp.backends.neuron.sdk as neuron_sdk
from neuronexp.backends.base import Backend, BackendUnavailable, DeviceFill
from neuronexp.backends.neuron.capture import latest_framework_trace
from neuronexp.backends.neuron.checks import dynamo_counts, memory_columns, reset_peak_memory
from neuronexp.backends.neuron.compile_metrics import CompileMetrics
from neuronexp.backends.neuron.neff_cache import pin_neff_cache
from neuronexp.backends.neuron.options import check_neuron_compile
from neuronexp.backends.neuron.outcome import Observed, profile_columns
from neuronexp.backends.neuron.process_env import (
    apply_core_env,
    apply_debug_info,
    check_process_debug,
    inspect_conflict,
)
from neuronexp.backends.neuron.sources import DeviceTime
from neuronexp.config import CompileConfig, ConfigError, NeuronDeviceConfig, NeuronProfilerConfig, ScheduleConfig
from neuronexp.results.files import atomic_path

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
    # The runtime's and driver's activities, which PyTorch types CPU: no operators (backends.kineto).
    runtime_activities = ("privateuse1_runtime", "privateuse1_driver")
    # Every profiled step is a device capture here (expensive): the profiling guide's 2/1/1/1.
    default_schedule = ScheduleConfig(wait=2, warmup=1, active=1, repeat=1)
    # The tensor device. The tests run this class over a stand-in torch_neuronx with CPU tensors by
    # setting it to "cpu" (tests/helpers/neuron_standin); nothing in the package changes it.
    device_type = "neuron"

    def __init__(self, device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> None:
        self.device_cfg, self.profiler_cfg = device_cfg, profiler_cfg
        # Before the import and the first device query or compile: read once, when the runtime starts / compiles.
        started = neuron_sdk.runtime_started()
        neuron_sdk.check_installed()
        check_process_debug(device_cfg)  # a debug setting the process's NEFF cache can no longer honour: refused
        self.notes, self.cores = apply_core_env(device_cfg, started)
        self.neff_cache = pin_neff_cache(profiler_cfg)  # before the first compile, and before neuronexp imports it
        self.notes += [self.neff_cache.note] if self.neff_cache.note else []
        self.debug = apply_debug_info(device_cfg, profiler_cfg)
        self.notes += self.debug.notes
        self.tnx, self.api = self._start()
        self.device = torch.device(self.device_type)
        self._config: Any = None
        self._root = Path()  # the capture root, set with the NeuronConfig
        self.correlate = neuron_sdk.NOT_PASSED  # what became of correlate_device_time (set with the NeuronConfig)
        self.observed = Observed(self.runtime_activities)
        self.found: DeviceTime | None = None  # device time from every source, once profiling is over
        self.compile_counts: dict[str, int] | None = None
        self.compile_metrics = CompileMetrics(self.tnx)

    def _start(self) -> tuple[ModuleType, neuron_sdk.NeuronApi]:
        """torch-neuronx, imported under the environment just set, and its profiling API; else the reason raised."""
        try:
            tnx = importlib.import_module("torch_neuronx")
        except ImportError as exc:
            placeholder = neuron_sdk.placeholder_problem(neuron_sdk.installed_version(), str(exc))
            self._give_up(BackendUnavailable(placeholder or neuron_sdk.INSTALL_HINT))
        if problem := neuron_sdk.family_problem(tnx, neuron_sdk.installed_version(tnx), torch.__version__):
            self._give_up(BackendUnavailable(problem))
        if not hasattr(torch, "neuron") or not torch.neuron.is_available():
            self._give_up(BackendUnavailable("torch-neuronx is installed but no NeuronCore is visible to this process"))
        if conflict := inspect_conflict():
            self._give_up(conflict)
        try:
            api = neuron_sdk.detect(tnx)
            neuron_sdk.check_correlate(api, self.profiler_cfg)
        except neuron_sdk.NeuronApiMissing as exc:
            self._give_up(BackendUnavailable(str(exc)))
        except ConfigError as exc:
            self._give_up(exc)
        return tnx, api

    def _give_up(self, error: Exception) -> NoReturn:
        self.finish()
        self.neff_cache.unpin()
        if self.debug.neff_cache and not any(Path(self.debug.neff_cache).iterdir()):
            os.rmdir(self.debug.neff_cache)  # made a moment ago by this backend, and still empty
        raise error

    def prepare(self) -> None:
        if (clear := getattr(self.tnx, "clear_op_tracking", None)) is not None:
            clear()  # fallback ops are counted per process; count this cell's only
        reset_peak_memory(self.tnx)
        self.compile_metrics.start()  # the cell's compiles counted from here: its first call compiles

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
        if self.api.kind == neuron_sdk.LEGACY:
            # The April-2026 NeuronProfiler starts the runtime capture itself; PrivateUse1 would start a
            # second one through the Kineto hook of the same version.
            return [ProfilerActivity.CPU]
        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def compile_backend(self) -> str:
        return "neuron"

    def profile_root(self, out_dir: Path) -> Path:
        return (out_dir / PROFILE_DIR).resolve()

    def config_neff_cache(self) -> str | None:
        """The NEFF cache NeuronConfig names: the one pinned for the process (a debug-info cell's fresh folder)."""
        return (self.debug.neff_cache or self.neff_cache.path) if self.profiler_cfg.copy_neffs else None

    def neuron_config(self, out_dir: Path) -> Any:
        if self._config is None:
            self._root, cache = self.profile_root(out_dir), self.config_neff_cache()
            self._config, self.correlate = neuron_sdk.build_neuron_config(
                self.api, self.profiler_cfg, str(self._root), cache
            )
        return self._config

    def profiler_kwargs(self, out_dir: Path) -> dict[str, Any]:
        return {} if self.api.kind == neuron_sdk.LEGACY else {"experimental_config": self.neuron_config(out_dir)}

    def profile_session(self, out_dir: Path) -> AbstractContextManager[Any]:
        if self.api.kind != neuron_sdk.LEGACY:
            return nullcontext()
        kwargs, notes = neuron_sdk.legacy_profiler_kwargs(self.profiler_cfg, str(self.profile_root(out_dir)))
        self.notes.extend(notes)
        return self.api.module.NeuronProfiler(**kwargs)

    def trace_handlers(self, out_dir: Path) -> list[Callable[[Any], None]]:
        return [self.observed.record]

    def save_trace(self, prof: Any, path: Path | None) -> bool:
        """As the capture guide prescribes, `NeuronProfiler(config).export_trace` saves the cycle's framework trace
        (Kineto saves a trace once): into the capture, beside the runtime's files; `path` gets a copy of it."""
        if self.api.kind != neuron_sdk.DOCUMENTED:
            return super().save_trace(prof, path)
        before = latest_framework_trace(self._root)
        stamp = before.stat().st_mtime_ns if before else -1
        try:
            self.api.module.NeuronProfiler(self._config).export_trace(prof)
        except Exception as exc:  # a failed export must not cost the cell its measurements
            self.notes.append(f"NeuronProfiler.export_trace failed ({type(exc).__name__}: {str(exc)[:160]})")
        landed = latest_framework_trace(self._root)
        if landed is None or (landed == before and landed.stat().st_mtime_ns <= stamp):
            self.notes.append("NeuronProfiler.export_trace wrote no framework trace under the capture root")
            try:
                return super().save_trace(prof, path)  # Kineto has not saved this cycle yet: neuronexp's own
            except RuntimeError:
                return False
        if path is not None:
            with atomic_path(path) as tmp:
                shutil.copyfile(landed, tmp)
        return path is not None

    def device_fill(self) -> DeviceFill | None:
        return self.found.fill if self.found else None

    def after_profile(self, out_dir: Path, schedule: ScheduleConfig | None = None) -> dict[str, Any]:
        columns, self.found = profile_columns(self, out_dir, schedule or self.default_schedule)
        return columns
