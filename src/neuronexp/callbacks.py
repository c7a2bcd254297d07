"""Hydra callback (edge): check a sweep before it starts, show progress, aggregate when it ends."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from neuronexp import exit_status
from neuronexp.config import ConfigError

log = logging.getLogger(__name__)


_progress: Progress | None = None


class SweepRejected(BaseException):
    """A cell's config is invalid: the sweep must not start (cli.main reports it in one line)."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(str(error))
        self.error = error


def stop_progress() -> None:
    """Take the progress bar off the terminal (also on Ctrl-C or an error; called by cli.main)."""
    global _progress
    if _progress is not None:
        _progress.stop()
        _progress = None


class SweepCallback(Callback):
    """Hooks a multirun at its start, around each job, and at its end.

    - start: every cell composed and validated (`sweep_plan`), the job list written to `jobs.json`;
    - each job: a progress line (cell i of n, the cell, elapsed time and its outcome);
    - end: `<sweep>/results/` aggregated from the job directories on disk and the comparison printed.

    Failed cells never raise here (Hydra's basic sweeper would then skip `on_multirun_end`); they are
    counted for the exit code instead.
    """

    def __init__(self) -> None:
        self.total: int | None = None
        self.done = 0
        self.started = time.perf_counter()
        self.task: Any = None

    def _start_progress(self) -> None:
        global _progress
        columns = [TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}")]
        # Transient, on stderr: the bar is gone when the sweep ends, logs and the table stay.
        _progress = Progress(*columns, console=Console(stderr=True), transient=True)
        self.task = _progress.add_task("", total=self.total)
        _progress.start()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from neuronexp.aggregate import JOBS_MANIFEST
        from neuronexp.results import write_json
        from neuronexp.sweep_plan import plan_sweep

        try:
            cells = plan_sweep(config)
        except ConfigError as exc:
            # Hydra turns a callback's Exception into a warning and sweeps on; this stops the sweep.
            raise SweepRejected(exc) from None
        self.started = time.perf_counter()
        if cells is None:
            return
        self.total = len(cells)
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        write_json(sweep_dir / JOBS_MANIFEST, [vars(c) for c in cells])
        log.info("sweep of %d cells into %s", self.total, sweep_dir)
        # Hydra's launcher logs each job too; the per-cell lines below say the same with the outcome.
        logging.getLogger(BasicLauncher.__module__).setLevel(logging.WARNING)
        self._start_progress()

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if _progress is not None and self.task is not None:
            _progress.update(self.task, description=" ".join(config.hydra.overrides.task))

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if OmegaConf.select(config, "hydra.mode") != RunMode.MULTIRUN:
            return
        self.done += 1
        summary = job_return.return_value if job_return.status.name == "COMPLETED" else None
        outcome = _outcome(summary, job_return)
        total = f"/{self.total}" if self.total else ""
        elapsed = time.strftime("%H:%M:%S", time.gmtime(time.perf_counter() - self.started))
        log.info("[%s] cell %d%s %s · %s", elapsed, self.done, total, " ".join(job_return.overrides), outcome)
        if _progress is not None and self.task is not None:
            _progress.update(self.task, completed=self.done)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from neuronexp.aggregate import aggregate
        from neuronexp.summary import print_sweep

        stop_progress()
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():
            return
        outcome = aggregate(sweep_dir, OmegaConf.select(config, "baseline", default=None))
        exit_status.note_failed_cells(outcome.failed)
        print_sweep(outcome, sweep_dir)


def _outcome(summary: dict[str, Any] | None, job_return: Any) -> str:
    if summary is None:
        return f"job failed: {job_return._return_value!r}"[:200]
    if summary.get("status") == "error":
        return f"error: {summary.get('error')}"
    median = summary.get("latency_median_us")
    return f"{summary.get('status')} · median {median:,.1f} µs" if median is not None else str(summary.get("status"))
