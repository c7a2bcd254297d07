"""The checks that import a sweep's code (each cell's module and its inputs' factories, and torch with them: config
validate_code), run in a process forked from the fork server's template, which has imported torch already: the
sweep's own process imports neither torch nor the user's layers for them (about 2 s of a sweep's start on 2 cores),
and a layer whose import does something runs it in a process of its own. What they find comes back as plain JSON."""

from __future__ import annotations

import json
import os
import tempfile
import traceback
from pathlib import Path
from typing import Any

from neuronexp.cellprocess.childproc import ForkRequest
from neuronexp.cellprocess.forkserver import run_forked
from neuronexp.config import ConfigError
from neuronexp.config.schema import RunConfig

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
