"""Device time from the Neuron runtime's system trace, as Neuron Explorer tabulates it (SystemProfileEvents): one
`nc_exec_running` event per NEFF execution on a NeuronCore, on the host clock, beside the framework's own events. The
ProfilerStep#N spans among them tell the executions of the profiled steps from those of other steps the capture
covered, which is how the capture window is found (docs/neuron.md, "Device time: sources, order, window")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from neuronexp.backends.neuron.explorer_tables import TO_US, Profile, read_units

EXECUTION = "nc_exec_running"  # the runtime's hardware event: a NEFF running on a NeuronCore
STEP_PREFIX = "ProfilerStep#"  # torch.profiler's step ranges, in the framework trace Explorer joins in
_COLUMNS = ["name", "start_ts", "end_ts", "trace_event_source", "flow_id", "nc_idx", "extra_attributes_json"]


@dataclass
class RuntimeTrace:
    """Executions and profiled-step spans, in microseconds of the system trace's clock; `cores`: the NeuronCores
    (nc_idx) that ran an execution."""

    executions: list[tuple[float, float]] = field(default_factory=list)
    steps: list[tuple[float, float]] = field(default_factory=list)
    cores: set[str] = field(default_factory=set)
    neffs: set[str] = field(default_factory=set)  # the NEFFs (hashes) the executions ran, where the trace names them


def _neff(extra: Any) -> str | None:
    """The NEFF an execution ran, from its extra attributes ({"model_name": "neff_<hash>"}, or "model_id"); None
    where they name none."""
    try:
        attrs = json.loads(extra) if isinstance(extra, str) else {}
    except ValueError:
        return None
    name = str(attrs.get("model_name") or attrs.get("model_id") or "") if isinstance(attrs, dict) else ""
    return name.removeprefix("neff_") or None


def _flows(value: Any) -> frozenset[str]:
    """The row's flow ids (schema: an array of strings); none for a null (NaN once pandas has read it)."""
    if value is None or isinstance(value, float):
        return frozenset()
    return frozenset((value,) if isinstance(value, str) else (str(v) for v in value))


@dataclass
class _Execution:
    start: float
    end: float
    cores: set[str]
    flows: set[str]


def executions(rows: list[tuple[float, float, str, frozenset[str]]]) -> list[tuple[float, float]]:
    """(start, end, core, flow ids) rows -> executions. Rows are one execution only when they overlap in time and share
    a core (several physical cores reported as one) or a flow id (one logical core's physical cores): a flow id may
    be shared by many executions one after another, so it never joins rows apart in time. An execution's span is
    its rows' union (they overlap), so the executions' union is the rows' own."""
    out: list[_Execution] = []
    running: list[_Execution] = []  # those a later row can still overlap (rows come in start order)
    for start, end, core, flows in sorted(rows):
        running = [x for x in running if x.end > start]
        hit = next((x for x in running if core in x.cores or flows & x.flows), None)
        if hit is None:
            out.append(hit := _Execution(start, end, {core}, set(flows)))
            running.append(hit)
        else:
            hit.end, hit.cores, hit.flows = max(hit.end, end), hit.cores | {core}, hit.flows | flows
    return [(x.start, x.end) for x in out]


def read_trace(profiles: list[Profile]) -> RuntimeTrace | None:
    """The executions (executions() above) and the ProfilerStep spans; None when Explorer wrote no
    SystemProfileEvents."""
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
    cores = df.loc[runs, "nc_idx"] if "nc_idx" in df else pd.Series(None, index=df.index[runs], dtype=object)
    core_names = ["?" if pd.isna(c) else str(int(c)) if isinstance(c, float) else str(c) for c in cores]
    rows = list(zip(start[runs], end[runs], core_names, map(_flows, ids)))
    extras = df.loc[runs, "extra_attributes_json"] if "extra_attributes_json" in df else []
    neffs = {n for n in map(_neff, extras) if n}
    source = df["trace_event_source"] if "trace_event_source" in df else pd.Series("framework", index=df.index)
    steps = df["name"].astype(str).str.startswith(STEP_PREFIX) & (source.fillna("framework") == "framework")
    spans = sorted(zip(start[steps].tolist(), end[steps].tolist()))
    return RuntimeTrace(executions(rows), spans, set(core_names) - {"?"}, neffs)


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
    cores: int = 0  # NeuronCores with an execution in the capture

    @property
    def steps_covered(self) -> float | None:
        """Steps the capture covered: all its executions over those of one profiled step."""
        return self.executions / self.step_executions if self.step_executions else None


def figures(trace: RuntimeTrace) -> RuntimeFigures:
    out = RuntimeFigures(len(trace.executions), busy_us(trace.executions), cores=len(trace.cores))
    if not trace.steps or not trace.executions:
        return out
    inside = [run for run in trace.executions if any(s <= run[0] <= e for s, e in trace.steps)]
    if inside:  # none inside: the step spans and the executions are not on one clock; counted, not used
        out.step_busy_us = busy_us(inside) / len(trace.steps)
        out.step_executions = len(inside) / len(trace.steps)
    return out
