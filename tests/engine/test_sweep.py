"""Sweeps as a user runs them: the experiment, ad-hoc -m sweeps, failures as data, resume, kill -9."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

import neuronexp
from helpers import FAST, console_script
from helpers.layers import FAILING_LAYER
from neuronexp.analysis.baseline import parse_baseline
from neuronexp.formatting import short_op

QUICK = [a for a in FAST if not a.startswith("input.shape")]

SLOW_LAYER = """
import time, torch
class Slow(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.02)
        return x * 2
"""


def _sweep(cli, sweep_dir: Path, *args: str):
    return cli(*args, *QUICK, f"hydra.sweep.dir={sweep_dir}")


def _assert_no_duplicates(results: neuronexp.Results) -> None:
    assert not results.cells["run_id"].duplicated().any()
    assert not results.samples.duplicated(["run_id", "sample"]).any()
    assert not results.ops.duplicated(["run_id", "cycle", "op", "input_shapes"]).any()


@pytest.mark.slow
def test_rmsnorm_experiment_runs_without_dash_m_and_prints_the_comparison(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    res = _sweep(cli, sweep, "+experiment=rmsnorm_sweep", "input.shape=[1,8,64],[1,32,256]")
    assert res.returncode == 0, res.stderr
    results = neuronexp.load(sweep)
    cells = results.cells
    assert sorted(cells["module"].unique()) == ["rmsnorm_compiled", "rmsnorm_fused", "rmsnorm_naive"]
    assert len(cells) == 6 and (cells["status"] == "ok").all()
    assert (cells["experiment"] == "rmsnorm_sweep").all()
    naive = cells[cells["module"] == "rmsnorm_naive"]
    assert (naive["speedup_vs_baseline"] == 1.0).all()
    assert cells["speedup_vs_baseline"].notna().all()
    for name in ("cells", "ops", "samples"):
        assert (sweep / "results" / f"{name}.parquet").is_file() and (sweep / "results" / f"{name}.csv").is_file()
    assert len(pd.read_csv(sweep / "results" / "cells.csv")) == 6
    summary = (sweep / "results" / "summary.md").read_text()
    assert "| input_shape | rmsnorm_naive | rmsnorm_fused | rmsnorm_compiled |" in summary
    # The terminal table: one row per shape, one column per variant, hotspots included.
    assert "rmsnorm_compiled" in res.stdout and "[1,32,256]" in res.stdout
    # Which op is hottest in a tiny cell varies run to run; each cell's own hotspot must be shown.
    for top_op in cells["top_op"]:
        assert short_op(top_op, 24) in res.stdout
    assert "cell 6/6" in res.stdout + res.stderr
    _assert_no_duplicates(results)
    assert set(results.samples["run_id"]) == set(cells["run_id"])


@pytest.mark.slow  # 10 s on the 2-core VM
def test_adhoc_multirun_and_an_extra_axis(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    res = _sweep(
        cli,
        sweep,
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        "input.shape=[1,8,64],[1,16,64]",
        "input.dtype=float32,bfloat16",
        "baseline=rmsnorm_naive",
    )
    assert res.returncode == 0, res.stderr
    assert "×speedup vs rmsnorm_naive" in res.stdout
    cells = neuronexp.load(sweep).cells
    assert len(cells) == 8
    assert set(zip(cells["dtype"], cells["input_shape"])) == {
        (d, s) for d in ("float32", "bfloat16") for s in ("[1,8,64]", "[1,16,64]")
    }
    fused = cells[cells["module"] == "rmsnorm_fused"]
    assert fused["speedup_vs_baseline"].notna().all()
    # Each fused cell is compared with the naive cell of the same dtype and shape.
    for _, row in fused.iterrows():
        base = cells[
            (cells["module"] == "rmsnorm_naive")
            & (cells["dtype"] == row["dtype"])
            & (cells["input_shape"] == row["input_shape"])
        ]
        assert row["speedup_method"] == "paired" and row["timing_group"] == base["timing_group"].iloc[0]
        assert row["speedup_ci_low"] <= row["speedup_vs_baseline"] <= row["speedup_ci_high"]


@pytest.mark.slow  # 6 s on the 2-core VM
def test_a_failing_cell_is_a_row_and_the_sweep_goes_on(cli, tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING_LAYER)
    sweep = tmp_path / "sweep"
    res = _sweep(
        cli,
        sweep,
        "-m",
        "module._target_=failing.FailsOnWideInputs",
        "~module.hidden_size",
        "~module.eps",
        "input.shape=[1,8,32],[1,8,128],[1,8,64]",
    )
    assert res.returncode == 1, "a failed cell makes the exit code say so"
    cells = neuronexp.load(sweep).cells
    assert list(cells["status"]) == ["ok", "error", "ok"]
    assert cells["error"].iloc[1] == "RuntimeError: unsupported width 128"
    # The row keeps the root cause; the cell's own directory keeps the whole traceback.
    failed = sweep / "1"  # the job directory of the second cell
    trace = (failed / "error.log").read_text()
    assert (
        trace.startswith("Traceback")
        and "failing.py" in trace
        and trace.rstrip().endswith("RuntimeError: unsupported width 128")
    )
    assert not (sweep / "0" / "error.log").exists()
    summary = (sweep / "results" / "summary.md").read_text()
    assert "## Failed cells" in summary and "unsupported width 128" in summary
    assert "1 failed" in res.stdout


@pytest.mark.slow  # 14 s on the 2-core VM
def test_rerun_skips_finished_cells_and_reruns_missing_ones(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    args = ("-m", "module=rmsnorm_naive,rmsnorm_fused", "input.shape=[1,8,64]")
    assert _sweep(cli, sweep, *args).returncode == 0
    first = neuronexp.load(sweep).cells.set_index("run_id")
    # Lose one finished cell, as if its job had died before writing.
    (sweep / "1" / "cells.parquet").unlink()
    res = _sweep(cli, sweep, *args)
    assert res.returncode == 0, res.stderr
    again = neuronexp.load(sweep)
    _assert_no_duplicates(again)
    cells = again.cells.set_index("run_id")
    assert sorted(cells.index) == sorted(first.index)
    assert cells.loc[first.index[0], "status"] == "cached"
    assert cells.loc[first.index[0], "latency_median_us"] == first.loc[first.index[0], "latency_median_us"]
    assert cells.loc[first.index[1], "status"] == "ok"  # rerun, fresh numbers
    # A changed config in the same directory is not mistaken for the cached cell.
    res = _sweep(cli, sweep, *args[:-1], "input.shape=[1,8,32]")
    changed = neuronexp.load(sweep).cells
    assert res.returncode == 0 and (changed["status"] == "ok").all() and (changed["input_shape"] == "[1,8,32]").all()


@pytest.mark.slow  # 17 s on the 2-core VM
def test_a_sweep_killed_midway_leaves_no_corrupt_file_and_completes_on_rerun(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(SLOW_LAYER)
    sweep = tmp_path / "sweep"
    args = [
        console_script("neuronexp"),
        "-m",
        "module._target_=slow.Slow",
        "~module.hidden_size",
        "~module.eps",
        "input.shape=[1,8,16],[1,8,32],[1,8,48],[1,8,64],[1,8,80],[1,8,96]",
        "timing.iters=40",
        "timing.min_iters=40",
        "profiler=quick",
        f"hydra.sweep.dir={sweep}",
    ]
    proc = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 120
    while not (sweep / "1" / "cells.parquet").exists() and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.parent.name for p in sweep.glob("*/cells.parquet"))
    assert 2 <= len(done) < 6, done
    for job in sweep.glob("*/*.parquet"):  # whatever exists is whole
        pd.read_parquet(job)
    rerun = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    results = neuronexp.load(sweep)
    assert len(results.cells) == 6 and results.cells["status"].isin(["ok", "cached"]).all()
    assert (results.cells["status"] == "cached").sum() >= 2
    _assert_no_duplicates(results)
    assert not list(sweep.glob("*/.*.tmp-*"))


def test_a_bad_value_in_the_last_cell_fails_before_the_first_runs(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    res = _sweep(cli, sweep, "-m", "input.shape=[1,8,64],[1,8,0]")
    assert res.returncode == 2
    assert (
        res.stderr.strip()
        == "neuronexp: error: input.shape=[1,8,0]: must be a non-empty list of positive integers, e.g. [1,1024,4096]"
    )
    assert not sweep.exists()


@pytest.mark.slow  # 9 s on the 2-core VM
def test_jobs_run_by_other_processes_aggregate_from_disk(cli, tmp_path: Path) -> None:
    # Two independent processes write into one shared directory (as on other hosts); aggregation
    # reads only what is on disk.
    from neuronexp.engine.aggregate import aggregate

    sweep = tmp_path / "shared"
    for i, module in enumerate(("rmsnorm_naive", "rmsnorm_fused")):
        res = cli(*FAST, f"module={module}", f"hydra.run.dir={sweep / str(i)}")
        assert res.returncode == 0, res.stderr
    outcome = aggregate(sweep, baseline=parse_baseline("rmsnorm_naive"))
    assert outcome.failed == 0 and len(outcome.cells) == 2
    assert json.loads((sweep / "0" / "env.json").read_text())["host"]
    assert outcome.cells.set_index("module").loc["rmsnorm_naive", "speedup_vs_baseline"] == 1.0


@pytest.mark.skipif(importlib.util.find_spec("torch_neuronx") is not None, reason="torch-neuronx present")
def test_an_unavailable_backend_stops_the_sweep_before_it_starts(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    res = _sweep(cli, sweep, "-m", "backend=cpu,neuron", "input.shape=[1,8,64]")
    assert res.returncode == 2
    assert res.stderr.startswith("neuronexp: error: backend=neuron: torch-neuronx is not installed")
    assert not sweep.exists()
