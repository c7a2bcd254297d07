"""MLflow is an optional extra: importing neuronexp and running a cell never imports it (the import log of the
console script as a user runs it, read back)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FAST
from helpers import run_process as run_cli  # the import log of a fresh command
from helpers.optional import require


def _imported(stderr: str) -> set[str]:
    return {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s*([\w.]+)\s*$", stderr, re.M)}


@pytest.mark.slow  # one cell
def test_running_a_cell_does_not_import_mlflow(tmp_path: Path) -> None:
    require("mlflow")  # installed, so that not importing it means something
    res = run_cli([*FAST, "hydra.run.dir=run"], cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert res.returncode == 0, res.stderr[-2000:]
    imported = _imported(res.stderr)
    assert {"neuronexp", "torch"} <= imported  # the log is read: the cell's own imports show up in it
    assert "mlflow" not in imported


def test_importing_neuronexp_and_its_reader_does_not_import_mlflow() -> None:
    code = "import sys, neuronexp, neuronexp.results, neuronexp.export; neuronexp.load; print('mlflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr
