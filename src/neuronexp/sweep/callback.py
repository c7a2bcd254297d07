"""Hydra callback (edge): check a sweep before it starts, show progress, aggregate when it ends."""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra.experimental.callback import Callback
from hydra.plugins.sweeper import Sweeper
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from neuronexp.sweep import exit_status
from neuronexp.config import ConfigError

log = logging.getLogger(__name__)


_progress: Progress | None = None
# With a parallel launcher: the thread reporting cells as their files appear, and the sweep being run
# (so that cli.main can still aggregate it when the launcher aborts, e.g. a worker was killed).
_watcher: Any = None
_active: tuple[Path, str | None] | None = None


class SweepRejected(BaseException):
    """A cell's config is invalid: the sweep must not start (cli.main reports it in one line)."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(str(error))
        self.error = error


def stop_progress() -> None:
    """Take the progress bar off the terminal (also on Ctrl-C or an error; called by cli.main)."""
    global _progress, _watcher
    if _watcher is not None:
        _watcher.stop()
        _watcher = None
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
        self.main_pid = os.getpid()
        self.overrides: list[list[str]] = []

    def _start_progress(self) -> None:
        global _progress
        columns = [TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}")]
        # Transient, on stderr: the bar is gone when the sweep ends, logs and the table stay.
        _progress = Progress(*columns, console=Console(stderr=True), transient=True)
        self.task = _progress.add_task("", total=self.total)
        _progress.start()

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A single run is checked here, before Hydra creates its run directory: a bad value then leaves
        nothing behind, and neuronexp never has to remove a directory (it may hold the user's files)."""
        from neuronexp.backends import check_available
        from neuronexp.config.compose import spec_from_sweep_config
        from neuronexp.results.files import foreign_cell

        try:
            spec = spec_from_sweep_config(config)
            check_available(spec.config.backend)
            run_dir = Path(str(config.hydra.run.dir))
            other = foreign_cell(run_dir, spec.run_id)
            if other is not None:
                raise ConfigError("hydra.run.dir", str(run_dir), f"already holds the results of another cell ({other}); "
                                  "neuronexp never overwrites them: choose another directory")
        except ConfigError as exc:
            raise SweepRejected(exc) from None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from neuronexp.results import JOBS_MANIFEST
        from neuronexp.results.files import write_json
        from neuronexp.sweep.plan import plan_sweep

        if _launcher(config).endswith(".SlurmLauncher") and not shutil.which("sbatch"):
            raise SweepRejected(ConfigError("hydra/launcher", "slurm", "no Slurm here (sbatch is not on PATH); "
                                            "hydra/launcher=submitit_local runs the same path on this machine"))
        try:
            cells = plan_sweep(config)
        except ConfigError as exc:
            # Hydra turns a callback's Exception into a warning and sweeps on; this stops the sweep.
            raise SweepRejected(exc) from None
        self.started = time.perf_counter()
        if cells is None:
            return
        # Every cell was just composed and validated; the basic sweeper would compose each one again
        # before launching it (Sweeper.validate_batch_is_legal), a second full pass that buys nothing.
        # Patched on the public base class: Hydra's plugin scan loads its own copy of BasicSweeper.
        Sweeper.validate_batch_is_legal = lambda self, batch: None  # type: ignore[method-assign]
        self.total = len(cells)
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        write_json(sweep_dir / JOBS_MANIFEST, [vars(c) for c in cells])
        log.info("sweep of %d cells into %s", self.total, sweep_dir)
        # Hydra's launcher logs each job too; the per-cell lines below say the same with the outcome.
        logging.getLogger(BasicLauncher.__module__).setLevel(logging.WARNING)
        self._start_progress()
        global _watcher, _active
        self.main_pid, self.overrides = os.getpid(), [c.overrides for c in cells]
        _active = (sweep_dir, OmegaConf.select(config, "baseline", default=None))
        if _launcher(config) != BasicLauncher.__module__ + ".BasicLauncher":
            from neuronexp.sweep.watch import CellWatcher

            _warn_about_slots(config)
            _watcher = CellWatcher([sweep_dir / c.dir for c in cells], self._cell_done).start()

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if _progress is not None and self.task is not None:
            _progress.update(self.task, description=" ".join(config.hydra.overrides.task))

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if OmegaConf.select(config, "hydra.mode") != RunMode.MULTIRUN:
            return
        if _watcher is not None or os.getpid() != self.main_pid:
            return  # a worker's copy of this callback: the main process's watcher reports the cell
        summary = job_return.return_value if job_return.status.name == "COMPLETED" else None
        self._report(job_return.overrides, _outcome(summary, job_return))

    def _cell_done(self, index: int, row: dict[str, Any]) -> None:
        """A cell's file appeared (watcher thread): the same line as `on_job_end`, plus where it ran."""
        outcome = _outcome({k: row.get(k) for k in ("status", "error", "latency_median_us")}, None)
        self._report(self.overrides[index], f"{outcome} · {row.get('placement') or '?'}")

    def _report(self, overrides: list[str], outcome: str) -> None:
        self.done += 1
        total = f"/{self.total}" if self.total else ""
        elapsed = time.strftime("%H:%M:%S", time.gmtime(time.perf_counter() - self.started))
        shown = " ".join(o for o in overrides if not o.startswith("launcher."))  # the same for every cell
        log.info("[%s] cell %d%s %s · %s", elapsed, self.done, total, shown, outcome)
        if _progress is not None and self.task is not None:
            _progress.update(self.task, completed=self.done)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from neuronexp.sweep.aggregate import aggregate
        from neuronexp.report.terminal import print_sweep

        global _active
        stop_progress()
        _active = None
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if not sweep_dir.is_dir():
            return
        outcome = aggregate(sweep_dir, OmegaConf.select(config, "baseline", default=None))
        exit_status.note_failed_cells(outcome.failed)
        print_sweep(outcome.cells, outcome.failed, outcome.baseline, sweep_dir)


