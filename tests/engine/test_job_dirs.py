"""Job directories at their edges (issue 44's survivors): a linked job directory is never free, a directory whose
`cell.json` another tool wrote is never a single run's, sweep.rerun=all reuses nothing, and a launcher's job whose
cell changed since the sweep planned it is an error row, not another cell's result."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST
from neuronexp.engine.job import planned_run_id
from neuronexp.engine.ownership import mark
from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.rerun import assign
from neuronexp.results import JOBS_MANIFEST

QUICK = [*(a for a in FAST if not a.startswith("input.shape")), "backend=cpu", "roofline.probe=off"]


def test_a_job_directory_that_is_a_link_is_not_free(tmp_path: Path) -> None:
    sweep, elsewhere = tmp_path / "s", tmp_path / "elsewhere"
    sweep.mkdir()
    elsewhere.mkdir()
    (sweep / "0").symlink_to(elsewhere)  # empty behind the link: as free as a directory can look
    cells = [PlannedCell(num=0, dir="0", overrides=[], run_id="r0", backend="cpu", label="")]
    assert assign(cells, sweep) == set()
    assert cells[0].dir == "1"


def test_a_sweep_puts_its_cell_beside_a_linked_job_directory_and_writes_nothing_through_it(cli, tmp_path: Path) -> None:
    sweep, elsewhere = tmp_path / "s", tmp_path / "elsewhere"
    sweep.mkdir()
    elsewhere.mkdir()
    mark(sweep, "sweep")
    (sweep / "0").symlink_to(elsewhere)
    res = cli("-m", "module=rmsnorm_fused", "input.shape=[1,8,64]", *QUICK, f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr
    assert not list(elsewhere.iterdir()) and (sweep / "1" / "cells.parquet").is_file()


def test_a_single_run_never_writes_where_another_tool_wrote_a_cell_json(cli, tmp_path: Path) -> None:
    where = tmp_path / "d"
    where.mkdir()
    mark(where, "run")  # neuronexp's run directory, whose cell.json is not neuronexp's
    (where / "cell.json").write_text('{"tool": "someone else"}\n')
    res = cli(*QUICK, "input.shape=[1,8,64]", f"hydra.run.dir={where}")
    assert res.returncode == 2
    assert "already holds the results of another cell (run_id unknown)" in res.stderr
    assert sorted(p.name for p in where.iterdir()) == [".neuronexp-dir.json", "cell.json"]


def test_sweep_rerun_all_runs_a_complete_single_cell_again(tmp_path: Path) -> None:
    args = ["module=rmsnorm_fused", "input.shape=[1,4,8]", *QUICK]
    first = neuronexp.run(*args, out=tmp_path / "r")
    again = neuronexp.run(*args, "sweep.rerun=all", out=tmp_path / "r")
    assert list(again.cells["status"]) == ["ok"] and list(again.cells["run_id"]) == list(first.cells["run_id"])
    assert not again.samples["latency_us"].equals(first.samples["latency_us"])  # measured again


BASIC = ["-m", "hydra/sweeper=basic", "module=rmsnorm_fused", "input.shape=[1,8,64]", *QUICK]


def test_a_launchers_job_whose_cell_changed_since_planning_is_an_error_row(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / JOBS_MANIFEST).write_text(json.dumps([{"dir": "0", "run_id": "planned0"}]))
    res = cli(*BASIC, f"hydra.sweep.dir={sweep}")
    row = neuronexp.load(sweep / "0").cells.iloc[0]
    assert row["status"] == "error" and "changed since the sweep planned it" in row["error"], res.stderr
    assert "planned planned0" in row["error"] and neuronexp.load(sweep / "0").samples.empty  # nothing was measured
    assert row["error"].endswith(
        "planned planned0): its config or its layer's code was edited while the sweep ran; rerun the sweep to plan it "
        "again"
    )
    # The row is labelled as any other: its backend, and when it started (UTC, to the second: docs/columns.md).
    assert row["backend"] == "cpu" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", row["started_at"])


def test_the_run_id_a_sweep_planned_is_read_from_its_jobs_json_by_directory(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    sweep.mkdir()
    assert planned_run_id(sweep, sweep / "0") is None  # no jobs.json: another sweeper's job, nothing to check
    (sweep / JOBS_MANIFEST).write_text(json.dumps([{"dir": "./0", "run_id": "r0"}, {"dir": "a/1", "run_id": "r1"}]))
    assert planned_run_id(sweep, sweep / "0") == "r0" and planned_run_id(sweep, sweep / "a" / "1") == "r1"
    assert planned_run_id(sweep, sweep / "2") is None  # a directory the sweep did not plan: nothing to check
    for damaged in ("{not json", "[1, 2]", '[{"dir": "0"}]'):
        (sweep / JOBS_MANIFEST).write_text(damaged)
        assert planned_run_id(sweep, sweep / "0") is None, damaged


@pytest.mark.parametrize("rerun", ["failed", "all"])
def test_a_launchers_job_reuses_its_complete_cell_unless_rerun_all(cli, tmp_path: Path, rerun: str) -> None:
    sweep = tmp_path / "s"
    assert cli(*BASIC, f"hydra.sweep.dir={sweep}").returncode == 0
    before = neuronexp.load(sweep / "0").samples["latency_us"]
    assert cli(*BASIC, f"sweep.rerun={rerun}", f"hydra.sweep.dir={sweep}").returncode == 0
    after = neuronexp.load(sweep / "0").samples["latency_us"]
    assert after.equals(before) is (rerun == "failed")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPU cores: two device slots")
def test_a_launchers_job_takes_the_device_slot_its_launcher_gives(cli, tmp_path: Path) -> None:
    # hydra/launcher=parallel with 2 devices under another sweeper: each job's cell holds one slot (one core of two
    # here), as neuronexp's sweeper would place it; without its slot it would run on every core of the host.
    sweep, cores = tmp_path / "s", sorted(os.sched_getaffinity(0))
    slots = ["hydra/launcher=parallel", "launcher.devices=2", f"launcher.lock_dir={tmp_path / 'locks'}"]
    res = cli(*BASIC, *slots, f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr
    cell = neuronexp.load(sweep / "0").cells.iloc[0]
    assert cell["status"] == "ok" and str(cell["placement_cpus"]) in {str(c) for c in cores}, cell["placement_cpus"]


def test_a_launchers_job_keeps_the_warnings_of_its_code_checks(cli, tmp_path: Path) -> None:
    (tmp_path / "swallows.py").write_text(
        "import torch\n\n\nclass Swallows(torch.nn.Module):\n"
        "    def __init__(self, **config):\n        super().__init__()\n\n"
        "    def forward(self, x, **kwargs):\n        return x * 2\n"
    )
    res = cli(
        *BASIC, "module._target_=swallows.Swallows", "+input.kwargs.scael=2.0", f"hydra.sweep.dir={tmp_path / 's'}"
    )
    assert res.returncode == 0, res.stderr
    cell = neuronexp.load(tmp_path / "s" / "0").cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert "input.kwargs.scael is not a named parameter of Swallows.forward" in cell["warnings"]
