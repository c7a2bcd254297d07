"""What a process forked from the fork server's template runs (its fork request names it; childproc calls it): a cell's
process, for one cell or a comparison group timed together, whose cells arrive as the sweep or the job built and
validated them (config.spec.CellSpec: nothing here composes or checks a config again, and it imports no Hydra:
tests/architecture checks it); or the checks that import a sweep's code (config validate_code), so that the sweep's
own process imports neither torch nor the user's layers (about 2 s of a sweep's start on 2 cores) and a layer whose
import does something runs it in a process of its own. What the checks find comes back as plain JSON."""

from __future__ import annotations

import json
import os
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronexp.cellprocess.childproc import ForkRequest
from neuronexp.cellprocess.forkserver import run_forked
from neuronexp.config import CellSpec, ConfigError
from neuronexp.config.schema import RunConfig

if TYPE_CHECKING:
    from neuronexp.results import Results

# The checks import and inspect code; they never run a layer. A minute is far more than they take.
CHECK_TIMEOUT_S = 600.0


def code_warnings(configs: list[RunConfig]) -> list[list[str]]:
    """validate_code for each config, in a forked process; each one's warnings, in order. Raises the ConfigError of
    the first config whose code is wrong, or RuntimeError where the checks could not run (its traceback the message)."""
    with tempfile.TemporaryDirectory(prefix="neuronexp-check-") as folder:
        out, log = Path(folder) / "checked.json", Path(folder) / "check.log"
        request = ForkRequest.to_run(
            check_process,
            (configs, str(out)),
            env=dict(os.environ),
            log=str(log),
            allocator=configs[0].allocator.value,
        )
        ended = run_forked(request, CHECK_TIMEOUT_S)
        if not out.is_file():
            said = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
            raise RuntimeError(f"the cells' code could not be checked ({ended}): {said}")
        found: dict[str, Any] = json.loads(out.read_text())
    if "error" in found:
        raise ConfigError(*found["error"])
    if "bug" in found:
        raise RuntimeError(found["bug"])
    return [list(w) for w in found["warnings"]]


def check_process(argument: tuple[list[RunConfig], str]) -> int:
    """The forked process's entry: check, and write what was found to `argument[1]`."""
    from neuronexp.config.validate import validate_code

    configs, out = argument
    try:
        found: dict[str, Any] = {"warnings": [validate_code(config) for config in configs]}
    except ConfigError as exc:
        value = exc.value if isinstance(exc.value, (str, int, float, bool, list, type(None))) else str(exc.value)
        found = {"error": [exc.key, value, exc.allowed]}
    except Exception:
        found = {"bug": traceback.format_exc()}
    Path(out).write_text(json.dumps(found, default=str))
    return 0


def run_placed(cells: Sequence[CellSpec]) -> list[Results]:
    """Run the placed cells (one, or a group timed together: cell.group) and write their tables, in this process:
    a cell's own, or the inline executor's (engine.single, engine.sweeper)."""
    from neuronexp.cell.group import run_cells  # torch and the cell stack: a fork of the template has them already
    from neuronexp.cell.joblog import job_log

    dirs = [Path(spec.out_dir) for spec in cells]
    with job_log(dirs):  # what the process logs is in each of its cells' logs
        return run_cells(list(cells), dirs)


def run_cell_process(cells: tuple[CellSpec, ...]) -> int:
    """A cell process's entry: its cells run and write their files (its supervisor and the sweep read them), exit
    status 0."""
    from neuronexp.cell.group import write_cells
    from neuronexp.cell.joblog import job_log

    dirs = [Path(spec.out_dir) for spec in cells]
    with job_log(dirs):
        write_cells(list(cells), dirs)
    return 0
