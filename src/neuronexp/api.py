"""neuronexp from Python: `run` and `sweep` take the command line's overrides as strings and run them on the same
engine (plan, executor, cell, writers: neuronexp.engine), returning the tables as `neuronexp.load` reads them.
`sweep(modules=...)` profiles `nn.Module` instances from a notebook, timed paired against a baseline module (their
cells run in this process: engine.in_memory). Mistakes are the command line's one-line errors, raised as
NeuronexpError; failed cells are rows, as on the command line."""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronexp.engine.stopped import CELL_FAILED, UNFINISHED, Stopped

if TYPE_CHECKING:
    from neuronexp.engine.context import SweepContext
    from neuronexp.facade import Results

PathLike = str | os.PathLike[str]
# One invocation at a time in a process: Hydra's state (GlobalHydra) and the invocation's identity in the environment
# are the process's, so a second thread's call waits for the first to end.
_ONE_AT_A_TIME = threading.RLock()


class NeuronexpError(Exception):
    """A mistake in what neuronexp was asked to do (the command line's one-line error, exit status 2), or a run
    that could not finish (a full disk, a launcher that gave up): the message is the line the command prints."""


def run(*overrides: str, out: PathLike | None = None, config_dir: PathLike | None = None) -> Results:
    """One cell, as `neuronexp OVERRIDES...` runs it; its tables (status `error` when the cell failed).

    Args:
        overrides: the command line's overrides, e.g. "module=rmsnorm_fused", "input.shape=[1,512,2048]".
        out: the run directory (hydra.run.dir); default: the command line's, outputs/runs/<time>.
        config_dir: a directory of your own configs and layers (the command line's --config-dir).

    Raises:
        NeuronexpError: a bad value (before anything runs), a directory that holds another cell's results.
    """
    return _invoke(list(overrides), out, config_dir, single=True)


def sweep(
    *overrides: str,
    modules: Mapping[str, Any] | None = None,
    baseline: str | Mapping[str, Any] | None = None,
    inputs: tuple[Any, ...] | Callable[[], Any] | Any = None,
    out: PathLike | None = None,
    config_dir: PathLike | None = None,
) -> Results:
    """Every combination of the overrides' swept values (`"module=rmsnorm_naive,rmsnorm_fused"`, and an experiment's
    `+experiment=rmsnorm_sweep`), as `neuronexp -m OVERRIDES...` runs it; the sweep's tables.

    Args:
        modules: name → `nn.Module` instance: each a cell (times every swept combination of the overrides), built
            from this process's memory instead of `module=`; they run in this process, and are never reused by a
            later sweep into `out` (their code has no fingerprint).
        baseline: what cells are compared with, as `baseline=` takes it: a module's name, or {key: value}.
        inputs: with `modules`: the example inputs, a tuple of tensors (or one tensor), or a callable returning one;
            or a list (any iterable) of such tuples, one swept axis: every module runs on each.
        out: the sweep directory (hydra.sweep.dir); default: the command line's, outputs/sweeps/<time>.
        config_dir: a directory of your own configs and layers (the command line's --config-dir).

    Raises:
        NeuronexpError: a bad value in any cell (before anything runs), a directory another sweep holds.
    """
    extra = [] if baseline is None else [_baseline_override(baseline)]
    if modules is None and inputs is not None:
        raise NeuronexpError("inputs: given without modules; inputs are the example inputs of modules={name: module}")
    if modules is not None:  # the caller's modules replace `module`: none of neuronexp's is composed
        from neuronexp.engine.in_memory import NO_MODULE

        extra.append(NO_MODULE)
    return _invoke([*overrides, *extra], out, config_dir, single=False, modules=(modules, inputs))


