"""One job of a run or a sweep: reuse a complete cell, mark the directory as this cell's, then run the cell in
this process or on a device slot of its own (sweep.launch)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from neuronexp.backends import backend_kind
from neuronexp.config import CellSpec
from neuronexp.results import Results, read_job
from neuronexp.results.files import CELL_MARKER, atomic_write_text, complete_run_id, reset_job_dir, write_json
from neuronexp.sweep._hydra import BASIC_LAUNCHER


def run_job_cell(spec: CellSpec, cfg: DictConfig, choices: dict[str, Any], task: list[str], out_dir: Path,
                 launcher_target: str) -> Results:
    """The cell's tables: reused when `out_dir` already holds this exact cell complete (status `cached`),
    else measured now. A failing cell is an error row, never an exception."""
    from neuronexp.cell.run import run_cell

    if complete_run_id(out_dir) == spec.run_id:
        reused = read_job(out_dir)
        return reused._replace(cells=reused.cells.assign(status="cached"))
    reset_job_dir(out_dir)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(out_dir / CELL_MARKER, {"run_id": spec.run_id, "overrides": task, "started_at": started, "pid": os.getpid()})
    atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    isolate, parallel = spec.config.launcher.isolate, launcher_target != BASIC_LAUNCHER
    if not (parallel or isolate):
        return run_cell(spec, out_dir)
    from neuronexp.sweep.launch import CellRequest, run_in_slot, run_pinned

    kind = backend_kind(spec.config.backend)
    if isolate is False:
        return run_pinned(spec, out_dir, kind, spec.config.launcher)
    config = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    request = CellRequest(config, choices, task, spec.overrides, spec.run_id, str(out_dir), kind)  # type: ignore[arg-type]
    return run_in_slot(request, spec, spec.config.launcher)
