"""What a Neuron cell adds to its row once profiling is over: the capture index, Neuron Explorer's tables, device
time from every source (sources.py), memory, and the warnings, all also written to `neuron_profile/manifest.json`."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from torch.autograd import DeviceType

import neuronexp.backends.neuron.sdk as neuron_sdk
from neuronexp.backends.kineto import correlated_us, host_device_time, runtime_rows
from neuronexp.backends.neuron.capture import CaptureIndex, artifact_columns, index_capture, place_framework_trace
from neuronexp.backends.neuron.checks import compile_columns, fallback_ops, hbm_note, memory_columns
from neuronexp.backends.neuron.explorer import ExplorerResult, capture_filters, process_capture
from neuronexp.backends.neuron.runtime import figures
from neuronexp.backends.neuron.sources import EVENTS, EXPLORER, HOST_ROWS, RUNTIME, DeviceTime, Evidence, reconcile
from neuronexp.config import NeuronProfilerConfig, ScheduleConfig, parse_units
from neuronexp.results.files import write_json

EXPLORER_DIR, MANIFEST = "neuron_explorer", "neuron_profile/manifest.json"
_STEP = "ProfilerStep"


@dataclass
class Observed:
    """What key_averages() and its events showed at each cycle end, per profiled step: host ops, the device rows'
    time and kernels, each host op's correlated kernels, and device time torch's stubs put on the host ops."""

    activities: tuple[str, ...] = ()  # the runtime's and driver's Kineto activity types (set apart)
    host_ops: set[str] = field(default_factory=set)
    events_us: list[float] = field(default_factory=list)  # per cycle: PrivateUse1 self time per step
    kernels: list[float] = field(default_factory=list)  # per cycle: PrivateUse1 kernels per step
    ops_us: list[dict[str, float]] = field(default_factory=list)  # per cycle: host op -> its kernels' us per step
    host: list[tuple[float, float]] = field(default_factory=list)  # per cycle: stub us, stub executions per step
    host_ops_us: list[dict[str, float]] = field(default_factory=list)  # per cycle: host op -> stub self us per step

    def record(self, prof: Any) -> None:
        rows, events = prof.key_averages(), prof.events()
        # The profiled (active) steps: one row, "ProfilerStep*", counts the ProfilerStep#n events.
        steps = max(sum(e.count for e in rows if e.key.startswith(_STEP)), 1)
        apart = {key[0] for key in runtime_rows(events, self.activities, False).keys}
        host = [e for e in rows if e.device_type == DeviceType.CPU and not e.key.startswith(_STEP)]
        self.host_ops.update(e.key for e in host if e.key not in apart)
        device = [e for e in rows if e.device_type == DeviceType.PrivateUse1 and e.self_device_time_total > 0]
        self.events_us.append(sum(e.self_device_time_total for e in device) / steps)
        self.kernels.append(sum(e.count for e in device) / steps)
        self.ops_us.append({op: us / steps for op, us in correlated_us(events).items()})
        stub = host_device_time(events, self.activities)
        self.host.append((stub.total_us / steps, stub.executions / steps))
        self.host_ops_us.append({op: us / steps for op, us in stub.per_op.items()})

    def evidence(self, schedule: ScheduleConfig) -> Evidence:
        """The key_averages() part of the evidence: medians over cycles, as the row's own figures are."""
        ev = Evidence(schedule, set(self.host_ops))
        middle = len(self.events_us) // 2
        if any(us > 0 for us in self.events_us):
            ev.events_us, ev.events_kernels = statistics.median(self.events_us), statistics.median(self.kernels)
            ev.events_ops = self.ops_us[middle]
        if any(us > 0 for us, _ in self.host):
            ev.host_us = statistics.median(us for us, _ in self.host)
            ev.host_executions = statistics.median(n for _, n in self.host)
            ev.host_ops_us, ev.host_cycles = self.host_ops_us[middle], list(self.host)
        return ev


def _missing(cfg: NeuronProfilerConfig, explorer: ExplorerResult, state: str) -> dict[str, str]:
    """Why each source gave nothing, in words for the row."""
    processed = explorer.status in ("ok", "no_summary")
    runs = explorer.runtime.executions if explorer.runtime else []
    modes = [getattr(m, "value", str(m)) for m in cfg.modes]
    return {
        EVENTS: f"key_averages() had no device events (correlate_device_time: {state})",
        HOST_ROWS: "no device time on key_averages()' host rows (profiler stubs)",
        RUNTIME: "ProfileMode.RUNTIME not captured"
        if "RUNTIME" not in modes
        else f"Neuron Explorer {explorer.status}"
        if not processed
        else "no nc_exec_running event in the system trace"
        if not runs
        else "none",
        EXPLORER: f"Neuron Explorer {explorer.status}"
        if not processed
        else "no FrameworkInstruction table (layer names need neuron.debug_info=true)"
        if not explorer.has_framework_table
        else "no device time in it",
    }


def device_time(
    observed: Observed, explorer: ExplorerResult, cfg: NeuronProfilerConfig, schedule: ScheduleConfig, state: str
) -> DeviceTime:
    ev = observed.evidence(schedule)
    ev.runtime = figures(explorer.runtime) if explorer.runtime is not None else None
    ev.explorer_ops = dict(explorer.device_ops.framework_us)
    ev.explorer_unnamed_us = explorer.device_ops.unnamed_us
    ev.missing = _missing(cfg, explorer, state)
    return reconcile(ev, state)


