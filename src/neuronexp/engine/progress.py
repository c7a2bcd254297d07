"""What the terminal shows while a sweep runs: a transient progress bar (stderr) with the estimated time left and what
the running cells are doing (build, compile, timing, profiling), and one log line per finished cell, cut to the
terminal's width. A cell's phase is read from `<job dir>/.phase` (results.files.write_phase), written by its own
process; a cell finishing elsewhere (a launcher's worker, a Slurm job) is seen by polling its `cells.parquet`, which
every job writes atomically (a parallel launcher runs Hydra's `on_job_end` in the worker, not where the bar is)."""

from __future__ import annotations

import importlib.util
import logging
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column

from neuronexp.engine.plan import PlannedCell
from neuronexp.formatting import fmt_us
from neuronexp.results.files import PHASE_FILE, read_phase

log = logging.getLogger("neuronexp.engine")
# The log prefix, "[12:00:00] " (conf/config.yaml hydra_logging), which the log line must leave room for.
_LOG_PREFIX = 11
# cells, the bar, n/N, elapsed and the estimate take about this much of the bar's line.
_BAR_FIXED = 44

# What the progress line says of a finished cell.
_COLUMNS = ["status", "error", "latency_median_us", "placement", "latency_rounds", "timing_stop", "precision_reached"]


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


def bar_shown(console: Console) -> bool:
    """Whether the live bar is drawn: not in a notebook without ipywidgets (rich draws it with them, and without them
    warns and draws nothing), nor where neuronexp's own log is set above INFO (`neuronexp -q`, or a caller's
    `logging.getLogger("neuronexp").setLevel(...)`): the bar is progress, as the INFO lines are."""
    if console.is_jupyter and importlib.util.find_spec("ipywidgets") is None:
        return False
    logger: logging.Logger | None = log
    while logger is not None and logger.name.startswith("neuronexp"):
        if logger.level != logging.NOTSET:
            return logger.level <= logging.INFO
        logger = logger.parent
    return True


def fit(text: str, width: int) -> str:
    """`text` cut to `width` characters, "…" marking the cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def clock(seconds: float) -> str:
    """ "1:05" or "2:01:05"."""
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def eta_text(elapsed_s: float, done: int, left: int) -> str:
    """Time left at the pace of the cells finished so far in this invocation (any parallelism included)."""
    if left == 0:
        return "eta 0:00"
    return "eta —" if done == 0 else f"eta {clock(elapsed_s / done * left)}"


class SweepProgress:
    def __init__(
        self,
        sweep_dir: Path,
        cells: list[PlannedCell],
        reused: set[str],
        interval_s: float = 0.5,
        after: Callable[[PlannedCell], Any] | None = None,  # called as each cell is reported (the user's on_job_end)
    ) -> None:
        self.sweep_dir, self.cells, self.after = sweep_dir, cells, after
        self.todo = [c for c in cells if c.run_id not in reused]
        self.done, self.total = len(cells) - len(self.todo), len(cells)
        self.done_now = 0  # finished in this invocation: the pace the estimate is based on
        self.started = time.perf_counter()
        # A phase file already there (an earlier run of a resumed sweep) says nothing until rewritten.
        self.phase_before = {c.dir: stamp(sweep_dir / c.dir / PHASE_FILE) for c in self.todo}
        self.finished_dirs: set[str] = set()
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._poll_phases, name="neuronexp-phases", daemon=True)
        columns = [
            TextColumn("cells"),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            TextColumn("{task.description}", table_column=Column(no_wrap=True)),
        ]
        # Transient, on stderr: the bar is gone when the sweep ends, logs and the table stay.
        self.console = Console(stderr=True)
        self.bar = Progress(*columns, console=self.console, transient=True, disable=not bar_shown(self.console))
        self.task = self.bar.add_task("", total=self.total, completed=self.done, eta="eta —")

    def __enter__(self) -> SweepProgress:
        self.bar.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.bar.stop()

    def finished(self, cell: PlannedCell, where: bool = False) -> None:
        """A cell the engine ran ended (its files are written); `where`: say on which device slot."""
        self._report(cell, finished_row(self.sweep_dir / cell.dir), where)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Report cells as their files appear (cells run in other processes: launcher workers, Slurm jobs)."""
        watcher = CellWatcher(
            [self.sweep_dir / c.dir for c in self.todo], lambda i, row: self._report(self.todo[i], row, where=True)
        ).start()
        try:
            yield
        finally:
            watcher.stop()

    def running_phases(self) -> list[tuple[PlannedCell, str]]:
        """(cell, phase) for every cell running now: those whose phase file was written since the sweep started and
        that have not finished."""
        out = []
        for cell in self.todo:
            if cell.dir in self.finished_dirs:
                continue
            path = self.sweep_dir / cell.dir / PHASE_FILE
            if stamp(path) not in (None, self.phase_before[cell.dir]):
                out.append((cell, read_phase(path.parent) or "?"))
        return out

    def _show_running(self) -> None:
        running = self.running_phases()
        if not running:
            text = ""
        elif len(running) == 1:
            text = f"{running[0][1]} · {running[0][0].label}"
        else:
            counts = Counter(phase for _, phase in running)
            text = f"{len(running)} running: " + ", ".join(f"{n} {p}" for p, n in counts.items())
        width = self.console.width - _BAR_FIXED
        with self._lock:
            self.bar.update(self.task, description=escape(fit(text, width)), eta=self._eta())

    def _poll_phases(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._show_running()

    def _eta(self) -> str:
        return eta_text(time.perf_counter() - self.started, self.done_now, self.total - self.done)

    def _report(self, cell: PlannedCell, row: dict[str, Any] | None, where: bool = False) -> None:
        with self._lock:
            self.done += 1
            self.done_now += 1
            self.finished_dirs.add(cell.dir)
            outcome, detail = _outcome(row)
            if where and row is not None:
                outcome += f" · {row.get('placement') or '?'}"
            # The cell and an error's text last: on a narrow terminal they are what is cut, never the outcome
            # (the whole error is in the sweep's summary).
            line = f"cell {self.done}/{self.total} {outcome} · {self._eta()} · {cell.label}"
            line += f": {detail}" if detail else ""
            log.info("%s", fit(line, shutil.get_terminal_size((80, 24)).columns - _LOG_PREFIX))
            self.bar.update(self.task, completed=self.done, eta=self._eta())
        if self.after is not None:
            self.after(cell)


def _outcome(row: dict[str, Any] | None) -> tuple[str, str]:
    """(what happened, in a few words; the error text, if any, which goes last on the line)."""
    if row is None:
        return "no result", "the cell's process died"
    if row.get("status") == "error":
        return "error", str(row.get("error"))
    median = row.get("latency_median_us")
    outcome = f"{row.get('status')} {fmt_us(median)}" if median is not None else str(row.get("status"))
    return outcome + _sampling(row), ""


def _sampling(row: dict[str, Any]) -> str:
    """How long a group timed to a precision sampled, and why it stopped (timing.precision)."""
    why, reached, rounds = row.get("timing_stop"), row.get("precision_reached"), row.get("latency_rounds")
    if why not in ("precision", "max_seconds") or reached is None:
        return ""
    return f" · ±{reached:.1%} in {rounds} rounds" + (" (max_seconds)" if why == "max_seconds" else "")
