"""The command-line conventions users bring from other tools: `--version` on every command prints neuronexp's one
version (kept in neuronexp/version.py, which the wheel's metadata reads too), and `neuronexp -q/-v` set the level of
neuronexp's log (progress lines and the bar off; each cell's run_id on), not what it prints as its answer."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
import tomllib

from helpers import FAST, REPO, run_cli
from neuronexp.version import __version__

SCRIPTS = ["neuronexp", "neuronexp-report", "neuronexp-compare", "neuronexp-export", "neuronexp-extract"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_command_prints_the_one_version(script: str, tmp_path: Path) -> None:
    res = run_cli(["--version"], cwd=tmp_path, script=script)
    assert res.returncode == 0 and res.stdout == f"{script} {__version__}\n", (res.stdout, res.stderr)
    assert "Hydra" not in res.stdout


def test_the_version_is_kept_in_one_place() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "neuronexp.version.__version__"}
    literal = re.compile(rf"""["']{re.escape(__version__)}["']""")
    where = [p.name for p in (REPO / "src" / "neuronexp").rglob("*.py") if literal.search(p.read_text())]
    assert where == ["version.py"], where
    try:
        installed = importlib.metadata.version("neuronexp")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("neuronexp is not installed: no metadata to compare")
    assert installed == __version__


def _sweep(tmp_path: Path, *flags: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    args = [*flags, "-m", "module=rmsnorm_fused", *FAST, "roofline.probe=off", f"hydra.sweep.dir={tmp_path / 's'}"]
    res = run_cli(args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


def test_quiet_leaves_out_the_progress_and_keeps_the_answer(tmp_path: Path) -> None:
    plain, quiet = _sweep(tmp_path / "plain"), _sweep(tmp_path / "quiet", "-q")
    said, quietly = plain.stdout + plain.stderr, quiet.stdout + quiet.stderr  # Hydra's log handler: stdout
    assert "sweep of 1 cells into" in said and "cell 1/1 ok" in said
    assert "sweep of 1 cells" not in quietly and "cell 1/1" not in quietly
    assert "neuronexp sweep · 1 cells" in quiet.stdout and "all cells ok" in quiet.stdout  # the answer stays


def test_verbose_says_each_cells_directory_and_run_id(tmp_path: Path) -> None:
    verbose = _sweep(tmp_path / "verbose", "-v")
    run_id = (tmp_path / "verbose" / "s" / "0" / "cell.json").read_text().split('"run_id": "')[1][:16]
    said = verbose.stdout + verbose.stderr  # Hydra's log handler: stdout
    assert re.search(rf"cell 0: module=rmsnorm_fused .*, run_id {run_id}, to run", said), said
    plain = _sweep(tmp_path / "plain")
    assert f"run_id {run_id}" not in plain.stdout + plain.stderr


def test_the_log_level_is_put_back_after_the_command(tmp_path: Path) -> None:
    import logging

    _sweep(tmp_path, "-qq")
    assert logging.getLogger("neuronexp").level == logging.NOTSET  # a caller's process (a notebook, a test) goes on
