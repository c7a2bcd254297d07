"""The entry point of a cell's process: what a process forked for one cell, or for a comparison group timed
together, runs (cellprocess.launch names it in the fork request; childproc calls it). The cells arrive as the sweep or
the job built and validated them (config.spec.CellSpec): nothing here composes or checks a config again, and this
process imports no Hydra (tests/architecture checks it).
"""

from __future__ import annotations

import logging
from pathlib import Path

from neuronexp.config import CellSpec

# Hydra's job log (hydra.job.name in conf/config.yaml): what the cell logs goes there, as in a single run.
JOB_LOG = "neuronexp.log"


def _log_to(out_dir: Path) -> None:
    handler = logging.FileHandler(out_dir / JOB_LOG)
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)


def run_cell_process(cells: tuple[CellSpec, ...]) -> int:
    """Run the placed cells (one, or a group timed together: cell.group) and write their tables; exit status 0."""
    from neuronexp.cell.group import run_cells  # torch and the cell stack: a fork of the template has them already

    for spec in cells:  # what the process logs is in each of its cells' logs
        _log_to(Path(spec.out_dir))
    run_cells(list(cells), [Path(spec.out_dir) for spec in cells])
    return 0
