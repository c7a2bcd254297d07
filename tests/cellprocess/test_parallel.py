"""Parallel sweeps: device slots (unit), hydra/launcher=parallel and submitit_local end to end (a process of its own per
cell, forked from the fork server's template), and cells or workers killed mid-sweep."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import neuronexp
from helpers import FAST, console_script
from neuronexp.cell.rows import describe_placement as describe
from neuronexp.cellprocess.placement import PlacementError, Slot, hold_slot, plan_slots
from neuronexp.config import format_units, parse_units
from neuronexp.engine.progress import CellWatcher
from neuronexp.host import allocator
from neuronexp.host.threads import default_threads

QUICK = [a for a in FAST if not a.startswith("input.shape")]
TWO_CPUS = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPU cores for 2 slots")

# A user layer for the end-to-end tests: building it takes a while (so two cells surely overlap), and with
# PROBE_PARK set its forward on 32-wide inputs records its pid and its supervisor's (the launcher worker) and waits
# there to be killed.
PROBE = """
import json, os, time, torch
from pathlib import Path

class Probe(torch.nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep(0.5)

    def forward(self, x):
        park = os.environ.get("PROBE_PARK")
        if park and x.shape[-1] == 32:
            pids = {"cell": os.getpid(), "worker": int(os.environ["NEURONEXP_SUPERVISOR_PID"])}
            Path(park, "pids.json").write_text(json.dumps(pids))
            time.sleep(120)
        return x * 2
"""
PROBE_ARGS = ["-m", "module._target_=probe.Probe", "~module.hidden_size", "~module.eps", *QUICK]
SHAPES = "input.shape=[1,8,16],[1,8,32],[1,8,48]"


# --- slots -------------------------------------------------------------------------------------------------


def test_units_parse_and_format_as_ranges() -> None:
    assert parse_units("0-3,6") == ["0", "1", "2", "3", "6"]
    assert format_units(["0", "1", "2", "5"]) == "0-2,5" and format_units([7]) == "7" and format_units([]) == ""
    assert format_units(parse_units("GPU-aa,GPU-bb")) == "GPU-aa,GPU-bb"


def test_slots_split_the_host_without_overlap() -> None:
    cpu = plan_slots("cpu", 2, None, [], [0, 1, 2, 3])
    assert [s.units for s in cpu] == [("0", "1"), ("2", "3")] and [s.cpus for s in cpu] == [(0, 1), (2, 3)]
    neuron = plan_slots("neuron", 4, 2, parse_units("0-7"), list(range(16)))
    assert [s.label for s in neuron] == ["neuron:0-1", "neuron:2-3", "neuron:4-5", "neuron:6-7"]
    assert neuron[2].env()["NEURON_RT_VISIBLE_CORES"] == "4-5" and neuron[2].cpus == (8, 9, 10, 11)
    cuda = plan_slots("cuda", 2, None, ["3", "5"], [0])
    assert [s.env()["CUDA_VISIBLE_DEVICES"] for s in cuda] == ["3", "5"] and cuda[1].cpus == (0,)  # too few to split
    assert cuda[0].env()["OMP_NUM_THREADS"] == "1"


@pytest.mark.parametrize(
    ("kind", "devices", "per", "pool", "message"),
    [
        (
            "cuda",
            3,
            None,
            ["0", "1"],
            "launcher.devices=3 x launcher.per_device=1 needs 3 GPUs; 2 available here (0-1)",
        ),
        ("cpu", 3, None, [], "needs 3 CPU cores; 2 available"),
        ("neuron", 1, 2, ["0", "2"], "NeuronCore slot 0,2 is not a contiguous range"),
    ],
)
def test_slots_that_do_not_fit_say_which_key_to_change(kind, devices, per, pool, message) -> None:
    with pytest.raises(PlacementError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan_slots(kind, devices, per, pool, [0, 1])


def _hold(slots: list[Slot], lock_dir: str, log: str, hold_s: float, meet: Any = None) -> None:
    with hold_slot(slots, Path(lock_dir), poll_s=0.01) as slot:
        start = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of the machine
        if meet is not None:
            meet.wait()  # held until another process holds a slot too (a Barrier of two): both at the same moment
        time.sleep(hold_s)
        with open(log, "a") as f:
            f.write(json.dumps([slot.index, start, time.monotonic()]) + "\n")


def test_concurrent_processes_never_share_a_slot(tmp_path: Path) -> None:
    # Six processes compete for two slots; each holds its slot until a second process holds one too (a barrier of
    # two), so holders meet in pairs whatever the load: if they could share a slot, a pair would be on one slot;
    # if the second slot were never handed out, no second holder would come and the barrier would time out.
    # Per slot, the intervals held (one clock for all processes) must never overlap.
    slots = plan_slots("cpu", 2, 1, ["0", "1"], [0, 1])
    log = tmp_path / "held.jsonl"
    ctx = mp.get_context("fork")
    meet = ctx.Barrier(2, timeout=60)
    procs = [ctx.Process(target=_hold, args=(slots, str(tmp_path / "locks"), str(log), 0.05, meet)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    held = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(held) == 6 and {h[0] for h in held} == {0, 1}
    for index in (0, 1):
        spans = sorted((s, e) for i, s, e in held if i == index)
        assert all(prev_end <= start for (_, prev_end), (start, _) in zip(spans, spans[1:])), spans


def test_a_killed_holder_frees_its_slot(tmp_path: Path) -> None:
    slots = plan_slots("cuda", 1, None, ["0"], [0])
    ctx = mp.get_context("fork")
    holder = ctx.Process(target=_hold, args=(slots, str(tmp_path), str(tmp_path / "log"), 60))
    holder.start()
    deadline = time.time() + 10
    while not list(tmp_path.glob("cuda-0.lock")) and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    started = time.monotonic()
    with hold_slot(slots, tmp_path) as slot:  # the kernel released the dead process's lock
        assert slot.index == 0 and time.monotonic() - started < 1


def test_describe_reads_the_process_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    cpus = format_units(sorted(os.sched_getaffinity(0)))
    assert describe("cpu", None)["placement"] == f"cpu:{cpus}"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert describe("cuda", type("D", (), {"index": 1})())["placement"] == "cuda:5"
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "4-5")
    row = describe("neuron", None)
    assert row["placement"] == "neuron:4-5" and row["worker_pid"] == os.getpid() and row["placement_cpus"] == cpus


def test_the_watcher_reports_new_and_rewritten_cells_once(tmp_path: Path) -> None:
    jobs = [tmp_path / str(i) for i in range(3)]
    for d in jobs:
        d.mkdir()
    table = pa.table({"status": ["ok"], "placement": ["cpu:0"]})
    pq.write_table(table, jobs[0] / "cells.parquet")  # from an earlier run: not this sweep's
    seen: list[tuple[int, str]] = []
    watcher = CellWatcher(jobs, lambda i, row: seen.append((i, row["placement"])), interval_s=0.01)
    pq.write_table(table, jobs[1] / "cells.parquet")
    watcher.poll()
    assert seen == [(1, "cpu:0")]
    os.utime(jobs[0] / "cells.parquet", ns=(1, 1))  # a cached cell is touched when its job revisits it
    watcher.start().stop()
    watcher.poll()
    assert sorted(seen) == [(0, "cpu:0"), (1, "cpu:0")]


# --- end to end --------------------------------------------------------------------------------------------


def _same_tables(a: neuronexp.Results, b: neuronexp.Results) -> None:
    """Same columns in the same order, and the same cells (labels, config hash, outcome)."""
    for x, y in zip(a, b):
        assert list(x.columns) == list(y.columns)
    key = [
        "run_id",
        "experiment",
        "module",
        "compiled",
        "backend",
        "device",
        "dtype",
        "input_shape",
        "overrides",
        "status",
    ]
    assert sorted(map(tuple, a.cells[key].astype(str).values)) == sorted(map(tuple, b.cells[key].astype(str).values))
    assert set(a.ops["run_id"]) == set(b.ops["run_id"]) and set(a.samples["run_id"]) == set(b.samples["run_id"])


def _host_columns(cells: pd.DataFrame, threads: int) -> None:
    """Every process that ran a cell set its malloc up (allocator=stable by default) and used `threads` threads:
    the slot's cores under a parallel launcher, the process's cores under the basic one (issue 9)."""
    assert (cells["allocator"] == "stable").all() and (cells["threads"] == threads).all()
    if allocator.malloc_name().startswith("glibc"):
        assert cells["malloc"].str.startswith("glibc").all() and cells["allocator_note"].isna().all()


@pytest.fixture(scope="module")
def basic_sweep(tmp_path_factory: pytest.TempPathFactory) -> neuronexp.Results:
    """The reference: the same sweep through Hydra's basic launcher, in one process."""
    from helpers import run_cli

    root = tmp_path_factory.mktemp("basic")
    (root / "probe.py").write_text(PROBE)
    res = run_cli([*PROBE_ARGS, SHAPES, f"hydra.sweep.dir={root / 'sweep'}"], cwd=root)
    assert res.returncode == 0, res.stderr
    results = neuronexp.load(root / "sweep")
    # The basic launcher's cells: torch's count less the CPU it leaves spare where it would take them all.
    _host_columns(results.cells, default_threads(torch.get_num_threads()) or torch.get_num_threads())
    return results


@TWO_CPUS
@pytest.mark.slow  # 17 s on the 2-core VM
def test_parallel_sweep_places_cells_on_distinct_slots_with_the_basic_tables(cli, tmp_path: Path, basic_sweep) -> None:
    (tmp_path / "probe.py").write_text(PROBE)
    sweep = tmp_path / "sweep"
    res = cli(
        *PROBE_ARGS,
        SHAPES,
        "hydra/launcher=parallel",
        "launcher.devices=2",
        f"launcher.lock_dir={tmp_path / 'locks'}",
        f"hydra.sweep.dir={sweep}",
    )
    assert res.returncode == 0, res.stderr
    results = neuronexp.load(sweep)
    cells = results.cells
    assert len(cells) == 3 and (cells["status"] == "ok").all()
    _same_tables(results, basic_sweep)
    # Each cell ran in a process of its own pinned to one core of its own; both slots were used.
    assert set(cells["placement"]) == {"cpu:0", "cpu:1"}
    assert (cells["placement"] == "cpu:" + cells["placement_cpus"]).all()
    assert cells["worker_pid"].nunique() == 3 and os.getpid() not in set(cells["worker_pid"])
    _host_columns(cells, 1)
    # The main process reported every cell as its file appeared, with where it ran.
    log = res.stdout + res.stderr
    assert "cell 3/3" in log and "· cpu:" in log and "launcher.devices" not in cells["overrides"].str.cat()
    # The basic launcher runs each cell in a process of its own too, without a slot: on the sweep's cores.
    assert basic_sweep.cells["placement"].str.startswith("cpu:").all()
    assert basic_sweep.cells["worker_pid"].nunique() == 3


def test_warm_workers_are_gone_with_a_one_line_migration_error(cli, tmp_path: Path) -> None:
    res = cli(
        "-m", *QUICK, "input.shape=[1,8,16],[1,8,32]", "launcher.isolate=false", f"hydra.sweep.dir={tmp_path / 'sweep'}"
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert (
        res.stderr.strip()
        .splitlines()[-1]
        .startswith("neuronexp: error: launcher.isolate=False: warm workers are gone")
    )
    assert not (tmp_path / "sweep").exists()


def _start_parked(tmp_path: Path, keep_park: bool = False) -> tuple[subprocess.Popen, dict[str, int]]:
    (tmp_path / "probe.py").write_text(PROBE)
    park = tmp_path / "park"
    park.mkdir(exist_ok=keep_park)
    env = dict(os.environ, PROBE_PARK=str(park), COLUMNS="200")
    env.pop("HYDRA_FULL_ERROR", None)
    args = [
        console_script("neuronexp"),
        *PROBE_ARGS,
        "input.shape=[1,8,16],[1,8,32]",
        "hydra/launcher=parallel",
        "launcher.devices=2",
        f"launcher.lock_dir={tmp_path / 'locks'}",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
    ]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (park / "pids.json").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.1)
    return proc, json.loads((park / "pids.json").read_text())


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _rerun(cli, tmp_path: Path) -> neuronexp.Results:
    res = cli(
        *PROBE_ARGS,
        "input.shape=[1,8,16],[1,8,32]",
        "hydra/launcher=parallel",
        "launcher.devices=2",
        f"launcher.lock_dir={tmp_path / 'locks'}",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
    )
    assert res.returncode == 0, res.stderr
    return neuronexp.load(tmp_path / "sweep")


@TWO_CPUS
@pytest.mark.slow  # 22 s on the 2-core VM
def test_a_killed_cell_is_an_error_row_a_killed_sweep_leaves_no_cell_and_resume_finishes_both(
    cli, tmp_path: Path
) -> None:
    # 1. The parked cell's own process is killed (as the OOM killer would): its supervisor (the sweep) writes an
    #    error row and the sweep completes.
    proc, pids = _start_parked(tmp_path)
    assert pids["worker"] == proc.pid  # the sweep supervises its parallel cells itself: no launcher workers
    os.kill(pids["cell"], signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    sweep = tmp_path / "sweep"
    cells = neuronexp.load(sweep).cells.set_index("input_shape")
    assert cells.loc["[1,8,16]", "status"] == "ok"
    victim = cells.loc["[1,8,32]"]
    assert (
        victim["status"] == "error"
        and victim["error"] == "cell process killed by SIGKILL during first call (out of memory, or killed)"
    )
    assert victim["placement"] in ("cpu:0", "cpu:1") and victim["worker_pid"] == pids["cell"]
    # 2. Resumed, the failed cell runs again and parks again; now its supervisor, the sweep, is killed: no file is
    #    half written, the parked cell is not complete, and its process died with its supervisor.
    (tmp_path / "park" / "pids.json").unlink()
    proc, pids = _start_parked(tmp_path, keep_park=True)
    os.kill(pids["worker"], signal.SIGKILL)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    for path in sweep.glob("*/*.parquet"):
        pd.read_parquet(path)
    assert not (sweep / "1" / "cells.parquet").exists()
    deadline = time.time() + 30
    while _alive(pids["cell"]) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(pids["cell"])  # PR_SET_PDEATHSIG: not left running on its device
    # 3. Resumed again (nothing parks now): complete, and the cell that finished first was never rerun.
    again = _rerun(cli, tmp_path).cells.set_index("input_shape")
    assert again.loc["[1,8,32]", "status"] == "ok"
    assert (
        again.loc["[1,8,16]", "status"] == "cached"
        and again.loc["[1,8,16]", "worker_pid"] == cells.loc["[1,8,16]", "worker_pid"]
    )


@pytest.mark.slow
@TWO_CPUS
def test_submitit_local_sweep_has_the_basic_tables_and_resumes_on_resubmission(
    cli, tmp_path: Path, basic_sweep
) -> None:
    # The Slurm path for real (submitit pickles each job, runs it in its own process, results come back through
    # the shared sweep directory), on submitit's local executor: no Slurm mock.
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    (tmp_path / "probe.py").write_text(PROBE)
    sweep = tmp_path / "sweep"
    args = (
        *PROBE_ARGS,
        SHAPES,
        "hydra/launcher=submitit_local",
        "launcher.devices=2",
        f"launcher.lock_dir={tmp_path / 'locks'}",
        f"hydra.sweep.dir={sweep}",
    )
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    results = neuronexp.load(sweep)
    _same_tables(results, basic_sweep)
    assert (
        set(results.cells["placement"]) == {"cpu:0", "cpu:1"}
        and len(list((sweep / ".submitit").glob("*/*_result.pkl"))) == 3
    )
    _host_columns(results.cells, 1)
    # Resubmitting the same sweep (as after a preempted or timed-out allocation) measures nothing again.
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    again = neuronexp.load(sweep).cells.set_index("run_id")
    first = results.cells.set_index("run_id")
    assert (again["status"] == "cached").all()
    assert (again.loc[first.index, "worker_pid"] == first["worker_pid"]).all()
