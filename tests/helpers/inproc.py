"""The console scripts run in this test process: the same `main(argv)` the installed script calls, with its exit
status, stdout and stderr captured as a process's would be (CliResult), and this process's state (working
directory, environment, sys.path, sys.argv) put back afterwards. About 3 s a call cheaper than a process, which
imports torch and Hydra again; a real process stays where only a process shows the behaviour (run_cli)."""

from __future__ import annotations

import importlib
import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from helpers import REPO, CliResult


def _entry(script: str):
    from neuronexp.cli import compare, export, extract, main, report

    return {
        "neuronexp": main.main,
        "neuronexp-report": report.main,
        "neuronexp-compare": compare.main,
        "neuronexp-export": export.main,
        "neuronexp-extract": extract.main,
    }[script]


def run_main(
    args: list[str], cwd: Path, script: str = "neuronexp", env: dict[str, str] | None = None, **_: object
) -> CliResult:
    """`script ARGS...` as run_cli runs it (COLUMNS=200 unless `env` says otherwise, HYDRA_FULL_ERROR unset), in this
    process."""
    saved_env, saved_path, saved_argv, saved_cwd = dict(os.environ), list(sys.path), list(sys.argv), os.getcwd()
    saved_modules = set(sys.modules)
    importlib.invalidate_caches()  # layer files a test wrote since the last call must be found
    out, err = io.StringIO(), io.StringIO()
    os.environ.update({"COLUMNS": "200", **(env or {})})
    if os.environ.get("COLUMNS") == "":
        del os.environ["COLUMNS"]
    os.environ.pop("HYDRA_FULL_ERROR", None)
    sys.argv = [script]
    # A PYTHONPATH given for the command is where a new process would import from: first on the path, here too.
    sys.path[:0] = [p for p in (env or {}).get("PYTHONPATH", "").split(os.pathsep) if p]
    os.chdir(cwd)
    code: int = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                returned = _entry(script)(list(args))
                code = returned if isinstance(returned, int) else 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path
        sys.argv = saved_argv
        _forget_user_modules(saved_modules)
    return CliResult(code, out.getvalue(), err.getvalue())


def _forget_user_modules(before: set[str]) -> None:
    """Modules this call imported from a test's own files (its layers, in its working or config directory): the
    next call imports them afresh, as a new process would, even where another test has a module of the same name."""
    keep = (sys.prefix, sys.base_prefix, str(REPO / "src"))
    for name in set(sys.modules) - before:
        path = getattr(sys.modules[name], "__file__", None) or ""
        if path and not path.startswith(keep):
            del sys.modules[name]
