"""Cells that end their process or never return, through the console script: under the basic launcher and under
hydra/launcher=parallel each becomes an error row saying how it ended, the other cells complete, the exit status
is 1, and the same command resumes the sweep. A warm-up count that would run for hours is cut by time."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import neuronexp
from helpers import console_script

# With FAULTS set, the cell of each width misbehaves in its own way at its first call; otherwise every cell is fine.
# Each call takes 2 ms, so that `timing.warmup=10**12` would run for 60 years without the time cap.
FAULTY = """
import ctypes, json, os, time, torch
from pathlib import Path

class Faulty(torch.nn.Module):
    def forward(self, x):
        faults = os.environ.get("FAULTS")
        mode = {24: "exit", 32: "segv", 40: "hang"}.get(x.shape[-1]) if faults else None
        if mode == "exit":
            os._exit(3)
        if mode == "segv":
            ctypes.string_at(0)
        if mode == "hang":
            Path(faults, "hang.json").write_text(json.dumps({"pid": os.getpid()}))
            time.sleep(3600)
        time.sleep(0.002)
        return x * 2
"""
ARGS = [
    "-m",
    "module._target_=faulty.Faulty",
    "~module.hidden_size",
    "~module.eps",
    "profiler=quick",
    "timing.warmup=1000000000000",
    "timing.max_seconds=0.2",
    "timing.iters=5",
    "timing.min_iters=3",
    "input.shape=[1,8,16],[1,8,24],[1,8,32],[1,8,40]",
    "launcher.cell_timeout_s=10",
]
LAUNCHERS = {"basic": [], "parallel": ["hydra/launcher=parallel", "launcher.devices=2"]}
PARALLEL_OK = (
    importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is not None and len(os.sched_getaffinity(0)) >= 2
)


def _sweep(
    tmp_path: Path, launcher: str, faults: bool, wait: bool = True
) -> subprocess.Popen | subprocess.CompletedProcess:
    (tmp_path / "faulty.py").write_text(FAULTY)
    (tmp_path / "faults").mkdir(exist_ok=True)
    env = dict(os.environ, COLUMNS="200")
    env.pop("HYDRA_FULL_ERROR", None)
    if faults:
        env["FAULTS"] = str(tmp_path / "faults")
    args = [
        console_script("neuronexp"),
        *ARGS,
        *LAUNCHERS[launcher],
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        f"launcher.lock_dir={tmp_path / 'locks'}",
    ]
    if not wait:
        return subprocess.Popen(
            args,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(
    "launcher",
    [
        "basic",
        pytest.param("parallel", marks=pytest.mark.skipif(not PARALLEL_OK, reason="needs joblib and 2 CPU cores")),
    ],
)
def test_cells_that_exit_crash_or_hang_become_rows_and_the_sweep_resumes(tmp_path: Path, launcher: str) -> None:
    res = _sweep(tmp_path, launcher, faults=True)
    assert res.returncode == 1, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    cells = neuronexp.load(tmp_path / "sweep").cells.set_index("input_shape")
    assert len(cells) == 4
    errors = cells["error"].to_dict()
    assert errors["[1,8,24]"] == "cell process exited with status 3 during first call"
    assert errors["[1,8,32]"] == "cell process killed by SIGSEGV during first call"
    assert errors["[1,8,40]"] == "timed out after 10 s during first call (launcher.cell_timeout_s)"
    assert (cells.drop("[1,8,16]")["status"] == "error").all()
    for shape in ("[1,8,24]", "[1,8,32]", "[1,8,40]"):  # where it ran, although its process wrote nothing
        assert cells.loc[shape, "placement"].startswith("cpu:") and cells.loc[shape, "worker_pid"] > 0
        assert errors[shape] in res.stdout + res.stderr  # the terminal says so too
    ok = cells.loc["[1,8,16]"]
    assert ok["status"] == "ok" and ok["latency_samples"] >= 3
    # 10**12 warm-up calls: cut after timing.max_seconds, and the row says so.
    assert (
        ok["warnings"].startswith("warm-up stopped after ")
        and "of 1000000000000 calls (timing.max_seconds=0.2)" in ok["warnings"]
    )
    hung = json.loads((tmp_path / "faults" / "hang.json").read_text())["pid"]
    assert not Path(f"/proc/{hung}").exists()  # killed and reaped, not left running
    # The same command, the faults gone: the three failed cells run again, the finished one is reused.
    again = _sweep(tmp_path, launcher, faults=False)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = neuronexp.load(tmp_path / "sweep").cells.set_index("input_shape")
    assert resumed.loc["[1,8,16]", "status"] == "cached" and resumed.loc["[1,8,16]", "worker_pid"] == ok["worker_pid"]
    assert (resumed.drop("[1,8,16]")["status"] == "ok").all()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_killed_sweep_takes_its_running_cell_and_template_with_it(tmp_path: Path) -> None:
    proc = _sweep(tmp_path, "basic", faults=True, wait=False)
    assert isinstance(proc, subprocess.Popen)
    hang = tmp_path / "faults" / "hang.json"
    deadline = time.monotonic() + 120
    while not hang.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.1)
    cell = json.loads(hang.read_text())["pid"]
    template = _children(proc.pid, "neuronexp.cellprocess.template")
    assert len(template) == 1
    job = next(p.parent for p in (tmp_path / "sweep").glob("*/cell.json") if "1,8,40" in p.read_text())
    assert (job / ".phase").read_text().strip() == "first call"  # what the progress display reads
    os.kill(proc.pid, signal.SIGKILL)  # only the sweep's own process: its template and cell must follow
    proc.communicate()
    deadline = time.monotonic() + 10
    while (_alive(cell) or _alive(template[0])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(cell) and not _alive(template[0])


def _children(parent: int, marker: str) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and marker in cmdline:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow  # 6 s on the 2-core VM
def test_a_single_run_with_isolate_true_turns_a_crash_into_a_row(cli, tmp_path: Path) -> None:
    # A single run runs in the neuronexp process (docs/methodology.md says why); launcher.isolate=true gives it
    # the sweep's supervision: its own process, and a row when that process dies.
    (tmp_path / "faulty.py").write_text(FAULTY)
    (tmp_path / "faults").mkdir()
    args = [a for a in ARGS if not a.startswith(("-m", "input.shape="))]
    res = cli(
        *args,
        "input.shape=[1,8,32]",
        "launcher.isolate=true",
        f"hydra.run.dir={tmp_path / 'run'}",
        f"launcher.lock_dir={tmp_path / 'locks'}",
        env={"FAULTS": str(tmp_path / "faults")},
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr
    cell = neuronexp.load(tmp_path / "run").cells.iloc[0]
    assert cell["status"] == "error" and cell["error"] == "cell process killed by SIGSEGV during first call"
    assert cell["placement"] == "cpu:" + cell["placement_cpus"]  # on a slot: all of this host's cores
