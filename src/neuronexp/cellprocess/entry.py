"""The entry point of a cell's process: what a process forked for one cell, or for a comparison group timed
together, runs (cellprocess.launch names it in the fork request; childproc calls it). The cells arrive as the sweep or
the job built and validated them (config.spec.CellSpec): nothing here composes or checks a config again, and this
process imports no Hydra (tests/architecture checks it).
"""

from __future__ import annotations

from pathlib import Path

from neuronexp.config import CellSpec


def run_cell_process(cells: tuple[CellSpec, ...]) -> int:
    """Run the placed cells (one, or a group timed together: cell.group) and write their tables; exit status 0."""
    from neuronexp.cell.group import run_cells  # torch and the cell stack: a fork of the template has them already
    from neuronexp.cell.joblog import job_log

    dirs = [Path(spec.out_dir) for spec in cells]
    with job_log(dirs):  # what the process logs is in each of its cells' logs
        run_cells(list(cells), dirs)
    return 0
