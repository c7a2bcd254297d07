"""`hydra/launcher=slurm` against a real one-node Slurm cluster (scripts/slurm_cluster.sh: this host is the
controller and the node, no accounting storage, tasks bound to their cores), as a user runs it.

CI brings the cluster up before the tests (.ci/run); run alone, the fixture brings it up and down itself. Where
it cannot come up (not root, no apt, ports taken) every test here skips with the script's one-line reason.
Each sweep is tiny (1-5 cells of an 8x16..80 layer); the time goes to Slurm starting tasks and Python importing
torch in each, and to the one test that waits for Slurm's time-limit warning (Slurm's smallest limit is a minute).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import neuronexp

# submitit keeps state per process (one job watcher for all its jobs): each command here is a process of its own.
from helpers import FAST, REPO, console_script, small_sweep
from helpers import run_process as run_cli

pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
pytestmark = [pytest.mark.slurm, pytest.mark.slow]
CLUSTER = REPO / "scripts" / "slurm_cluster.sh"
QUICK = [a for a in FAST if not a.startswith("input.shape")]

# A user layer that behaves on 16-wide inputs and misbehaves, each its own way, on wider ones. With PARK set, the
# 32-wide cell of `Sleepy` records its Slurm task in PARK/task.json and sleeps (SLEEP_S seconds).
LAYER = """
import json, os, signal, time, torch
from pathlib import Path

class Sleepy(torch.nn.Module):
    def forward(self, x):
        park = os.environ.get("PARK")
        if park and x.shape[-1] == 32:
            task = {"job": os.environ["SLURM_ARRAY_JOB_ID"], "task": os.environ["SLURM_ARRAY_TASK_ID"],
                    "pid": os.getpid(), "worker": int(os.environ["NEURONEXP_SUPERVISOR_PID"])}
            Path(park, "task.json").write_text(json.dumps(task))
            time.sleep(float(os.environ.get("SLEEP_S", "300")))
        return x * 2

class Misbehaves(torch.nn.Module):
    def forward(self, x):
        width = x.shape[-1]
        if width == 32:
            raise RuntimeError("boom on the node")
        if width == 48:
            os._exit(3)
        if width == 64:
            os.kill(os.getpid(), signal.SIGKILL)
        if width == 80:
            Path("sleeper.pid").write_text(str(os.getpid()))
            time.sleep(600)
        return x * 2
"""
TWO = "input.shape=[1,8,16],[1,8,32]"


@pytest.fixture(scope="module")
def slurm():
    """The cluster's environment (SLURM_CONF) for this module, set in os.environ so that every command sees it.
    Brought down at the end only if it was not up before (CI keeps one up for the whole run)."""
    was_up = subprocess.run([str(CLUSTER), "status"], capture_output=True).returncode == 0
    up = subprocess.run([str(CLUSTER), "up"], capture_output=True, text=True, timeout=600)
    if up.returncode != 0:
        lines = [ln for ln in up.stderr.splitlines() if ln.strip()]
        pytest.skip(f"no Slurm cluster: {lines[-1] if lines else f'slurm_cluster.sh up exited {up.returncode}'}")
    key, _, value = subprocess.run([str(CLUSTER), "env"], capture_output=True, text=True).stdout.strip().partition("=")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(key, value)
        yield {key: value}
    if not was_up:
        subprocess.run([str(CLUSTER), "down"], capture_output=True, timeout=120)


@pytest.fixture(autouse=True)
def _cancel_what_the_test_submitted(slurm, tmp_path: Path):
    """A test that fails mid-sweep must not leave its array running into the next test (only this test's jobs,
    read from its sweeps' .submitit folders, are cancelled)."""
    yield
    ids = sorted({p.name.split("_")[0] for p in tmp_path.glob("**/.submitit/*") if p.name.split("_")[0].isdigit()})
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True)
        _wait_until_gone(ids)


def _squeue(*args: str) -> str:
    return subprocess.run(["squeue", "--noheader", *args], capture_output=True, text=True).stdout


