"""A sweep from start to end: plan and validate every cell, lock the directory, reuse complete cells, hand the
rest to the configured Hydra launcher, aggregate `results/`, print the comparison.

Called by neuronexp's Hydra sweeper plugin (hydra_plugins/neuronexp_sweeper), which Hydra instantiates from
`hydra/sweeper: neuronexp` (conf/config.yaml). The outcome reaches the exit status as an exception,
SweepStopped, which only the command line catches.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from neuronexp.analysis.baseline import Baseline, parse_baseline
from neuronexp.cellprocess.forkserver import ForkServer, allocator_mode
from neuronexp.formatting import first_line
from neuronexp.engine._hydra import (
    BASIC_LAUNCHER,
    LauncherKind,
    job_exception,
    launcher_kind,
    run_basic_job,
    subdir_override,
)
from neuronexp.engine.dryrun import dry_run_lines, is_dry_run
from neuronexp.engine.lock import locked
from neuronexp.engine.pairing import collecting, plan_units
from neuronexp.engine.plan import CellComposer, PlannedCell, grid, plan_sweep, write_planned
from neuronexp.engine.stopped import SweepStopped

if TYPE_CHECKING:  # imported at run time only once the cells are planned (see sweep)
    from neuronexp.engine.progress import SweepProgress

log = logging.getLogger("neuronexp.engine")


class JobFailed(Exception):
    """A job raised in this process (a write that failed on a full disk), not a cell failing (an error row)."""


@dataclass
class SweepContext:
    master: DictConfig  # the sweep's composed config (with its `hydra` node)
    params: dict[str, str]  # hydra.sweeper.params
    arguments: list[str]  # the command line's overrides
    launcher: Any  # the configured Hydra launcher, set up
    loader: Any  # Hydra's config loader (public ConfigLoader interface)
    hydra_context: Any = None  # what Hydra gave the sweeper (basic-launcher jobs run from the plan's configs with it)
    task_function: Any = None


def run_sweep(ctx: SweepContext) -> list[Any]:
    """Run the sweep; returns the launcher's job returns.

    Raises:
        ConfigError: a bad value in any cell, a directory another sweep holds; nothing has run then.
        SweepStopped: cells failed, the launcher stopped, or Ctrl-C; what finished is aggregated first.
    """
    # Composes once per choice of config groups, for the plan and then for the basic launcher's jobs.
    composer = CellComposer(ctx.master, ctx.loader)
    if is_dry_run(ctx.master):  # planned and checked as below, then listed: no cell process, no lock, no file
        cells = plan_sweep(ctx.master, grid(ctx.params, ctx.arguments), composer)
        print("\n".join(dry_run_lines(cells, Path(str(ctx.master.hydra.sweep.dir)), ctx.master)))
        return []
    with _cell_processes(ctx.master) as server:  # started first: its `import torch` overlaps the planning
        cells = plan_sweep(ctx.master, grid(ctx.params, ctx.arguments), composer)
        return _run(ctx, cells, server, composer)


def _run(
    ctx: SweepContext, cells: list[PlannedCell], server: ForkServer | None, composer: CellComposer | None
) -> list[Any]:
    # Imported once the cells are planned: pandas, pyarrow and rich are not needed to report a bad value.
    from neuronexp.report.terminal import print_sweep
    from neuronexp.results import JOBS_MANIFEST, invocation
    from neuronexp.results.files import write_json
    from neuronexp.engine.aggregate import aggregate
    from neuronexp.engine.progress import SweepProgress
    from neuronexp.engine.resume import assign

    sweep_dir = Path(str(ctx.master.hydra.sweep.dir))
    baseline = _baseline(ctx.master)
    with locked(sweep_dir, "hydra.sweep.dir", "sweep"):
        invocation.begin()  # this sweep's identity, in every row its cells write (handed down in the environment)
        reused = assign(
            cells, sweep_dir, rerun_all=OmegaConf.select(ctx.master, "sweep.rerun", default="failed") == "all"
        )
        write_json(sweep_dir / JOBS_MANIFEST, [c.manifest() for c in cells])
        write_planned(sweep_dir, cells)  # what each job runs, as planned and checked here
        todo = [c for c in cells if c.run_id not in reused]
        log.info(
            "sweep of %d cells into %s%s",
            len(cells),
            sweep_dir,
            f" ({len(reused)} complete already, reused)" if reused else "",
        )
        stopped, returns = None, []
        if server is not None and todo:
            server.serve(warm=["compile"] if any(c.compiled for c in todo) else [])
        with SweepProgress(sweep_dir, cells, reused) as progress:
            try:
                returns = _launch(ctx, cells, todo, progress, baseline, composer)
            except KeyboardInterrupt:
                stopped = SweepStopped(
                    130,
                    f"interrupted; the finished cells are in {sweep_dir}/results. To resume, "
                    f"run the same command with hydra.sweep.dir={sweep_dir}",
                )
            except JobFailed as exc:
                stopped = SweepStopped(1, f"{exc}; rerun with hydra.sweep.dir={sweep_dir} to resume the sweep")
            except Exception as exc:  # a launcher that gave up: a killed worker, a failed Slurm job
                stopped = SweepStopped(
                    1,
                    f"the launcher stopped the sweep ({type(exc).__name__}: {first_line(exc, 200)}); "
                    f"rerun with hydra.sweep.dir={sweep_dir} to resume it",
                )
        try:
            outcome = aggregate(
                sweep_dir,
                baseline,
                cached=reused,
                noise=_noise_limits(ctx.master),
                tolerances={c.run_id: (c.rtol, c.atol) for c in cells},
            )
        except Exception as exc:  # a full or read-only disk, a job file damaged after its cell was checked
            why = f"aggregating {sweep_dir}/results failed ({type(exc).__name__}: {first_line(exc, 200)})"
            if stopped is not None:
                raise SweepStopped(stopped.code, f"{stopped.message}; {why} too") from exc
            raise SweepStopped(
                1,
                f"{why}; the cells' own files are in their job directories; fix the cause and rerun "
                f"with hydra.sweep.dir={sweep_dir} to aggregate again",
            ) from exc
        print_sweep(
            outcome.cells, outcome.failed - len(outcome.missing), baseline, sweep_dir, not_run=len(outcome.missing)
        )
    if stopped is not None:
        raise stopped
    if outcome.failed:
        raise SweepStopped(1)
    return returns


def _launch(
    ctx: SweepContext,
    cells: list[PlannedCell],
    todo: list[PlannedCell],
    progress: SweepProgress,
    baseline: Baseline | None,
    composer: CellComposer | None,
) -> list[Any]:
    """Each cell in its planned directory (a `hydra.sweep.subdir` override), whatever its place in the grid; under
    the basic launcher, each comparison group's cells in one process, timed together (sweep.pairing)."""
    jobs = {c.run_id: [*c.overrides, subdir_override(c.dir)] for c in todo}
    if not jobs:  # every cell was complete already (launchers refuse an empty batch)
        return []
    launcher = ctx.launcher
    if launcher_kind(ctx.master) != LauncherKind.basic:
        if baseline:
            log.info(
                "speedups are unpaired: %s runs each cell in a process of its own (docs/methodology.md, "
                '"Paired timing")',
                type(launcher).__name__,
            )
        with progress.watching():  # cells finish in other processes: seen on disk
            return list(launcher.launch(list(jobs.values()), initial_job_idx=0))
    # Hydra's basic launcher logs each launch; the progress line per finished cell says the same and more.
    logging.getLogger(BASIC_LAUNCHER.rsplit(".", 1)[0]).setLevel(logging.WARNING)
    units, notes = plan_units(cells, baseline, set(jobs))
    for note in notes:
        log.info("%s", note)
    returns: list[Any] = []
    for unit in units:
        with collecting({c.run_id for c in unit.cells}) as collector:
            for cell in unit.cells:  # one at a time, so each finished cell is reported at once
                progress.running(cell)
                if composer is None or ctx.task_function is None:  # not from Hydra's sweeper: the launcher composes
                    returns += list(launcher.launch([jobs[cell.run_id]], initial_job_idx=cell.num))
                else:
                    job_config = composer.compose(jobs[cell.run_id], cell.num)
                    returns.append(run_basic_job(ctx.hydra_context, ctx.task_function, ctx.master, job_config))
                _check(returns[-1], cell)
                if not collector.specs or collector.specs[-1].run_id != cell.run_id:
                    progress.finished(cell)
        if collector.specs:  # the group's jobs are prepared: one process times them together
            from neuronexp.cellprocess.launch import run_group_supervised

            progress.running(unit.cells[0])
            run_group_supervised(collector.specs)
            for spec in collector.specs:
                progress.finished(next(c for c in unit.cells if c.run_id == spec.run_id))
    return returns


