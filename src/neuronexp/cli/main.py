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
from neuronexp.cli.pipe import stdout_closed  # noqa: E402
from neuronexp.config.compose import override_dirname, spec_from, task_overrides  # noqa: E402
from neuronexp.engine.stopped import SweepStopped  # noqa: E402

# Where results go is decided by Hydra (hydra.run.dir / hydra.sweep.dir); the job writes only there.
CONFIG_PACKAGE = "pkg://neuronexp.conf"


class CellFailed(BaseException):
    """A single run's cell is an error row (printed already): exit status 1.

    This and RunAborted are BaseExceptions so that they pass Hydra's job runner, which would print an
    "Error executing job" line of its own for an Exception."""


class RunAborted(BaseException):
    """A single run could not go on (`error`: a full disk, a bug); cli.main reports `error`."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _job(cfg: DictConfig) -> dict[str, Any]:
    """Hydra's task function: one cell, in a single run or as one job of a sweep."""
    from neuronexp.report.terminal import print_cell
    from neuronexp.engine._hydra import launcher_kind
    from neuronexp.engine.job import run_job_cell

    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    choices, task = dict(hc.runtime.choices), task_overrides(hc.overrides.task)
    try:
        spec = None
        if hc.mode == RunMode.MULTIRUN:  # a sweep's job: its cell as the sweep planned and checked it
            from neuronexp.engine.plan import planned_spec

            spec = planned_spec(Path(str(hc.sweep.dir)), out_dir, task)
        if spec is None:  # a single run (or a sweeper other than neuronexp's): built and checked here, once
            spec = spec_from(cfg, choices, task, override_dirname(task))
        if hc.mode == RunMode.RUN and spec.config.sweep.dry_run:  # the one cell, as a sweep's dry run lists it
            print(
                f"dry run: 1 cell, run_id {spec.run_id}: {spec.module_name} {spec.overrides}".rstrip()
                + " (nothing is run; run it without sweep.dry_run to measure)"
            )
            return {"status": "dry_run", "error": None, "latency_median_us": None}
        results = run_job_cell(spec, cfg, task, out_dir, launcher_kind(hc), hc.mode == RunMode.MULTIRUN)
    except Exception as exc:
        if hc.mode == RunMode.RUN:
            raise RunAborted(exc) from exc
        raise  # a sweep's job: the sweeper reads it from the launcher's JobReturn
    if results is None:  # timed with its group once the group's jobs are all prepared (sweep.pairing)
        return {"status": "queued", "error": None, "latency_median_us": None}
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


def typed_baseline(argv: list[str]) -> list[str]:
    """`baseline=module=a,compile.enabled=false` as users type it (one pair of shell quotes at most), quoted for
    Hydra, whose grammar reads `=` as an error and `,` as a sweep. A baseline is never swept (it says what cells
    are compared with), so its whole value is one string; a value Hydra can read already is left as typed."""
    out = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if (
            eq
            and key.lstrip("+") == "baseline"
            and value
            and value[0] not in "'\"{["
            and ("=" in value or "," in value)
        ):
            quote = "'" if "'" not in value else '"'
            arg = f"{key}={quote}{value}{quote}"
        out.append(arg)
    return out


def _sweep_with_cfg(argv: list[str]) -> str | None:
    """Hydra refuses -m with --cfg in a traceback; the one line says what each of them does instead."""
    sweep = any(a in ("-m", "--multirun") for a in argv)
    cfg = any(a in ("-c", "--cfg", "--info") or a.startswith(("--cfg=", "--info=")) for a in argv)
    if not (sweep and cfg):
        return None
    return (
        "-m with --cfg: --cfg shows one cell's composed config (drop -m); to preview every cell of the sweep "
        "(labels, run_ids, which are cached, a time estimate), run the sweep with sweep.dry_run=true"
    )


class _DropJobErrorLog(logging.Filter):
    """Hydra logs "Error executing job" before re-raising; main() reports it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Error executing job")


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: exit 0 when every cell succeeded, 1 when a cell failed, 2 for a bad config."""
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    sys.argv[1:] = typed_baseline(sys.argv[1:])
    dirs = _importable_dirs(sys.argv[1:])
    sys.path[:0] = [d for d in dirs if d not in sys.path]
    # Child processes (parallel launchers) must import user layers the same way.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        dirs + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    # Hydra would print its own multi-line report; let its exceptions through and print one line.
    full_error = os.environ.get("HYDRA_FULL_ERROR") == "1"
    os.environ["HYDRA_FULL_ERROR"] = "1"
    logging.getLogger("hydra.core.utils").addFilter(_DropJobErrorLog())
    clash = _sweep_with_cfg(sys.argv[1:])
    if clash:
        print(f"neuronexp: error: {clash}", file=sys.stderr)
        sys.exit(2)
    try:
        _hydra_main()
    except RunRejected as rejected:
        _exit_for(rejected.error, full_error)
    except CellFailed:
        sys.exit(1)
    except RunAborted as aborted:
        _exit_for(aborted.error, full_error)
    except SweepStopped as stopped:
        if full_error and stopped.__cause__ is not None:
            raise
        if stopped.message:
            print(f"neuronexp: {stopped.message}", file=sys.stderr)
        sys.exit(stopped.code)
    except KeyboardInterrupt:
        print("neuronexp: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # the reader stopped (`| head`): not a results file neuronexp failed to write
        sys.exit(stdout_closed())
    except Exception as exc:
        _exit_for(exc, full_error)
    sys.exit(0)


def _exit_for(exc: Exception, full_error: bool) -> None:
    """One line and exit 2 for a user mistake, 1 for a file neuronexp could not write; a bug keeps its traceback."""
    line = None if full_error else user_error_line(exc, sys.argv[1:])
    if line is not None:
        print(f"neuronexp: error: {line}", file=sys.stderr)
        sys.exit(2)
    if isinstance(exc, OSError) and not full_error:  # a full or read-only disk mid-run: not a mistake in the command
        where = f": {exc.filename}" if exc.filename else ""
        print(f"neuronexp: error: cannot write the results ({exc.strerror or exc}{where})", file=sys.stderr)
        sys.exit(1)
    raise exc
