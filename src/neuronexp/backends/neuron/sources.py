"""Device time per profiled step from every route a Neuron cell's time can take, the one `device_time_us` uses (by a
documented order), what fills the op table (or that nothing split the time per op: NaN, said in the row), and a
check that the sources agree: a disagreement beyond TOLERANCE is a warning in the row, never a silent pick
(docs/neuron.md, "Device time: sources, order, window")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from neuronexp.backends.base import DeviceFill
from neuronexp.backends.neuron.runtime import RuntimeFigures
from neuronexp.backends.neuron.sdk import GIVEN, IGNORED, TAKEN
from neuronexp.backends.neuron.window import Window, capture_window
from neuronexp.config import ScheduleConfig

EVENTS, HOST_ROWS, RUNTIME, EXPLORER, NONE = (
    "profiler_device_events",
    "profiler_host_rows",
    "neuron_runtime",
    "neuron_explorer",
    "none",
)
# Whole-step figures in the order device_time_us takes them: key_averages()' own device events (the study's table),
# device time torch attached to the host ops themselves (profiler stubs), the runtime's busy time (every execution,
# no per-op split), Explorer's per-op table (named ops only, plus the time it could not name).
ORDER = (EVENTS, HOST_ROWS, RUNTIME, EXPLORER)
PROFILER = (EVENTS, HOST_ROWS)  # the routes through the profiler itself: what correlate_device_time is for
TOLERANCE = 0.10  # two sources further apart than this (relative to the larger) disagree
COLUMN = {
    EVENTS: "neuron_device_time_events_us",
    HOST_ROWS: "neuron_device_time_host_rows_us",
    RUNTIME: "neuron_device_time_runtime_us",
    EXPLORER: "neuron_device_time_explorer_us",
}


@dataclass
class Evidence:
    """What each source gave: the profiler's routes per profiled step (medians over cycles, and per cycle for the
    op table), Explorer's and the runtime's over the whole capture."""

    schedule: ScheduleConfig
    host_ops: set[str]
    events_us: float | None = None  # device us per step in key_averages()' device rows
    events_kernels: float | None = None  # device kernels per step there
    events_ops: dict[str, float] = field(default_factory=dict)  # host op -> its correlated kernels' us per step
    host_us: float | None = None  # device us per step torch's profiler stubs put on the host ops
    host_executions: float | None = None  # host ops per step holding such time (none inside them)
    host_ops_us: dict[str, float] = field(default_factory=dict)  # host op -> its stub self time per step
    host_cycles: list[tuple[float, float]] = field(default_factory=list)  # per cycle: (host us, executions) per step
    runtime: RuntimeFigures | None = None
    explorer_ops: dict[str, float] = field(default_factory=dict)  # framework op -> us, whole capture
    explorer_unnamed_us: float = 0.0  # FrameworkInstruction time without a framework name, whole capture
    missing: dict[str, str] = field(default_factory=dict)  # source -> why it gave nothing (for the row)


@dataclass
class DeviceTime:
    window: Window
    per_step: dict[str, float] = field(default_factory=dict)
    chosen: str = NONE
    per_op: str = NONE  # the source of the op table's per-op device time
    fill: DeviceFill | None = None  # what the cell puts into its op rows and steps (None: key_averages()' own)
    columns: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _positive(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value > 0 else None


def _figures(ev: Evidence, window: Window) -> dict[str, float]:
    out: dict[str, float | None] = {EVENTS: _positive(ev.events_us), HOST_ROWS: _positive(ev.host_us)}
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


def correlate_outcome(given: str, per_step: dict[str, float]) -> str:
    """What became of correlate_device_time: given and device time appeared through the profiler (TAKEN), given and
    none did (IGNORED: e.g. a NeuronConfig(**kwargs) that drops unknown keys), else as it was given."""
    if given != GIVEN:
        return given
    return TAKEN if any(source in per_step for source in PROFILER) else IGNORED


def _fill(ev: Evidence, out: DeviceTime, matched: dict[str, float]) -> DeviceFill | None:
    """The cell's op rows and steps for the chosen source: key_averages()' own device rows stand (EVENTS); host rows
    keep their stub time and the step is theirs (HOST_ROWS); else Explorer's matched ops, every other op NaN."""
    if out.chosen == EVENTS:
        return None
    if out.chosen == HOST_ROWS:
        return DeviceFill(per_op=None, step=ev.host_cycles or [(out.per_step[HOST_ROWS], math.nan)])
    run, steps = ev.runtime, out.window.steps
    step = {
        RUNTIME: (out.per_step.get(RUNTIME, math.nan), (run.step_executions or run.executions / steps) if run else 0),
        EXPLORER: (out.per_step.get(EXPLORER, math.nan), math.nan),
    }.get(out.chosen, (math.nan, math.nan))
    return DeviceFill(per_op=[matched], step=[step])


