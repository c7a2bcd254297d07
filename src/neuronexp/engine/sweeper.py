"""An invocation from start to end, the same for the command line (Hydra's sweeper plugin calls `run`) and for Python
(neuronexp.api): plan and validate every cell, lock the directory, reuse complete cells, run the rest (engine.executor),
aggregate `results/`, print. A single run is a plan of one, into hydra.run.dir. The outcome reaches the exit status as
one exception, Stopped, which only the command line turns into a status."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from neuronexp.analysis.baseline import Baseline, parse_baseline
from neuronexp.cellprocess.forkserver import ForkServer, allocator_mode, server_address
from neuronexp.config import ConfigError
from neuronexp.engine._hydra import CellComposer, subdir_override
from neuronexp.engine.context import Outcome, SweepContext
from neuronexp.engine.dryrun import dry_run_lines, is_dry_run
from neuronexp.engine.executor import Executor, executor_for, local_slots, run_launched, run_local
from neuronexp.engine.grouping import Unit, plan_units
from neuronexp.engine.lock import locked
from neuronexp.engine.plan import PlannedCell, check_runnable, grid, plan_sweep, swept_keys
from neuronexp.engine.stopped import CELL_FAILED, UNFINISHED, Stopped
from neuronexp.formatting import first_line

if TYPE_CHECKING:  # imported at run time only once the cells are planned (see sweep)
    from neuronexp.engine.progress import SweepProgress

log = logging.getLogger("neuronexp.engine")


def run(ctx: SweepContext) -> Outcome:
    """Run the invocation. Raises ConfigError (nothing has run then: a bad value in any cell, a directory another
    invocation holds) or Stopped (the results could not be gathered, a full disk; Ctrl-C before any cell ran)."""
    jobs = grid(ctx.params, ctx.arguments)
    if ctx.single and not ctx.params:
        if swept := swept_keys(ctx.arguments):
            key, _, value = swept[0].partition("=")
            raise ConfigError(key, value, "a list of values is a sweep: add -m")
        from neuronexp.engine.single import run_single

        return run_single(ctx, jobs[0])
    return run_sweep(ctx, jobs)


def run_sweep(ctx: SweepContext, jobs: list[list[str]]) -> Outcome:
    if is_dry_run(ctx.master):  # planned and checked as below, then listed: no cell process, no lock, no file
        cells = _plan(ctx, jobs)
        check_runnable(ctx.master, cells)
        print("\n".join(dry_run_lines(cells, sweep_dir(ctx.master), ctx.master)))
        return Outcome(None)
    if ctx.launcher is not None and executor_for(ctx.master) == Executor.launcher and not ctx.in_process:
        # Set up before the plan: a launcher may fit the config to its cluster first (the Slurm preset's CPUs).
        launcher = ctx.launcher()
        ctx.launcher = lambda: launcher
    with _cell_processes(ctx) as server:  # started first: its `import torch` overlaps the planning
        cells = _plan(ctx, jobs)
        if server is not None:  # the template may fork now, after warming up what the cells need
            server.serve(warm=["compile"] if any(c.compiled for c in cells) else [])
            # While it still imports torch (2-3 s; the code checks wait for it), this process imports what
            # placing the cells and writing their tables need, and what aggregating and printing them needs,
            # which it would otherwise import after (0.35 s, then 0.07 s after the last cell).
            import neuronexp.cellprocess.launch  # noqa: F401
            import neuronexp.engine.aggregate  # noqa: F401
            import neuronexp.engine.progress  # noqa: F401
            import neuronexp.report.terminal  # noqa: F401
        forked = server_address() is not None and not ctx.in_process and executor_for(ctx.master) == Executor.local
        check_runnable(ctx.master, cells, forked=forked)
        return _run(ctx, cells, server)


def _plan(ctx: SweepContext, jobs: list[list[str]]) -> list[PlannedCell]:
    composer = CellComposer(ctx.master, ctx.loader)  # composes once per choice of config groups
    if ctx.memory is None:
        return plan_sweep(ctx.master, jobs, composer)
    from neuronexp.engine.in_memory import plan_memory_cells

    return plan_memory_cells(jobs, composer, ctx.memory)


def sweep_dir(master: DictConfig) -> Path:
    return Path(str(master.hydra.sweep.dir))


def _run(ctx: SweepContext, cells: list[PlannedCell], server: ForkServer | None = None) -> Outcome:
    # Imported once the cells are planned: pandas, pyarrow and rich are not needed to report a bad value.
    from neuronexp.engine.progress import SweepProgress
    from neuronexp.engine.rerun import assign, compare, words
    from neuronexp.results import JOBS_MANIFEST, invocation
    from neuronexp.results.files import write_json

    where = sweep_dir(ctx.master)
    with locked(where, "hydra.sweep.dir", "sweep"):
        invocation.begin()  # this sweep's identity, in every row its cells write (handed down in the environment)
        reused = assign(cells, where, rerun_all=OmegaConf.select(ctx.master, "sweep.rerun", default="failed") == "all")
        rerun = compare(cells, reused, where)  # what the directory held, read before any cell writes into it
        write_json(where / JOBS_MANIFEST, [c.manifest() for c in cells])
        todo = [c for c in cells if c.run_id not in reused]
        said = words(rerun)
        log.info("sweep of %d cells into %s%s", len(cells), where, f": {said}" if said else "")
        for c in cells:  # neuronexp -v
            log.debug(
                "cell %s: %s, run_id %s, %s", c.dir, c.label, c.run_id, "reused" if c.run_id in reused else "to run"
            )
        with SweepProgress(where, cells, reused) as progress:
            stopped = _execute_or_stop(ctx, cells, todo, progress)
        if server is not None:  # this sweep's own (not a caller's): no cell is left to fork
            server.release()
        stopped = _finish(ctx, cells, reused, stopped)
        if said:  # the same, said again under the table, where the sweep ends
            print(f"this sweep: {words(rerun, done=True)}")
    return Outcome(where, stopped)


def _execute_or_stop(
    ctx: SweepContext, cells: list[PlannedCell], todo: list[PlannedCell], progress: SweepProgress
) -> Stopped | None:
    """Run the cells still to run; how the run stopped early, if it did (the finished cells are aggregated anyway)."""
    where = sweep_dir(ctx.master)
    try:
        _execute(ctx, cells, todo, progress)
    except KeyboardInterrupt:
        return Stopped(
            130,
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


def _execute(ctx: SweepContext, cells: list[PlannedCell], todo: list[PlannedCell], progress: SweepProgress) -> None:
    """Each cell still to run in its planned directory, by the invocation's executor (engine.executor)."""
    if not todo:
        return
    baseline = _baseline(ctx.master)
    if executor_for(ctx.master) == Executor.launcher and not ctx.in_process:
        if baseline:
            log.info(
                "speedups are unpaired: a Hydra launcher runs each cell in a process of its own "
                '(docs/timing.md, "Paired timing")'
            )
        assert ctx.launcher is not None
        run_launched(ctx.launcher(), [[*c.overrides, subdir_override(c.dir)] for c in todo], progress.watching)
        return
    _execute_here(ctx, cells, todo, progress)


