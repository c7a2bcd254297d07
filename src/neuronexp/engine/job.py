"""A cell that Hydra runs as a job of its own: a Hydra launcher's (submitit_local, joblib, a user's) cell of a
neuronexp sweep, or a job of another sweeper, from its job directory to its row, checked against what the sweep
planned there."""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from omegaconf import DictConfig

from neuronexp.config import CellSpec
from neuronexp.engine.planned import prepare, reused
from neuronexp.results import Results


def run_hydra_job(cfg: DictConfig, hydra: DictConfig) -> Results:
    """A cell Hydra runs as a job of its own, in its job directory: a Hydra launcher's cell of a neuronexp sweep
    (submitit_local, joblib, a user's), or a job of another sweeper. Planned here as a sweep plans it, checked
    against what the sweep planned for this directory (a changed layer or config is an error row, never another
    cell's result), then run supervised, on a device slot where its launcher's executor says so."""
    import copy

    from omegaconf import open_dict

    from neuronexp.cellprocess.launch import run_supervised
    from neuronexp.config.compose import task_overrides
    from neuronexp.config.validate import validate_code
    from neuronexp.engine._hydra import launcher_kind
    from neuronexp.engine.plan import plan_cell
    from neuronexp.engine.planned_invocation import for_launcher
    from neuronexp.engine.preflight import check_local_slots

    out_dir = Path(str(hydra.runtime.output_dir))
    composed = copy.deepcopy(cfg)
    with open_dict(composed):
        composed.hydra = hydra
    cell = plan_cell(int(hydra.job.num or 0), task_overrides(hydra.overrides.task), composed, set())
    spec = cell.placed_spec()
    cell.dir, cell.spec = ".", dataclasses.replace(spec, warnings=tuple(validate_code(spec.config)))
    if (found := reused(out_dir, cell)) is not None:
        return found
    slotted = for_launcher(launcher_kind(hydra), cfg).slotted
    # On the host the job landed on, before its directory is touched: another sweeper's job is the first to look.
    check_local_slots([cell], slotted)
    placed = prepare(cell, out_dir)
    planned = planned_run_id(Path(str(hydra.sweep.dir)), out_dir)
    if planned not in (None, spec.run_id):
        return _changed_since_planned(placed, planned)
    return run_supervised([placed], slotted=slotted(cell))[0]


def planned_run_id(sweep_dir: Path, out_dir: Path) -> str | None:
    """The run_id a neuronexp sweep planned for `out_dir` (its jobs.json: plain data), or None (another sweeper)."""
    from neuronexp.results import JOBS_MANIFEST
    from neuronexp.results.files import read_regular

    try:
        jobs = json.loads(read_regular(sweep_dir / JOBS_MANIFEST))
        where = os.path.relpath(os.path.abspath(out_dir), os.path.abspath(sweep_dir))
        return next((str(j["run_id"]) for j in jobs if os.path.normpath(str(j["dir"])) == where), None)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _changed_since_planned(spec: CellSpec, planned: str) -> Results:
    from neuronexp.backends import backend_kind
    from neuronexp.cell.rows import write_lost_cell

    error = (
        f"the cell changed since the sweep planned it (run_id {spec.run_id}, planned {planned}): its config or "
        "its layer's code was edited while the sweep ran; rerun the sweep to plan it again"
    )
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return write_lost_cell(spec, Path(spec.out_dir), error, backend_kind(spec.config.backend), {}, started)