class Captured(Protocol):
    """What profile_columns reads of the Neuron backend after its profiled pass (neuron_backend.py, which imports
    this module: named here, not imported, so that the two form no import circle)."""

    profiler_cfg: NeuronProfilerConfig
    api: Any  # neuron_sdk.NeuronApi
    notes: list[str]
    debug: Any  # process_env.DebugInfo
    neff_cache: Any  # process_env.NeffCache
    tnx: Any  # the torch_neuronx module
    observed: Observed
    compile_counts: dict[str, int] | None
    compile_metrics: Any  # compile_metrics.CompileMetrics
    min_warmup_calls: int
    cores: str  # the NeuronCore selection in words (process_env.apply_core_env)
    correlate: str  # what became of correlate_device_time when it was given (neuron_sdk.GIVEN, ...)

    def profile_root(self, out_dir: Path) -> Path: ...

    def config_neff_cache(self) -> str | None: ...


def _explore(backend: Captured, out_dir: Path, index: CaptureIndex, modes: list[str]) -> ExplorerResult:
    cfg = backend.profiler_cfg
    cores = parse_units(cfg.capture_enabled_for_nc) if cfg.capture_enabled_for_nc else None
    # The April-2026 profiler captures its own defaults whatever `modes` says: no filters for it.
    filters = capture_filters(modes, cores) if backend.api.kind == neuron_sdk.DOCUMENTED else []
    single = index.root / index.sessions[0].dir if len(index.sessions) == 1 else None
    root = index.root if index.sessions else None
    return process_capture(root, out_dir / EXPLORER_DIR, cfg.explorer, cfg.explorer_timeout_s, filters, single)


def profile_columns(backend: Captured, out_dir: Path, schedule: ScheduleConfig) -> tuple[dict[str, Any], DeviceTime]:
    """The Neuron columns of the cell row and the device time found, with the manifest written beside the capture."""
    cfg, api, warnings = backend.profiler_cfg, backend.api, list(backend.notes)
    cache = backend.config_neff_cache()
    hint = cache or "no neff_cache_dir (profiler.neuron.copy_neffs=false)"
    modes = [getattr(m, "value", str(m)) for m in cfg.modes]
    index = index_capture(backend.profile_root(out_dir), modes, hint)
    copied = place_framework_trace(index, out_dir / "trace.json")
    if copied and api.kind == neuron_sdk.DOCUMENTED:
        warnings.append("NeuronProfiler.export_trace left no trace.json in the capture; neuronexp copied its own there")
    warnings += index.warnings
    explorer = _explore(backend, out_dir, index, modes)
    warnings += explorer.warnings
    found = device_time(backend.observed, explorer, cfg, schedule, backend.correlate)
    not_run = _neffs_not_run(index, explorer, warnings)
    cols: dict[str, Any] = {
        "neuron_api": api.kind,
        "neuron_api_version": api.version,
        "neuron_cores": backend.cores,
        "neuron_min_warmup_calls": backend.min_warmup_calls,
        "neuron_debug_info": backend.debug.label,
        "neuron_neff_cache_dir": cache,
        "neuron_neff_cache_source": "neuron.debug_info (a fresh folder)"
        if backend.debug.neff_cache
        else backend.neff_cache.source,
        **artifact_columns(index, out_dir),
        "neuron_neffs_not_run": not_run,
        "neuron_explorer_status": explorer.status,
        **explorer.columns,
        "neuron_fallback_ops": fallback_ops(backend.tnx, warnings),
        "neuron_manifest": MANIFEST,
        **found.columns,
        **memory_columns(backend.tnx),
        **compile_columns(backend.compile_counts),
        **backend.compile_metrics.columns(compiled=backend.compile_counts is not None),
    }
    warnings += found.warnings
    hbm_note(backend.tnx, modes, warnings)
    cols["warnings"] = " | ".join(dict.fromkeys(warnings)) or None
    _manifest(backend, out_dir, index, explorer, copied, cols)
    return cols, found


def _neffs_not_run(index: CaptureIndex, explorer: ExplorerResult, warnings: list[str]) -> float:
    """NEFFs in the capture that no execution of it ran (the capture should hold its cell's own only: a shared cache
    copied whole would bring every cell's), counted, and named in `warnings`; NaN where the runtime trace names none."""
    ran = explorer.runtime.neffs if explorer.runtime is not None else set()
    if not ran:
        return math.nan
    extra = sorted({n["hash"] for n in index.neffs} - ran)
    if extra:
        warnings.append(
            f"{len(extra)} NEFF(s) in the capture ran in no execution of it ({', '.join(extra[:3])}): not this cell's "
            "(copied from the shared NEFF cache?); Neuron Explorer reads only those the NTFFs name"
        )
    return float(len(extra))


def _manifest(
    backend: Captured, out_dir: Path, index: CaptureIndex, explorer: ExplorerResult, copied: str | None, cols: dict
) -> None:
    pinned = backend.neff_cache
    manifest = dict(
        index.to_json(),
        api=backend.api.kind,
        torch_neuronx=backend.api.version,
        framework_trace_copied=copied,
        neff_cache={
            "dir": backend.config_neff_cache(),
            "pinned": pinned.path,
            "chosen_by": pinned.source,
            "torch_neuronx_imported_before": pinned.imported_before,
        },
        debug_info={"variables": backend.debug.values},
        explorer={
            "status": explorer.status,
            "command": explorer.command,
            "attempts": explorer.attempts,
            "summary_files": explorer.summary_files,
            "schema": explorer.schema,
            "device_ops": explorer.device_ops.to_json(),
        },
        columns={k: None if isinstance(v, float) and math.isnan(v) else v for k, v in cols.items()},
    )
    backend.profile_root(out_dir).mkdir(parents=True, exist_ok=True)
    write_json(out_dir / MANIFEST, manifest)