def aggregate_aborted_sweep() -> Path | None:
    """The launcher gave up mid-sweep (a worker or a Slurm job died): aggregate what finished, count the rest.

    Returns the sweep directory (to resume: the same command with hydra.sweep.dir=<it>), or None when no
    sweep was running.
    """
    global _active
    from neuronexp.sweep.aggregate import aggregate

    stop_progress()
    if _active is None or not _active[0].is_dir():
        return None
    sweep_dir, baseline = _active
    _active = None
    outcome = aggregate(sweep_dir, baseline)
    exit_status.note_failed_cells(max(outcome.failed, 1))
    log.info("sweep stopped: %d cells failed or missing (%d missing); results so far in %s/results",
             outcome.failed, len(outcome.missing), sweep_dir)
    return sweep_dir


def _launcher(config: DictConfig) -> str:
    return str(OmegaConf.select(config, "hydra.launcher._target_", default=""))


def _warn_about_slots(config: DictConfig) -> None:
    """joblib running more workers than there are device slots: the extra ones only wait."""
    n_jobs = OmegaConf.select(config, "hydra.launcher.n_jobs", default=None)
    devices = OmegaConf.select(config, "launcher.devices", default=1)
    workers = (os.cpu_count() or 1) + 1 + n_jobs if n_jobs is not None and n_jobs < 0 else n_jobs  # joblib's rule
    if workers is not None and workers > devices:
        log.warning("joblib runs %d workers but launcher.devices=%d: cells wait for a free device slot; set "
                    "launcher.devices=%d (hydra/launcher=parallel runs one worker per slot)", workers, devices, workers)


def _outcome(summary: dict[str, Any] | None, job_return: Any) -> str:
    if summary is None:
        return f"job failed: {job_return._return_value!r}"[:200]
    if summary.get("status") == "error":
        return f"error: {summary.get('error')}"
    median = summary.get("latency_median_us")
    return f"{summary.get('status')} · median {median:,.1f} µs" if median is not None else str(summary.get("status"))
