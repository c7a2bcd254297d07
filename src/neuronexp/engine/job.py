"""One job of a run or a sweep: reuse a complete cell, mark the directory as this cell's, then run the cell in a
supervised process of its own (cellprocess.launch), or, for a single run, in this process."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from neuronexp.config import CellSpec
from neuronexp.results import Results, read_job
from neuronexp.results.files import (
    CELL_MARKER,
    atomic_write_text,
    complete_run_id,
    reset_job_dir,
    write_json,
    write_phase,
)
from neuronexp.engine._hydra import LauncherKind
from neuronexp.engine.pairing import collector_for


def run_job_cell(
    spec: CellSpec, cfg: DictConfig, task: list[str], out_dir: Path, launcher: LauncherKind, sweep: bool
) -> Results | None:
    """The cell's tables: reused when `out_dir` already holds this exact cell complete (status `cached`),
    else measured now. A failing cell is an error row, never an exception. None: the cell is one of a group the
    sweep runs together once all its jobs are prepared (sweep.pairing).

    A sweep's cells each run in a supervised process of their own, on a device slot under a parallel launcher
    or with launcher.isolate=true. A single run runs in this process unless launcher.isolate=true: it is the
    interactive path (a debugger, prints and the layer's traceback in the terminal), where a crash is seen at
    once, and a template process would add an `import torch` (docs/methodology.md, "Where a cell runs")."""
    from neuronexp.cell.run import run_cell

    if spec.config.sweep.rerun != "all" and complete_run_id(out_dir) == spec.run_id:
        reused = read_job(out_dir)
        return reused._replace(cells=reused.cells.assign(status="cached"))
    reset_job_dir(out_dir)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(
        out_dir / CELL_MARKER,
        {
            "written_by": "neuronexp",
            "run_id": spec.run_id,
            "overrides": task,
            "started_at": started,
            "pid": os.getpid(),
        },
    )
    atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    write_phase(out_dir, "start")  # no earlier run's phase may pass for this one's (a cell that dies at once)
    placed = spec.placed(str(out_dir))
    isolate = spec.config.launcher.isolate or (
        not sweep and timeout_asked(task) and spec.config.launcher.cell_timeout_s
    )
    if not (sweep or isolate):
        return run_cell(placed, out_dir)
    from neuronexp.cellprocess.launch import run_supervised

    slotted = bool(isolate) or launcher != LauncherKind.basic
    collector = collector_for(spec.run_id)
    if collector is not None and not slotted:  # one of a group timed together: the sweep runs the group (sweep.pairing)
        collector.specs.append(placed)
        return None
    return run_supervised(placed, slotted)


def timeout_asked(task: list[str]) -> bool:
    """`launcher.cell_timeout_s` given on a single run's command line. Applying it needs a supervisor, so the cell
    then runs in a process of its own, as with launcher.isolate=true (the 30-minute default is never a reason to)."""
    return any(o.lstrip("+").startswith("launcher.cell_timeout_s=") for o in task)
