"""Cells of parallel and Slurm sweeps on device slots of their own: a fresh process per cell (the default), or
cells run warm in a worker that keeps one slot for its life (`launcher.isolate=false`).

Why a fresh process per cell by default: a device runtime reads its device selection once, when it starts
(`NEURON_RT_VISIBLE_CORES`, `CUDA_VISIBLE_DEVICES`), and joblib's loky reuses its worker processes, which have
imported torch (and with it torch-neuronx's autoload) before a job runs. A process started for the cell, with
the slot's environment set before Python starts, is placed beyond doubt; it also starts with no other cell's
compiled graphs, leaked device memory or crashed runtime, and when it dies (kill -9, the OOM killer) the
launching worker survives to write the cell's error row. The cost is an interpreter start, `import torch` and
a cold compiler stack per cell (docs/performance.md: large for TorchInductor on CPU), which the pinned worker
avoids at the price of that isolation.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from neuronexp.backends import backend_kind
from neuronexp.cell.environment import host_cpus, visible_cuda_devices
from neuronexp.config import LauncherConfig, format_units, parse_units
from neuronexp.sweep.placement import PlacementError, Slot, acquire_slot, hold_slot, plan_slots
from neuronexp.sweep.slurm import SlurmTimeLimit, signal_hint

# Runs before anything is imported, so numpy's and torch's thread pools start inside the slot's cores.
_BOOTSTRAP = """\
import os, sys
cpus = os.environ.pop("NEURONEXP_CPUS", "")
if cpus and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
from neuronexp.sweep.launch import child_main
sys.exit(child_main(int(sys.argv[1])))
"""


# Set in a warm worker once it holds its slot (launcher.isolate=false): the slot's label.
PINNED_ENV = "NEURONEXP_PINNED_SLOT"


@dataclass
class CellRequest:
    """What the fresh process needs to rebuild the cell: its resolved config and its labels."""

    config: dict[str, Any]
    choices: dict[str, Any]
    task: list[str]
    override_dirname: str
    run_id: str
    out_dir: str
    kind: str = "cpu"


def default_pool(kind: str, launcher: LauncherConfig, neuron_cores: str | None) -> list[str]:
    """The units this host offers for `kind` (see `LauncherConfig.pool`); [] means the CPU affinity."""
    if launcher.pool:
        return parse_units(launcher.pool)
    if kind == "cuda":
        visible = visible_cuda_devices()
        if visible is not None:  # set by Slurm (--gpus) or submitit_local (gpus_per_node)
            return visible
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    if kind == "neuron":  # counting cores would start the runtime here and reserve every core
        cores = neuron_cores or os.environ.get("NEURON_RT_VISIBLE_CORES")
        return parse_units(cores) if cores else [str(i) for i in range(launcher.devices * (launcher.per_device or 1))]
    return []


def run_in_slot(request: CellRequest, spec: Any, launcher: LauncherConfig) -> Any:
    """Wait for a free slot, run the cell in a fresh process there, return its tables.

    A process that dies without writing its row (signal, out of memory, crash) gets an error row here.
    """
    from neuronexp.results import read_job
    from neuronexp.cell.rows import write_lost_cell

    out_dir = Path(request.out_dir)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        slots = plan_slots(request.kind, launcher.devices, launcher.per_device,
                           default_pool(request.kind, launcher, spec.config.neuron.visible_cores), host_cpus())
    except PlacementError as exc:
        return write_lost_cell(spec, out_dir, f"PlacementError: {exc}", request.kind, _where(None), started_at)
    lock_dir = Path(launcher.lock_dir) if launcher.lock_dir else None
    slot = None
    try:
        with hold_slot(slots, lock_dir) as slot:
            (out_dir / "cells.parquet").unlink(missing_ok=True)  # an earlier error row must not pass for this run's
            pid, code = _spawn(request, slot, out_dir)
    except SlurmTimeLimit as exc:  # raised in this Slurm task by the time-limit warning; _spawn stopped the cell
        return write_lost_cell(spec, out_dir, f"timed out: {exc}", request.kind, _where(slot), started_at)
    if (out_dir / "cells.parquet").is_file():
        return read_job(out_dir)
    return write_lost_cell(spec, out_dir, _death(code, out_dir / "cell.log"), request.kind, _where(slot, pid), started_at)


def run_pinned(spec: Any, out_dir: Path, kind: str, launcher: LauncherConfig) -> Any:
    """Run the cell in this worker, which takes a slot at its first cell and keeps it until it exits."""
    from neuronexp.cell.rows import write_lost_cell
    from neuronexp.cell.run import run_cell

    # Where this worker is placed is state of the process, and kept where such state lives: its environment
    # (like CUDA_VISIBLE_DEVICES). The slot's lock descriptors are never closed; the kernel releases them
    # when the worker exits.
    if PINNED_ENV not in os.environ:
        try:
            slots = plan_slots(kind, launcher.devices, launcher.per_device,
                               default_pool(kind, launcher, spec.config.neuron.visible_cores), host_cpus())
        except PlacementError as exc:
            started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
            return write_lost_cell(spec, out_dir, f"PlacementError: {exc}", kind, _where(None), started_at)
        slot, _ = acquire_slot(slots, Path(launcher.lock_dir) if launcher.lock_dir else None)
        _select_in_process(slot)
        os.environ[PINNED_ENV] = slot.label
    if kind == "neuron":  # the slot placed this worker; the config must not move it
        spec.config.neuron.visible_cores = spec.config.neuron.num_cores = None
    return run_cell(spec, out_dir)


def _select_in_process(slot: Slot) -> None:
    """The slot's devices for this process, chosen where the process can still choose them."""
    import torch

    if slot.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, slot.cpus)
        torch.set_num_threads(len(slot.cpus))
    if slot.kind == "cuda":  # CUDA_VISIBLE_DEVICES was read when CUDA started (the backend probe); pick by index
        visible = visible_cuda_devices() or []
        unit = slot.units[0]
        torch.cuda.set_device(visible.index(unit) if unit in visible else int(unit))
    elif slot.kind == "neuron":  # read when the runtime starts: at this worker's first cell, after this
        os.environ["NEURON_RT_VISIBLE_CORES"] = format_units(slot.units)
        os.environ.pop("NEURON_RT_NUM_CORES", None)


