"""Cells finishing elsewhere (launcher workers, Slurm jobs), seen from the main process by polling the disk.

A parallel launcher runs Hydra's `on_job_end` in the worker, not where the progress bar is; every job ends by writing
`cells.parquet` atomically, so a changed file is a finished cell wherever it ran."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

# What the progress line says of a finished cell.
_COLUMNS = ["status", "error", "latency_median_us", "placement"]


def stamp(path: Path) -> int | None:
    """The file's modification time in ns, None when it is not there."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def finished_row(job_dir: Path) -> dict[str, Any] | None:
    """The progress columns of the job's one cells.parquet row; None when there is none (yet, or the cell's
    process died without one, or the file is being replaced)."""
    try:
        names = pq.read_schema(job_dir / "cells.parquet").names
        return pq.read_table(job_dir / "cells.parquet", columns=[c for c in _COLUMNS if c in names]).to_pylist()[0]
    except Exception:
        return None


class CellWatcher:
    """Calls `on_done(index, row)` once per job directory whose `cells.parquet` appears or changes. Files already there
    when the watcher is made (an earlier run of a resumed sweep) count only once rewritten or touched; comparing against
    that snapshot, not a clock, keeps it right across hosts with skewed clocks."""

    def __init__(
        self, job_dirs: list[Path], on_done: Callable[[int, dict[str, Any]], None], interval_s: float = 0.5
    ) -> None:
        self.dirs = job_dirs
        self.files = [d / "cells.parquet" for d in job_dirs]
        self.before = [stamp(f) for f in self.files]
        self.pending = set(range(len(self.files)))
        self.on_done, self.interval_s = on_done, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="neuronexp-progress", daemon=True)

    def start(self) -> CellWatcher:
        self._thread.start()
        return self

    def poll(self) -> None:
        for i in sorted(self.pending):
            now = stamp(self.files[i])
            if now is None or now == self.before[i]:
                continue
            row = finished_row(self.dirs[i])
            if row is None:  # replaced while reading: next poll
                continue
            self.pending.discard(i)
            self.on_done(i, row)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def stop(self) -> None:
        """Stop polling after a last look, so every cell finished by now is reported before the summary."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.poll()