def reconcile(ev: Evidence, correlate_state: str) -> DeviceTime:
    kernels = ev.events_kernels or ev.host_executions
    window = capture_window(ev.schedule, ev.runtime, kernels, ev.explorer_ops, ev.events_ops or ev.host_ops_us)
    out = DeviceTime(window, _figures(ev, window))
    out.chosen = next((s for s in ORDER if s in out.per_step), NONE)
    matched = {op: us / window.steps for op, us in ev.explorer_ops.items() if op in ev.host_ops}
    out.per_op = out.chosen if out.chosen in PROFILER else EXPLORER if matched else NONE
    out.fill = _fill(ev, out, matched)
    verdict, disagreements = check(out.per_step)
    state = correlate_outcome(correlate_state, out.per_step)
    out.columns = _columns(ev, out, matched, verdict) | {"neuron_correlate_device_time": state}
    out.warnings = _notes(ev, out, matched, state) + [
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
        neuron_per_op_source=out.per_op,
        neuron_sources_missing="; ".join(f"{s}: {ev.missing.get(s, 'none')}" for s in ORDER if s not in out.per_step),
        neuron_runtime_executions=float(run.executions) if run is not None else math.nan,
        neuron_runtime_executions_per_step=(run.step_executions or run.executions / steps) if run else math.nan,
        neuron_runtime_cores=float(run.cores) if run is not None and run.executions else math.nan,
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


def per_op_missing(ev: Evidence) -> str:
    """Why no source split the device time per op, in words, with what to do."""
    why = ev.missing.get(EXPLORER, "none")
    advice = "enable neuron.debug_info for Explorer's per-op names" if "debug_info" in why else "see neuron_explorer"
    return (
        f"per-op split missing: key_averages() had no device time per op and Neuron Explorer gave none ({why}); "
        f"the op table's device columns are NaN ({advice})"
    )


def _notes(ev: Evidence, out: DeviceTime, matched: dict[str, float], correlate_state: str) -> list[str]:
    w, notes = out.window, []
    if out.chosen == NONE:
        why = "; ".join(f"{source}: {ev.missing.get(source, 'none')}" for source in ORDER)
        return [f"no device time from any source ({why}): device_time_us and device_ops are NaN", per_op_missing(ev)]
    if out.chosen not in PROFILER:
        notes.append(
            f"device time per step from {out.chosen} ({out.per_step[out.chosen]:.1f} us): key_averages() had none "
            f"(correlate_device_time: {correlate_state})"
        )
    if out.per_op == NONE:
        notes.append(per_op_missing(ev))
    notes += _window_notes(ev, out)
    if out.per_op == EXPLORER:
        notes.append(f"device time per op from Neuron Explorer's FrameworkInstruction table ({len(matched)} ops)")
    unmatched = {op: us / w.steps for op, us in ev.explorer_ops.items() if op not in ev.host_ops}
    if unmatched and out.chosen not in PROFILER:
        names = ", ".join(sorted(unmatched, key=lambda k: -unmatched[k])[:5])
        notes.append(
            f"Neuron Explorer ops without a key_averages() row, in no op row: {names} "
            f"({sum(unmatched.values()):.1f} us per step)"
        )
    if ev.explorer_unnamed_us and out.chosen not in PROFILER:
        notes.append(
            f"Neuron Explorer named no framework op for {ev.explorer_unnamed_us / w.steps:.1f} us per step of device "
            "time (NEFFs without debug names): in no op row"
        )
    return notes


def _window_notes(ev: Evidence, out: DeviceTime) -> list[str]:
    w = out.window
    capture_wide = out.chosen not in PROFILER or out.per_op == EXPLORER
    active = (ev.schedule.active or 1) * (ev.schedule.repeat or 1)
    if capture_wide and not w.verified:
        wider = ((ev.schedule.warmup or 0) + (ev.schedule.active or 1)) / (ev.schedule.active or 1)
        warm_up = f"; had the capture also covered the warm-up they are {wider:g}x too high" if wider > 1 else ""
        return [
            f"capture window unverified (no profiled-step spans beside the runtime's executions, no device events in "
            f"key_averages() to count against): capture-wide figures divided by the {active} scheduled active "
            f"step(s){warm_up}"
        ]
    if w.verified and abs(w.steps - active) > 1e-9 and (capture_wide or RUNTIME in out.per_step):
        return [
            f"the runtime capture covered {w.label} ({w.steps:g} steps, found by {w.method}): capture-wide figures "
            f"divided by {w.steps:g}, not by the {active} active step(s)"
        ]
    return []
