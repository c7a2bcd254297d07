"""A user's Hydra callbacks (hydra.callbacks) fire as Hydra's own run and launchers fire them: a single run gets
on_run_start/end around on_job_start/end, each cell of a local sweep its on_job_start/end, with the cell's composed
config and a JobReturn holding its row (FAILED with its error for a failed cell). Every invocation goes through
Hydra's multirun (cli.main), so Hydra's on_multirun_start/end come around a single run too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from helpers import FAST, run_cli
from helpers.layers import FAILING_LAYER
from helpers.row_writer import RowWriter
from neuronexp.engine.executor import Executor
from neuronexp.engine.grouping import Unit
from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.planned_invocation import Invocation
from neuronexp.engine.sweeper import _run
from neuronexp.engine.user_callbacks import UserCallbacks
from neuronexp.results import arrow_table
from neuronexp.results.files import write_job_tables


def _row(job: Path, **row: Any) -> None:
    job.mkdir(parents=True)
    tables = {"cells": arrow_table("cells", [{"run_id": job.name, **row}])}
    write_job_tables(job, {**tables, "ops": arrow_table("ops", []), "samples": arrow_table("samples", [])})


def _callbacks(log: Path, **more: dict[str, Any]) -> DictConfig:
    rec = {f"rec_{n}": {"_target_": "helpers.callbacks.Detailed", "path": str(log), "name": n} for n in ("a", "b")}
    return OmegaConf.create({"hydra": {"callbacks": {**rec, **more}}})


def _cell(num: int, composed: DictConfig | None) -> PlannedCell:
    return PlannedCell(
        num=num, dir=str(num), overrides=[f"x={num}"], run_id=f"r{num}", backend="cpu", label="", composed=composed
    )


def test_job_hooks_get_the_cells_config_and_a_job_return_as_hydras_run_job_gives_them(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    callbacks = UserCallbacks(_callbacks(log, quiet={"_target_": "helpers.callbacks.OnlyMultirun"}))
    assert len(callbacks.callbacks) == 2  # the one with no run or job hook: nothing to call it for
    named = OmegaConf.create({"hydra": {"job": {"name": "mine"}}, "x": 0})
    cells = [_cell(0, named), _cell(1, OmegaConf.create({"x": 1})), _cell(2, OmegaConf.create({"x": 2}))]
    _row(tmp_path / "0", status="ok", latency_median_us=12.5)
    _row(tmp_path / "1", status="error", error="ValueError: boom")
    for cell in cells:  # cell 2 leaves no row (its process died)
        callbacks.job_start(cell)
    returns = [callbacks.job_end(cell, tmp_path / cell.dir) for cell in cells]
    assert callbacks.job_end(cells[0], tmp_path / "0") is None  # each cell's job ends once
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    # Start hooks in the callbacks' order, end hooks in reverse, as Hydra calls them.
    assert [(n["hook"], n["by"], n["config"]["x"]) for n in notes] == [
        *((h, by, x) for x in (0, 1, 2) for h, by in (("job_start", "a"), ("job_start", "b"))),
        *((h, by, x) for x in (0, 1, 2) for h, by in (("job_end", "b"), ("job_end", "a"))),
    ]
    ok, failed, lost = (n for n in notes if n["hook"] == "job_end" and n["by"] == "a")
    assert ok["status"] == "COMPLETED" and ok["value"]["status"] == "ok" and ok["value"]["latency_median_us"] == 12.5
    assert (ok["task"], ok["overrides"], ok["dir"]) == ("mine", ["x=0"], str(tmp_path / "0"))
    assert ok["hydra"] == {"job": {"name": "mine"}} and ok["same_cfg"] and failed["hydra"] is None
    assert failed["status"] == "FAILED" and failed["value"] == "RuntimeError('ValueError: boom')"
    assert lost["status"] == "FAILED" and lost["value"] == "RuntimeError('no result')" and lost["task"] == "neuronexp"
    assert [r.status.name for r in returns if r is not None] == ["COMPLETED", "FAILED", "FAILED"]


def test_run_hooks_come_around_a_single_run_and_a_raising_callback_is_only_warned_about(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    callbacks = UserCallbacks(_callbacks(log, bad={"_target_": "helpers.callbacks.Raises"}))
    callbacks.run_start(None)  # no config (a sweep): no run hooks
    callbacks.run_end(None, None)
    config = OmegaConf.create({"x": 7})
    callbacks.run_start(config)
    other = OmegaConf.create({"x": 8})
    with pytest.warns(UserWarning, match=r"^Callback Raises.on_job_start raised RuntimeError: disk full$"):
        callbacks.job_start(_cell(0, None), config=other)  # the config given wins over the cell's (none here)
    callbacks.job_start(_cell(1, None))  # neither: nothing to give the hooks
    callbacks.run_end(config, callbacks.job_end(_cell(0, None), tmp_path / "0"))
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(n["hook"], n["by"], n["config"]["x"]) for n in notes] == [
        ("run_start", "a", 7), ("run_start", "b", 7), ("job_start", "a", 8), ("job_start", "b", 8),
        ("job_end", "b", 8), ("job_end", "a", 8), ("run_end", "b", 7), ("run_end", "a", 7),
    ]  # fmt: skip
    assert notes[-1]["status"] == "FAILED" and notes[-1]["value"] == "RuntimeError('no result')"
    # And with the arguments Hydra's run_job names (its primary config is neuronexp's `config`).
    run, job = {"config_name": "config"}, {"task_function": None}
    assert [n["given"] for n in notes] == [run, run, job, job, {}, {}, run, run]


def test_without_a_run_or_job_hook_nothing_is_called_or_kept(tmp_path: Path) -> None:
    quiet = UserCallbacks(
        OmegaConf.create({"hydra": {"callbacks": {"q": {"_target_": "helpers.callbacks.OnlyMultirun"}}}})
    )
    for callbacks in (quiet, UserCallbacks(None)):
        assert not callbacks
        callbacks.job_start(_cell(0, OmegaConf.create({"x": 0})))
        assert callbacks.configs == {} and callbacks.job_end(_cell(0, None), tmp_path) is None


def _recorded(tmp_path: Path, *args: str) -> tuple[list[list[str]], int]:
    log = tmp_path / "calls.txt"
    hooks = ["+hydra.callbacks.rec._target_=helpers.callbacks.Recorder", f"+hydra.callbacks.rec.path={log}"]
    fast = [a for a in FAST if not (a.startswith("input.shape=") and any(b.startswith("input.shape=") for b in args))]
    res = run_cli([*args, *fast, "roofline.probe=off", *hooks], cwd=tmp_path)
    return [line.split() for line in log.read_text().splitlines()], res.returncode


def test_a_single_run_fires_the_run_and_job_callbacks(tmp_path: Path) -> None:
    calls, status = _recorded(tmp_path, "module=rmsnorm_fused", "hydra.run.dir=run")
    assert status == 0
    assert [c[0] for c in calls] == ["multirun_start", "run_start", "job_start", "job_end", "run_end", "multirun_end"]
    assert calls[1] == ["run_start", "[1,8,64]"] and calls[2] == ["job_start", "FusedRMSNorm", "[1,8,64]"]
    assert calls[3] == ["job_end", "FusedRMSNorm", "COMPLETED", "run", "ok"] and calls[4] == ["run_end", "COMPLETED"]


def test_each_cell_of_a_local_sweep_fires_the_job_callbacks(tmp_path: Path) -> None:
    shapes = "input.shape=[1,8,64],[1,8,128]"
    calls, status = _recorded(tmp_path, "-m", "module=rmsnorm_naive,rmsnorm_fused", shapes, "hydra.sweep.dir=s")
    assert status == 0 and calls[0] == ["multirun_start"] and calls[-1] == ["multirun_end"]
    started = sorted(" ".join(c[1:]) for c in calls if c[0] == "job_start")
    assert started == sorted(f"{m}RMSNorm [1,8,{w}]" for m in ("Naive", "Fused") for w in (64, 128))
    ended = [c for c in calls if c[0] == "job_end"]
    assert len(ended) == 4 and all(c[2] == "COMPLETED" and c[4] == "ok" for c in ended)
    assert sorted(c[3] for c in ended) == ["0", "1", "2", "3"]  # each in its own job directory
    assert not any(c[0].startswith("run_") for c in calls)


def test_a_failed_cell_ends_its_job_failed_with_its_error(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING_LAYER)
    calls, status = _recorded(
        tmp_path,
        "-m",
        "module._target_=failing.FailsOnWideInputs",
        "~module.hidden_size",
        "~module.eps",
        "input.shape=[1,8,32],[1,8,128]",
        "hydra.sweep.dir=s",
    )
    assert status == 1
    ended = {c[3]: c for c in calls if c[0] == "job_end"}
    assert ended["0"][2] == "COMPLETED" and ended["0"][4] == "ok"
    assert ended["1"][2] == "FAILED" and "unsupported width 128" in " ".join(ended["1"][4:])


class _OnOtherMachines(Executor):
    """A stand-in for the Slurm executor: its cells run elsewhere (no `start` here), their rows appearing in the sweep
    directory while it waits, as a Slurm task's do."""

    remote = True

    def __init__(self, writer: RowWriter) -> None:
        self.writer = writer

    def run(self, units: list[Unit], start: Any, progress: Any) -> None:
        with progress.watching():
            for unit in units:
                for cell in unit.cells:
                    (Path(self.writer.sweep_dir) / cell.dir).mkdir(parents=True, exist_ok=True)
                    self.writer.launch([[f"hydra.sweep.subdir='{cell.dir}'"]], 0)


