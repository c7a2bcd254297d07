"""A single run: a plan of one cell into hydra.run.dir, locked, reused or measured, printed. It runs in this process
(the interactive path: a debugger, the layer's prints), or in a supervised process of its own on a device slot with
launcher.isolate=true or a cell time limit given (launcher.cell_timeout_s), as a sweep's cells always do."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from neuronexp.config import ConfigError
from neuronexp.engine._hydra import CellComposer
from neuronexp.engine.context import Outcome, SweepContext
from neuronexp.engine.dryrun import is_dry_run
from neuronexp.engine.lock import locked
from neuronexp.engine.plan import PlannedCell, check_runnable, plan_cell
from neuronexp.engine.stopped import CELL_FAILED, Stopped

if TYPE_CHECKING:
    from neuronexp.results import Results

log = logging.getLogger("neuronexp.engine")


def run_single(ctx: SweepContext, job: list[str]) -> Outcome:
    """Plan, check, lock, then reuse or measure the one cell, and print it. Raises ConfigError (nothing has run
    then): a bad value, a directory that holds another cell's results."""
    composed = CellComposer(ctx.master, ctx.loader).compose_single(job)
    cell = plan_cell(0, job, composed, set())
    cell.dir, cell.isolated = ".", cell.isolated or _timeout_asked(cell.overrides)
    check_runnable(ctx.master, [cell], single=True)
    run_dir = Path(str(ctx.master.hydra.run.dir))
    if is_dry_run(ctx.master):  # the one cell, as a sweep's dry run lists it
        print(
            f"dry run: 1 cell, run_id {cell.run_id}: {cell.label}".rstrip()
            + " (nothing is run; run it without sweep.dry_run to measure)"
        )
        return Outcome(None)
    # Imported once the cell is planned: pandas, pyarrow and rich are not needed to report a bad value.
    from neuronexp.engine.job import reused
    from neuronexp.engine.user_callbacks import UserCallbacks
    from neuronexp.report.terminal import print_cell
    from neuronexp.results import invocation

    _check_owner(run_dir, cell.run_id)  # before the lock: a refused run leaves the directory as it was
    callbacks = UserCallbacks(ctx.master)  # a single run's on_run_* and on_job_*, as Hydra's own run calls them
    callbacks.run_start(composed)
    with locked(run_dir, "hydra.run.dir", "run"):
        invocation.begin()  # this run's identity, in every row it writes
        callbacks.job_start(cell, composed)
        found = reused(run_dir, cell)
        results = found or _measure(cell, run_dir, ctx.in_process)
        ended = callbacks.job_end(cell, run_dir)
        print_cell(results, run_dir)
    callbacks.run_end(composed, ended)
    row = results.cells.iloc[0]
    failed = Stopped(CELL_FAILED, f"the cell failed: {row['error']}") if row["status"] == "error" else None
    return Outcome(run_dir, failed, cached=found is not None)


def _timeout_asked(overrides: list[str]) -> bool:
    """`launcher.cell_timeout_s` given on the command line. Applying it needs a supervisor, so the cell then runs in a
    process of its own, as with launcher.isolate=true (the 30-minute default is never a reason to)."""
    return any(o.lstrip("+").startswith("launcher.cell_timeout_s=") for o in overrides)


def _measure(cell: PlannedCell, run_dir: Path, in_process: bool) -> Results:
    from neuronexp.cellprocess.entry import run_placed
    from neuronexp.engine.job import prepare

    spec = prepare(cell, run_dir)
    if cell.isolated and not in_process:
        from neuronexp.cellprocess.launch import run_supervised

        return run_supervised([spec], slotted=True)[0]
    return run_placed([spec])[0]


def _check_owner(run_dir: Path, run_id: str) -> None:
    """Refuse a directory holding another cell's results; one whose cell ended without any (killed while it ran:
    out of memory, a signal) is this run's to use, and says so."""
    from neuronexp.results.files import owner, read_phase

    other = owner(run_dir)
    if other in (None, run_id) or (other != "unknown" and not (run_dir / "cells.parquet").exists()):
        if other is not None and not (run_dir / "cells.parquet").exists():
            phase = read_phase(run_dir)
            log.warning(
                "the last run into %s ended without a result%s (killed: out of memory, or a signal); running again",
                run_dir,
                f" during {phase}" if phase else "",
            )
        return
    raise ConfigError(
        "hydra.run.dir",
        str(run_dir),
        f"already holds the results of another cell (run_id {other}); neuronexp never overwrites them: "
        "choose another directory",
    )
