"""What the terminal shows while a sweep runs: a transient progress bar (stderr) and one log line per
finished cell (its outcome, where it ran, elapsed time)."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from neuronexp.sweep.plan import PlannedCell
from neuronexp.sweep.watch import CellWatcher

log = logging.getLogger("neuronexp.sweep")
_COLUMNS = ["status", "error", "latency_median_us", "placement"]


class SweepProgress:
    def __init__(self, sweep_dir: Path, cells: list[PlannedCell], reused: set[str]) -> None:
        self.sweep_dir, self.cells = sweep_dir, cells
        self.todo = [c for c in cells if c.run_id not in reused]
        self.done, self.total = len(cells) - len(self.todo), len(cells)
        self.started = time.perf_counter()
        columns = [TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}")]
        # Transient, on stderr: the bar is gone when the sweep ends, logs and the table stay.
        self.bar = Progress(*columns, console=Console(stderr=True), transient=True)
        self.task = self.bar.add_task("", total=self.total, completed=self.done)

    def __enter__(self) -> SweepProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.stop()

    def running(self, cell: PlannedCell) -> None:
        self.bar.update(self.task, description=escape(cell.label))

    def finished(self, cell: PlannedCell) -> None:
        self._report(cell, _row(self.sweep_dir / cell.dir))

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Report cells as their files appear (cells run in other processes: launcher workers, Slurm jobs)."""
        watcher = CellWatcher([self.sweep_dir / c.dir for c in self.todo],
                              lambda i, row: self._report(self.todo[i], row, where=True)).start()
        try:
            yield
        finally:
            watcher.stop()

    def _report(self, cell: PlannedCell, row: dict[str, Any] | None, where: bool = False) -> None:
        self.done += 1
        elapsed = time.strftime("%H:%M:%S", time.gmtime(time.perf_counter() - self.started))
        outcome = _outcome(row)
        if where and row is not None:
            outcome += f" · {row.get('placement') or '?'}"
        log.info("[%s] cell %d/%d %s · %s", elapsed, self.done, self.total, cell.label, outcome)
        self.bar.update(self.task, completed=self.done)


def _row(job_dir: Path) -> dict[str, Any] | None:
    try:
        names = pq.read_schema(job_dir / "cells.parquet").names
        return pq.read_table(job_dir / "cells.parquet", columns=[c for c in _COLUMNS if c in names]).to_pylist()[0]
    except Exception:  # no row: the cell's process died without one
        return None


def _outcome(row: dict[str, Any] | None) -> str:
    if row is None:
        return "no result (the cell's process died)"
    if row.get("status") == "error":
        return f"error: {row.get('error')}"
    median = row.get("latency_median_us")
    return f"{row.get('status')} · median {median:,.1f} µs" if median is not None else str(row.get("status"))
