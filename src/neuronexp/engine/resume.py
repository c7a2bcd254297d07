"""Where each planned cell goes in the sweep directory, and which cells are already there.

A cell is matched by its configuration (run_id), never by its position: a complete cell is reused wherever it sits, and
a directory holding another configuration's cell is never written to."""

from __future__ import annotations

from pathlib import Path

from neuronexp.engine.plan import PlannedCell
from neuronexp.results.files import complete_run_id, owner


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
            run_id = complete_run_id(job)
            if run_id is not None:
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
        numbers = [int(p.name) for p in sweep_dir.iterdir() if p.name.isdigit()] + [
            int(t) for t in taken if t.isdigit()
        ]
        n = max(numbers, default=-1) + 1
        while not usable(str(n)):
            n += 1
        return str(n)
    k = 2
    while not usable(f"{planned}-{k}"):
        k += 1
    return f"{planned}-{k}"


def _may_write(job_dir: Path, run_id: str) -> bool:
    """A job directory this cell may write into: new, empty, or one a neuronexp cell of this configuration
    wrote (its `cell.json`). Never a link, nor a directory of files neuronexp did not write (a user's
    `0/config.yaml`): the cell goes to the next free name instead."""
    if job_dir.is_symlink():
        return False
    if not job_dir.exists():
        return True
    who = owner(job_dir)
    if who is None:
        return job_dir.is_dir() and not any(job_dir.iterdir())
    return who == run_id