def _spawn(request: CellRequest, slot: Slot, out_dir: Path) -> tuple[int, int]:
    env = dict(os.environ, **slot.env())
    if slot.kind == "neuron":
        env.pop("NEURON_RT_NUM_CORES", None)  # the slot's VISIBLE_CORES says which cores, and so how many
    with open(out_dir / "cell.log", "ab") as log:  # the cell's own output, kept apart from other cells'
        proc = subprocess.Popen([sys.executable, "-c", _BOOTSTRAP, str(os.getpid())], stdin=subprocess.PIPE,
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            proc.communicate(json.dumps(vars(request)).encode())
        except BaseException:  # a signal handler raised here (Slurm's time limit, Ctrl-C): the cell goes too
            proc.kill()
            proc.wait()
            raise
    return proc.pid, proc.returncode


def _where(slot: Slot | None, pid: int | None = None) -> dict[str, Any]:
    import socket

    return {"placement": slot.label if slot else None, "placement_cpus": format_units(slot.cpus) if slot else None,
            "worker_pid": pid, "host": socket.gethostname()}


def _death(code: int, log: Path) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory, or killed)" if -code == signal.SIGKILL else signal_hint(-code)
        return f"cell process killed by {name}{hint}"
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()] if log.is_file() else []
    return f"cell process exited with status {code}" + (f": {lines[-1][:300]}" if lines else "")


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when the worker that launched it dies (a killed worker)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def child_main(parent: int) -> int:
    """Entry of the fresh process: rebuild the cell from the request on stdin and run it."""
    _die_with_parent(parent)
    request = CellRequest(**json.load(sys.stdin))
    import torch
    from omegaconf import OmegaConf

    from neuronexp.config.compose import spec_from
    from neuronexp.config import RunConfig
    from neuronexp.cell.run import run_cell

    if hasattr(os, "sched_getaffinity"):
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    cfg = OmegaConf.merge(OmegaConf.structured(RunConfig), request.config)
    spec = spec_from(cfg, request.choices, request.task, request.override_dirname)
    if spec.run_id != request.run_id:
        raise RuntimeError(f"the cell's config changed on its way to the cell process ({spec.run_id} != {request.run_id})")
    if request.kind == "neuron":  # the slot's environment placed this process; the config must not move it
        spec.config.neuron.visible_cores = spec.config.neuron.num_cores = None
    run_cell(spec, Path(request.out_dir))
    return 0
