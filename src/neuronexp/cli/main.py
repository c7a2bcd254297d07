"""`neuronexp`: the Hydra entry point. Hydra composes the config and hands every invocation to neuronexp's sweeper
plugin (a single run is a plan of one: engine.sweeper), which runs it; this module turns the outcome into the exit
status: 0 every cell ran, 1 a cell failed, 2 a user mistake (one line), 3 not finished, 130 interrupted."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronexp.cli.common import stdout_closed
from neuronexp.engine.stopped import UNFINISHED, Stopped
from neuronexp.version import __version__

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from neuronexp.cellprocess.forkserver import ForkServer

# Where results go is decided by Hydra's config (hydra.run.dir / hydra.sweep.dir); the engine writes only there.
CONFIG_PACKAGE = "pkg://neuronexp.conf"
# The override that has neuronexp's sweeper print the help (engine.help), on a command line through_the_sweeper makes.
_HELP_ROUTE = "hydra.sweeper.help=true"
# The override that makes a command line without -m a single run (through_the_sweeper).
_SINGLE_ROUTE = "hydra.sweeper.single=true"
# Hydra's flags that show something and run nothing: the command line is left to Hydra as typed.
_SHOW_FLAGS = (
    "-c",
    "--cfg",
    "--info",
    "-i",
    "--help",
    "-h",
    "--hydra-help",
    "--shell-completion",
    "-sc",
    "-p",
    "--package",
)


def _job(cfg: DictConfig) -> dict[str, Any]:
    """Hydra's task function, for a cell that Hydra runs as a job of its own: a Slurm task's (or another Hydra
    launcher's) cell of a sweep, or a job of another sweeper (hydra/sweeper=basic). Every other invocation runs in
    neuronexp's sweeper plugin, and never calls it."""
    from hydra.core.hydra_config import HydraConfig

    from neuronexp.engine.job import run_hydra_job

    cell = run_hydra_job(cfg, HydraConfig.instance().cfg.hydra).cells.iloc[0]  # type: ignore[union-attr]
    return {k: (None if cell[k] != cell[k] else cell[k]) for k in ("status", "error", "latency_median_us")}


@dataclass(frozen=True)
class _Job:
    """Hydra's task function (_job), carrying to neuronexp's sweeper the fork server this command started before Hydra
    (_early_server; the sweeper adopts it, or closes it where its cells need another or none)."""

    fork_server: ForkServer | None

    def __call__(self, cfg: DictConfig) -> dict[str, Any]:
        return _job(cfg)

    def __reduce__(self) -> tuple[type[_Job], tuple[None]]:
        return (_Job, (None,))  # a launcher pickles its task function for the jobs; the server stays in this process


def _hydra_main(server: ForkServer | None) -> None:
    """Hydra's own entry point around the task function (imported here: a mistake told before it never pays for it)."""
    import hydra

    from neuronexp.config import compose  # noqa: F401  (registers the schema, `base_config`, that conf/ extends)
    from neuronexp.engine._hydra import hydra_parser_on_python_314

    with hydra_parser_on_python_314():
        hydra.main(version_base="1.3", config_path=CONFIG_PACKAGE, config_name="config")(_Job(server))()


def _early_server(routed: list[str]) -> ForkServer | None:
    """The fork server of a command that runs cells, started before Hydra is imported: its template's `import torch`
    (3 s on a 2-core VM) then overlaps Hydra's start and composition as well as the planning (docs/performance.md).
    Started with the default malloc mode, for a sweep only (a single run measures in this process); None for a command
    that only shows something, and where this process already has a server (a caller's, e.g. a test session's)."""
    from neuronexp.cellprocess.forkserver import ForkServer, forget_inherited_server, server_address

    forget_inherited_server()
    if not _runs_as_sweep(routed) or _shows(routed) or _HELP_ROUTE in routed or server_address() is not None:
        return None
    return ForkServer(warm=None).start()  # named in the environment only once neuronexp's sweeper adopts it


def _runs_as_sweep(routed: list[str]) -> bool:
    """Whether the engine will run this command as a sweep (engine.planned_invocation: with -m, or where its config
    sweeps, `hydra.sweeper.params`), told before Hydra composes anything: from the command line, and from the file of an
    experiment it names (`+experiment=rmsnorm_sweep`, in --config-dir or neuronexp's configs). A config that sweeps
    otherwise is found once composed; its sweep then starts its own server."""
    if _SINGLE_ROUTE not in routed:
        return any(a in ("-m", "--multirun") for a in routed)
    if any(a.lstrip("+") in ("hydra.mode=MULTIRUN", "hydra.mode=multirun") for a in routed):
        return True
    import yaml

    roots = [*_importable_dirs(routed)[1:], str(Path(__file__).parents[1] / "conf")]
    for arg in routed:
        key, eq, name = arg.lstrip("+").partition("=")
        for found in (Path(r, "experiment", f"{name}.yaml") for r in roots) if key == "experiment" and eq else ():
            try:
                hydra = (yaml.safe_load(found.read_text()) or {}).get("hydra") or {}
            except (OSError, yaml.YAMLError, AttributeError):
                continue
            if (hydra.get("sweeper") or {}).get("params") or str(hydra.get("mode", "")).upper() == "MULTIRUN":
                return True
    return False


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
        if eq and key.lstrip("+") == "baseline" and ("=" in value or "," in value) and value[0] not in "'\"{[":
            quote = "'" if "'" not in value else '"'
            arg = f"{key}={quote}{value}{quote}"
        out.append(arg)
    return out


def _shows(argv: list[str]) -> bool:
    """A command line with one of Hydra's flags that show something and run nothing."""
    return any(a in _SHOW_FLAGS or a.startswith(("--cfg=", "--info=")) for a in argv)


def through_the_sweeper(argv: list[str]) -> list[str]:
    """The command line as Hydra gets it: every run is handed to neuronexp's sweeper (Hydra's multirun mode); without
    -m it is a single run (hydra.sweeper.single=true), unless its config sweeps; `--help` is printed by the sweeper
    too (hydra.sweeper.help=true: engine.help). Another command that only shows something (--cfg, --hydra-help, ...),
    a help with another help template or --resolve, and a command that picked another sweeper are left as typed."""
    if any(a.lstrip("+").startswith("hydra/sweeper=") for a in argv):
        return argv
    if any(a in ("-h", "--help") for a in argv) and not any(a.lstrip("+").startswith("hydra/help=") for a in argv):
        rest = [a for a in argv if a not in ("-h", "--help", "-m", "--multirun")]
        if not any(a in _SHOW_FLAGS or a.startswith(("--cfg=", "--info=", "--resolve")) for a in rest):
            return ["--multirun", *rest, _HELP_ROUTE]
    if _shows(argv):
        return argv
    if any(a in ("-m", "--multirun") for a in argv):
        return argv
    return ["--multirun", *argv, _SINGLE_ROUTE]


def _quick_help(argv: list[str], routed: list[str]) -> bool:
    """Print a help that through_the_sweeper routed to the sweeper (`routed`, from `argv`) composed once instead
    (engine.help.composed_help), where the compose API composes what Hydra's main would: only overrides beside the
    flag, none of them a sweep. False: not such a command line, or its overrides are wrong (the sweeper's route,
    next, says how in one line, as for a run)."""
    if _HELP_ROUTE not in routed:
        return False
    overrides = [a for a in argv if a not in ("-h", "--help", "-m", "--multirun")]
    if any(a.startswith("-") for a in overrides):  # --config-dir and the like: Hydra's main reads them
        return False
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from neuronexp.config import compose  # noqa: F401  (registers the schema and the help's resolvers)
    from neuronexp.engine.help import composed_help

    try:
        if any(o.is_sweep_override() for o in OverridesParser.create().parse_overrides(overrides)):
            return False
        text = composed_help(overrides, CONFIG_PACKAGE.removeprefix("pkg://"))
    except Exception:
        return False
    print(text)
    return True


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


def _before_hydra(argv: list[str]) -> str | None:
    """A mistake the command line alone shows, told before Hydra composes anything or torch is imported: -m with
    --cfg, and a backend typed there that cannot run on this machine (CUDA with a CPU-only torch build, Neuron
    without torch-neuronx): the command line's value is final, and a few tenths of a second beat a composition."""
    clash = _sweep_with_cfg(argv)
    if clash or any(a in _SHOW_FLAGS for a in argv):
        return clash
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key.lstrip("+") == "backend" and value != "auto":
            from neuronexp.backends import check_available
            from neuronexp.config import ConfigError

            try:
                check_available(value)
            except ConfigError as exc:
                return str(exc)
            except ValueError:  # not a backend's name: Hydra's composition says what is allowed
                return None
    return None


# -q, -qq: warnings and errors only, errors only (no progress lines, no bar); -v: debug lines too (each cell's
# directory, labels and run_id). Levels of neuronexp's own log: what it prints as its answer (the table) is not log.
_LEVELS = {
    "-qq": logging.ERROR,
    "-q": logging.WARNING,
    "--quiet": logging.WARNING,
    "-v": logging.DEBUG,
    "--verbose": logging.DEBUG,
}


def log_level(argv: list[str]) -> tuple[list[str], int | None]:
    """The command line without -q/-v (Hydra does not know them), and the level of neuronexp's log they ask for (the
    last one given; None: Hydra's logging config decides, INFO)."""
    level = None
    for arg in argv:
        level = _LEVELS.get(arg, level)
    return [a for a in argv if a not in _LEVELS], level


def _own_flags(argv: list[str]) -> tuple[list[str], int | None]:
    """neuronexp's flags, handled before Hydra sees the command line: --version (Hydra's own would print Hydra's
    version) printed here, and -q/-v; the rest of the command line, and the log level -q/-v asked for."""
    if "--version" in argv:
        print(f"neuronexp {__version__}")
        sys.exit(0)
    return log_level(argv)


class _DropJobErrorLog(logging.Filter):
    """Hydra logs "Error executing job" before re-raising; main() reports it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Error executing job")


def main(argv: list[str] | None = None) -> Any:
    """Console entry point; its exit statuses are engine.stopped's (one meaning each: docs/guarantees.md)."""
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    typed, level = _own_flags(typed_baseline(sys.argv[1:]))
    dirs = _importable_dirs(typed)
    sys.path[:0] = [d for d in dirs if d not in sys.path]
    # Processes a cell's process starts (compile workers) and Slurm tasks must import user layers the same way.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        dirs + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    # Hydra would print its own multi-line report; let its exceptions through and print one line.
    full_error = os.environ.get("HYDRA_FULL_ERROR") == "1"
    os.environ["HYDRA_FULL_ERROR"] = "1"
    logging.getLogger("hydra.core.utils").addFilter(_DropJobErrorLog())
    mistake = _before_hydra(typed)
    if mistake:
        print(f"neuronexp: error: {mistake}", file=sys.stderr)
        sys.exit(2)
    sys.argv[1:] = through_the_sweeper(typed)
    try:
        _run(typed, sys.argv[1:], level)
    except Stopped as stopped:
        if full_error and stopped.__cause__ is not None:
            raise
        if stopped.message:
            print(f"neuronexp: {'error: ' if stopped.code == 2 else ''}{stopped.message}", file=sys.stderr)
        sys.exit(stopped.code)
    except KeyboardInterrupt:
        print("neuronexp: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # the reader stopped (`| head`): not a results file neuronexp failed to write
        sys.exit(stdout_closed())
    except Exception as exc:
        _exit_for(exc, full_error, typed)
    sys.exit(0)


def _run(typed: list[str], routed: list[str], level: int | None) -> None:
    """The help composed once, or Hydra's main with the fork server started before it (stopped here, whatever
    happened), with neuronexp's log at `level` meanwhile (-q/-v; put back after: a caller's process goes on)."""
    if _quick_help(typed, routed):
        return
    server = _early_server(routed)
    ours = logging.getLogger("neuronexp")
    before = ours.level
    ours.setLevel(level if level is not None else before)
    try:
        _hydra_main(server)
    finally:
        ours.setLevel(before)
        if server is not None:
            server.__exit__(None, None, None)


def _exit_for(exc: Exception, full_error: bool, argv: list[str]) -> None:
    """One line and exit 2 for a user mistake, 3 for a file neuronexp could not write (the run did not finish); a bug
    keeps its traceback."""
    from neuronexp.cli.oneline import user_error_line  # here: a run that goes well never needs it

    line = None if full_error else user_error_line(exc, argv)
    if line is not None:
        print(f"neuronexp: error: {line}", file=sys.stderr)
        sys.exit(2)
    if isinstance(exc, OSError) and not full_error:  # a full or read-only disk mid-run: not a mistake in the command
        where = f": {exc.filename}" if exc.filename else ""
        print(f"neuronexp: error: cannot write the results ({exc.strerror or exc}{where})", file=sys.stderr)
        sys.exit(UNFINISHED)
    raise exc
