"""A sweep into a directory that already holds cells: where each planned cell goes and which are reused (`assign`: a
cell is matched by its configuration, run_id, never by its position, so a complete cell is reused wherever it sits and
a directory holding another configuration's cell is never written to), and in words for the sweep's first and last
lines (`compare`, `words`): how many it reuses, which it runs again and why (their code changed, and in which file, as
the cells' own `cell.json` records it; their configuration changed; their earlier run did not finish), and which
earlier job directories it leaves in place (never deleted: docs/guarantees.md), outside `results/`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuronexp.engine.plan import PlannedCell
from neuronexp.results.files import CELL_MARKER, complete_run_id, owner, read_marker

SHOWN = 4  # names listed before "and N more"


def assign(cells: list[PlannedCell], sweep_dir: Path, rerun_all: bool = False) -> set[str]:
    """Point each cell at its directory; returns the run_ids already complete there (reused, not rerun). A cell complete
    anywhere in the sweep directory keeps that directory (with `rerun_all`, sweep.rerun=all, it runs again there and
    nothing is reused). Any other cell gets its planned directory unless that one belongs to another configuration or
    holds files no neuronexp cell wrote; then the next free name."""
    complete: dict[str, str] = {}
    if sweep_dir.is_dir():
        for found in sorted(sweep_dir.rglob("cells.parquet")):
            job = found.parent
            if job == sweep_dir / "results":  # the aggregated tables, not a cell
                continue
            if (run_id := complete_run_id(job)) is not None:
                complete.setdefault(run_id, str(job.relative_to(sweep_dir)))
    reused = set()
    taken = set(complete.values())
    for cell in cells:
        if cell.run_id in complete:
            cell.dir = complete[cell.run_id]
            reused.add(cell.run_id)
    for cell in cells:
        if cell.run_id in reused:
            continue
        cell.dir = _free(sweep_dir, cell.dir, cell.run_id, taken)
        taken.add(cell.dir)
    return set() if rerun_all else reused


def _free(sweep_dir: Path, planned: str, run_id: str, taken: set[str]) -> str:
    def usable(name: str) -> bool:
        return name not in taken and _may_write(sweep_dir / name, run_id)

    if usable(planned):
        return planned
    if planned.isdigit():
        used = [p.name for p in sweep_dir.iterdir()] + list(taken)
        names = (str(n) for n in itertools.count(max((int(u) for u in used if u.isdigit()), default=-1) + 1))
    else:
        names = (f"{planned}-{k}" for k in itertools.count(2))
    return next(name for name in names if usable(name))


def _may_write(job_dir: Path, run_id: str) -> bool:
    """A job directory this cell may write into: new, empty, or one a neuronexp cell of this configuration
    wrote (its `cell.json`). Never a link, nor a directory of files neuronexp did not write (a user's
    `0/config.yaml`): the cell goes to the next free name instead."""
    if job_dir.is_symlink():
        return False
    if not job_dir.exists():
        return True
    who = owner(job_dir)
    return (job_dir.is_dir() and not any(job_dir.iterdir())) if who is None else who == run_id


@dataclass
class Rerun:
    """The sweep's cells against what the directory held before it."""

    planned: int
    reused: int = 0
    code: list[str] = field(default_factory=list)  # run_ids run again because their code changed
    changed_files: set[str] = field(default_factory=set)  # the files whose content changed, as code_files names them
    config: list[str] = field(default_factory=list)  # run again: the same overrides, another configuration
    unfinished: list[str] = field(default_factory=list)  # run again: their earlier run left no result
    kept: list[str] = field(default_factory=list)  # earlier job directories no planned cell uses


def _markers(sweep_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each job directory's cell.json (plain JSON, read from regular files only), by its directory."""
    markers = sorted(sweep_dir.rglob(CELL_MARKER)) if sweep_dir.is_dir() else []
    found = [(str(m.parent.relative_to(sweep_dir)), read_marker(m.parent)) for m in markers]
    return [(where, info) for where, info in found if info is not None]


def compare(cells: list[PlannedCell], reused: set[str], sweep_dir: Path) -> Rerun:
    """Read before the cells are prepared: their directories still hold what the earlier runs wrote."""
    out = Rerun(planned=len(cells), reused=len(reused & {c.run_id for c in cells}))
    markers = _markers(sweep_dir)
    used = {c.dir for c in cells}
    out.kept = [where for where, _ in markers if where not in used]
    for cell in (c for c in cells if c.run_id not in reused):
        same = [info for _, info in markers if info.get("overrides") == cell.overrides]  # the same command's cell
        if any(info.get("run_id") == cell.run_id for _, info in markers):
            out.unfinished.append(cell.run_id)
        elif same:
            before = same[-1].get("code")
            changed = {f for f in {*cell.code, *(before or {})} if cell.code.get(f) != (before or {}).get(f)}
            if isinstance(before, dict) and changed:
                out.code.append(cell.run_id)
                out.changed_files |= changed
            else:
                out.config.append(cell.run_id)
    return out


def _names(items: list[str] | set[str]) -> str:
    shown = sorted(items)
    more = f" and {len(shown) - SHOWN} more" if len(shown) > SHOWN else ""
    return ", ".join(shown[:SHOWN]) + more


def words(rerun: Rerun, done: bool = False) -> str:
    """`4 reused; 2 run again because their code changed (layers/myblock.py); the earlier job directories 0, 1
    are left in place, outside results/` ("ran again" once `done`); "" when the directory held no cell."""
    if not (rerun.reused or rerun.code or rerun.config or rerun.unfinished or rerun.kept):
        return ""
    run = "ran again" if done else "run again"
    parts = [f"{rerun.reused} reused"]
    if rerun.code:
        parts.append(f"{len(rerun.code)} {run} because their code changed ({_names(rerun.changed_files)})")
    if rerun.config:
        parts.append(f"{len(rerun.config)} {run} because their configuration changed")
    if rerun.unfinished:
        parts.append(f"{len(rerun.unfinished)} {run} because their earlier run left no result")
    if rerun.kept:
        parts.append(
            f"the earlier job director{'y' if len(rerun.kept) == 1 else 'ies'} {_names(rerun.kept)} "
            f"{'is' if len(rerun.kept) == 1 else 'are'} left in place, outside results/"
        )
    return "; ".join(parts)
