"""Device time from the Neuron runtime's system trace, as Neuron Explorer tabulates it (SystemProfileEvents): one
`nc_exec_running` event per NEFF execution on a NeuronCore, on the host clock, beside the framework's own events. The
ProfilerStep#N spans among them tell the executions of the profiled steps from those of other steps the capture
covered, which is how the capture window is found (docs/neuron.md, "Device time: sources, order, window")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from neuronexp.backends.neuron.explorer_tables import TO_US, Profile, read_units

EXECUTION = "nc_exec_running"  # the runtime's hardware event: a NEFF running on a NeuronCore
STEP_PREFIX = "ProfilerStep#"  # torch.profiler's step ranges, in the framework trace Explorer joins in
_COLUMNS = ["name", "start_ts", "end_ts", "trace_event_source", "flow_id", "nc_idx"]


@dataclass
class RuntimeTrace:
    """Executions and profiled-step spans, in microseconds of the system trace's clock."""

    executions: list[tuple[float, float]] = field(default_factory=list)
    steps: list[tuple[float, float]] = field(default_factory=list)


def _flow(value: Any, index: int) -> tuple[str, ...]:
    """The execution's flow ids (schema: an array of strings); a row without any is an execution of its own."""
    if value is None or isinstance(value, float):  # null, or NaN once pandas has read it
        return ("row", str(index))
    items = (value,) if isinstance(value, str) else tuple(str(v) for v in value)
    return items or ("row", str(index))


def read_trace(profiles: list[Profile]) -> RuntimeTrace | None:
    """The executions (one per flow: with several physical cores per logical core each runs the same flow, merged
    into its first start and last end) and the ProfilerStep spans; None when Explorer wrote no SystemProfileEvents."""
    frames = []
    for profile in (p for p in profiles if p.has("SystemProfileEvents")):
        factor = TO_US.get(read_units(profile).unit("SystemProfileEvents", "start_ts") or "nanoseconds", 1e-3)
        frames.append(profile.read("SystemProfileEvents", _COLUMNS).assign(_factor=factor))
    frames = [f for f in frames if not f.empty and {"name", "start_ts", "end_ts"} <= set(f.columns)]
    if not frames:
        return None
    df = pd.concat(frames, ignore_index=True)
    start, end = df["start_ts"].astype(float) * df["_factor"], df["end_ts"].astype(float) * df["_factor"]
    runs = df["name"] == EXECUTION
    ids = df.loc[runs, "flow_id"] if "flow_id" in df else pd.Series(None, index=df.index[runs], dtype=object)
    merged: dict[tuple[str, ...], list[float]] = {}
    for key, s, e in zip((_flow(v, i) for i, v in ids.items()), start[runs], end[runs]):
        span = merged.setdefault(key, [s, e])
        span[0], span[1] = min(span[0], s), max(span[1], e)
    source = df["trace_event_source"] if "trace_event_source" in df else pd.Series("framework", index=df.index)
    steps = df["name"].astype(str).str.startswith(STEP_PREFIX) & (source.fillna("framework") == "framework")
    return RuntimeTrace(
        sorted((s, e) for s, e in merged.values()), sorted(zip(start[steps].tolist(), end[steps].tolist()))
    )


def busy_us(spans: list[tuple[float, float]]) -> float:
    """The union of the spans' lengths: time some execution (or op) was running, overlaps counted once."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(spans):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


@dataclass
class RuntimeFigures:
    """What the runtime trace says: executions and busy time over the whole capture, and, when the profiled steps'
    spans are in the trace, per profiled step (executions starting inside a ProfilerStep span)."""

    executions: int
    busy_us: float
    step_busy_us: float | None = None
    step_executions: float | None = None

    @property
    def steps_covered(self) -> float | None:
        """Steps the capture covered: all its executions over those of one profiled step."""
        return self.executions / self.step_executions if self.step_executions else None


def figures(trace: RuntimeTrace) -> RuntimeFigures:
    out = RuntimeFigures(len(trace.executions), busy_us(trace.executions))
    if not trace.steps or not trace.executions:
        return out
    inside = [run for run in trace.executions if any(s <= run[0] <= e for s, e in trace.steps)]
    if inside:  # none inside: the step spans and the executions are not on one clock; counted, not used
        out.step_busy_us = busy_us(inside) / len(trace.steps)
        out.step_executions = len(inside) / len(trace.steps)
    return out