def _check(job_return: Any, cell: PlannedCell) -> None:
    failure = job_exception(job_return)
    if failure is not None:  # not the cell's own failure (that is its error row): neuronexp could not go on
        raise JobFailed(
            f"cell {cell.num} ({cell.label}) could not finish: {type(failure).__name__}: {first_line(failure, 200)}"
        ) from failure


def _cell_processes(master: DictConfig) -> AbstractContextManager[Any]:
    """The fork server that this host's cell processes are forked from (cellprocess.forkserver); none for Slurm,
    whose tasks run elsewhere and start their own."""
    if launcher_kind(master) == LauncherKind.slurm:
        return nullcontext()
    return ForkServer(warm=None, allocator=allocator_mode(master))


def _baseline(master: DictConfig) -> Baseline | None:
    """The sweep's `baseline`, parsed once: every stage after this one takes it as it is."""
    node = OmegaConf.select(master, "baseline", default=None)
    return parse_baseline(OmegaConf.to_container(node) if OmegaConf.is_config(node) else node)


def _noise_limits(master: DictConfig) -> Any:
    from neuronexp.config.noise import NoiseConfig

    node = OmegaConf.select(master, "noise", default=None)
    return (
        OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(NoiseConfig), node))
        if node is not None
        else NoiseConfig()
    )
