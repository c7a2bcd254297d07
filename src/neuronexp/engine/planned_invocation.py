"""An invocation as a value: what it is (a run of one cell, or a sweep), where it writes, its cells planned and checked,
their comparison units, its baseline and its executor. `planned` is the one reading of how the command was asked
(single or sweep, modules from memory, the launcher): every later stage reads the Invocation, none re-derives it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from neuronexp.analysis.baseline import Baseline, parse_baseline
from neuronexp.config import ConfigError
from neuronexp.engine._hydra import CellComposer, LauncherKind, launcher_kind
from neuronexp.engine.context import SweepContext
from neuronexp.engine.dryrun import is_dry_run
from neuronexp.engine.executor import Executor, Inline, Local
from neuronexp.engine.grouping import Unit, comparison_units
from neuronexp.engine.launched import HydraLauncher, Slurm
from neuronexp.engine.plan import grid, plan_cell, plan_sweep, swept_keys
from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.preflight import check_runnable


@dataclass(frozen=True)
class Invocation:
    kind: str  # "run": one cell into hydra.run.dir, printed; "sweep": into hydra.sweep.dir, aggregated into results/
    directory: Path
    cells: tuple[PlannedCell, ...]  # (their job directories are settled under the directory's lock: engine.rerun)
    units: tuple[Unit, ...]  # every cell in a comparison unit: the cells the executor runs in one process
    notes: tuple[str, ...]  # why a group is timed unpaired, if any is
    baseline: Baseline | None
    executor: Executor
    dry_run: bool = False  # planned and checked, then listed: nothing runs, nothing is written, no lock taken


@contextmanager
def planned(ctx: SweepContext) -> Iterator[Invocation]:
    """The invocation `ctx` asks for, planned and checked, for the `with` block, its executor set up meanwhile (a
    fork server started before the plan, whose `import torch` overlaps it). ConfigError: the first bad value in any
    cell (nothing has run then)."""
    single = ctx.single and not ctx.params
    if single and (swept := swept_keys(ctx.arguments)):
        key, _, value = swept[0].partition("=")
        raise ConfigError(key, value, "a list of values is a sweep: add -m")
    dry = is_dry_run(ctx.master)
    if dry and ctx.fork_server is not None:  # nothing is forked: the command's template is not needed
        ctx.fork_server.__exit__(None, None, None)
        ctx.fork_server = None
    executor = executor_for(ctx, single)
    with nullcontext() if dry else executor:
        cells = _plan(ctx, single)
        if not dry:
            executor.planned(cells)
        check_runnable(cells, executor)
        baseline = None if single else _baseline(ctx.master)
        units, notes = comparison_units(cells, baseline, executor.unpaired)
        where = ctx.master.hydra.run.dir if single else ctx.master.hydra.sweep.dir
        yield Invocation(
            "run" if single else "sweep", Path(str(where)), tuple(cells), tuple(units), tuple(notes), baseline,
            executor, dry,
        )  # fmt: skip


def _plan(ctx: SweepContext, single: bool) -> list[PlannedCell]:
    jobs = grid(ctx.params, ctx.arguments)
    composer = CellComposer(ctx.master, ctx.loader)  # composes once per choice of config groups
    if single:  # the run directory is its job directory
        return [dataclasses.replace(plan_cell(0, jobs[0], composer.compose_single(jobs[0]), set()), dir=".")]
    if ctx.memory is None:
        return plan_sweep(ctx.master, jobs, composer)
    from neuronexp.engine.in_memory import plan_memory_cells

    return plan_memory_cells(jobs, composer, ctx.memory)


def _baseline(master: Any) -> Baseline | None:
    """The sweep's `baseline`, parsed once: every stage after this one takes it as it is."""
    node = OmegaConf.select(master, "baseline", default=None)
    return parse_baseline(OmegaConf.to_container(node) if OmegaConf.is_config(node) else node)


def executor_for(ctx: Any, single: bool) -> Executor:
    """The invocation's executor, from how it was asked (`ctx`: engine.context.SweepContext) and the launcher its
    config chose, read here only. ConfigError: modules from memory under a launcher that cannot run them."""
    kind = launcher_kind(ctx.master)
    early, ctx.fork_server = ctx.fork_server, None
    if ctx.memory is not None and kind != LauncherKind.basic:
        chosen = OmegaConf.select(ctx.master, "hydra.runtime.choices", default={}).get("hydra/launcher")
        raise ConfigError(
            "hydra/launcher",
            chosen or kind.value,
            "modules from Python's memory run in this process, one unit after another: leave hydra/launcher out",
        )
    executor: Executor
    if ctx.memory is not None or (single and not _isolated(ctx)):
        executor = Inline(limited=ctx.memory is not None)
    else:
        executor = for_launcher(kind, ctx.master, ctx.launcher, early, isolate=single)
    if early is not None and getattr(executor, "early", None) is not early:
        early.__exit__(None, None, None)  # not this invocation's: none of its cells forks here
    return executor


def for_launcher(kind: LauncherKind, cfg: Any, make: Any = None, early: Any = None, isolate: bool = False) -> Executor:
    """The executor of a launcher kind (`cfg`: a config with the `launcher` node): a Hydra launcher's job asks it
    too (engine.job), for whether its cell takes a slot."""
    from neuronexp.cellprocess.forkserver import allocator_mode

    if kind == LauncherKind.slurm:
        return Slurm(cfg)
    if kind == LauncherKind.other:
        return HydraLauncher(make)
    slots = max(1, int(cfg.launcher.devices)) if kind == LauncherKind.parallel else 1
    return Local(slots, allocator_mode(cfg), early, isolate)


def _isolated(ctx: Any) -> bool:
    """A single run in a supervised process of its own: launcher.isolate=true, or `launcher.cell_timeout_s` given on
    the command line (applying it needs a supervisor; the 30-minute default is never a reason to)."""
    given = any(o.lstrip("+").startswith("launcher.cell_timeout_s=") for o in ctx.arguments)
    return given or bool(OmegaConf.select(ctx.master, "launcher.isolate", default=False))
