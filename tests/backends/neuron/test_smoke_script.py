"""scripts/neuron_smoke.py runs to the end and writes its report — here against the STAND-IN, so it says so.

This checks the script, not Trainium: the report it writes here must carry the stand-in banner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO
from helpers.neuron_standin.fixture import STANDIN_DIR

SCRIPT = REPO / "scripts" / "neuron_smoke.py"


def _rows(text: str) -> dict[str, str]:
    rows = {
        line.split("|")[1].strip(): line.split("|")[3].strip()
        for line in text.splitlines()
        if line.startswith("| ") and "---" not in line
    }
    rows.pop("id")
    return rows


@pytest.mark.slow  # several Python start-ups, seven cells and a sweep through the fork server: about a minute
def test_smoke_script_reports_every_check_and_flags_the_stand_in(tmp_path: Path, fake_explorer: Path) -> None:
    report = tmp_path / "report.md"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(STANDIN_DIR), os.environ.get("PYTHONPATH", "")]),
        KINETO_LOG_LEVEL="6",
    )
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--device",
            "cpu",
            "--skip-compile",
            "--shape",
            "1,8,64",
            "--workdir",
            str(tmp_path / "work"),
            "--out",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=900,  # a loaded 2-core VM takes minutes
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = report.read_text()
    assert "**STAND-IN torch_neuronx (tests/helpers/neuron_standin): this report says nothing about Trainium.**" in text
    rows = _rows(text)
    assert set(rows) == {
        *("A1", "A2", "A3", "A4", "A5", "B1", "B2", "C1", "C2", "C3", "D1", "D2", "D3", "E1", "E2", "F1"),
        *("G1", "G2", "G3", "G4"),  # issue 31: the default schedule, a compiled cell, a sweep, the sources compared
        *("A6", "A7", "C4", "E3", "E4", "N1"),  # issue 42: Python, cores, route, compile metrics, the NKI recipe
    }
    # What the stand-in can answer it answers as it is switched (its default answers: device events reach
    # key_averages(), the runtime writes at the profiler's exit, it reserves every one of its 8 cores unless told
    # otherwise, its torch.backends entry point autoloads it); it runs on this Python, which TorchNeuron may not ship
    # for (A6); --skip-compile leaves the compile checks out.
    passed = {k for k, v in rows.items() if v == "PASS"}
    assert passed == {
        *("A2", "A3", "A4", "A5", "A7", "B1", "B2", "C1", "C2", "C3", "C4", "D1", "D2", "D3", "E3", "F1"),
        *("G1", "G3", "G4", "N1"),
    } | ({"A6"} if sys.version_info[:2] >= (3, 12) else set()), text
    assert rows["E1"] == rows["E2"] == rows["E4"] == rows["G2"] == "SKIP"  # --skip-compile
    assert rows["A6"] == ("SKIP" if sys.version_info[:2] < (3, 12) else "PASS")
    assert "runtime files written at the profiler's exit" in text
    assert '"device_time_check": "agree"' in text and "forked: True" in text
    assert "Traceback" not in text and not (tmp_path / "work" / "tracebacks.txt").exists()


def test_without_torch_neuronx_the_script_stops_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "report.md")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("neuron_smoke: torch-neuronx cannot be imported by ")
    assert lines[0].endswith(
        "run this on a Trn2/Trn3 instance after installing TorchNeuron (pip install -e .[neuron], see docs/neuron.md)"
    )
    assert proc.stdout == "" and not (tmp_path / "report.md").exists()


def test_a_check_that_raises_is_one_line_in_the_report_and_the_run_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import neuron_smoke_checks as checks

    def broken(ctx: checks.Context) -> tuple[str, str]:
        raise RuntimeError("neuron-explorer crashed\nsecond line")

    monkeypatch.setattr(
        checks, "CHECKS", [("Z1", "a check that raises", broken), ("Z2", "one that passes", lambda c: ("PASS", "ok"))]
    )
    report = checks.Report()
    checks.run_checks(checks.Context(None, tmp_path), report, ("Z",))
    assert report.rows[0][:3] == ("Z1", "a check that raises", "FAIL")
    assert report.rows[0][3] == "RuntimeError: neuron-explorer crashed (traceback: tracebacks.txt)"
    assert report.rows[1][2] == "PASS" and report.failed
    assert "Traceback (most recent call last)" in report.tracebacks[0]


def test_explorer_timeout_flag_bounds_each_explorer_run(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--explorer-timeout: an Explorer that hangs is given up on after that long, each of D2's three runs."""
    import argparse
    import time
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import neuron_smoke as script
    from neuron_smoke_checks import Context, explorer_checks

    args = script.parse_args(["--explorer-timeout", "0.5", "--workdir", str(tmp_path / "work")])
    assert isinstance(args, argparse.Namespace) and args.explorer_timeout == 0.5
    capture = tmp_path / "work" / "c2"
    capture.mkdir(parents=True)
    (capture / "trace_info.pb").write_bytes(b"")
    index = SimpleNamespace(root=capture, sessions=[SimpleNamespace(dir=".")])
    monkeypatch.setattr("neuronexp.backends.neuron.capture.index_capture", lambda root, modes: index)
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "hang")  # sleeps a minute
    start = time.monotonic()
    status, text = explorer_checks.d2_explorer(Context(args, tmp_path / "work"))
    assert time.monotonic() - start < 20  # three runs of 0.5 s, not three minutes
    assert status == "FAIL" and text.count("rc=-1") == 3 and text.count("timed out after 0.5 seconds") == 3, text


@pytest.mark.slow  # torch.compile and the default schedule: about 7 s
def test_the_compiled_cell_check_runs_a_compiled_cell_through_the_cell_path(
    standin, no_explorer: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """G2 is skipped by --skip-compile in the run above; here it runs, in this process, on the stand-in's compiler."""
    import importlib

    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import neuron_smoke as script
    from neuron_smoke_checks import Context, cell_checks

    importlib.import_module("torch_neuronx._dynamo_backend").register()  # Dynamo looked its entry points up already
    args = script.parse_args(["--shape", "1,8,64", "--workdir", str(tmp_path)])
    status, detail = cell_checks.g2_compiled_cell(Context(args, tmp_path))
    assert status == "PASS", detail
    row = json.loads(detail)  # the row's figures as the script prints them (NaN included)
    # The stand-in's compiled region takes 18 µs a step; a sum of floats over the profiled steps may end ...00003.
    assert row["neuron_compiled_graphs"] == 1 and row["device_time_us"] == pytest.approx(18.0), detail
