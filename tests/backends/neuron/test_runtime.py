"""The Neuron runtime's system trace read as Neuron Explorer tabulates it (SystemProfileEvents): executions and busy
time from raw nc_exec_running spans, whatever the flow ids say (shared by many executions, one per execution, or
absent), and one logical core's physical-core rows counted once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neuronexp.backends.neuron.explorer_tables import find_profiles
from neuronexp.backends.neuron.runtime import busy_us, executions, figures, read_trace


def _rows(spans: list[tuple[float, float]], core: str = "0", flow: str | None = None) -> list:
    return [(s, e, core, frozenset({flow} if flow else ())) for s, e in spans]


SIX = [(i * 20.0, i * 20.0 + 10.0) for i in range(6)]  # six 10 us executions, 10 us apart


@pytest.mark.parametrize("flows", ["shared", "per execution", "absent"])
def test_six_executions_are_six_whatever_their_flow_ids(flows: str) -> None:
    rows = [
        (s, e, "0", frozenset({"f"} if flows == "shared" else {str(i)} if flows == "per execution" else ()))
        for i, (s, e) in enumerate(SIX)
    ]
    found = executions(rows)
    assert found == SIX and busy_us(found) == 60.0  # merged by flow id, the six made one 110 us span


def test_one_logical_cores_physical_cores_are_one_execution() -> None:
    # Two physical cores run each execution together: by flow id (two nc_idx), or reported under one nc_idx.
    by_flow = [(0.0, 10.0, "0", frozenset({"a"})), (1.0, 11.0, "1", frozenset({"a"}))]
    by_core = [(0.0, 10.0, "0", frozenset()), (1.0, 11.0, "0", frozenset())]
    assert executions(by_flow) == executions(by_core) == [(0.0, 11.0)]
    # Two executions on two cores at once are two, and their time counted once where they overlap.
    parallel = [(0.0, 10.0, "0", frozenset({"a"})), (5.0, 15.0, "1", frozenset({"b"}))]
    assert executions(parallel) == [(0.0, 10.0), (5.0, 15.0)] and busy_us(executions(parallel)) == 15.0


def test_the_trace_as_explorer_writes_it(tmp_path: Path) -> None:
    """Nanoseconds as the schema's default unit, flow ids as arrays of strings, the step spans from the framework."""
    rows = [
        {
            "name": "nc_exec_running",
            "start_ts": s * 1000,
            "end_ts": e * 1000,
            "trace_event_source": "neuron_hw",
            "flow_id": ["7"],
            "nc_idx": 3,
        }
        for s, e in SIX
    ] + [
        {
            "name": "ProfilerStep#4",
            "start_ts": -1000,
            "end_ts": 130_000,
            "trace_event_source": "framework",
            "flow_id": None,
            "nc_idx": None,
        }
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "SystemProfileEvents.parquet")
    trace = read_trace(find_profiles(tmp_path))
    assert trace is not None and trace.executions == SIX and trace.cores == {"3"}
    got = figures(trace)
    assert (got.executions, got.busy_us, got.step_busy_us, got.step_executions, got.cores) == (6, 60.0, 60.0, 6.0, 1)
