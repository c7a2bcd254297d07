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
from neuronexp.engine.stopped import CELL_FAILED, INTERRUPTED, UNFINISHED, Stopped
from neuronexp.formatting import first_line

if TYPE_CHECKING:  # imported at run time only once the cells are planned
    from neuronexp.engine.progress import SweepProgress
    from neuronexp.engine.user_callbacks import UserCallbacks

log = logging.getLogger("neuronexp.engine")


def run(ctx: SweepContext) -> Outcome:
    """Run the invocation. Raises ConfigError (nothing has run then: a bad value in any cell, a directory another
    invocation holds) or Stopped (the results could not be gathered, a full disk; Ctrl-C before any cell ran)."""
    with planned(ctx) as invocation:
        if invocation.dry_run:
            print("\n".join(_dry_run(invocation, ctx)))
            return Outcome(None)
        from neuronexp.engine.user_callbacks import UserCallbacks

        # The user's on_run_* and on_job_* for cells started here (a Hydra launcher's jobs: its run_job calls them).
        callbacks = UserCallbacks(ctx.master)
        return (_run_one if invocation.kind == "run" else _run)(invocation, callbacks)


def _dry_run(invocation: Invocation, ctx: SweepContext) -> list[str]:
    if invocation.kind == "sweep":
        return dry_run_lines(list(invocation.cells), invocation.directory, ctx.master)
    cell = invocation.cells[0]  # the one cell, as a sweep's dry run lists it
    said = f"dry run: 1 cell, run_id {cell.run_id}: {cell.label}".rstrip()
    return [f"{said} (nothing is run; run it without sweep.dry_run to measure)"]


def _start(where: Path, callbacks: UserCallbacks | None = None) -> Any:
    """A unit's job directories prepared just before it runs (each cell's on_job_start first); its cells' specs,
    placed there."""
    from neuronexp.engine.planned import prepare

    def start(unit: Any) -> list[Any]:
        for cell in unit.cells if callbacks is not None else ():
            callbacks.job_start(cell)  # type: ignore[union-attr]
        return [prepare(c, where / c.dir) for c in unit.cells]

    return start


def _run_one(invocation: Invocation, callbacks: UserCallbacks) -> Outcome:
    """The run's one cell: locked, reused when its directory holds it complete, else measured; printed."""
    from neuronexp.engine.ownership import check_run_dir
    from neuronexp.engine.planned import reused
    from neuronexp.report.terminal import print_cell
    from neuronexp.results import invocation as identity
    from neuronexp.results import read_job

    where, cell = invocation.directory, invocation.cells[0]
    composed = cell.composed  # (let go once its config.yaml is written)
    check_run_dir(where, cell.run_id)  # before the lock: a refused run leaves the directory as it was
    callbacks.run_start(composed)  # a single run's on_run_*, as Hydra's own run calls them
    with locked(where, "hydra.run.dir", "run"):
        identity.begin()  # this run's identity, in every row it writes
        callbacks.job_start(cell, composed)
        found = reused(where, cell)
        if found is None:
            invocation.executor.run(list(invocation.units), _start(where), _Quiet())
        ended = callbacks.job_end(cell, where)
        results = found or read_job(where)
        print_cell(results, where)
    callbacks.run_end(composed, ended)
    row = results.cells.iloc[0]
    failed = Stopped(CELL_FAILED, f"the cell failed: {row['error']}") if row["status"] == "error" else None
    return Outcome(where, failed, cached=found is not None)


class _Quiet:
    """A run's progress: its one cell is printed when it ends."""

    def finished(self, cell: Any, where: bool = False) -> None:
        return None


def _run(invocation: Invocation, callbacks: UserCallbacks) -> Outcome:
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
        for c in cells:  # neuronexp -v
            log.debug(
                "cell %s: %s, run_id %s, %s", c.dir, c.label, c.run_id, "reused" if c.run_id in reused else "to run"
            )
        ended = (
            (lambda cell: callbacks.job_end(cell, where / cell.dir)) if callbacks else None
        )  # each cell's on_job_end
        with SweepProgress(where, cells, reused, after=ended) as progress:
            stopped = _execute_or_stop(invocation, {c.run_id for c in cells} - reused, progress, callbacks)
        stopped = _finish(invocation, reused, stopped)
        if said:  # the same, said again under the table, where the sweep ends
            print(f"this sweep: {words(rerun, done=True)}")
    return Outcome(where, stopped)


def _execute_or_stop(
    invocation: Invocation, todo: set[str], progress: SweepProgress, callbacks: UserCallbacks
) -> Stopped | None:
    """Run the cells still to run; how the run stopped early, if it did (the finished cells are aggregated anyway)."""
    from neuronexp.engine.grouping import still_to_run

    where = invocation.directory
    units, notes = still_to_run(list(invocation.units), todo)
    for note in (*invocation.notes, *notes) if units else ():
        log.info("%s", note)
    if invocation.executor.remote:  # its cells are prepared on their nodes: each on_job_start as it is submitted
        for cell in (c for unit in units for c in unit.cells):
            callbacks.job_start(cell)
    try:
        if units:
            invocation.executor.run(units, _start(where, None if invocation.executor.remote else callbacks), progress)
    except KeyboardInterrupt:
        return Stopped(
            INTERRUPTED,
            f"interrupted; the finished cells are in {where}/results. To resume, run the same command with "
            f"hydra.sweep.dir={where}",
        )
    except OSError as exc:  # this process could not write a job's files (a full disk)
        return Stopped(UNFINISHED, f"{exc}; rerun with hydra.sweep.dir={where} to resume the sweep")
    except Exception as exc:  # a launcher that gave up: a killed worker, a failed Slurm job
        return Stopped(
            UNFINISHED,
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
            UNFINISHED,
            f"{why}; the cells' own files are in their job directories; fix the cause and rerun "
            f"with hydra.sweep.dir={where} to aggregate again",
        ) from exc
    print_sweep(outcome.cells, baseline, where, not_run=len(outcome.missing), findings=outcome.findings)
    return stopped or (Stopped(CELL_FAILED) if outcome.failed else None)


def _noise_limits(cells: tuple[Any, ...]) -> Any:
    """The invocation's noise thresholds (the same in every cell: `noise` is judged later, never swept per cell)."""
    from neuronexp.config.schema import NoiseConfig

    spec = next((c.spec for c in cells if c.spec is not None), None)
    return spec.config.noise if spec is not None else NoiseConfig()
