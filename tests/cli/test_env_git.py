"""env.json records the commit of the git repository the user runs neuronexp from, and whether its tracked
files had uncommitted changes: a real repository made in the test, the console script run inside it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import FAST, run_cli, run_dirs


def _git(repo: Path, *args: str) -> str:
    # Identity and config given here: the test must not depend on (or change) the user's git configuration.
    cmd = [
        "git",
        "-c",
        "user.name=neuronexp-test",
        "-c",
        "user.email=test@example.invalid",
        "-c",
        "commit.gpgsign=false",
        *args,
    ]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _env(repo: Path, run_dir: str) -> dict:
    res = run_cli([*FAST, "backend=cpu", "roofline.probe=off", f"hydra.run.dir={run_dir}"], cwd=repo)
    assert res.returncode == 0, res.stderr
    return json.loads((repo / run_dir / "env.json").read_text())


@pytest.mark.slow  # 10 s on the 2-core VM
def test_env_json_records_the_commit_and_dirtiness_of_the_repository_it_runs_in(tmp_path: Path) -> None:
    repo = tmp_path / "study"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "notes.txt").write_text("first\n")
    (repo / ".gitignore").write_text("outputs/\n")
    _git(repo, "add", "notes.txt", ".gitignore")
    _git(repo, "commit", "-q", "-m", "study")
    head = _git(repo, "rev-parse", "HEAD")
    assert len(head) == 40

    clean = _env(repo, "outputs/clean")
    assert clean["git_commit"] == head and clean["git_dirty"] is False

    (repo / "notes.txt").write_text("changed\n")  # a tracked file edited, not committed
    dirty = _env(repo, "outputs/dirty")
    assert dirty["git_commit"] == head and dirty["git_dirty"] is True


@pytest.mark.slow  # 5 s on the 2-core VM
def test_outside_a_repository_there_is_no_commit(cli, tmp_path: Path) -> None:
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True).returncode != 0
    res = cli(*FAST, "backend=cpu", "roofline.probe=off")
    assert res.returncode == 0, res.stderr
    env = json.loads((run_dirs(tmp_path)[0] / "env.json").read_text())
    assert env["git_commit"] is None and env["git_dirty"] is None