def _execute_here(
    ctx: SweepContext, cells: list[PlannedCell], todo: list[PlannedCell], progress: SweepProgress
) -> None:
    """The cells still to run, on this host: in this process, or each unit in a process forked from the template."""
    from neuronexp.engine.job import prepare
    from neuronexp.engine.user_callbacks import UserCallbacks

    where, baseline = sweep_dir(ctx.master), _baseline(ctx.master)
    units, notes = plan_units(cells, baseline, {c.run_id for c in todo})
    for note in notes:
        log.info("%s", note)
    callbacks = UserCallbacks(ctx.master)  # each cell's on_job_*: it runs on this host, not in Hydra's run_job
    slots = local_slots(ctx.master)

    def start(unit: Unit) -> list[Any]:
        for cell in unit.cells:
            callbacks.job_start(cell)
        return [prepare(c, where / c.dir) for c in unit.cells]

    def finished(cell: PlannedCell) -> None:
        progress.finished(cell, where=slots > 1 and not ctx.in_process)
        callbacks.job_end(cell, where / cell.dir)

    if ctx.in_process:  # modules from memory: this process, under the cells' time limit
        from neuronexp.engine.in_memory import run_limited

        for unit in units:
            run_limited(start(unit))
            for cell in unit.cells:
                finished(cell)
        return
    run_local(units, start, slots, finished)


def _finish(ctx: SweepContext, cells: list[PlannedCell], reused: set[str], stopped: Stopped | None) -> Stopped | None:
    """Aggregate results/ and print the comparison; how the sweep ended, if not with every cell ok (Stopped raised:
    results/ could not be written)."""
    from neuronexp.engine.aggregate import aggregate
    from neuronexp.report.terminal import print_sweep

    where, baseline = sweep_dir(ctx.master), _baseline(ctx.master)
    try:
        outcome = aggregate(
            where,
            baseline,
            cached=reused,
            noise=_noise_limits(ctx.master),
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


def _cell_processes(ctx: SweepContext) -> AbstractContextManager[Any]:
    """The fork server that this host's cell processes are forked from (cellprocess.forkserver): the one the command
    started before Hydra where its malloc mode is the sweep's, else one already running for this process (a caller's,
    e.g. a test session's), else one for this sweep; none where no cell process is forked here (Slurm tasks start
    their own; cells from Python's memory run in this process)."""
    early, mode = ctx.fork_server, allocator_mode(ctx.master)
    forked_here = not ctx.in_process and executor_for(ctx.master) != Executor.launcher
    if early is not None:
        if forked_here and early.allocator == mode:
            early.announce()
            return nullcontext(early)
        early.__exit__(None, None, None)  # not this sweep's: its cells need another template, or none
    if not forked_here or server_address() is not None:
        return nullcontext()
    return ForkServer(warm=None, allocator=mode)


def _baseline(master: DictConfig) -> Baseline | None:
    """The sweep's `baseline`, parsed once: every stage after this one takes it as it is."""
    node = OmegaConf.select(master, "baseline", default=None)
    return parse_baseline(OmegaConf.to_container(node) if OmegaConf.is_config(node) else node)


def _noise_limits(master: DictConfig) -> Any:
    from neuronexp.config.schema import NoiseConfig

    node = OmegaConf.select(master, "noise", default=None)
    if node is None:
        return NoiseConfig()
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(NoiseConfig), node))
