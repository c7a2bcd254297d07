"""The entry point of a cell's process: what a process forked for one cell, or for a comparison group timed together,
runs (cellprocess.launch names it in the fork request; childproc calls it). The cells arrive as the sweep or the job
built and validated them (config.spec.CellSpec): nothing here composes or checks a config again, and this process
imports no Hydra (tests/architecture checks it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from neuronexp.config import CellSpec

if TYPE_CHECKING:
    from neuronexp.results import Results


def run_placed(cells: Sequence[CellSpec]) -> list[Results]:
    """Run the placed cells (one, or a group timed together: cell.group) and write their tables, in this process:
    a cell's own, or the inline executor's (engine.single, engine.sweeper)."""
    from neuronexp.cell.group import run_cells  # torch and the cell stack: a fork of the template has them already
    from neuronexp.cell.joblog import job_log

    dirs = [Path(spec.out_dir) for spec in cells]
    with job_log(dirs):  # what the process logs is in each of its cells' logs
        return run_cells(list(cells), dirs)


def run_cell_process(cells: tuple[CellSpec, ...]) -> int:
    """A cell process's entry: its cells run, exit status 0."""
    run_placed(cells)
    return 0
