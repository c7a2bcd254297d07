"""A single run killed while its cell runs (SIGKILL, as the out-of-memory killer sends it) leaves a directory that a
rerun uses, the same command or another cell (a smaller shape, after running out of memory), saying that the last
run there ended without a result and at which step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import FAST, console_script
from neuronexp.results.files import complete_run_id

# The user's layer: while the file named by NX_TEST_SLEEP exists, its call announces itself and sleeps.
SLEEPY = """
import os, time, torch
class Sleepy(torch.nn.Module):
    def forward(self, x):
        flag = os.environ.get("NX_TEST_SLEEP", "")
        if flag and os.path.exists(flag):
            open(flag + ".called", "w").close()
            time.sleep(120)
        return x * 2
"""


@pytest.mark.slow  # 7 s on the 2-core VM: a real process, killed, then the rerun
def test_a_single_run_killed_mid_cell_leaves_a_directory_the_rerun_uses(cli, tmp_path: Path) -> None:
    (tmp_path / "sleepy.py").write_text(SLEEPY)
    flag = tmp_path / "sleep"
    flag.touch()
    run = tmp_path / "run"
    args = ["module._target_=sleepy.Sleepy", "~module.hidden_size", "~module.eps", *FAST, f"hydra.run.dir={run}"]
    env = {
        **os.environ,
        "NX_TEST_SLEEP": str(flag),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [console_script("neuronexp"), *args], cwd=tmp_path, env=env, stderr=subprocess.PIPE, start_new_session=True
    )
    called = Path(f"{flag}.called")
    deadline = time.time() + 120
    while not called.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    try:
        assert called.exists(), proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "timeout"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert (run / "cell.json").is_file() and complete_run_id(run) is None  # started, and no result

    killed = complete_run_id(run) or json.loads((run / "cell.json").read_text())["run_id"]
    flag.unlink()
    rerun = cli(*args, "input.shape=[1,8,32]")  # another cell: the killed one left no result to keep
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    said = rerun.stdout + rerun.stderr
    assert f"the last run into {run} ended without a result during first call" in said, said[-2000:]
    assert complete_run_id(run) not in (None, killed)
