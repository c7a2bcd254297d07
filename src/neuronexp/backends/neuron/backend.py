"""AWS Trainium through TorchNeuron (the `neuron` PrivateUse1 device of torch-neuronx).

Written against the documented API (Neuron Explorer "capture profiles" guide, SDK 2.31-2.33), with the
April-2026 TorchNeuron profiler as a fallback; neuronexp.backends.neuron.api detects which one is installed. Not
verified on hardware here: docs/neuron.md lists what is and is not, scripts/neuron_smoke.py checks it.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

import neuronexp.backends.neuron.api as neuron_api
from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.config import NeuronDeviceConfig, NeuronProfilerConfig, unit_set
from neuronexp.backends.neuron.capture import artifact_columns, index_capture, place_framework_trace
from neuronexp.backends.neuron.checks import SavedTraceProxy, fallback_ops, hbm_note, not_correlated
from neuronexp.backends.neuron.explorer import process_capture
from neuronexp.results.files import write_json

INSTALL_HINT = (
    "torch-neuronx is not installed; on a Trn2/Trn3 instance install it from the Neuron package repository "
    "(pip install -e .[neuron], see docs/neuron.md)"
)
PROFILE_DIR, EXPLORER_DIR, MANIFEST = "neuron_profile", "neuron_explorer", "neuron_profile/manifest.json"


def _within(current: str | None, wanted: str) -> bool:
    try:
        return bool(current) and unit_set(current) <= unit_set(wanted)  # type: ignore[arg-type]
    except ValueError:
        return False


class NeuronBackend(Backend):
    name = "neuron"
    device_row_type = DeviceType.PrivateUse1
    timing_method = "wallclock+sync"
    device_time_source = "profiler_device_events"
    # The troubleshooting guide: warm up 3+ iterations or the profile shows compilation, not execution.
    min_warmup_calls = 3
    # The tensor device. The tests run this class over a stand-in torch_neuronx with CPU tensors by
    # setting it to "cpu" (tests/helpers/neuron_standin); nothing in the package changes it.
    device_type = "neuron"

    def __init__(self, device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> None:
        self.device_cfg, self.profiler_cfg = device_cfg, profiler_cfg
        self.notes: list[str] = []
        # Before the import and the first device query: the runtime reads these once, when it starts.
        self._apply_core_env()
        try:
            self.tnx = importlib.import_module("torch_neuronx")
        except ImportError:
            raise BackendUnavailable(INSTALL_HINT) from None
        if not hasattr(torch, "neuron") or not torch.neuron.is_available():
            raise BackendUnavailable("torch-neuronx is installed but no NeuronCore is visible to this process")
        try:
            self.api = neuron_api.detect(self.tnx)
        except neuron_api.NeuronApiMissing as exc:
            raise BackendUnavailable(str(exc)) from None
        neuron_api.check_correlate(self.api, profiler_cfg)
        self.device = torch.device(self.device_type)
        self._config: Any = None
        self._correlated: list[bool] = []

    def _apply_core_env(self) -> None:
        # torch-neuronx registers a `torch.backends` entry point, so `import torch` may already have loaded
        # it; the runtime itself starts lazily (first device use), which is what makes this still work.
        loaded = sys.modules.get("torch_neuronx")
        started = bool(getattr(loaded, "is_neuron_runtime_initialized", lambda: False)()) if loaded else False
        for key, env, value in (("neuron.visible_cores", "NEURON_RT_VISIBLE_CORES", self.device_cfg.visible_cores),
                                ("neuron.num_cores", "NEURON_RT_NUM_CORES", self.device_cfg.num_cores)):
            if value is None:
                continue
            value = str(value).replace(" ", "")
            if env == "NEURON_RT_VISIBLE_CORES" and _within(os.environ.get(env), value):
                continue  # already narrowed to part of these cores (a launcher slot, or the user): keep it
            if started and os.environ.get(env) != value:
                self.notes.append(f"{key}={value} not applied: the Neuron runtime already started in this process with "
                                  f"{env}={os.environ.get(env) or 'unset'}; set {env} in the shell instead")
            os.environ[env] = value

    def prepare(self) -> None:
        clear = getattr(self.tnx, "clear_op_tracking", None)
        if clear is not None:
            clear()  # fallback ops are counted per process; count this cell's only

    def device_name(self) -> str:
        try:
            return str(torch.neuron.get_device_properties(0).name)
        except Exception:  # not every torch-neuronx version has device properties
            return "neuron"

    def synchronize(self) -> None:
        # Execution is asynchronous: without this the profiler step closes before the NEFFs ran.
        torch.neuron.synchronize()

    def activities(self) -> list[ProfilerActivity]:
        if self.api.kind == neuron_api.LEGACY:
            # The April-2026 NeuronProfiler starts the runtime capture itself; PrivateUse1 would start a
            # second one through the Kineto hook of the same version.
            return [ProfilerActivity.CPU]
        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def compile_backend(self) -> str:
        return "neuron"

    def _profile_root(self, out_dir: Path) -> Path:
        return (out_dir / PROFILE_DIR).resolve()

    def neuron_config(self, out_dir: Path) -> Any:
        if self._config is None:
            self._config = neuron_api.build_neuron_config(self.api, self.profiler_cfg, str(self._profile_root(out_dir)))
        return self._config

    def profiler_kwargs(self, out_dir: Path) -> dict[str, Any]:
        if self.api.kind == neuron_api.LEGACY:
            return {}
        return {"experimental_config": self.neuron_config(out_dir)}

    def profile_session(self, out_dir: Path) -> AbstractContextManager[Any]:
        if self.api.kind != neuron_api.LEGACY:
            return nullcontext()
        kwargs, notes = neuron_api.legacy_profiler_kwargs(self.profiler_cfg, str(self._profile_root(out_dir)))
        self.notes.extend(notes)
        return self.api.module.NeuronProfiler(**kwargs)

    def trace_handlers(self, out_dir: Path) -> list[Callable[[Any], None]]:
        handlers: list[Callable[[Any], None]] = [self._note_correlation]
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

    def _note_correlation(self, prof: Any) -> None:
        # The same test the profiling summary uses for device time: PrivateUse1 rows with self time.
        rows = prof.key_averages()
        self._correlated.append(any(e.device_type == DeviceType.PrivateUse1 and e.self_device_time_total > 0 for e in rows))

    def after_profile(self, out_dir: Path) -> dict[str, Any]:
        cfg, warnings = self.profiler_cfg, list(self.notes)
        modes = [getattr(m, "value", str(m)) for m in cfg.modes]
        index = index_capture(self._profile_root(out_dir), modes)
        copied = place_framework_trace(index, out_dir / "trace.json")
        if copied and self.api.kind == neuron_api.DOCUMENTED:
            warnings.append("NeuronProfiler.export_trace left no trace.json in the capture; neuronexp copied its own there")
        warnings += index.warnings
        explorer = process_capture(index.upload_dir() if index.sessions else None, out_dir / EXPLORER_DIR,
                                   cfg.explorer, cfg.explorer_timeout_s)
        warnings += explorer.warnings
        cols: dict[str, Any] = {
            "neuron_api": self.api.kind,
            "neuron_api_version": self.api.version,
            "neuron_correlate_device_time": self._correlate_state(),
            "neuron_min_warmup_calls": self.min_warmup_calls,
            **artifact_columns(index, out_dir),
            "neuron_explorer_status": explorer.status,
            **explorer.columns,
            "neuron_fallback_ops": fallback_ops(self.tnx, warnings),
            "neuron_manifest": MANIFEST,
        }
        if not any(self._correlated):
            cols.update(not_correlated(self.api.version, self._correlate_state(), warnings))
        hbm_note(self.tnx, modes, warnings)
        cols["warnings"] = " | ".join(dict.fromkeys(warnings)) or None
        manifest = dict(index.to_json(), api=self.api.kind, torch_neuronx=self.api.version, framework_trace_copied=copied,
                        explorer={"status": explorer.status, "command": explorer.command, "summary_files": explorer.summary_files},
                        columns={k: None if isinstance(v, float) and math.isnan(v) else v for k, v in cols.items()})
        (out_dir / PROFILE_DIR).mkdir(parents=True, exist_ok=True)
        write_json(out_dir / MANIFEST, manifest)
        return cols

    def _correlate_state(self) -> str:
        if self.api.kind == neuron_api.LEGACY or self.api.correlate_supported is False:
            return "not_accepted"
        passed = neuron_api.neuron_config_kwargs(self.api, self.profiler_cfg, "").get("correlate_device_time")
        return "not_passed" if passed is None else str(passed).lower()
