"""A cell (or a comparison group) in a supervised process of its own, on a device slot of its own under parallel and
Slurm launchers; whether the slots a config asks for exist on this machine. The supervisor (the sweep's process, or a
Slurm task) writes the cell's error row when its process ends without one: a signal, an exit from inside the layer, its
time limit. Why a process per cell: a crash, a hang or leaked device state cannot take the sweep with it, and a device
runtime reads its slot's selection (the visible-devices variable) once, when it starts, in the cell's own process."""

from __future__ import annotations

import copy
import dataclasses
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronexp.backends import backend_kind
from neuronexp.backends.table import HOST, backend_info
from neuronexp.cellprocess.childproc import ForkRequest
from neuronexp.cellprocess.entry import run_cell_process
from neuronexp.cellprocess.forkserver import ADDRESS_ENV, Ended, run_forked, signal_name
from neuronexp.cellprocess.placement import PlacementError, Slot, hold_slot, plan_slots
from neuronexp.config import CellSpec, ConfigError, RunConfig, format_units, parse_units
from neuronexp.host.threads import host_cpus
from neuronexp.results.files import read_phase
from neuronexp.slurm.cluster import SlurmTimeLimit, signal_hint

# Set in a cell's process: the pid of the process that supervises it (the sweep, or a launcher's worker).
SUPERVISOR_ENV = "NEURONEXP_SUPERVISOR_PID"

if TYPE_CHECKING:
    from neuronexp.results import Results


def default_pool(kind: str, config: RunConfig) -> list[str]:
    """The units this host offers for `kind` (see `LauncherConfig.pool`): launcher.pool, else the backend's pool
    probe (BackendInfo.count_units), else, where counting would start its runtime, the units its row assumes from
    the config (BackendInfo.assumed_units: its selection, or the first ones the slots need)."""
    if config.launcher.pool:
        return parse_units(config.launcher.pool)
    info = backend_info(kind)
    units = info.count_units()
    return units if units is not None else info.assumed_units(config)


def check_slots_fit(kind: str, config: RunConfig) -> None:
    """Check before any cell runs that the device slots `config` asks for exist here (else every cell would become
    the same error row, or wait for a slot that is never free). ConfigError: `launcher.pool` names units this
    machine lacks, or the slots need more units than there are."""
    info, launcher = backend_info(kind), config.launcher
    units = info.count_units()  # None where they cannot be counted without starting the device runtime
    if launcher.pool and units is not None:
        beyond = [u for u in parse_units(launcher.pool) if u not in units]
        if beyond:
            raise ConfigError(
                "launcher.pool",
                launcher.pool,
                f"{info.unit} {format_units(beyond)} are not on this machine; it has {format_units(units) or 'none'}",
            )
    try:
        plan_slots(kind, launcher.devices, launcher.per_device, default_pool(kind, config), host_cpus())
    except PlacementError as exc:
        raise ConfigError("launcher.devices", launcher.devices, f"does not fit this machine ({exc})") from None


def run_supervised(specs: list[CellSpec], slotted: bool) -> list[Results]:
    """supervise, then each cell's tables, in order."""
    from neuronexp.results import read_job

    return [read_job(Path(s.out_dir)) if lost is None else lost for s, lost in zip(specs, supervise(specs, slotted))]


def supervise(specs: list[CellSpec], slotted: bool) -> list[Results | None]:
    """Run the placed cells (one, or a comparison group timed together: cell.group) in one process of their own, on a
    free device slot when `slotted`. The process gets `launcher.cell_timeout_s` for each of its cells. A cell it ends
    without writing gets an error row here, saying how the process ended: its tables, in order, None for each cell that
    wrote its own (a sweep reads them all at the end, not each here)."""
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    launcher, kind = specs[0].config.launcher, backend_kind(specs[0].config.backend)
    timeout = launcher.cell_timeout_s * len(specs) if launcher.cell_timeout_s else launcher.cell_timeout_s
    slot, ended = None, None
    try:
        if not slotted:
            ended = _run(tuple(specs), None, timeout)
        else:
            pool = default_pool(kind, specs[0].config)
            slots = plan_slots(kind, launcher.devices, launcher.per_device, pool, host_cpus())
            with hold_slot(slots, Path(launcher.lock_dir) if launcher.lock_dir else None) as slot:
                for spec in specs:  # an earlier error row must not pass for this run's
                    (Path(spec.out_dir) / "cells.parquet").unlink(missing_ok=True)
                ended = _run(tuple(_unpinned(spec, kind) for spec in specs), slot, timeout)
    except PlacementError as exc:
        return [_lost(s, f"PlacementError: {exc}", _where(None), started_at) for s in specs]
    except SlurmTimeLimit as exc:
        # Raised in this Slurm task by its time-limit warning; leaving run_forked killed the cell.
        return [_lost(s, f"timed out: {exc}", _where(slot, None, kind), started_at) for s in specs]
    assert ended is not None
    log = Path(specs[0].out_dir) / "cell.log"  # the process's output, in its first cell's directory
    return [_unless_written(s, ended, timeout, log, _where(slot, ended.pid, kind), started_at) for s in specs]


def _unless_written(
    spec: CellSpec, ended: Ended, timeout: float | None, log: Path, where: dict[str, Any], started_at: str
) -> Results | None:
    """None where the cell's process wrote its row, else its error row, written here."""
    out_dir = Path(spec.out_dir)
    if (out_dir / "cells.parquet").is_file():
        return None
    return _lost(spec, _cause(ended, timeout, out_dir, log), where, started_at)


def _lost(spec: CellSpec, cause: str, where: dict[str, Any], started_at: str) -> Results:
    from neuronexp.cell.rows import write_lost_cell

    return write_lost_cell(spec, Path(spec.out_dir), cause, backend_kind(spec.config.backend), where, started_at)


def _unpinned(spec: CellSpec, kind: str) -> CellSpec:
    """The cell on its slot: the slot's environment placed its process, so the config's own device selection
    must not move it (BackendInfo.unpin, on a copy: the spec is the sweep's)."""
    config = copy.deepcopy(spec.config)
    backend_info(kind).unpin(config)
    return dataclasses.replace(spec, config=config)


def _run(cells: tuple[CellSpec, ...], slot: Slot | None, timeout_s: float | None) -> Ended:
    env = dict(os.environ, **(slot.env() if slot else {}), **{SUPERVISOR_ENV: str(os.getpid())})
    env.pop(ADDRESS_ENV, None)  # a cell supervises nothing
    for name in backend_info(slot.kind).slot_overrides if slot is not None else ():
        env.pop(name, None)  # the slot's selection says which devices, and so how many
    request = ForkRequest.to_run(
        run_cell_process,
        cells,
        env=env,
        cpus=list(slot.cpus) if slot else None,
        log=str(Path(cells[0].out_dir) / "cell.log"),  # the cell's own output, kept apart from other cells'
        kind=backend_kind(cells[0].config.backend),
        allocator=cells[0].config.allocator.value,  # forked from a template with that malloc mode
    )
    return run_forked(request, timeout_s)


def _where(slot: Slot | None, pid: int | None = None, kind: str = HOST.name) -> dict[str, Any]:
    import socket

    cpus = format_units(slot.cpus if slot else host_cpus())  # without a slot, the cell has its supervisor's cores
    info = backend_info(kind)
    placement = slot.label if slot else (info.placement(None) if info.on_host else None)
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