def _wait_until_gone(ids: list[str], timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while _squeue("--array", "--format=%i", f"--jobs={','.join(ids)}").strip():
        assert time.time() < deadline, _squeue()
        time.sleep(0.5)


def _on_slurm(root: Path) -> list[str]:
    """On the cluster, one core per task, into `root`/sweep."""
    return [
        "hydra/launcher=slurm",
        "hydra.launcher.partition=debug",
        "hydra.launcher.cpus_per_task=1",
        "launcher.devices=1",
        f"launcher.lock_dir={root / 'locks'}",
        "hydra.sweep.dir=sweep",
    ]


def _args(root: Path, layer: str, *extra: str, shapes: str = TWO) -> list[str]:
    """A sweep of `layer` on one core per task, in `root`/sweep; `extra` overrides replace these."""
    (root / "mylayer.py").write_text(LAYER)
    ours = _on_slurm(root)
    replaced = {e.split("=", 1)[0] for e in extra}
    return [
        "-m",
        f"module._target_=mylayer.{layer}",
        "~module.hidden_size",
        "~module.eps",
        *QUICK,
        shapes,
        *[o for o in ours if o.split("=", 1)[0] not in replaced],
        *extra,
    ]


def _cells(root: Path):
    return neuronexp.load(root / "sweep").cells.set_index("input_shape")


def _node_cpus() -> int:
    return int(
        subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True).stdout.split()[0].rstrip("+")
    )


def _binds_tasks() -> bool:
    conf = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True).stdout
    return any(ln.startswith("TaskPlugin ") and ("affinity" in ln or "cgroup" in ln) for ln in conf.splitlines())


# --- a normal sweep ----------------------------------------------------------------------------------------


def test_a_slurm_sweep_gives_the_basic_tables_and_says_where_each_cell_ran(slurm, tmp_path: Path) -> None:
    shapes = "[1,8,64],[1,8,128]"  # naive and fused timed together per input: two tasks at once, two cells each
    root = tmp_path / "slurm"
    root.mkdir()
    (tmp_path / "basic").mkdir()
    basic = neuronexp.load(small_sweep(tmp_path / "basic", shapes))
    sweep = small_sweep(
        root,
        shapes,
        "hydra/launcher=slurm",
        "hydra.launcher.cpus_per_task=1",
        "launcher.devices=1",
        f"launcher.lock_dir={root / 'locks'}",
    )
    results = neuronexp.load(sweep)
    for ours, theirs in zip(results, basic):
        assert list(ours.columns) == list(theirs.columns)
    key = ["run_id", "module", "backend", "dtype", "input_shape", "overrides", "status"]
    assert sorted(map(tuple, results.cells[key].astype(str).values)) == sorted(
        map(tuple, basic.cells[key].astype(str).values)
    )
    assert set(results.ops["run_id"]) == set(basic.ops["run_id"]) and set(results.samples["run_id"]) == set(
        basic.samples["run_id"]
    )
    cells = results.cells
    assert (cells["status"] == "ok").all() and (cells["host"] == socket.gethostname()).all()
    # Each array task ran on the one core Slurm bound it to; two ran at a time, so on two cores.
    assert (
        cells["placement"].str.fullmatch(r"cpu:\d+").all()
        and (cells["placement"] == "cpu:" + cells["placement_cpus"]).all()
    )
    if _binds_tasks() and _node_cpus() >= 2:
        assert cells["placement"].nunique() >= 2
    assert cells["worker_pid"].nunique() == 2 and len(list((sweep / ".submitit").glob("*/*_result.pkl"))) == 2
    assert (cells.groupby("input_shape")["worker_pid"].nunique() == 1).all()  # a task per comparison group


# A user's two variants of one layer with one result, one of them 60 operator calls slower (about ×50 on a host):
# a winner no load on the node can turn around.
VARIANTS = """
import torch

class Doubles(torch.nn.Module):
    def forward(self, x):
        return x * 2

class Slow(torch.nn.Module):
    def forward(self, x):
        for _ in range(60):
            x = x + 0.0
        return x * 2
"""


