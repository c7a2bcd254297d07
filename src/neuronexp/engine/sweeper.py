"""An invocation from start to end, the same for the command line (Hydra's sweeper plugin calls `run`) and for Python
(neuronexp.api): plan and check every cell (engine.planned_invocation), lock the directory, reuse complete cells, run
the rest on the invocation's executor (engine.executor), then print the run's cell or aggregate the sweep's results/.
The outcome reaches the exit status as one exception, Stopped, which only the command line turns into a status."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronexp.engine.context import Outcome, SweepContext
from neuronexp.engine.dryrun import dry_run_lines
from neuronexp.engine.lock import locked
from neuronexp.engine.planned_invocation import Invocation, planned
from neuronexp.engine.stopped import Stopped
from neuronexp.formatting import first_line

if TYPE_CHECKING:  # imported at run time only once the cells are planned
    from neuronexp.engine.progress import SweepProgress

log = logging.getLogger("neuronexp.engine")


def run(ctx: SweepContext) -> Outcome:
    """Run the invocation. Raises ConfigError (nothing has run then: a bad value in any cell, a directory another
    invocation holds) or Stopped (the results could not be gathered, a full disk; Ctrl-C before any cell ran)."""
    with planned(ctx) as invocation:
        if invocation.dry_run:
            print("\n".join(_dry_run(invocation, ctx)))
            return Outcome(None)
        return _run_one(invocation) if invocation.kind == "run" else _run(invocation)


def _dry_run(invocation: Invocation, ctx: SweepContext) -> list[str]:
    if invocation.kind == "sweep":
        return dry_run_lines(list(invocation.cells), invocation.directory, ctx.master)
    cell = invocation.cells[0]  # the one cell, as a sweep's dry run lists it
    said = f"dry run: 1 cell, run_id {cell.run_id}: {cell.label}".rstrip()
    return [f"{said} (nothing is run; run it without sweep.dry_run to measure)"]


def _start(where: Path) -> Any:
    """A unit's job directories prepared just before it runs; its cells' specs, placed there."""
    from neuronexp.engine.planned import prepare

    return lambda unit: [prepare(c, where / c.dir) for c in unit.cells]


def _run_one(invocation: Invocation) -> Outcome:
    """The run's one cell: locked, reused when its directory holds it complete, else measured; printed."""
    from neuronexp.engine.ownership import check_run_dir
    from neuronexp.engine.planned import reused
    from neuronexp.report.terminal import print_cell
    from neuronexp.results import invocation as identity
    from neuronexp.results import read_job

    where, cell = invocation.directory, invocation.cells[0]
    check_run_dir(where, cell.run_id)  # before the lock: a refused run leaves the directory as it was
    with locked(where, "hydra.run.dir", "run"):
        identity.begin()  # this run's identity, in every row it writes
        found = reused(where, cell)
        if found is None:
            invocation.executor.run(list(invocation.units), _start(where), _Quiet())
        results = found or read_job(where)
        print_cell(results, where)
    row = results.cells.iloc[0]
    failed = Stopped(1, f"the cell failed: {row['error']}") if row["status"] == "error" else None
    return Outcome(where, failed, cached=found is not None)


class _Quiet:
    """A run's progress: its one cell is printed when it ends."""

    def finished(self, cell: Any, where: bool = False) -> None:
        return None


def _run(invocation: Invocation) -> Outcome:
    # Imported once the cells are planned: pandas, pyarrow and rich are not needed to report a bad value.
    from neuronexp.engine.progress import SweepProgress
    from neuronexp.engine.rerun import assign, compare, words
    from neuronexp.results import JOBS_MANIFEST
    from neuronexp.results import invocation as identity
    from neuronexp.results.files import write_json

    where, cells = invocation.directory, list(invocation.cells)
    with locked(where, "hydra.sweep.dir", "sweep"):
        identity.begin()  # this sweep's identity, in every row its cells write (handed down in the environment)
        rerun_all = any(c.spec is not None and c.spec.config.sweep.rerun == "all" for c in cells[:1])
        reused = assign(cells, where, rerun_all=rerun_all)
        rerun = compare(cells, reused, where)  # what the directory held, read before any cell writes into it
        write_json(where / JOBS_MANIFEST, [c.manifest() for c in cells])
        said = words(rerun)
        log.info("sweep of %d cells into %s%s", len(cells), where, f": {said}" if said else "")
        with SweepProgress(where, cells, reused) as progress:
            stopped = _execute_or_stop(invocation, {c.run_id for c in cells} - reused, progress)
        stopped = _finish(invocation, reused, stopped)
        if said:  # the same, said again under the table, where the sweep ends
            print(f"this sweep: {words(rerun, done=True)}")
    return Outcome(where, stopped)


def _execute_or_stop(invocation: Invocation, todo: set[str], progress: SweepProgress) -> Stopped | None:
    """Run the cells still to run; how the run stopped early, if it did (the finished cells are aggregated anyway)."""
    from neuronexp.engine.grouping import still_to_run

    where = invocation.directory
    units, notes = still_to_run(list(invocation.units), todo)
    for note in (*invocation.notes, *notes) if units else ():
        log.info("%s", note)
    try:
        if units:
            invocation.executor.run(units, _start(where), progress)
    except KeyboardInterrupt:
        return Stopped(
            130,
            f"interrupted; the finished cells are in {where}/results. To resume, run the same command with "
            f"hydra.sweep.dir={where}",
        )
    except OSError as exc:  # this process could not write a job's files (a full disk)
        return Stopped(1, f"{exc}; rerun with hydra.sweep.dir={where} to resume the sweep")
    except Exception as exc:  # a launcher that gave up: a killed worker, a failed Slurm job
        return Stopped(
            1,
            f"the launcher stopped the sweep ({type(exc).__name__}: {first_line(exc, 200)}); "
            f"rerun with hydra.sweep.dir={where} to resume it",
        )
    return None


def _finish(invocation: Invocation, reused: set[str], stopped: Stopped | None) -> Stopped | None:
    """Aggregate results/ and print the comparison; how the sweep ended, if not with every cell ok (Stopped raised:
    results/ could not be written)."""
    from neuronexp.engine.aggregate import aggregate
    from neuronexp.report.terminal import print_sweep

    where, baseline, cells = invocation.directory, invocation.baseline, invocation.cells
    try:
        outcome = aggregate(
            where,
            baseline,
            cached=reused,
            noise=_noise_limits(cells),
            tolerances={c.run_id: (c.rtol, c.atol) for c in cells},
        )
    except Exception as exc:  # a full or read-only disk, a job file damaged after its cell was checked
        why = f"aggregating {where}/results failed ({type(exc).__name__}: {first_line(exc, 200)})"
        if stopped is not None:
            raise Stopped(stopped.code, f"{stopped.message}; {why} too") from exc
        raise Stopped(
            1,
            f"{why}; the cells' own files are in their job directories; fix the cause and rerun "
            f"with hydra.sweep.dir={where} to aggregate again",
        ) from exc
    print_sweep(outcome.cells, baseline, where, not_run=len(outcome.missing), findings=outcome.findings)
    return stopped or (Stopped(1) if outcome.failed else None)


def _noise_limits(cells: tuple[Any, ...]) -> Any:
    """The invocation's noise thresholds (the same in every cell: `noise` is judged later, never swept per cell)."""
    from neuronexp.config.schema import NoiseConfig

    spec = next((c.spec for c in cells if c.spec is not None), None)
    return spec.config.noise if spec is not None else NoiseConfig()
