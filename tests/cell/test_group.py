"""A comparison group in one process (cell.group.run_cells): every cell its own rows and files, timed together,
and the cases that fall back to timing a cell alone, each said in its row."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import neuronexp.cell.group as group
from neuronexp.cell.group import run_cells, write_cells
from neuronexp.config import CellSpec
from neuronexp.config.schema import (
    BackendName,
    CompileConfig,
    CorrectnessConfig,
    DType,
    InputConfig,
    ProfilerConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.results import Results

RMSNORM = {"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 64}
GREEDY = {"_target_": "helpers.layers.Greedy"}


def _spec(name: str, module: dict[str, object]) -> CellSpec:
    cfg = RunConfig(
        module=module,
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName.cpu,
        correctness=CorrectnessConfig(enabled=False),
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=1, repeat=1)),
        timing=TimingConfig(min_seconds=0, warmup=1, iters=10, min_iters=10, rounds=2, round_gap_s=0.0, precision=None),
    )
    return CellSpec(config=cfg, run_id=name, experiment="group", module_name=name)


def test_a_group_gives_every_cell_its_own_rows_with_pair_indices(tmp_path: Path) -> None:
    specs = [_spec("a", RMSNORM), _spec("b", RMSNORM)]
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    a, b = run_cells(specs, dirs)
    assert a.cells["timing_group"].iloc[0] == b.cells["timing_group"].iloc[0] and a.cells["timing_group"].iloc[0]
    assert list(a.samples["pair"]) == list(b.samples["pair"]) == list(range(10))
    assert all((d / "cells.parquet").is_file() and (d / "trace.json").is_file() for d in dirs)


def test_a_group_timed_to_a_precision_says_in_each_row_how_long_and_why_it_stopped(tmp_path: Path) -> None:
    specs = [_spec("a", RMSNORM), _spec("b", RMSNORM)]
    for spec in specs:  # the default rule, on a budget of 0.5 s a cell
        spec.config.timing = TimingConfig(min_seconds=0, warmup=1, max_seconds=0.5)
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    rows = [r.cells.iloc[0] for r in run_cells(specs, dirs)]
    for row in rows:
        assert row["precision_target"] == 0.10 and row["latency_rounds"] >= 10
        assert row["timing_stop"] in ("precision", "max_seconds") and 0 < row["precision_reached"] < 1
        met = bool(row["precision_reached"] <= 0.10)
        assert bool(row["precision_met"]) is (row["timing_stop"] == "precision") is met
    assert rows[0]["precision_reached"] == rows[1]["precision_reached"]  # one rule for the group


def test_a_cell_process_writes_its_files_without_making_pandas_tables_and_asks_git_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Path] = []
    monkeypatch.setattr(group, "git_state", lambda cwd: asked.append(cwd) or {"git_commit": "c0", "git_dirty": False})

    def refused(*_: object) -> None:
        raise AssertionError("a cell's own process made pandas tables it never reads")

    monkeypatch.setattr(Results, "from_arrow", classmethod(refused))
    specs = [_spec(name, RMSNORM) for name in "abc"]
    dirs = [tmp_path / name for name in "abc"]
    for d in dirs:
        d.mkdir()
    write_cells(specs, dirs)  # what cellprocess.entry.run_cell_process runs
    assert len(asked) == 1  # once for the group's process, not once a cell
    for d in dirs:
        assert json.loads((d / "env.json").read_text())["git_commit"] == "c0"
        assert pq.read_table(d / "cells.parquet").column("status").to_pylist() == ["ok"]


def test_a_cell_that_fails_before_timing_leaves_the_others_timed_and_said(tmp_path: Path) -> None:
    specs = [_spec("ok1", RMSNORM), _spec("bad", {"_target_": "helpers.layers.Broken"}), _spec("ok2", RMSNORM)]
    dirs = [tmp_path / s.run_id for s in specs]
    for d in dirs:
        d.mkdir()
    ok1, bad, ok2 = run_cells(specs, dirs)
    assert bad.cells["status"].iloc[0] == "error" and "this layer is broken" in bad.cells["error"].iloc[0]
    for r in (ok1, ok2):
        assert r.cells["status"].iloc[0] == "ok"
        assert "timed paired with 1 of the 2 other cells of its group" in r.cells["warnings"].iloc[0]
    assert ok1.cells["timing_group"].iloc[0] == ok2.cells["timing_group"].iloc[0]


def test_a_cell_that_does_not_fit_beside_its_group_is_timed_alone_and_says_so(tmp_path: Path) -> None:
    specs = [_spec("first", GREEDY), _spec("second", GREEDY)]
    dirs = [tmp_path / "first", tmp_path / "second"]
    for d in dirs:
        d.mkdir()
    first, second = run_cells(specs, dirs)
    assert first.cells["status"].iloc[0] == second.cells["status"].iloc[0] == "ok"
    assert second.cells["timing_group"].isna().all() and second.samples["pair"].isna().all()
    assert "ran out of memory while the other cells of its group were loaded" in second.cells["warnings"].iloc[0]
    assert (
        not (tmp_path / "second" / "error.log").exists()
        or "MemoryError" in (tmp_path / "second" / "error.log").read_text()
    )


def test_a_group_of_compiled_cells_compiles_each_once_with_one_dynamo_reset(tmp_path: Path) -> None:
    # A Dynamo reset between the cells of a group would drop the earlier cells' compiled code: they would compile
    # again in the middle of the timed pass. Two modules (two graphs), compiled with the eager backend (cheap).
    import torch._dynamo.utils

    compiled = [_spec("naive", RMSNORM), _spec("fused", {**RMSNORM, "_target_": "neuronexp.modules.FusedRMSNorm"})]
    for spec in compiled:
        spec.config.compile = CompileConfig(enabled=True, backend="eager")
    dirs = [tmp_path / s.run_id for s in compiled]
    for d in dirs:
        d.mkdir()
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    naive, fused = run_cells(compiled, dirs)
    assert naive.cells["status"].iloc[0] == fused.cells["status"].iloc[0] == "ok"
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs == 2  # one graph each, compiled once
