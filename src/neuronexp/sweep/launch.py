"""A cell in a process of its own, supervised. Every cell of a sweep (and a single run with launcher.isolate=true)
runs in a process forked from the fork server's template (neuronexp.sweep.forkserver), on a device slot of its own
under parallel and Slurm launchers. Its supervisor (the sweep process under the basic launcher, else the
launcher's worker) waits for it and writes the cell's error row when it ends without one: killed by a signal (a
segfault, the out-of-memory killer), an exit from inside the layer (`os._exit`), or past `launcher.cell_timeout_s`.
The sweep goes on.

Why a process per cell: a crash, a hang or the leaked device state of one cell cannot take the sweep or the next
cell with it; and a device runtime reads its device selection (NEURON_RT_VISIBLE_CORES, CUDA_VISIBLE_DEVICES) once,
when it starts, which is in the cell's process, after the slot's environment is set there.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from neuronexp.cell.environment import host_cpus, visible_cuda_devices
from neuronexp.config import LauncherConfig, format_units, parse_units
from neuronexp.results.files import read_phase
from neuronexp.sweep.forkserver import ADDRESS_ENV, Ended, allocator_mode, run_forked, signal_name
from neuronexp.sweep.placement import PlacementError, Slot, hold_slot, plan_slots
from neuronexp.sweep.slurm import SlurmTimeLimit, signal_hint

# Set in a cell's process: the pid of the process that supervises it (the sweep, or a launcher's worker).
SUPERVISOR_ENV = "NEURONEXP_SUPERVISOR_PID"
# Hydra's job log (hydra.job.name in conf/config.yaml): what the cell logs goes there, as in a single run.
JOB_LOG = "neuronexp.log"


@dataclass
class CellRequest:
    """What the cell's process needs to rebuild the cell: its resolved config, its labels, where it runs."""

    config: dict[str, Any]
    choices: dict[str, Any]
    task: list[str]
    override_dirname: str
    run_id: str
    out_dir: str
    kind: str = "cpu"
    slotted: bool = False  # on a device slot: the slot's environment, not the config, selects NeuronCores


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


def run_supervised(request: CellRequest, spec: Any, launcher: LauncherConfig) -> Any:
    """Run the cell in a process of its own (on a free device slot when `request.slotted`); its tables.

    A process that ends without writing its row gets an error row here, saying how it ended.
    """
    from neuronexp.cell.rows import write_lost_cell
    from neuronexp.results import read_job

    out_dir = Path(request.out_dir)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    slot = None
    try:
        if not request.slotted:
            ended = _run(request, None, launcher)
        else:
            try:
                slots = plan_slots(request.kind, launcher.devices, launcher.per_device,
                                   default_pool(request.kind, launcher, spec.config.neuron.visible_cores), host_cpus())
            except PlacementError as exc:
                return write_lost_cell(spec, out_dir, f"PlacementError: {exc}", request.kind, _where(None), started_at)
            with hold_slot(slots, Path(launcher.lock_dir) if launcher.lock_dir else None) as slot:
                (out_dir / "cells.parquet").unlink(missing_ok=True)  # an earlier error row must not pass for this run's
                ended = _run(request, slot, launcher)
    except SlurmTimeLimit as exc:  # raised in this Slurm task by its time-limit warning; leaving run_forked killed the cell
        return write_lost_cell(spec, out_dir, f"timed out: {exc}", request.kind, _where(slot, None, request.kind), started_at)
    if (out_dir / "cells.parquet").is_file():
        return read_job(out_dir)
    cause = _cause(ended, launcher.cell_timeout_s, out_dir)
    return write_lost_cell(spec, out_dir, cause, request.kind, _where(slot, ended.pid, request.kind), started_at)


def run_group_supervised(requests: list[CellRequest], specs: list[Any], launcher: LauncherConfig) -> list[Any]:
    """Run a comparison group's cells in one process of their own (cell.group: timed together); their tables.

    The process gets `launcher.cell_timeout_s` for each of its cells. A cell it ends without writing gets an error
    row here, as a lone cell's would."""
    from neuronexp.cell.rows import write_lost_cell
    from neuronexp.results import read_job

    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    first = requests[0]
    timeout = launcher.cell_timeout_s * len(requests) if launcher.cell_timeout_s else launcher.cell_timeout_s
    ended = _run(first, None, launcher, target="group_main", payload={"cells": [vars(r) for r in requests]},
                 timeout_s=timeout)
    out = []
    for request, spec in zip(requests, specs):
        out_dir = Path(request.out_dir)
        if (out_dir / "cells.parquet").is_file():
            out.append(read_job(out_dir))
            continue
        cause = _cause(ended, timeout, out_dir, Path(first.out_dir) / "cell.log")
        out.append(write_lost_cell(spec, out_dir, cause, request.kind, _where(None, ended.pid, request.kind), started_at))
    return out


