"""`neuronexp`: the Hydra entry point. Composes the config, runs the cell (or Hydra's sweeper runs many), and
turns the outcome into the exit status: 0 every cell ran, 1 a cell failed, 2 a user mistake (one line),
130 interrupted."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

# Kineto prints "USDT ... profiler_start/stop" for every profiled cell at any lower level; read at torch
# import, so set before anything pulls torch in. KINETO_LOG_LEVEL=4 brings its errors back.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

from neuronexp.cli.callbacks import RunRejected  # noqa: E402
from neuronexp.cli.errors import user_error_line  # noqa: E402
from neuronexp.config.compose import override_dirname, spec_from  # noqa: E402
from neuronexp.sweep.sweeper import SweepStopped  # noqa: E402

# Where results go is decided by Hydra (hydra.run.dir / hydra.sweep.dir); the job writes only there.
CONFIG_PACKAGE = "pkg://neuronexp.conf"


class CellFailed(Exception):
    """A single run's cell is an error row (printed already): exit status 1."""


def _job(cfg: DictConfig) -> dict[str, Any]:
    """Hydra's task function: one cell, in a single run or as one job of a sweep."""
    from neuronexp.report.terminal import print_cell
    from neuronexp.sweep.job import run_job_cell

    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    choices, task = dict(hc.runtime.choices), list(hc.overrides.task)
    spec = spec_from(cfg, choices, task, override_dirname(task))
    results = run_job_cell(spec, cfg, choices, task, out_dir, str(hc.launcher._target_))
    cell = results.cells.iloc[0]
    if hc.mode == RunMode.RUN:
        print_cell(results, out_dir)
        if cell["status"] == "error":
            raise CellFailed(cell["error"])
    return {k: (None if cell[k] != cell[k] else cell[k]) for k in ("status", "error", "latency_median_us")}


_hydra_main = hydra.main(version_base="1.3", config_path=CONFIG_PACKAGE, config_name="config")(_job)


def _importable_dirs(argv: list[str]) -> list[str]:
    """The working directory and any --config-dir: user layers there import like with `python -m`."""
    dirs = [os.getcwd()]
    for i, arg in enumerate(argv):
        if arg in ("-cd", "--config-dir") and i + 1 < len(argv):
            dirs.append(os.path.abspath(argv[i + 1]))
        elif arg.startswith("--config-dir="):
            dirs.append(os.path.abspath(arg.split("=", 1)[1]))
    return dirs


class _DropJobErrorLog(logging.Filter):
    """Hydra logs "Error executing job" before re-raising; main() reports it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Error executing job")


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: exit 0 when every cell succeeded, 1 when a cell failed, 2 for a bad config."""
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    dirs = _importable_dirs(sys.argv[1:])
    sys.path[:0] = [d for d in dirs if d not in sys.path]
    # Child processes (parallel launchers) must import user layers the same way.
    os.environ["PYTHONPATH"] = os.pathsep.join(dirs + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    # Hydra would print its own multi-line report; let its exceptions through and print one line.
    full_error = os.environ.get("HYDRA_FULL_ERROR") == "1"
    os.environ["HYDRA_FULL_ERROR"] = "1"
    logging.getLogger("hydra.core.utils").addFilter(_DropJobErrorLog())
    try:
        _hydra_main()
    except RunRejected as rejected:
        print(f"neuronexp: error: {rejected.error}", file=sys.stderr)
        sys.exit(2)
    except CellFailed:
        sys.exit(1)
    except SweepStopped as stopped:
        if stopped.message:
            print(f"neuronexp: {stopped.message}", file=sys.stderr)
        sys.exit(stopped.code)
    except KeyboardInterrupt:
        print("neuronexp: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        line = user_error_line(exc)
        if line is None or full_error:
            raise
        print(f"neuronexp: error: {line}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
