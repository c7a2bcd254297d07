"""`neuronexp`: the Hydra entry point. Composes the config, runs the job, reports user errors in one line."""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

# Kineto prints "USDT ... profiler_start/stop" for every profiled cell at any lower level; read at torch
# import, so set before neuronexp.config.compose pulls torch in. KINETO_LOG_LEVEL=4 brings its errors back.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

from neuronexp.sweep import exit_status  # noqa: E402
from neuronexp.sweep.callback import SweepRejected, aggregate_aborted_sweep, stop_progress  # noqa: E402
from neuronexp.config.compose import override_dirname, spec_from  # noqa: E402
from neuronexp.config import ConfigError  # noqa: E402

# Where results go is decided by Hydra (hydra.run.dir / hydra.sweep.dir); the job writes only there.
CONFIG_PACKAGE = "pkg://neuronexp.conf"
# Any other Hydra launcher runs jobs in worker processes or on other hosts: cells then get a device slot
# and a fresh process each (neuronexp.sweep.launch, docs/slurm.md).
BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
# What joblib (loky) and submitit raise when a worker process or a job died under them.
LAUNCHER_FAILURES = {"TerminatedWorkerError", "BrokenProcessPool", "UncompletedJobError", "FailedJobError"}
# Launchers of optional extras, named when they are not installed (hydra/launcher=parallel builds on joblib).
LAUNCHER_PLUGINS = {name: f"; install it with pip install 'neuronexp[{extra}]'" for name, extra in
                    (("joblib", "parallel"), ("submitit_local", "slurm"), ("submitit_slurm", "slurm"))}


def _job(cfg: DictConfig) -> dict[str, Any]:
    from neuronexp.report.terminal import print_cell
    from neuronexp.results import read_job
    from neuronexp.results.files import atomic_write_text, mark_cached_if_complete, reset_job_dir

    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    single = hc.mode == RunMode.RUN
    try:
        choices, task = dict(hc.runtime.choices), list(hc.overrides.task)
        dirname = override_dirname(task)
        spec = spec_from(cfg, choices, task, dirname)
        if mark_cached_if_complete(out_dir, spec.run_id):
            os.utime(out_dir / "cells.parquet")  # seen as done by this sweep's progress (callbacks.py)
            return _job_summary(read_job(out_dir))
        reset_job_dir(out_dir)
        atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
        results = _run_placed(spec, cfg, out_dir, hc, single)
    except ConfigError as exc:
        # The config was checked before the run directory existed (callbacks.on_run_start); what is left is
        # found while starting the cell. Nothing is removed: the directory may hold the user's files.
        if not single:
            raise
        print(f"neuronexp: error: {exc}", file=sys.stderr)
        exit_status.note_config_error()
        return {}
    if single:
        # In a sweep the aggregation counts failures (it also sees cells run by other processes).
        exit_status.note_failed_cells(int(results.cells["status"].iloc[0] == "error"))
        print_cell(results, out_dir)
    return _job_summary(results)


def _run_placed(spec: Any, cfg: DictConfig, out_dir: Path, hc: Any, single: bool) -> Any:
    """Run the cell here, or on a device slot of its own (a fresh process, or a warm pinned worker)."""
    from neuronexp.cell.run import run_cell

    isolate, parallel = spec.config.launcher.isolate, hc.launcher._target_ != BASIC_LAUNCHER
    if not (parallel or isolate):
        # In a sweep every config was validated up front; what is left (a factory that builds no
        # nn.Module) is the cell's own failure and becomes its error row.
        return run_cell(spec, out_dir, raise_config_errors=single)
    from neuronexp.sweep.launch import CellRequest, backend_kind, run_in_slot, run_pinned

    kind = backend_kind(spec.config.backend.value)
    if isolate is False:
        return run_pinned(spec, out_dir, kind, spec.config.launcher)
    config = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    choices, task = dict(hc.runtime.choices), list(hc.overrides.task)
    request = CellRequest(config, choices, task, spec.overrides, spec.run_id, str(out_dir), kind)  # type: ignore[arg-type]
    return run_in_slot(request, spec, spec.config.launcher)


def _job_summary(results: Any) -> dict[str, Any]:
    """The small picklable value a job hands back to the sweeper for its progress log."""
    cell = results.cells.iloc[0]
    return {k: (None if cell[k] != cell[k] else cell[k]) for k in ("status", "error", "latency_median_us")}


_hydra_main = hydra.main(version_base="1.3", config_path=CONFIG_PACKAGE, config_name="config")(_job)


def user_error_line(exc: BaseException) -> str | None:
    """One line for a configuration mistake, or None for a genuine bug (which keeps its traceback)."""
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(exc, ConfigError):
        return str(exc)
    if isinstance(exc, MissingConfigException) or (
        isinstance(exc, HydraException) and "Could not find" in str(exc)
    ):
        return _missing_option_line(str(exc), exc)
    if isinstance(exc, (HydraException, OmegaConfBaseException)):
        return _hydra_error_line(str(exc), exc.__cause__)
    return None


def _hydra_error_line(text: str, cause: BaseException | None) -> str:
    detail = _first_line(str(cause)) if cause is not None else ""
    if m := re.match(r"Error merging override (.+)", text):
        return f"{m.group(1)}: {detail or 'cannot be applied'}"
    if m := re.match(r"Could not override '([^']+)'", text):
        return f"{m.group(1)}: no such key ({detail}); add a new key with +{m.group(1)}=..."
    if m := re.match(r"Error parsing override '([^']+)'\s*(.*)", text, re.S):
        return f"{m.group(1)}: cannot parse ({_first_line(m.group(2))}); quote values with commas, e.g. 'key=\"0,1\"'"
    return _one_line(f"{text}; {detail}" if detail else text)


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _missing_option_line(text: str, exc: BaseException) -> str:
    options = getattr(exc, "options", None)
    match = re.search(r"Could not find '([^']+)/([^']+)'", text)
    if match is None:
        return _one_line(text)
    group, value = match.groups()
    if not options:
        options = [ln.strip() for ln in text.splitlines()[1:] if ln.startswith("\t")]
    allowed = f"one of {', '.join(options)}" if options else "no such option"
    hint = LAUNCHER_PLUGINS.get(value, "") if group == "hydra/launcher" else ""
    return f"{group}={value}: unknown option; allowed: {allowed}{hint}"


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("object_type=",))]
    return re.sub(r"\s+", " ", "; ".join(lines))


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
    """Hydra logs "Error executing job with overrides" before re-raising; main() reports it instead."""

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
    exit_status.reset()
    logging.getLogger("hydra.core.utils").addFilter(_DropJobErrorLog())
    try:
        _hydra_main()
    except SweepRejected as rejected:
        stop_progress()
        print(f"neuronexp: error: {rejected.error}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        stop_progress()
        line = user_error_line(exc)
        if line is None and type(exc).__name__ in LAUNCHER_FAILURES and (sweep := aggregate_aborted_sweep()):
            # A worker or a Slurm job died: what finished is aggregated, the rest reruns on resume.
            print(f"neuronexp: error: the launcher stopped the sweep ({type(exc).__name__}: {_first_line(str(exc))}); "
                  f"rerun with hydra.sweep.dir={sweep} to resume it", file=sys.stderr)
            sys.exit(1)
        if line is None or full_error:
            raise
        print(f"neuronexp: error: {line}", file=sys.stderr)
        sys.exit(2)
    finally:
        stop_progress()
    sys.exit(exit_status.code())