def _run(request: CellRequest, slot: Slot | None, launcher: LauncherConfig, target: str = "child_main",
         payload: dict[str, Any] | None = None, timeout_s: float | None = None) -> Ended:
    env = dict(os.environ, **(slot.env() if slot else {}), **{SUPERVISOR_ENV: str(os.getpid())})
    env.pop(ADDRESS_ENV, None)  # a cell supervises nothing
    if slot is not None and slot.kind == "neuron":
        env.pop("NEURON_RT_NUM_CORES", None)  # the slot's VISIBLE_CORES says which cores, and so how many
    return run_forked({
        "target": f"{__name__}:{target}", "payload": payload or vars(request), "kind": request.kind, "env": env,
        "cwd": os.getcwd(), "sys_path": sys.path, "cpus": list(slot.cpus) if slot else None,
        "log": str(Path(request.out_dir) / "cell.log"),  # the cell's own output, kept apart from other cells'
        "allocator": allocator_mode(request.config),  # forked from a template with that malloc mode
    }, timeout_s if payload is not None else launcher.cell_timeout_s)


def _where(slot: Slot | None, pid: int | None = None, kind: str = "cpu") -> dict[str, Any]:
    import socket

    cpus = format_units(slot.cpus if slot else host_cpus())  # without a slot, the cell has its supervisor's cores
    placement = slot.label if slot else (f"cpu:{cpus}" if kind == "cpu" else None)
    return {"placement": placement, "placement_cpus": cpus, "worker_pid": pid, "host": socket.gethostname()}


def _cause(ended: Ended, timeout_s: float | None, out_dir: Path, log: Path | None = None) -> str:
    """The error text of a cell whose process wrote no row."""
    phase = read_phase(out_dir)
    during = f" during {phase}" if phase else ""
    if ended.timed_out and ended.pid is not None:
        return f"timed out after {timeout_s:g} s{during} (launcher.cell_timeout_s)"
    if ended.refused:
        return f"cell process {'lost' if ended.pid else 'not started'}: {ended.refused}"
    if ended.signal:
        hint = " (out of memory, or killed)" if signal_name(ended.signal) == "SIGKILL" else signal_hint(ended.signal)
        return f"cell process killed by {signal_name(ended.signal)}{during}{hint}"
    log = log or out_dir / "cell.log"
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()] if log.is_file() else []
    return f"cell process exited with status {ended.code}{during}" + (f": {lines[-1][:300]}" if lines else "")


def _spec_of(request: CellRequest) -> Any:
    from omegaconf import DictConfig, OmegaConf

    from neuronexp.config import RunConfig
    from neuronexp.config.compose import spec_from

    cfg = OmegaConf.merge(OmegaConf.structured(RunConfig), request.config)
    assert isinstance(cfg, DictConfig), type(cfg)  # merged into a structured config: a mapping
    spec = spec_from(cfg, request.choices, request.task, request.override_dirname)
    if spec.run_id != request.run_id:
        raise RuntimeError(f"the cell's config changed on its way to the cell process ({spec.run_id} != {request.run_id})")
    if request.slotted and request.kind == "neuron":  # the slot's environment placed this process; the config must not move it
        spec.config.neuron.visible_cores = spec.config.neuron.num_cores = None
    return spec


def _log_to(out_dir: Path) -> None:
    import logging

    handler = logging.FileHandler(out_dir / JOB_LOG)
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)


def child_main(payload: dict[str, Any]) -> int:
    """The cell's process (forked, placed by childproc.enter_cell_process): rebuild the cell and run it."""
    from neuronexp.cell.run import run_cell

    request = CellRequest(**payload)
    _log_to(Path(request.out_dir))
    run_cell(_spec_of(request), Path(request.out_dir))
    return 0


def group_main(payload: dict[str, Any]) -> int:
    """A comparison group's process: rebuild its cells and run them timed together (cell.group)."""
    from neuronexp.cell.group import run_cells

    requests = [CellRequest(**p) for p in payload["cells"]]
    for request in requests:  # what the group's process logs is in each of its cells' logs
        _log_to(Path(request.out_dir))
    run_cells([_spec_of(r) for r in requests], [Path(r.out_dir) for r in requests])
    return 0
