"""A sweep killed (SIGKILL) while a cell's result file is half written leaves no partial or corrupt result file,
and the rerun completes it.

The kill must land inside the write, not between writes: a hook (sitecustomize.py on the sweep's PYTHONPATH,
inherited by every process the sweep starts) wraps pyarrow's Parquet writer so that writing the chosen table
writes it, cuts the file it wrote to half its length, says so through a marker file and sleeps there. Whatever
path neuronexp's writer gave it (a temporary beside the target, or the target itself), that path now holds half
a file when the process group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import neuronexp
from helpers import FAST, console_script
from neuronexp.results.files import complete_run_id, read_arrow

HOOK = """
import os
if os.environ.get("NX_TEST_BLOCK_WRITE"):
    import time
    import pyarrow.parquet as pq

    _real = pq.write_table
    _name, _marker = os.environ["NX_TEST_BLOCK_WRITE"], os.environ["NX_TEST_BLOCKED"]

    def write_table(table, where, *args, **kwargs):
        _real(table, where, *args, **kwargs)
        path = str(where)
        if os.path.basename(path).lstrip(".").startswith(_name) and not os.path.exists(_marker):
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                f.truncate(size // 2)
            with open(_marker, "w") as f:
                f.write(path)
            time.sleep(600)

    pq.write_table = write_table
"""

QUICK = [a for a in FAST if not a.startswith("input.shape")]


def _readable(path: Path) -> None:
    """Read a result file as neuronexp's readers would; raises on a partial or corrupt one."""
    if path.suffix == ".parquet":
        pq.read_table(path)
    elif path.suffix == ".arrow":
        read_arrow(path)
    elif path.suffix == ".json":
        import json

        json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("table", ["samples.parquet", "cells.parquet"])
def test_a_kill_inside_a_result_write_leaves_no_partial_file_and_the_rerun_completes(
    tmp_path: Path, table: str
) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    marker = tmp_path / "blocked"
    sweep = tmp_path / "sweep"
    args = [
        console_script("neuronexp"),
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        "input.shape=[1,8,64]",
        *QUICK,
        f"hydra.sweep.dir={sweep}",
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        "NX_TEST_BLOCK_WRITE": table,
        "NX_TEST_BLOCKED": str(marker),
    }
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.time() + 120
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    try:
        assert marker.exists(), "the write was never blocked: " + (
            proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "timeout"
        )
        half = Path(marker.read_text())
        assert half.stat().st_size > 0  # the half-written file the kill lands on
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert half.parent.parent == sweep

    # What a reader can see: every result file complete, the half-written one only under a temporary name.
    visible = [p for p in sweep.rglob("*") if p.is_file() and not p.name.startswith(".")]
    for path in visible:
        _readable(path)
    assert half.name.startswith(f".{table}.tmp-"), half
    job = half.parent
    assert complete_run_id(job) is None  # the killed cell does not pass as complete

    rerun = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    results = neuronexp.load(sweep)
    assert len(results.cells) == 2 and set(results.cells["status"]) <= {"ok", "cached"}
    assert (results.cells["status"] == "ok").any()  # the killed cell ran again
    assert complete_run_id(job) is not None
    assert not list(job.glob(".*.tmp-*"))  # the rerun cleared the dead writer's temporary
    for path in (p for p in sweep.rglob("*") if p.is_file() and not p.name.startswith(".")):
        _readable(path)
    assert not results.cells["run_id"].duplicated().any()
    assert not results.samples.duplicated(["run_id", "sample"]).any()