def test_a_slurm_sweep_times_each_comparison_group_in_one_task_paired_as_the_local_run(slurm, tmp_path: Path) -> None:
    (tmp_path / "variants.py").write_text(VARIANTS)
    (tmp_path / "conf" / "module").mkdir(parents=True)
    for name, cls in (("doubles", "Doubles"), ("slow", "Slow")):
        (tmp_path / "conf" / "module" / f"{name}.yaml").write_text(f"_target_: variants.{cls}\n")
    args = ["--config-dir", "conf", "-m", "module=doubles,slow", TWO, "baseline=slow", *QUICK, "timing.iters=20"]
    local = run_cli([*args, "hydra.sweep.dir=local"], cwd=tmp_path)
    assert local.returncode == 0, local.stderr[-2000:]
    on_slurm = run_cli([*args, *_on_slurm(tmp_path)], cwd=tmp_path)
    assert on_slurm.returncode == 0, on_slurm.stderr[-2000:]
    # Two array tasks for four cells: one per input, its two variants timed together, pair by pair, in one process.
    sweep = tmp_path / "sweep"
    assert len([p for p in (sweep / ".submitit").iterdir() if re.fullmatch(r"\d+_\d+", p.name)]) == 2
    results = neuronexp.load(sweep)
    cells = results.cells
    assert (cells["status"] == "ok").all() and (cells.groupby("input_shape")["worker_pid"].nunique() == 1).all()
    doubles = cells[cells["module"] == "doubles"]
    assert len(doubles) == 2 and (doubles["speedup_method"] == "paired").all()
    assert (
        (doubles["speedup_ci_low"] <= doubles["speedup_vs_baseline"])
        & (doubles["speedup_ci_high"] >= doubles["speedup_vs_baseline"])
    ).all()
    for _, cell in doubles.iterrows():
        ref = cells[cells["run_id"] == cell["baseline_run_id"]].iloc[0]
        assert cell["timing_group"] == ref["timing_group"] and cell["worker_pid"] == ref["worker_pid"]
        mine, theirs = (results.samples[results.samples["run_id"] == r] for r in (cell["run_id"], ref["run_id"]))
        assert list(mine["pair"]) == list(theirs["pair"]) == list(range(20))
    said = on_slurm.stdout + on_slurm.stderr + (sweep / "results" / "summary.md").read_text()
    assert "unpaired" not in said and "†" not in said
    assert re.search(r"×\d+\.\d\d \(\d+\.\d\d–\d+\.\d\d\)", on_slurm.stdout)  # the interval is shown

    def winners(findings):
        return dict(findings.loc[findings["outcome"] == "fastest", ["input", "variant"]].itertuples(index=False))

    assert winners(results.findings) == winners(neuronexp.load(tmp_path / "local").findings)
    assert set(winners(results.findings)) == {"[1,8,16]", "[1,8,32]"}


