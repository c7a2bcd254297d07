"""A layer that raises after its first call, in the warm-up or between samples, is its cell's error row: the row
says the layer's own error and when, error.log has the traceback, and the other cells of its group are timed again
without it (issue 32, HR). A single run gets the same row, one line on stderr and exit status 1."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import FAST, run_cli
from neuronexp.cell.group import run_cell, run_cells
from neuronexp.config import CellSpec
from neuronexp.config.schema import (
    BackendName,
    CorrectnessConfig,
    DType,
    InputConfig,
    ProfilerConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.results.files import read_phase

RMSNORM = {"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 64}


def _spec(name: str, module: dict[str, object], warmup: int = 1) -> CellSpec:
    cfg = RunConfig(
        module=module,
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName.cpu,
        correctness=CorrectnessConfig(enabled=False),
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=1, repeat=1)),
        timing=TimingConfig(
            min_seconds=0, warmup=warmup, iters=10, min_iters=10, rounds=2, round_gap_s=0.0, precision=None
        ),
    )
    return CellSpec(config=cfg, run_id=name, experiment="t", module_name=name)


def _dirs(tmp_path: Path, specs: list[CellSpec]) -> list[Path]:
    dirs = [tmp_path / s.run_id for s in specs]
    for d in dirs:
        d.mkdir()
    return dirs


def test_a_layer_raising_in_its_warm_up_is_an_error_row_with_its_own_error(tmp_path: Path) -> None:
    spec = _spec("late", {"_target_": "helpers.layers.RaisesAfter", "calls": 2}, warmup=5)
    (out,) = _dirs(tmp_path, [spec])
    cell = run_cell(spec, out).cells.iloc[0]
    assert cell["status"] == "error"
    assert cell["error"] == "RuntimeError: gave up after 2 calls (during timing)"
    assert (out / "cells.parquet").is_file() and read_phase(out) == "timing"
    log = (out / "error.log").read_text()
    assert log.startswith("Traceback") and "in forward" in log and "gave up after 2 calls" in log


def test_a_layer_raising_between_samples_fails_alone_and_its_group_is_timed_again(tmp_path: Path) -> None:
    # 1 first call + 1 warm-up + 5 samples, then it raises: mid-round, with the other cells' samples under way.
    specs = [
        _spec("a", RMSNORM),
        _spec("late", {"_target_": "helpers.layers.RaisesAfter", "calls": 7}),
        _spec("b", RMSNORM),
    ]
    a, late, b = run_cells(specs, _dirs(tmp_path, specs))
    assert late.cells["error"].iloc[0] == "RuntimeError: gave up after 7 calls (during timing)"
    assert late.samples.empty and "in forward" in (tmp_path / "late" / "error.log").read_text()
    for r in (a, b):
        row = r.cells.iloc[0]
        assert row["status"] == "ok" and row["latency_samples"] == 10  # a whole pass, not the broken one's rest
        assert list(r.samples["pair"]) == list(range(10))
        assert "timed paired with 1 of the 2 other cells of its group (the others failed" in row["warnings"]
    assert a.cells["timing_group"].iloc[0] == b.cells["timing_group"].iloc[0]


def test_a_single_run_whose_layer_raises_in_timing_says_one_line_and_exits_1(tmp_path: Path) -> None:
    # As a layer that raises at its first call: the row printed (one "cell failed" line), no traceback, status 1.
    layer = ["module._target_=helpers.layers.RaisesAfter", "+module.calls=3", "~module.hidden_size", "~module.eps"]
    path = os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])
    result = run_cli(["backend=cpu", *FAST, *layer, "hydra.run.dir=x"], cwd=tmp_path, env={"PYTHONPATH": path})
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    failed = [ln for ln in result.stdout.splitlines() if "failed" in ln]
    assert failed == ["cell failed: RuntimeError: gave up after 3 calls (during timing)"], result.stdout
    assert (tmp_path / "x" / "cells.parquet").is_file() and "Traceback" in (tmp_path / "x" / "error.log").read_text()
