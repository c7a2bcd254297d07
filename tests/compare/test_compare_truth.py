"""bench/compare_truth.py, the check the integrator runs on fresh sweeps: its plumbing on the session's real sweep.

The verdicts depend on how busy this machine was while the sweep ran, so what is checked is what does not: the
copy is exactly ×2, every cell is compared, and the report says what it found and whether the goal was met.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "compare_truth.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


@pytest.mark.slow  # 6 s: a copy of the sweep and two CLI runs
def test_double_and_aa_report_what_compare_called(sweep: Path, tmp_path: Path) -> None:
    double = _run("double", str(sweep), "--out", str(tmp_path))
    report = json.loads(_one(tmp_path, "double-*.json").read_text())
    cells = pd.read_csv(_one(tmp_path, "double-*.csv"))
    assert len(cells) == report["cells"] == 4 and (cells["ratio"] == 2.0).all(), double.stderr
    met = report["exit"] == 1 and (cells["verdict"] == "slower").all()
    assert report["goal_met"] == met and double.returncode == (0 if met else 1)
    assert set(cells["verdict"]) <= {"slower", "inconclusive"}  # never "faster", "no change", "noisy"
    aa = _run("aa", str(sweep), str(sweep), "--out", str(tmp_path))
    assert aa.returncode == 0 and json.loads(_one(tmp_path, "aa-*.json").read_text())["called"] == 0, aa.stdout


def _one(folder: Path, pattern: str) -> Path:
    (path,) = folder.glob(pattern)  # one file a check, stamped with its time
    return path


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _run("aa", str(tmp_path / "nope"), str(tmp_path / "nope2"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0 and "no such path" in result.stderr