def test_without_accounting_the_sweep_says_so_once_and_the_preset_fits_the_node(slurm, tmp_path: Path) -> None:
    cpus = _node_cpus()
    args = [
        a for a in _args(tmp_path, "Sleepy", shapes="input.shape=[1,8,16]") if not a.startswith("hydra.launcher.cpus")
    ]  # the preset's
    res = run_cli(args, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    log = res.stdout + res.stderr
    assert "Bypassing sacct error" not in log and "accounting storage is disabled\n" not in res.stderr
    if subprocess.run(["sacct", "-j", "1"], capture_output=True).returncode != 0:
        assert log.count("no Slurm job accounting here (sacct: ") == 1
    script = next((tmp_path / "sweep" / ".submitit").glob("*/*_submission.sh")).read_text()
    if cpus < 8:  # the preset asks 8: lowered to the node's, with a note (else Slurm keeps the task pending forever)
        assert (
            f"hydra.launcher.cpus_per_task={cpus}: the nodes of partition debug have {cpus} CPUs (the preset asks 8)"
            in log
        )
        assert f"#SBATCH --cpus-per-task={cpus}" in script
    else:
        assert "#SBATCH --cpus-per-task=8" in script


# --- refused before anything is submitted ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (
            "hydra.launcher.cpus_per_task=4096",
            "hydra.launcher.cpus_per_task=4096: the nodes of partition debug have at most ",
        ),
        (
            "hydra.launcher.timeout_min=1",
            "hydra.launcher.timeout_min=1: submitit asks Slurm for its warning signal 120 s before the limit",
        ),
        (
            "hydra.launcher.partition=nope",
            "hydra.launcher.partition=nope: no such partition on this cluster; sinfo lists debug",
        ),
        # backend=cpu said explicitly: `auto` on this host says nothing of what the nodes have
        (
            "launcher.devices=2 backend=cpu",
            "launcher.devices=2: each Slurm task runs on its own hydra.launcher.cpus_per_task=1 cores",
        ),
    ],
)
def test_a_sweep_the_cluster_cannot_run_as_asked_stops_in_one_line(
    slurm, tmp_path: Path, extra: str, line: str
) -> None:
    if extra.startswith("launcher.devices") and not _binds_tasks():
        pytest.skip("tasks are not bound to their cores on this cluster")
    before = _squeue("--format=%i")
    res = run_cli(_args(tmp_path, "Sleepy", *extra.split()), cwd=tmp_path, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith(f"neuronexp: error: {line}"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "sweep").exists()
    assert _squeue("--format=%i") == before  # nothing submitted


# --- tasks that fail on the node ---------------------------------------------------------------------------


def test_every_way_a_cell_can_fail_on_the_node_is_a_row_and_the_sweep_completes(slurm, tmp_path: Path) -> None:
    # One sweep, five cells: sleeps past its task's time limit (timeout_min=2 with the warning 30 s before: Slurm
    # sends it 30-90 s into the task), ok, raises, os._exit(3), SIGKILLs itself. The sleeper's task starts first,
    # the other four run on the other core meanwhile.
    res = run_cli(
        _args(
            tmp_path,
            "Misbehaves",
            "hydra.launcher.timeout_min=2",
            "hydra.launcher.signal_delay_s=30",
            shapes="input.shape=[1,8,80],[1,8,16],[1,8,32],[1,8,48],[1,8,64]",
        ),
        cwd=tmp_path,
        timeout=240,
    )
    assert res.returncode == 1, res.stderr
    cells = _cells(tmp_path)
    assert cells.loc["[1,8,16]", "status"] == "ok"
    errors = cells["error"].to_dict()
    assert errors["[1,8,32]"] == "RuntimeError: boom on the node"
    # The phase each cell was in when its process ended (docs/methodology.md, "Where a cell runs").
    assert errors["[1,8,48]"] == "cell process exited with status 3 during first call"
    assert errors["[1,8,64]"] == "cell process killed by SIGKILL during first call (out of memory, or killed)"
    assert errors["[1,8,80]"] == "timed out: the Slurm task reached its time limit (hydra.launcher.timeout_min=2)"
    assert cells["placement"].str.startswith("cpu:").all() and (cells.drop("[1,8,16]")["status"] == "error").all()
    sleeper = int((tmp_path / "sleeper.pid").read_text())  # stopped at the warning, not left running
    assert not Path(f"/proc/{sleeper}").exists() or "zombie" in Path(f"/proc/{sleeper}/status").read_text()


def _start_parked(root: Path, *extra: str) -> tuple[subprocess.Popen, dict]:
    park = root / "park"
    park.mkdir(exist_ok=True)
    (park / "task.json").unlink(missing_ok=True)
    env = dict(os.environ, PARK=str(park), COLUMNS="200")
    env.pop("HYDRA_FULL_ERROR", None)
    proc = subprocess.Popen(
        [console_script("neuronexp"), *_args(root, "Sleepy", *extra)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not (park / "task.json").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.1)
    time.sleep(0.5)
    return proc, json.loads((park / "task.json").read_text())


def _communicate(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the sweep was still waiting after {timeout} s: {err[-1000:]}")


def test_a_cancelled_task_is_an_error_row_and_the_sweep_resumes(slurm, tmp_path: Path) -> None:
    # Slurm SIGTERMs every process of the task; the cell dies of it, the task's worker (submitit ignores SIGTERM)
    # writes the cell's row before Slurm's SIGKILL comes (KillWait).
    proc, task = _start_parked(tmp_path)
    subprocess.run(["scancel", f"{task['job']}_{task['task']}"], check=True)
    out, err = _communicate(proc, 120)
    assert proc.returncode == 1, err
    cells = _cells(tmp_path)
    assert cells.loc["[1,8,16]", "status"] == "ok"
    assert cells.loc["[1,8,32]", "error"] == (
        "cell process killed by SIGTERM during first call (Slurm stopped the "
        "task: scancel, preemption or its time limit)"
    )
    res = run_cli(_args(tmp_path, "Sleepy"), cwd=tmp_path)  # PARK unset: nothing sleeps now
    assert res.returncode == 0, res.stderr
    again = _cells(tmp_path)
    assert again.loc["[1,8,16]", "status"] == "cached" and again.loc["[1,8,32]", "status"] == "ok"


def test_a_task_killed_outright_is_not_waited_for_and_the_sweep_resumes(slurm, tmp_path: Path) -> None:
    # The task's own process (submitit's worker) SIGKILLed, as the OOM killer would: its cell dies with it, the task
    # fails, and no result file is written. Without accounting, only squeue tells the sweep that the task is over.
    proc, task = _start_parked(tmp_path)
    os.kill(task["worker"], signal.SIGKILL)
    out, err = _communicate(proc, 120)
    assert proc.returncode == 3  # the launcher gave up: not finished (1 means a cell failed)
    assert (
        f"the launcher stopped the sweep (SlurmTasksLost: 1 of 2 Slurm tasks ended without a result: "
        f"{task['job']}_{task['task']} (FAILED))"
    ) in err and "to resume it" in err, err
    assert _cells(tmp_path).loc["[1,8,16]", "status"] == "ok"
    assert "- job 1" in (tmp_path / "sweep" / "results" / "summary.md").read_text()
    res = run_cli(_args(tmp_path, "Sleepy"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    again = _cells(tmp_path)
    assert again.loc["[1,8,16]", "status"] == "cached" and again.loc["[1,8,32]", "status"] == "ok"


def test_resubmitting_after_the_submitting_process_was_killed_finds_the_finished_tasks(slurm, tmp_path: Path) -> None:
    # 1. The 16-wide cell finishes, the 32-wide one is parked; the submitting process is SIGKILLed (an ssh session
    #    lost). Its array keeps running: Slurm does not know about the submitter.
    proc, task = _start_parked(tmp_path)
    deadline = time.time() + 120
    while not (tmp_path / "sweep" / "0" / "cells.parquet").exists():
        assert time.time() < deadline
        time.sleep(0.2)
    first_pid = neuronexp.load(tmp_path / "sweep" / "0").cells["worker_pid"].iloc[0]
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert f"{task['job']}_{task['task']}" in _squeue("--array", "--format=%i").split()
    # 2. Resubmitting now would run the parked cell a second time, two tasks writing one directory: refused.
    res = run_cli(_args(tmp_path, "Sleepy"), cwd=tmp_path, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith(
        f"neuronexp: error: hydra.sweep.dir=sweep: Slurm job {task['job']} of an earlier submission still runs its "
        f"cells there (RUNNING); wait until squeue no longer lists it, or scancel {task['job']}"
    ), res.stderr
    # 3. Once it has ended, the resubmission finds the finished cell (not measured again) and runs the rest.
    subprocess.run(["scancel", task["job"]], check=True)
    _wait_until_gone([task["job"]])
    res = run_cli(_args(tmp_path, "Sleepy"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    cells = _cells(tmp_path)
    assert cells.loc["[1,8,16]", "status"] == "cached" and cells.loc["[1,8,16]", "worker_pid"] == first_pid
    assert cells.loc["[1,8,32]", "status"] == "ok"
