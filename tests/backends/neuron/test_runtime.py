"""The Neuron runtime's system trace read as Neuron Explorer tabulates it (SystemProfileEvents): executions and busy
time from raw nc_exec_running spans, whatever the flow ids say (shared by many executions, one per execution, or
absent), and one logical core's physical-core rows counted once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neuronexp.backends.neuron.explorer_tables import find_profiles
from neuronexp.backends.neuron.runtime import RuntimeTrace, busy_us, executions, figures, read_trace


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


def _write(folder: Path, table: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / f"{table}.parquet")


def test_the_neffs_the_executions_ran_are_read_from_their_attributes(tmp_path: Path) -> None:
    extras = ['{"model_name": "neff_abc"}', '{"model_id": "42"}', "not json", "[1, 2]", "{}", None]
    rows = [
        {"name": "nc_exec_running", "start_ts": i * 20_000, "end_ts": i * 20_000 + 10_000, "extra_attributes_json": x}
        for i, x in enumerate(extras)
    ]
    _write(tmp_path, "SystemProfileEvents", rows)
    trace = read_trace(find_profiles(tmp_path))
    assert trace is not None and trace.neffs == {"abc", "42"} and len(trace.executions) == 6  # every row still runs


def test_the_schemas_time_unit_is_used_and_each_profile_keeps_its_own(tmp_path: Path) -> None:
    # One profile in microseconds (SchemaFields says so), one with no unit given (nanoseconds, the schema's default).
    _write(tmp_path / "a", "SystemProfileEvents", [{"name": "nc_exec_running", "start_ts": 0.0, "end_ts": 10.0}])
    unit = {"table_name": "SystemProfileEvents", "field_name": "start_ts", "field_unit": "microseconds"}
    _write(tmp_path / "a", "SchemaFields", [unit])
    _write(tmp_path / "b", "SystemProfileEvents", [{"name": "nc_exec_running", "start_ts": 50_000, "end_ts": 70_000}])
    trace = read_trace(find_profiles(tmp_path))
    assert trace is not None and trace.executions == [(0.0, 10.0), (50.0, 70.0)]


def test_cores_are_named_as_integers_and_an_unnamed_core_is_not_one(tmp_path: Path) -> None:
    rows = [
        {"name": "nc_exec_running", "start_ts": 0, "end_ts": 10_000, "nc_idx": 2.0},
        {"name": "nc_exec_running", "start_ts": 20_000, "end_ts": 30_000, "nc_idx": None},
    ]
    _write(tmp_path, "SystemProfileEvents", rows)
    trace = read_trace(find_profiles(tmp_path))
    assert trace is not None and trace.cores == {"2"} and len(trace.executions) == 2
    assert figures(trace).cores == 1


def test_only_the_frameworks_profiler_steps_are_steps(tmp_path: Path) -> None:
    runs = [
        {"name": "nc_exec_running", "start_ts": s * 1000, "end_ts": e * 1000, "trace_event_source": "neuron_hw"}
        for s, e in SIX
    ]
    steps = [
        {"name": "ProfilerStep#3", "start_ts": 0, "end_ts": 50_000, "trace_event_source": "framework"},
        {"name": "ProfilerStep#3", "start_ts": 60_000, "end_ts": 200_000, "trace_event_source": "neuron_hw"},
        {"name": "other", "start_ts": 60_000, "end_ts": 200_000, "trace_event_source": "framework"},
    ]
    _write(tmp_path, "SystemProfileEvents", runs + steps)
    trace = read_trace(find_profiles(tmp_path))
    assert trace is not None and trace.steps == [(0.0, 50.0)]
    # Without a source column every row is the framework's: a step span from its name alone.
    _write(
        tmp_path / "plain",
        "SystemProfileEvents",
        [{k: v for k, v in r.items() if k != "trace_event_source"} for r in steps],
    )
    plain = read_trace(find_profiles(tmp_path / "plain"))
    assert plain is not None and plain.steps == [(0.0, 50.0), (60.0, 200.0)]


def test_no_runtime_trace_is_none_not_an_empty_one(tmp_path: Path) -> None:
    _write(tmp_path, "FrameworkInstruction", [{"name": "x"}])
    assert read_trace(find_profiles(tmp_path)) is None
    _write(tmp_path, "SystemProfileEvents", [{"other": 1}])  # the table without its columns
    assert read_trace(find_profiles(tmp_path)) is None


def test_busy_time_counts_overlaps_and_nested_spans_once() -> None:
    assert busy_us([(8.0, 12.0), (0.0, 10.0), (2.0, 5.0)]) == 12.0
    assert busy_us([(0.0, 10.0), (10.0, 15.0)]) == 15.0 and busy_us([]) == 0.0


def test_an_execution_ends_where_the_next_begins_on_the_same_core() -> None:
    rows = [(0.0, 10.0, "0", frozenset({"a"})), (10.0, 20.0, "0", frozenset({"a"}))]
    assert executions(rows) == [(0.0, 10.0), (10.0, 20.0)]


def test_the_profiled_steps_figures_are_per_step_over_every_step_span() -> None:
    # Two profiled steps, 2 executions starting inside each (one exactly at a span's start, one at its end); one
    # execution before them (a warm-up step's).
    runs = [(0.0, 5.0), (10.0, 14.0), (16.0, 20.0), (30.0, 32.0), (40.0, 44.0)]
    out = figures(RuntimeTrace(runs, steps=[(10.0, 20.0), (30.0, 40.0)]))
    assert (out.executions, out.step_executions, out.step_busy_us, out.steps_covered) == (5, 2.0, 7.0, 2.5)
    assert figures(RuntimeTrace([], steps=[(0.0, 1.0)])).step_busy_us is None
    no_steps = figures(RuntimeTrace(runs))
    assert no_steps.step_executions is None and no_steps.steps_covered is None and no_steps.busy_us == 19.0


def test_flow_ids_from_the_file_join_one_logical_cores_rows(tmp_path: Path) -> None:
    # Arrays of strings (the schema) join rows of two cores; string ids are whole ids, not characters.
    def row(s: float, core: int, flow: object) -> dict:
        return {
            "name": "nc_exec_running",
            "start_ts": s * 1000,
            "end_ts": (s + 10) * 1000,
            "nc_idx": core,
            "flow_id": flow,
        }

    _write(tmp_path / "arrays", "SystemProfileEvents", [row(0, 0, ["a"]), row(1, 1, ["a"]), row(2, 2, ["b"])])
    trace = read_trace(find_profiles(tmp_path / "arrays"))
    assert trace is not None and trace.executions == [(0.0, 11.0), (2.0, 12.0)]
    _write(tmp_path / "strings", "SystemProfileEvents", [row(0, 0, "10"), row(1, 1, "12")])
    trace = read_trace(find_profiles(tmp_path / "strings"))
    assert trace is not None and trace.executions == [(0.0, 10.0), (1.0, 11.0)]


def test_an_execution_joined_across_cores_and_flows_keeps_them_all() -> None:
    # Joined by flow a (cores 0 and 1), a row on core 0 still belongs to it; joined by core 0 (flows a, b), a row of
    # flow b on core 1 too.
    by_flow = [(0.0, 10.0, "0", frozenset({"a"})), (1.0, 11.0, "1", frozenset({"a"})), (2.0, 12.0, "0", frozenset())]
    by_core = [
        (0.0, 10.0, "0", frozenset({"a"})),
        (1.0, 11.0, "0", frozenset({"b"})),
        (2.0, 12.0, "1", frozenset({"b"})),
    ]
    assert executions(by_flow) == executions(by_core) == [(0.0, 12.0)]


def test_a_table_without_its_time_columns_is_no_trace(tmp_path: Path) -> None:
    _write(tmp_path, "SystemProfileEvents", [{"name": "nc_exec_running", "start_ts": 0}])
    assert read_trace(find_profiles(tmp_path)) is None


def test_cores_named_by_text_keep_their_names_and_a_step_without_a_source_is_the_frameworks(tmp_path: Path) -> None:
    rows = [
        {"name": "nc_exec_running", "start_ts": 0, "end_ts": 10_000, "nc_idx": "0", "trace_event_source": "neuron_hw"},
        {"name": "ProfilerStep#2", "start_ts": -1, "end_ts": 20_000, "nc_idx": None, "trace_event_source": None},
    ]
    _write(tmp_path, "SystemProfileEvents", rows)
    trace = read_trace(find_profiles(tmp_path))
    assert trace is not None and trace.cores == {"0"} and trace.steps == [(-0.001, 20.0)]
