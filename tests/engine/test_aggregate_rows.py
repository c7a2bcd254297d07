"""Aggregation never dies on what a sweep wrote itself: a sweep whose cells wrote no row at all (each refused its
device slot) and one whose every row is a supervisor's error row aggregate, with a baseline or without, and say how
many failed or never ran (issue 32, N116: pandas' `and_` of a str and a bool column ended the sweep instead)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from neuronexp.analysis.baseline import parse_baseline
from neuronexp.cell.rows import write_lost_cell
from neuronexp.config import CellSpec
from neuronexp.config.schema import BackendName, DType, InputConfig, RunConfig
from neuronexp.engine.aggregate import aggregate
from neuronexp.results import JOBS_MANIFEST

MODULES = ("rmsnorm_naive", "rmsnorm_fused")


def _sweep(root: Path, rows: bool) -> Path:
    root.mkdir(exist_ok=True)
    (root / JOBS_MANIFEST).write_text(json.dumps([{"dir": str(i)} for i in range(len(MODULES))]))
    for i, module in enumerate(MODULES):
        job = root / str(i)
        job.mkdir(parents=True)
        (job / "cell.json").write_text(json.dumps({"written_by": "neuronexp", "run_id": f"r{i}"}))
        if rows:
            cfg = RunConfig(
                module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 64},
                input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
                backend=BackendName.cpu,
            )
            spec = CellSpec(
                config=cfg, run_id=f"r{i}", experiment="x", module_name=module, overrides=f"module={module}"
            )
            where = {"placement": None, "placement_cpus": "0", "worker_pid": None, "host": "h"}
            started = datetime.now(timezone.utc).isoformat(timespec="seconds")
            write_lost_cell(spec, job, "PlacementError: cannot open the slot lock /l/cpu-0.lock", "cpu", where, started)
    return root


@pytest.mark.parametrize("baseline", [None, "rmsnorm_naive"])
def test_a_sweep_where_no_cell_wrote_a_row_aggregates_and_says_none_ran(tmp_path: Path, baseline) -> None:
    outcome = aggregate(_sweep(tmp_path, rows=False), parse_baseline(baseline) if baseline else None)
    assert outcome.cells.empty and outcome.missing == ["0", "1"] and outcome.failed == 2
    assert (tmp_path / "results" / "cells.parquet").is_file() and (tmp_path / "results" / "summary.md").is_file()


@pytest.mark.parametrize("baseline", [None, "rmsnorm_naive"])
def test_a_sweep_of_error_rows_only_aggregates_them(tmp_path: Path, baseline) -> None:
    outcome = aggregate(_sweep(tmp_path, rows=True), parse_baseline(baseline) if baseline else None)
    assert list(outcome.cells["status"]) == ["error", "error"] and outcome.failed == 2 and not outcome.missing
    assert outcome.cells["error"].str.contains("cpu-0.lock").all()
    assert outcome.cells["speedup_vs_baseline"].isna().all()