def test_each_cell_a_remote_executor_runs_fires_its_job_callbacks_once_from_here(tmp_path: Path) -> None:
    log = tmp_path / "calls.txt"
    recorder = {"_target_": "helpers.callbacks.Recorder", "path": str(log)}
    master = OmegaConf.create({"hydra": {"callbacks": {"rec": recorder}}})
    sweep_dir = tmp_path / "sweep"
    cells = [
        PlannedCell(
            num=i, dir=str(i), overrides=[f"module={m}"], run_id=f"run{i}", backend="cpu", label=m,
            composed=OmegaConf.create({"module": {"_target_": f"x.{m}"}, "input": {"shape": [1, 8]}}),
        )
        for i, m in enumerate(("Naive", "Fused"))
    ]  # fmt: skip
    executor = _OnOtherMachines(RowWriter(sweep_dir, cells, fail={"run1"}))
    units = tuple(Unit((c,)) for c in cells)
    _run(Invocation("sweep", sweep_dir, tuple(cells), units, (), None, executor), UserCallbacks(master))
    calls = [line.split() for line in log.read_text().splitlines()]
    # Each on_job_start before anything runs (as submitted), each on_job_end as the cell's row appears here.
    assert [c[:2] for c in calls[:2]] == [["job_start", "Naive"], ["job_start", "Fused"]]
    ended = sorted(c[1:4] for c in calls[2:])
    assert ended == [["Fused", "FAILED", "1"], ["Naive", "COMPLETED", "0"]]
