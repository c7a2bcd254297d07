"""scripts/neuron_smoke.py runs to the end and writes its report — here against the STAND-IN, so it says so.

This checks the script, not Trainium: the report it writes here must carry the stand-in banner.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO
from helpers.neuron_standin.fixture import STANDIN_DIR

SCRIPT = REPO / "scripts" / "neuron_smoke.py"


@pytest.mark.slow  # a few Python start-ups and two cells: about 10 s
def test_smoke_script_reports_every_check_and_flags_the_stand_in(tmp_path: Path, fake_explorer: Path) -> None:
    report = tmp_path / "report.md"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(STANDIN_DIR), os.environ.get("PYTHONPATH", "")]), KINETO_LOG_LEVEL="6")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--skip-compile", "--shape", "1,8,64",
         "--workdir", str(tmp_path / "work"), "--out", str(report)],
        capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = report.read_text()
    assert "**STAND-IN torch_neuronx (tests/helpers/neuron_standin): this report says nothing about Trainium.**" in text
    rows = {line.split("|")[1].strip(): line.split("|")[3].strip() for line in text.splitlines() if line.startswith("| ") and "---" not in line}
    rows.pop("id")
    assert set(rows) == {"A1", "A2", "A3", "A4", "B1", "B2", "C1", "C2", "D1", "E1", "F1"}
    # What the stand-in can answer it answers as documented; what it cannot (device time, autoload) stays open.
    assert rows["B1"] == rows["B2"] == rows["C2"] == rows["D1"] == rows["F1"] == "PASS", text
    assert rows["C1"] == "INFO" and rows["E1"] == "SKIP"
    assert "export_trace after neuronexp's own export: RuntimeError: Trace is already saved.; via proxy: ok" in text
