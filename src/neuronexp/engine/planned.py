"""A planned cell: its spec built and validated once (config.spec.CellSpec), its job directory, its labels, what its
code was. Plain data with no Hydra in it, so that it travels as it is to wherever the cell runs: the fork server, a
Slurm task (which prepares its directory from it and never composes or checks the cell again). Its job directory:
reused when it holds this exact cell complete, else made this cell's just before it runs, by whichever executor."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from neuronexp.config import CellSpec
from neuronexp.config.compose import without_hydra

if TYPE_CHECKING:
    from neuronexp.results import Results


@dataclass(kw_only=True)
class PlannedCell:
    num: int
    # Relative to the sweep directory ("." for a single run: the run directory itself); settled under the
    # directory's lock, where a complete cell of the same run_id is found (engine.rerun.assign).
    dir: str
    overrides: list[str]  # the job's task overrides, as typed
    run_id: str
    backend: str
    label: str  # the overrides that tell this cell apart, for progress lines
    compiled: bool = False  # compile.enabled: the fork server warms the compiler up for such cells
    process_key: str = ""  # the process state it sets (engine.grouping: cells timed together agree on it)
    isolated: bool = False  # launcher.isolate: a device slot of its own, never timed with other cells
    # correctness.rtol/atol of this invocation: applied when results are gathered, also to a reused cell (they are
    # not part of run_id, so a cell measured under another tolerance is reused and checked under this one).
    rtol: float | None = None
    atol: float | None = None
    # The files its code fingerprint hashed → their content hashes (config.fingerprint.code_files), in its cell.json:
    # a later sweep into the directory names the files that changed (engine.rerun).
    code: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    spec: CellSpec | None = field(default=None, repr=False, compare=False)  # built and validated here, once
    config_yaml: str = field(default="", repr=False, compare=False)  # its composed config, the job's config.yaml
    composed: DictConfig | None = field(default=None, repr=False, compare=False)  # ... or where it comes from

    def manifest(self) -> dict[str, Any]:
        """This cell's entry in the sweep's jobs.json: plain values only (a job of a Hydra launcher checks its
        own run_id against it; nothing read back from it is ever run)."""
        return {k: v for k, v in vars(self).items() if k not in ("spec", "config_yaml", "code", "composed")}

    def placed_spec(self) -> CellSpec:
        """Its spec (a cell is always planned with one; a record made for a test of the grouping may lack it)."""
        if self.spec is None:
            raise TypeError(f"cell {self.num} was planned without its spec")
        return self.spec

    def yaml(self) -> str:
        """Its config.yaml, written only when it runs: not for a cell reused or refused (~50 ms a cell)."""
        if not self.config_yaml and self.composed is not None:
            self.config_yaml, self.composed = job_yaml(self.composed), None
        return self.config_yaml


def job_yaml(cfg: DictConfig) -> str:
    """The job's config as its config.yaml holds it: resolved, without Hydra's node."""
    job = without_hydra(cfg)
    try:
        return OmegaConf.to_yaml(job, resolve=True)
    except Exception:  # an interpolation only Hydra's running job could resolve (${hydra:...}): kept as written
        return OmegaConf.to_yaml(job)


def reused(out_dir: Path, cell: PlannedCell) -> Results | None:
    """The cell's tables when `out_dir` holds this exact cell complete (status `cached`) and sweep.rerun allows
    reusing it; else None."""
    from neuronexp.results import read_job
    from neuronexp.results.files import complete_run_id

    if cell.spec is None or cell.spec.config.sweep.rerun == "all" or complete_run_id(out_dir) != cell.run_id:
        return None
    found = read_job(out_dir)
    return found._replace(cells=found.cells.assign(status="cached"))


def prepare(cell: PlannedCell, out_dir: Path) -> CellSpec:
    """Make `out_dir` this cell's: an earlier attempt's row and outputs gone, its marker and config written, its
    phase `start` (no earlier run's phase may pass for this one's, e.g. for a cell that dies at once). The cell's
    spec, placed there."""
    from neuronexp.results.files import CELL_MARKER, atomic_write_text, reset_job_dir, write_json, write_phase

    spec = cell.placed_spec()
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
    # Its rename on the disk with the tables' (results.files.write_job_tables): a job without cells.parquet is not
    # complete, whatever it holds, and cell.json, synced, already says whose directory this is.
    atomic_write_text(out_dir / "config.yaml", cell.yaml(), "data")
    write_phase(out_dir, "start")
    return spec.placed(str(out_dir))
