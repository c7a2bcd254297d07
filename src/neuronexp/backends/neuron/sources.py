"""Device time per profiled step from every source a Neuron cell had, the one `device_time_us` uses (by a documented
order), what fills the op table, and a check that the sources agree: a disagreement beyond TOLERANCE is a warning in
the row, never a silent pick (docs/neuron.md, "Device time: sources, order, window")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from neuronexp.backends.neuron.runtime import RuntimeFigures
from neuronexp.backends.neuron.window import Window, capture_window
from neuronexp.config import ScheduleConfig

EVENTS, RUNTIME, EXPLORER, NONE = "profiler_device_events", "neuron_runtime", "neuron_explorer", "none"
# Whole-step figures in the order device_time_us takes them: key_averages()' own device events (the study's table),
# the runtime's busy time (every execution, no per-op split), Explorer's per-op table (named ops only, plus the time
# it could not name).
ORDER = (EVENTS, RUNTIME, EXPLORER)
TOLERANCE = 0.10  # two sources further apart than this (relative to the larger) disagree
COLUMN = {
    EVENTS: "neuron_device_time_events_us",
    RUNTIME: "neuron_device_time_runtime_us",
    EXPLORER: "neuron_device_time_explorer_us",
}


@dataclass
class Evidence:
    """What each source gave. Events: per profiled step (key_averages()); Explorer: over the whole capture."""

    schedule: ScheduleConfig
    host_ops: set[str]
    events_us: float | None = None  # device us per step in key_averages()
    events_kernels: float | None = None  # device kernels per step in key_averages()
    events_ops: dict[str, float] = field(default_factory=dict)  # host op -> its kernels' us per step
    runtime: RuntimeFigures | None = None
    explorer_ops: dict[str, float] = field(default_factory=dict)  # framework op -> us, whole capture
    explorer_unnamed_us: float = 0.0  # FrameworkInstruction time without a framework name, whole capture
    missing: dict[str, str] = field(default_factory=dict)  # source -> why it gave nothing (for the row)


@dataclass
class DeviceTime:
    window: Window
    per_step: dict[str, float] = field(default_factory=dict)
    chosen: str = NONE
    fill_ops: dict[str, float] = field(default_factory=dict)  # op -> us per step, for rows without device time
    step_total: tuple[float, float] | None = None  # (us, executions) per step, when not the op rows' own sum
    columns: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _positive(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value > 0 else None


def _figures(ev: Evidence, window: Window) -> dict[str, float]:
    out: dict[str, float | None] = {EVENTS: _positive(ev.events_us)}
    run = ev.runtime
    if run is not None and run.executions:
        out[RUNTIME] = _positive(run.step_busy_us if run.step_busy_us is not None else run.busy_us / window.steps)
    if ev.explorer_ops or ev.explorer_unnamed_us:
        out[EXPLORER] = _positive((sum(ev.explorer_ops.values()) + ev.explorer_unnamed_us) / window.steps)
    return {k: v for k, v in out.items() if v is not None}


def check(per_step: dict[str, float]) -> tuple[str, list[str]]:
    """`device_time_check` (agree | disagree | one source | no source) and the warning for each disagreeing pair."""
    if len(per_step) < 2:
        return ("one source" if per_step else "no source"), []
    bad = [
        f"device time sources disagree by more than {TOLERANCE:.0%}: {a} {per_step[a]:.1f} us vs {b} "
        f"{per_step[b]:.1f} us per step"
        for a, b in combinations(per_step, 2)
        if abs(per_step[a] - per_step[b]) > TOLERANCE * max(per_step[a], per_step[b])
    ]
    return ("disagree" if bad else "agree"), bad


def reconcile(ev: Evidence, correlate_state: str) -> DeviceTime:
    window = capture_window(ev.schedule, ev.runtime, ev.events_kernels, ev.explorer_ops, ev.events_ops)
    out = DeviceTime(window, _figures(ev, window))
    out.chosen = next((s for s in ORDER if s in out.per_step), NONE)
    matched = {op: us / window.steps for op, us in ev.explorer_ops.items() if op in ev.host_ops}
    if out.chosen != EVENTS:
        out.fill_ops = matched
    if out.chosen == RUNTIME and ev.runtime is not None:
        run = ev.runtime
        out.step_total = (out.per_step[RUNTIME], run.step_executions or run.executions / window.steps)
    elif out.chosen == EXPLORER:
        out.step_total = (out.per_step[EXPLORER], math.nan)
    verdict, disagreements = check(out.per_step)
    out.columns = _columns(ev, out, matched, verdict)
    out.warnings = _notes(ev, out, matched, correlate_state) + [
        f"{d}; device_time_us uses {out.chosen} (the documented order)" for d in disagreements
    ]
    return out


def _columns(ev: Evidence, out: DeviceTime, matched: dict[str, float], verdict: str) -> dict[str, Any]:
    run, steps = ev.runtime, out.window.steps
    named = bool(ev.explorer_ops or ev.explorer_unnamed_us)
    cols: dict[str, Any] = {column: out.per_step.get(source, math.nan) for source, column in COLUMN.items()}
    cols.update(
        device_time_sources=",".join(out.per_step),
        device_time_check=verdict,
        neuron_runtime_executions=float(run.executions) if run is not None else math.nan,
        neuron_runtime_executions_per_step=(run.step_executions or run.executions / steps) if run else math.nan,
        neuron_capture_steps=steps if out.window.verified else math.nan,
        neuron_capture_window=out.window.label,
        neuron_capture_window_method=out.window.method,
        neuron_explorer_ops_matched=float(len(matched)) if named else math.nan,
        neuron_explorer_ops_unmatched_us=sum(us for op, us in ev.explorer_ops.items() if op not in ev.host_ops) / steps
        if named
        else math.nan,
        neuron_explorer_unnamed_us=ev.explorer_unnamed_us / steps if named else math.nan,
    )
    if out.chosen == NONE:
        cols.update(device_time_us=math.nan, device_ops=math.nan, device_time_source=NONE)
    elif out.chosen != EVENTS:
        cols["device_time_source"] = out.chosen
    return cols


def _notes(ev: Evidence, out: DeviceTime, matched: dict[str, float], correlate_state: str) -> list[str]:
    w, notes = out.window, []
    if out.chosen == NONE:
        why = "; ".join(f"{source}: {ev.missing.get(source, 'none')}" for source in ORDER)
        return [f"no device time from any source ({why}): device_time_us and device_ops are NaN"]
    if out.chosen != EVENTS:
        notes.append(
            f"device time per step from {out.chosen} ({out.per_step[out.chosen]:.1f} us): key_averages() had none "
            f"(correlate_device_time: {correlate_state})"
        )
    capture_wide = out.chosen != EVENTS or bool(out.fill_ops)
    active = (ev.schedule.active or 1) * (ev.schedule.repeat or 1)
    if capture_wide and not w.verified:
        wider = ((ev.schedule.warmup or 0) + (ev.schedule.active or 1)) / (ev.schedule.active or 1)
        notes.append(
            f"capture window unverified (no profiled-step spans beside the runtime's executions, no device events in "
            f"key_averages() to count against): capture-wide figures divided by the {active} scheduled active "
            f"step(s); had the capture also covered the warm-up they are {wider:g}x too high"
        )
    elif w.verified and abs(w.steps - active) > 1e-9 and (capture_wide or RUNTIME in out.per_step):
        notes.append(
            f"the runtime capture covered {w.label} ({w.steps:g} steps, found by {w.method}): capture-wide figures "
            f"divided by {w.steps:g}, not by the {active} active step(s)"
        )
    if out.fill_ops:
        notes.append(f"device time per op from Neuron Explorer's FrameworkInstruction table ({len(matched)} ops)")
    unmatched = {op: us / w.steps for op, us in ev.explorer_ops.items() if op not in ev.host_ops}
    if unmatched and out.chosen != EVENTS:
        names = ", ".join(sorted(unmatched, key=lambda k: -unmatched[k])[:5])
        notes.append(
            f"Neuron Explorer ops without a key_averages() row, in no op row: {names} "
            f"({sum(unmatched.values()):.1f} us per step)"
        )
    if ev.explorer_unnamed_us and out.chosen != EVENTS:
        notes.append(
            f"Neuron Explorer named no framework op for {ev.explorer_unnamed_us / w.steps:.1f} us per step of device "
            "time (NEFFs without debug names): in no op row"
        )
    return notes
