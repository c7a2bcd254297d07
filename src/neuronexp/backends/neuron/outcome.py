"""What a Neuron cell adds to its row once profiling is over: the capture index, Neuron Explorer's tables,
where device time came from, memory, and the warnings, all also written to `neuron_profile/manifest.json`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from torch.autograd import DeviceType

import neuronexp.backends.neuron.api as neuron_api
from neuronexp.backends.neuron.capture import artifact_columns, index_capture, place_framework_trace
from neuronexp.backends.neuron.checks import compile_columns, fallback_ops, hbm_note, memory_columns, not_correlated
from neuronexp.backends.neuron.device_ops import per_step
from neuronexp.backends.neuron.explorer import ExplorerResult, capture_filters, process_capture
from neuronexp.config import NeuronProfilerConfig, parse_units
from neuronexp.results.files import write_json

EXPLORER_DIR, MANIFEST = "neuron_explorer", "neuron_profile/manifest.json"
_STEP = "ProfilerStep"


@dataclass
class Observed:
    """What key_averages() showed at each cycle end, and the per-op device time filled in from Explorer."""

    correlated: list[bool] = field(default_factory=list)
    host_ops: set[str] = field(default_factory=set)
    steps: int = 0  # profiled (active) steps: key_averages() counts the ProfilerStep#n events
    filled: dict[str, float] = field(default_factory=dict)  # op -> device us per step, from Neuron Explorer

    def record(self, prof: Any) -> None:
        # The same test the profiling summary uses for device time: PrivateUse1 rows with self time.
        rows = prof.key_averages()
        self.correlated.append(
            any(e.device_type == DeviceType.PrivateUse1 and e.self_device_time_total > 0 for e in rows)
        )
        self.host_ops.update(e.key for e in rows if e.device_type == DeviceType.CPU and not e.key.startswith(_STEP))
        self.steps += sum(e.count for e in rows if e.key.startswith(_STEP))  # one row, "ProfilerStep*", counts them


def device_time(
    observed: Observed, explorer: ExplorerResult, version: str, state: str, warnings: list[str]
) -> dict[str, Any]:
    """Columns saying where device time per op comes from: key_averages(), Neuron Explorer, or nowhere (NaN)."""
    framework = explorer.device_ops.framework_us
    steps = max(observed.steps, 1)
    matched, unmatched = per_step(framework, observed.host_ops, steps)
    cols: dict[str, Any] = {
        "neuron_explorer_ops_matched": float(len(matched)) if framework else math.nan,
        "neuron_explorer_ops_unmatched_us": sum(unmatched.values()) if framework else math.nan,
        "neuron_explorer_op_steps": float(steps),
    }
    if any(observed.correlated):
        return cols
    if matched:
        observed.filled = matched
        warnings.append(
            f"device time per op from Neuron Explorer's FrameworkInstruction table: the whole capture "
            f"divided by {steps} profiled step(s), since key_averages() had none (correlate_device_time: {state})"
        )
        if unmatched:
            names = ", ".join(sorted(unmatched, key=lambda k: -unmatched[k])[:5])
            warnings.append(
                f"Neuron Explorer ops without a key_averages() row, left out of device_time_us: {names} "
                f"({sum(unmatched.values()):.1f} us per step)"
            )
        return dict(cols, device_time_source="neuron_explorer")
    hint = (
        "; Explorer's per-op table needs layer names: set neuron.debug_info=true"
        if explorer.status == "ok" and not framework
        else ""
    )
    return dict(cols, **not_correlated(version, state, warnings, hint))


class Captured(Protocol):
    """What profile_columns reads of the Neuron backend after its profiled pass (backends/neuron/backend.py, which
    imports this module: named here, not imported, so that the two form no import circle)."""

    profiler_cfg: NeuronProfilerConfig
    api: Any  # neuron_api.NeuronApi
    notes: list[str]
    debug: Any  # process_env.DebugInfo
    tnx: Any  # the torch_neuronx module
    observed: Observed
    compile_counts: dict[str, int] | None
    min_warmup_calls: int
    neffs_from: tuple[str, str] | None  # the NEFF cache the capture's NEFFs are copied from, and how it was chosen

    def profile_root(self, out_dir: Path) -> Path: ...

    def correlate_state(self) -> str: ...


def profile_columns(backend: Captured, out_dir: Path) -> dict[str, Any]:
    """The Neuron columns of the cell row, with the manifest written beside the capture."""
    cfg, api, warnings = backend.profiler_cfg, backend.api, list(backend.notes)
    modes = [getattr(m, "value", str(m)) for m in cfg.modes]
    cache = backend.neffs_from
    hint = f"{cache[0]} ({cache[1]})" if cache else "no neff_cache_dir (profiler.neuron.copy_neffs=false)"
    root = backend.profile_root(out_dir)
    index = index_capture(root, modes, hint)
    copied = place_framework_trace(index, out_dir / "trace.json")
    if copied and api.kind == neuron_api.DOCUMENTED:
        warnings.append("NeuronProfiler.export_trace left no trace.json in the capture; neuronexp copied its own there")
    warnings += index.warnings
    cores = parse_units(cfg.capture_enabled_for_nc) if cfg.capture_enabled_for_nc else None
    # The April-2026 profiler captures its own defaults whatever `modes` says: no filters for it.
    filters = capture_filters(modes, cores) if api.kind == neuron_api.DOCUMENTED else []
    single = root / index.sessions[0].dir if len(index.sessions) == 1 else None
    explorer = process_capture(
        root if index.sessions else None, out_dir / EXPLORER_DIR, cfg.explorer, cfg.explorer_timeout_s, filters, single
    )
    warnings += explorer.warnings
    cols: dict[str, Any] = {
        "neuron_api": api.kind,
        "neuron_api_version": api.version,
        "neuron_correlate_device_time": backend.correlate_state(),
        "neuron_min_warmup_calls": backend.min_warmup_calls,
        "neuron_debug_info": backend.debug.label,
        "neuron_neff_cache_dir": cache[0] if cache else None,
        **artifact_columns(index, out_dir),
        "neuron_explorer_status": explorer.status,
        **explorer.columns,
        "neuron_fallback_ops": fallback_ops(backend.tnx, warnings),
        "neuron_manifest": MANIFEST,
    }
    cols.update(device_time(backend.observed, explorer, api.version, backend.correlate_state(), warnings))
    cols.update(memory_columns(backend.tnx))
    cols.update(compile_columns(backend.compile_counts))
    hbm_note(backend.tnx, modes, warnings)
    cols["warnings"] = " | ".join(dict.fromkeys(warnings)) or None
    manifest = dict(
        index.to_json(),
        api=api.kind,
        torch_neuronx=api.version,
        framework_trace_copied=copied,
        neff_cache={"dir": cache[0], "chosen_by": cache[1]} if cache else None,
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
    root.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / MANIFEST, manifest)
    return cols
