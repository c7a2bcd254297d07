"""docs/ci/neuronexp-gate.yml, the CI recipe users copy: its `gate` step run as written by bash, with stand-ins for
`neuronexp` and `neuronexp-compare` on PATH that record their calls and answer with the exit status a test gives. The
verdicts (pass, fail, rerun, error), the added runs on compare's 3, the pairs run at once and compared --paired.
bench/ci_gate.py runs the same step with the real commands (docs/history.md)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import REPO

WORKFLOW = REPO / "docs" / "ci" / "neuronexp-gate.yml"


def _step() -> tuple[str, dict[str, str]]:
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["gate"]
    return next(s for s in job["steps"] if s.get("id") == "gate")["run"], {k: str(v) for k, v in job["env"].items()}


def _stand_in(path: Path, body: str) -> None:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _gate(tmp_path: Path, compare_says: list[int], sweep_says: int = 0) -> tuple[subprocess.CompletedProcess, dict]:
    """The step, with compare answering `compare_says` in turn; its result and what it wrote to GITHUB_OUTPUT."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    (tmp_path / "answers").write_text("\n".join(map(str, compare_says)) + "\n")
    _stand_in(
        bin_dir / "neuronexp",
        f'echo "neuronexp $(basename "$PWD") $*" >> {log}\nsleep 0.3\necho "done $(basename "$PWD") $*" >> {log}\n'
        f"exit {sweep_says}\n",
    )
    _stand_in(
        bin_dir / "neuronexp-compare",
        f'echo "compare $*" >> {log}\nanswer=$(head -1 {tmp_path}/answers)\nsed -i 1d {tmp_path}/answers\n'
        "echo '# compare' > compare.md\nexit $answer\n",
    )
    for side in ("base", "head"):
        (tmp_path / side).mkdir()
    script, env = _step()
    outputs = tmp_path / "github_output"
    env = {**os.environ, **env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RUNNER_TEMP": str(tmp_path)}
    env["GITHUB_OUTPUT"] = str(outputs)
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    said = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    return done, {"said": said, "calls": log.read_text().splitlines() if log.exists() else []}


def test_an_unchanged_head_passes_on_two_pairs_compared_paired(tmp_path: Path) -> None:
    done, got = _gate(tmp_path, [0])
    assert done.returncode == 0 and got["said"] == {"verdict": "pass", "runs": "2"}, done.stderr
    sweeps = [c for c in got["calls"] if c.startswith("neuronexp ")]
    assert sorted(c.split()[1] + c.rsplit("-", 1)[1] for c in sweeps) == ["base1", "base2", "head1", "head2"]
    (compare,) = [c for c in got["calls"] if c.startswith("compare")]
    assert compare.split()[1:] == [
        "base-1", "head-1", "--also-a", "base-2", "--also-b", "head-2", "--paired", "--inconclusive", "0.5",
        "--markdown", "compare.md", "--fail-on-regression", "--fail-on-inconclusive",
    ]  # fmt: skip


def test_a_regression_fails(tmp_path: Path) -> None:
    done, got = _gate(tmp_path, [1])
    assert done.returncode == 1 and got["said"] == {"verdict": "fail", "runs": "2"}


def test_could_not_tell_adds_a_pair_of_runs_then_decides(tmp_path: Path) -> None:
    done, got = _gate(tmp_path, [3, 0])
    assert done.returncode == 0 and got["said"] == {"verdict": "pass", "runs": "3"}
    compares = [c for c in got["calls"] if c.startswith("compare")]
    assert len(compares) == 2 and "--also-b head-3" in compares[1]


def test_still_undecided_after_max_runs_is_rerun_and_not_a_pass(tmp_path: Path) -> None:
    done, got = _gate(tmp_path, [3, 3, 3])
    assert done.returncode == 1 and got["said"] == {"verdict": "rerun", "runs": "4"}


@pytest.mark.parametrize("status", [1, 2])
def test_a_sweep_that_did_not_run_is_an_error_but_a_failed_cell_is_a_result(tmp_path: Path, status: int) -> None:
    done, got = _gate(tmp_path, [0], sweep_says=status)
    if status == 1:  # a cell failed: its row is a result, compare decides
        assert done.returncode == 0 and got["said"]["verdict"] == "pass"
    else:
        assert done.returncode == 2 and "::error::the" in done.stdout and got["said"] == {}


def test_the_pairs_run_at_the_same_time(tmp_path: Path) -> None:
    """Each pair's two sweeps overlap (both start before either ends: each stand-in takes 0.3 s), and a pair starts
    only once the one before it ended."""
    done, got = _gate(tmp_path, [0])
    assert done.returncode == 0
    events = [(c.split()[0], c.rsplit("-", 1)[1]) for c in got["calls"] if not c.startswith("compare")]
    assert [e for e, _ in events] == ["neuronexp", "neuronexp", "done", "done"] * 2, events
    assert [n for _, n in events] == ["1"] * 4 + ["2"] * 4
