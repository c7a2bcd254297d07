"""A cell's job directory: reused when it already holds this exact cell complete, else made this cell's before the cell
runs (its marker, its config.yaml, its first phase), whichever executor then runs it; and a cell that Hydra runs as a
job of its own (a Slurm task's), from its job directory to its row."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from neuronexp.config import CellSpec
from neuronexp.engine._hydra import LauncherKind, launcher_kind
from neuronexp.engine.plan import PlannedCell
from neuronexp.results import Results, read_job
from neuronexp.results.files import (
    CELL_MARKER,
    atomic_write_text,
    complete_run_id,
    reset_job_dir,
    write_json,
    write_phase,
)


def reused(out_dir: Path, cell: PlannedCell) -> Results | None:
    """The cell's tables when `out_dir` holds this exact cell complete (status `cached`) and sweep.rerun allows
    reusing it; else None."""
    assert cell.spec is not None
    if cell.spec.config.sweep.rerun == "all" or complete_run_id(out_dir) != cell.run_id:
        return None
    found = read_job(out_dir)
    return found._replace(cells=found.cells.assign(status="cached"))


def prepare(cell: PlannedCell, out_dir: Path) -> CellSpec:
    """Make `out_dir` this cell's: an earlier attempt's row and outputs gone, its marker and config written, its
    phase `start` (no earlier run's phase may pass for this one's, e.g. for a cell that dies at once). The cell's
    spec, placed there."""
    assert cell.spec is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    reset_job_dir(out_dir)
    marker = {
        "written_by": "neuronexp",
        "run_id": cell.run_id,
        "overrides": cell.overrides,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "pid": os.getpid(),
        "code": cell.code,  # the files its code fingerprint hashed (engine.rerun compares them)
    }
    write_json(out_dir / CELL_MARKER, marker)
    atomic_write_text(out_dir / "config.yaml", cell.yaml())
    write_phase(out_dir, "start")
    return cell.spec.placed(str(out_dir))


def run_hydra_job(cfg: DictConfig, hydra: DictConfig) -> Results:
    """A cell Hydra runs as a job of its own, in its job directory: a Slurm task's (or another Hydra launcher's) cell
    of a neuronexp sweep, or a job of another sweeper. Planned here, checked against what the sweep planned for
    this directory (a changed layer or config is an error row, never another cell's result), then run supervised,
    on a device slot of its own under a launcher that runs several at once."""
    from neuronexp.backends import check_options
    from neuronexp.cellprocess.launch import run_supervised
    from neuronexp.config.compose import override_dirname, spec_from, task_overrides
    from neuronexp.config.fingerprint import code_files

    out_dir = Path(str(hydra.runtime.output_dir))
    task = task_overrides(hydra.overrides.task)
    spec = spec_from(cfg, dict(hydra.runtime.choices), task, override_dirname(task))
    check_options(spec.config)
    cell = PlannedCell(
        num=int(hydra.job.num or 0),
        dir=".",
        overrides=task,
        run_id=spec.run_id,
        backend=spec.config.backend.value,
        label=" ".join(task),
        code=code_files(spec.config.module.get("_target_")),
        spec=spec,
        config_yaml=OmegaConf.to_yaml(cfg, resolve=True),
        isolated=bool(spec.config.launcher.isolate),
    )
    if (found := reused(out_dir, cell)) is not None:
        return found
    placed = prepare(cell, out_dir)
    planned = planned_run_id(Path(str(hydra.sweep.dir)), out_dir)
    if planned not in (None, spec.run_id):
        return _changed_since_planned(placed, planned)
    return run_supervised([placed], slotted=launcher_kind(hydra) != LauncherKind.basic or cell.isolated)[0]


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
