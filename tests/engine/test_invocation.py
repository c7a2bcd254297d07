"""The invocation as a value (engine.planned_invocation): the launcher is decided once per invocation, whatever it
runs; whether a cell takes a device slot is one formula, which the checks before the run and the run both read."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from helpers import FAST
from neuronexp.engine import _hydra

SHAPES = "input.shape=[1,8,64],[1,16,64],[1,32,64],[1,64,64]"
STUDY = ["-m", "module=rmsnorm_naive,rmsnorm_fused,rmsnorm_compiled", SHAPES, "baseline=rmsnorm_naive"]
QUICK = [a for a in FAST if not a.startswith("input.shape")]


class CountCalls:
    """Calls of one function of neuronexp's, however a module imported it (every module's name for it wrapped)."""

    def __init__(self, function, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0

        def counted(*args, **kwargs):
            self.calls += 1
            return function(*args, **kwargs)

        counted.__wrapped__ = function  # type: ignore[attr-defined]
        for name, module in list(sys.modules.items()):
            for attr, value in list(vars(module).items()) if name.startswith("neuronexp") else ():
                if value is function or getattr(value, "__wrapped__", None) is function:
                    monkeypatch.setattr(module, attr, counted)


@pytest.mark.parametrize(
    "extra",
    [["sweep.dry_run=true"], ["hydra/launcher=parallel", "launcher.devices=2", "sweep.dry_run=true"]],
    ids=["the 12-cell study", "under the parallel launcher"],
)
def test_the_launcher_is_decided_once_for_the_twelve_cell_study(
    cli, tmp_path: Path, extra: list[str], monkeypatch
) -> None:
    counted = CountCalls(_hydra.launcher_kind, monkeypatch)
    res = cli(*STUDY, *QUICK, "backend=cpu", f"hydra.sweep.dir={tmp_path / 's'}", *extra)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "dry run: 12 cell(s)" in res.stdout
    assert counted.calls == 1


def test_the_launcher_is_decided_once_for_a_sweep_that_runs(cli, tmp_path: Path, monkeypatch) -> None:
    pair = ["-m", "module=rmsnorm_naive,rmsnorm_fused", "baseline=rmsnorm_naive", *FAST, "backend=cpu"]
    counted = CountCalls(_hydra.launcher_kind, monkeypatch)
    res = cli(*pair, "roofline.probe=off", f"hydra.sweep.dir={tmp_path / 's'}")
    assert res.returncode == 0, res.stderr[-2000:]
    assert counted.calls == 1


def test_a_cell_takes_a_slot_where_the_run_gives_it_one_and_only_there_is_its_lock_dir_checked(
    cli, tmp_path: Path
) -> None:
    """Under hydra/launcher=parallel launcher.devices=1 one unit runs at a time, on the sweep's own cores (no slot):
    the plan no longer asks for a lock directory the run never uses. Two slots take their locks: checked first."""
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    args = ["-m", "module=rmsnorm_naive,rmsnorm_fused", *FAST, "backend=cpu", "sweep.dry_run=true"]
    args += ["hydra/launcher=parallel", f"launcher.lock_dir={not_a_dir}", f"hydra.sweep.dir={tmp_path / 's'}"]
    assert cli(*args, "launcher.devices=1").returncode == 0
    refused = cli(*args, "launcher.devices=2")
    assert refused.returncode == 2 and f"launcher.lock_dir={not_a_dir}: " in refused.stderr
    isolated = cli(*args, "launcher.devices=1", "launcher.isolate=true")
    assert isolated.returncode == 2 and "is not a directory" in isolated.stderr


def test_a_baseline_given_as_a_mapping_is_the_sweeps_baseline(cli, tmp_path: Path) -> None:
    """The dry run's estimate says how the sweep is timed: comparison groups against their baseline, or each cell on
    its own where there is none."""
    args = ["-m", "module=rmsnorm_naive,rmsnorm_fused", "input.shape=[1,8,64]", "backend=cpu", "sweep.dry_run=true"]
    for baseline in ("{module: rmsnorm_naive}", "null"):  # (its string form: the twelve-cell study's)
        res = cli(*args, f"baseline={baseline}", f"hydra.sweep.dir={tmp_path / 's'}")
        assert res.returncode == 0, res.stderr[-2000:]
        paired = "each comparison group is timed until its speedups are known" in res.stdout
        assert paired is (baseline != "null"), (baseline, res.stdout)


def test_a_hydra_launchers_job_takes_no_slot_its_launcher_does_not_give(cli, tmp_path: Path) -> None:
    """Under another sweeper each cell is a job of its own (engine.job), which asks the launcher's executor whether it
    takes a slot: the basic launcher with one device gives none, so the lock directory is never opened."""
    import neuronexp

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    sweep = tmp_path / "s"
    args = ["-m", "hydra/sweeper=basic", "module=rmsnorm_fused", "input.shape=[1,8,64]", *QUICK, "backend=cpu"]
    res = cli(*args, "roofline.probe=off", f"launcher.lock_dir={not_a_dir}", f"hydra.sweep.dir={sweep}")
    row = neuronexp.load(sweep / "0").cells.iloc[0]
    assert res.returncode == 0 and row["status"] == "ok", (res.stderr[-2000:], row.get("error"))


def test_a_job_of_another_sweeper_whose_slot_locks_cannot_be_made_is_one_line_before_its_directory(
    cli, tmp_path: Path
) -> None:
    """Another sweeper has no plan of neuronexp's to check the host first: its job does, before it touches its
    directory (it said "cannot write the results (File exists: ...)" after making it)."""
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    sweep = tmp_path / "s"
    args = ["-m", "hydra/sweeper=basic", "module=rmsnorm_fused", "input.shape=[1,8,64]", *QUICK, "backend=cpu"]
    res = cli(*args, "launcher.isolate=true", f"launcher.lock_dir={not_a_dir}", f"hydra.sweep.dir={sweep}")
    assert res.returncode == 2, res.stderr[-2000:]
    assert f"neuronexp: error: launcher.lock_dir={not_a_dir}: {not_a_dir} is not a directory" in res.stderr
    assert not (sweep / "0" / "cell.json").exists()


def test_the_invocation_is_a_frozen_value(tmp_path: Path) -> None:
    from neuronexp.engine.planned_invocation import Invocation

    assert dataclasses.fields(Invocation) and Invocation.__dataclass_params__.frozen  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("arguments", "isolate", "supervised"),
    [
        ([], None, False),  # a single run in this process, so that a debugger may stop in it
        (["+launcher.cell_timeout_s=5"], None, True),  # a limit given on the command line needs a supervisor
        (["launcher.cell_timeout_s=5"], None, True),
        (["launcher.cell_timeout_s_x=5"], None, False),
        ([], True, True),  # launcher.isolate=true
        ([], False, False),
    ],
)
def test_a_single_run_is_supervised_only_where_a_time_limit_or_isolate_asks(
    monkeypatch, arguments: list[str], isolate: bool | None, supervised: bool
) -> None:
    from omegaconf import OmegaConf

    from neuronexp.cellprocess.forkserver import ADDRESS_ENV
    from neuronexp.engine.context import SweepContext
    from neuronexp.engine.executor import Inline, Local
    from neuronexp.engine.planned_invocation import executor_for

    monkeypatch.delenv(ADDRESS_ENV, raising=False)
    hydra = {"launcher": {"_target_": _hydra.BASIC_LAUNCHER}, "runtime": {"choices": {}}}
    launcher = {"devices": 1, "cell_timeout_s": 1800} | ({} if isolate is None else {"isolate": isolate})
    master = OmegaConf.create({"allocator": "stable", "launcher": launcher, "hydra": hydra})
    executor = executor_for(SweepContext(master, {}, arguments, None), single=True)
    assert isinstance(executor, Local if supervised else Inline)
    assert not isinstance(executor, Local) or (executor.isolate and executor.slots == 1)  # its cell on a slot
