"""A sweep checks its cells' code (the module's class, its constructor's arguments, its inputs against `forward`) in
a process forked from its fork server's template: the sweep's own process never imports the user's layers (nor
torch for them), and what the check finds is still the one-line error, before anything is written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import FAST, console_script

LAYER = """
import os
from pathlib import Path

import torch

Path(os.environ["IMPORTED_BY"], str(os.getpid())).touch()  # who imported this module


class Scale(torch.nn.Module):
    def __init__(self, factor: float = 2.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor
"""


def _sweep(tmp_path: Path, *extra: str) -> tuple[int, str, int, set[int]]:
    """The sweep as a process of its own: (its exit status, stderr, pid, the pids that imported the layer)."""
    (tmp_path / "scaled.py").write_text(LAYER)
    seen = tmp_path / "seen"
    seen.mkdir(exist_ok=True)
    args = ["-m", "module._target_=scaled.Scale", "~module.hidden_size", "~module.eps", *extra]
    cmd = [console_script("neuronexp"), *args, *FAST, f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"} | {"IMPORTED_BY": str(seen)}
    with subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True) as proc:
        _, err = proc.communicate(timeout=300)
    return proc.returncode, err, proc.pid, {int(p.name) for p in seen.iterdir()}


@pytest.mark.slow  # a sweep command as a process, its own fork server's torch import included: 4.4 s quiet
def test_the_sweeps_own_process_never_imports_the_layer_it_checks_and_runs(tmp_path: Path) -> None:
    code, err, pid, importers = _sweep(tmp_path, "+module.factor=1.0,3.0")
    assert code == 0, err
    assert importers and pid not in importers  # the check's process and the cells' imported it, the sweep never


def test_a_constructor_argument_the_layer_lacks_is_one_line_before_anything_is_written(tmp_path: Path) -> None:
    code, err, pid, importers = _sweep(tmp_path, "+module.factr=1.0,3.0")
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("neuronexp: error: module.factr=1.0: not an argument of Scale(")
    assert pid not in importers and not (tmp_path / "sweep").exists()
