"""Hostile directories (issue 26): neuronexp writes only into a directory it can prove is its own, never mixes a
single run with a sweep, and never follows or blocks on a planted lock file. Each refusal is one line, exit 2,
before any work, and leaves the directory exactly as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import FAST, within
from neuronexp.engine.ownership import DIR_MARKER, mark

SMALL = [*FAST, "backend=cpu", "roofline.probe=off", "input.dtype=float32"]
PAIR = ["-m", "module=rmsnorm_naive,rmsnorm_fused"]


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("neuronexp: error: ") and "Traceback" not in stderr, stderr
    return lines[0]


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root` (links as their target, not followed), to prove nothing changed."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        out[key] = f"-> {os.readlink(path)}" if path.is_symlink() else (path.read_bytes() if path.is_file() else "dir")
    return out


@pytest.mark.parametrize("behind_link", [pytest.param(False, marks=pytest.mark.slow), True])
def test_a_run_into_a_directory_of_the_users_files_is_refused(cli, tmp_path: Path, behind_link: bool) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "config.yaml").write_text("lr: 0.1\n")
    (project / "env.json").write_text("{}\n")
    target = project
    if behind_link:
        target = tmp_path / "link"
        target.symlink_to(project)
    before = _snapshot(project)
    res = cli(*SMALL, f"hydra.run.dir={target}")
    assert res.returncode == 2
    line = _one_error_line(res.stderr)
    assert f"hydra.run.dir={target}: holds files neuronexp did not write (config.yaml, env.json)" in line
    assert _snapshot(project) == before


def test_a_run_with_hydra_run_dir_dot_in_a_project_is_refused(cli, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("lr: 0.1\n")
    before = _snapshot(tmp_path)
    res = cli(*SMALL, "hydra.run.dir=.")
    assert res.returncode == 2 and "holds files neuronexp did not write (config.yaml)" in _one_error_line(res.stderr)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "planted",
    [
        "jobs.json",
        *(
            pytest.param(f, marks=pytest.mark.slow)  # 4 s each: CI runs them
            for f in ("results/summary.md", "results/cells.csv", "0/config.yaml")
        ),
    ],
)
def test_a_sweep_into_a_directory_of_the_users_files_is_refused(cli, tmp_path: Path, planted: str) -> None:
    sweep = tmp_path / "s"
    (sweep / planted).parent.mkdir(parents=True)
    (sweep / planted).write_text("mine\n")
    before = _snapshot(sweep)
    res = cli(*PAIR, *SMALL, f"hydra.sweep.dir={sweep}")
    assert res.returncode == 2
    assert f"hydra.sweep.dir={sweep}: holds files neuronexp did not write ({planted.split('/')[0]})" in _one_error_line(
        res.stderr
    )
    assert _snapshot(sweep) == before


def test_a_sweep_never_writes_through_a_results_link(cli, tmp_path: Path) -> None:
    sweep, elsewhere = tmp_path / "s", tmp_path / "elsewhere"
    sweep.mkdir()
    elsewhere.mkdir()
    mark(sweep, "sweep")  # an earlier neuronexp sweep's directory, into which someone linked results/
    (sweep / "results").symlink_to(elsewhere)
    res = cli(*PAIR, *SMALL, f"hydra.sweep.dir={sweep}")
    assert res.returncode == 2 and "its results/ is a symbolic link" in _one_error_line(res.stderr)
    assert not list(elsewhere.iterdir())


@pytest.mark.parametrize(("made_by", "then"), [("sweep", "run"), pytest.param("run", "sweep", marks=pytest.mark.slow)])
def test_a_run_and_a_sweep_never_share_a_directory(cli, tmp_path: Path, made_by: str, then: str) -> None:
    where = tmp_path / "d"
    where.mkdir()
    mark(where, made_by)  # what a finished run or sweep leaves (the real ones: test_an_earlier_run_dir_is_reusable)
    before = _snapshot(where)
    res = cli(*SMALL, f"hydra.run.dir={where}") if then == "run" else cli(*PAIR, *SMALL, f"hydra.sweep.dir={where}")
    assert res.returncode == 2
    other = "a single run (hydra.run.dir)" if made_by == "run" else "a sweep (hydra.sweep.dir)"
    assert f"holds the results of {other}" in _one_error_line(res.stderr)
    assert _snapshot(where) == before


@pytest.mark.slow  # 8 s on the 2-core VM: two real runs, then a sweep refused
def test_an_earlier_run_dir_is_reusable_and_marked_but_a_sweep_there_is_refused(cli, tmp_path: Path) -> None:
    run = tmp_path / "r"
    assert cli(*SMALL, f"hydra.run.dir={run}").returncode == 0
    assert (run / DIR_MARKER).is_file()
    again = cli(*SMALL, f"hydra.run.dir={run}")
    assert again.returncode == 0, again.stderr
    res = cli(*PAIR, *SMALL, f"hydra.sweep.dir={run}")
    assert res.returncode == 2 and "holds the results of a single run" in _one_error_line(res.stderr)


@pytest.mark.parametrize("kind", [pytest.param("run", marks=pytest.mark.slow), "sweep"])
def test_a_lock_file_that_is_a_link_is_refused_and_its_target_untouched(cli, tmp_path: Path, kind: str) -> None:
    victim, where = tmp_path / "victim", tmp_path / "d"
    victim.write_text("precious\n")
    where.mkdir()
    (where / ".neuronexp.lock").symlink_to(victim)
    key = "hydra.run.dir" if kind == "run" else "hydra.sweep.dir"
    res = cli(*([] if kind == "run" else PAIR), *SMALL, f"{key}={where}")
    assert res.returncode == 2
    assert ".neuronexp.lock there is a symbolic link" in _one_error_line(res.stderr)
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in where.iterdir()) == [".neuronexp.lock"]


def test_a_lock_file_that_is_a_fifo_is_refused_without_blocking(cli, tmp_path: Path) -> None:
    where = tmp_path / "d"
    where.mkdir()
    os.mkfifo(where / ".neuronexp.lock")
    res = cli(*SMALL, f"hydra.run.dir={where}", timeout=60)  # a blocking open would hang here until the timeout
    assert res.returncode == 2 and ".neuronexp.lock there is not a regular file" in _one_error_line(res.stderr)


@pytest.mark.parametrize("mode", [pytest.param("run", marks=pytest.mark.slow), "sweep"])
def test_an_unusable_lock_dir_is_refused_before_the_first_cell(cli, tmp_path: Path, mode: str) -> None:
    (tmp_path / "a-file").write_text("")
    bad = tmp_path / "a-file" / "locks"
    where = [f"hydra.run.dir={tmp_path / 'r'}"] if mode == "run" else [*PAIR, f"hydra.sweep.dir={tmp_path / 's'}"]
    res = cli(*where, *SMALL, "launcher.isolate=true", f"launcher.lock_dir={bad}")
    assert res.returncode == 2
    assert f"launcher.lock_dir={bad}: {tmp_path / 'a-file'} is not a directory" in _one_error_line(res.stderr)
    assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()


def test_a_fifo_planted_as_a_slot_lock_is_refused_not_waited_on(tmp_path: Path) -> None:
    from neuronexp.cellprocess.placement import PlacementError, hold_slot, plan_slots

    def take() -> None:
        with hold_slot(slots, tmp_path, poll_s=0.01):
            pass

    slots = plan_slots("cpu", 1, 1, ["0"], [0])
    os.mkfifo(tmp_path / "cpu-0.lock")
    with pytest.raises(PlacementError, match="cpu-0.lock is not a regular file"):
        within(30, take)
    (tmp_path / "cpu-0.lock").unlink()
    (tmp_path / "cpu-0.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PlacementError, match="a symbolic link"):
        within(30, take)
    assert not (tmp_path / "elsewhere").exists()


def test_a_cell_waiting_for_a_slot_says_who_holds_it(tmp_path: Path, monkeypatch, capsys) -> None:
    import subprocess
    import sys

    from neuronexp.cellprocess import placement

    slots = placement.plan_slots("cpu", 1, 1, ["0"], [0])
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY | "
            "os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(3)",
            str(tmp_path / "cpu-0.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"  # type: ignore[union-attr]
        monkeypatch.setattr(placement, "WAIT_NOTICE_S", 0.2)
        with placement.hold_slot(slots, tmp_path, poll_s=0.05):
            pass
    finally:
        holder.kill()
        holder.wait()
    assert f"neuronexp: waiting for a device slot: cpu-0.lock held by pid {holder.pid} (" in capsys.readouterr().err


@pytest.mark.slow  # 8 s on the 2-core VM: a cell killed at its timeout
def test_cell_timeout_s_on_a_single_run_is_applied(cli, tmp_path: Path) -> None:
    from helpers.hostile import write_hostile_layers

    write_hostile_layers(tmp_path)
    res = cli(
        *SMALL,
        "module._target_=hostile.Hangs",
        "launcher.cell_timeout_s=3",
        f"hydra.run.dir={tmp_path / 'r'}",
        timeout=120,
    )
    assert res.returncode == 1
    assert "timed out after 3 s during first call (launcher.cell_timeout_s)" in res.stdout + res.stderr
