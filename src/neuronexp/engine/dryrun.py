"""`sweep.dry_run=true`: look before leaping. Every cell is planned and checked as for a real sweep, then listed
with its label, run_id and whether a complete result is already there (a real sweep would reuse it), with a rough
estimate of the time the rest would take. Nothing runs, nothing is written, no lock is taken."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from neuronexp.engine.plan import PlannedCell

# Per cell besides its timed pass, measured on the 2-core VM of docs/performance.md: the cell process, the module
# built, the first call, the profiled cycles and the limits pass (~1-3 s eager); a torch.compile adds its compile.
OVERHEAD_S = 2.0
COMPILE_S = 20.0


def is_dry_run(cfg: Any) -> bool:
    return bool(OmegaConf.select(cfg, "sweep.dry_run", default=False))


def estimate_s(cells: list[PlannedCell], max_seconds: float) -> float:
    """Rough: each cell's timing budget (timing.max_seconds caps it) plus its overhead."""
    return sum(max_seconds + OVERHEAD_S + (COMPILE_S if c.compiled else 0.0) for c in cells)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def dry_run_lines(cells: list[PlannedCell], sweep_dir: Path, master: Any) -> list[str]:
    """What `sweep.dry_run=true` prints: a line per cell, then the counts and the estimate."""
    from neuronexp.engine.rerun import assign  # reads the directory, writes nothing

    planned = copy.deepcopy(cells)  # assign points cells at directories: the plan itself stays as it was
    cached = assign(planned, sweep_dir) if sweep_dir.is_dir() else set()
    width = max([len(c.dir) for c in planned] + [3])
    lines = [
        f"dry run: {len(cells)} cell(s) for {sweep_dir} (nothing is run or written)",
        f"{'dir':<{width}}  {'run_id':<16}  {'status':<6}  cell",
    ]
    for c in planned:
        lines.append(f"{c.dir:<{width}}  {c.run_id:<16}  {'cached' if c.run_id in cached else 'to run':<6}  {c.label}")
    todo = [c for c in planned if c.run_id not in cached]
    return [*lines, _estimate_line(todo, len(cached), master)]


def _estimate_line(todo: list[PlannedCell], cached: int, master: Any) -> str:
    """The counts and the estimate: with timing.precision and a baseline, from the least a group may take (its
    min_rounds) up to its max_seconds; else up to max_seconds a cell."""
    timing = OmegaConf.select(master, "timing", default=None) or {}
    max_seconds = float(timing.get("max_seconds", 5.0) or 5.0)
    precision = timing.get("precision") if OmegaConf.select(master, "baseline", default=None) else None
    compiled = sum(c.compiled for c in todo)
    rest = f"~{OVERHEAD_S:g} s a cell for the rest" + (
        f"; {compiled} compiled cell(s), ~{COMPILE_S:g} s each to compile" if compiled else ""
    )
    upper = _duration(estimate_s(todo, max_seconds))
    if precision is None:
        estimate = f"about {upper} (up to {max_seconds:g} s of timing a cell (timing.max_seconds) and {rest})"
    else:
        # The least: min_rounds rounds, each its share of min_seconds (a fast cell's; a slow one's rounds are longer).
        share = min(1.0, float(timing.get("min_rounds", 10)) / float(timing.get("rounds", 20)))
        least = _duration(estimate_s(todo, float(timing.get("min_seconds", 0.5)) * share))
        estimate = (
            f"{least} up to {upper}: each comparison group is timed until its speedups are known within "
            f"±{float(precision) * 100:g}% (timing.precision), up to {max_seconds:g} s of timing a cell "
            f"(timing.max_seconds); {rest}"
        )
    return f"{len(todo)} to run, {cached} cached · estimate: {estimate}; run it without sweep.dry_run to measure"