def _invoke(
    overrides: list[str],
    out: PathLike | None,
    config_dir: PathLike | None,
    single: bool,
    modules: tuple[Mapping[str, Any] | None, Any] = (None, None),
) -> Results:
    from neuronexp.cli.oneline import user_error_line
    from neuronexp.engine.sweeper import run as run_invocation

    if config_dir is not None and str(Path(config_dir).resolve()) not in sys.path:
        sys.path.insert(0, str(Path(config_dir).resolve()))  # its layers import, as with --config-dir
    try:
        with _ONE_AT_A_TIME, _default_dtype_kept(), _context(overrides, out, config_dir, single) as context:
            if modules[0] is not None:
                from neuronexp.engine.in_memory import InMemoryModules

                context.memory = InMemoryModules.checked(modules[0], modules[1])
            outcome = run_invocation(context)
    except Stopped as stopped:
        raise _stopped_error(stopped) from None
    except Exception as exc:
        line = user_error_line(exc, overrides)
        if line is None:
            raise  # a bug: its traceback
        raise NeuronexpError(line) from None
    if outcome.stopped is not None and outcome.stopped.code not in (CELL_FAILED, UNFINISHED):
        raise _stopped_error(outcome.stopped)
    if outcome.stopped is not None and outcome.stopped.message:  # the launcher gave up: what finished is returned
        print(f"neuronexp: {outcome.stopped.message}", file=sys.stderr)
    from neuronexp.facade import Results, load
    from neuronexp.results import no_results

    if outcome.directory is None:
        return Results.of_tables(no_results())
    results = load(outcome.directory)
    if outcome.cached:  # as the command line says it: the cell there was complete, and reused
        return Results(results.cells.assign(status="cached"), results.ops, results.samples, results.modules)
    return results


def _stopped_error(stopped: Stopped) -> BaseException:
    if stopped.code == 130:
        return KeyboardInterrupt()
    return NeuronexpError(stopped.message or f"exit status {stopped.code}")


@contextmanager
def _context(
    overrides: list[str], out: PathLike | None, config_dir: PathLike | None, single: bool
) -> Iterator[SweepContext]:
    """The invocation's master config, composed as the command line composes it (Hydra's compose API over the
    shipped configs; `config_dir` on Hydra's search path), for as long as Hydra is set up for it."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from neuronexp.cli.main import _Job
    from neuronexp.config import compose as _schema  # noqa: F401  (registers the schema conf/ extends)
    from neuronexp.engine._hydra import launcher_maker, quoted
    from neuronexp.engine.context import SweepContext
    from neuronexp.engine.user_callbacks import refuse_multirun_hooks

    parsed = OverridesParser.create().parse_overrides(overrides)
    fixed = [o.input_line for o in parsed if not o.is_sweep_override() and o.input_line]
    if out is not None:
        fixed.append(f"hydra.{'run' if single else 'sweep'}.dir={quoted(_literal(os.path.abspath(out)))}")
    if config_dir is not None:
        fixed.append(f"hydra.searchpath=[{quoted('file://' + _literal(os.path.abspath(config_dir)))}]")
    with initialize_config_module(config_module="neuronexp.conf", version_base="1.3", job_name="neuronexp"):
        master = compose("config", overrides=fixed, return_hydra_config=True)
        refuse_multirun_hooks(master)  # Hydra's main calls them; here nothing would
        params = {str(k): str(v) for k, v in (master.hydra.sweeper.get("params") or {}).items()}
        if single and params:
            raise NeuronexpError("this config sweeps (hydra.sweeper.params): run it with neuronexp.sweep(...)")
        task = [o.input_line for o in parsed if not o.is_hydra_override() and o.input_line]
        loader = GlobalHydra.instance().config_loader()
        # A Hydra launcher named here (hydra/launcher=submitit_local) runs its jobs on cli.main's task function.
        yield SweepContext(
            master, params, task, loader, single=single, launcher=launcher_maker(master, loader, _Job(None))
        )


def _literal(path: str) -> str:
    """`path` as OmegaConf reads it back as is: a path is a path, never an interpolation (`${oc.env:...}` escaped as
    `\\${`, and the backslashes before one doubled)."""
    return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", path)


@contextmanager
def _default_dtype_kept() -> Iterator[None]:
    """torch's default dtype as the caller had it: a layer that sets it (torch.set_default_dtype) in a cell run in
    this process changes it for that cell only."""
    torch = sys.modules.get("torch")
    before = torch.get_default_dtype() if torch is not None else None
    try:
        yield
    finally:
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_default_dtype(before or torch.float32)


def _baseline_override(baseline: str | Mapping[str, Any]) -> str:
    """`baseline=` as the command line takes it: a module's name, or key=value pairs."""
    from neuronexp.engine._hydra import quoted

    if isinstance(baseline, Mapping):
        return "baseline=" + quoted(",".join(f"{k}={v}" for k, v in baseline.items()))
    return "baseline=" + quoted(str(baseline))
